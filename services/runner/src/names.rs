//! Trial names in Katib's form `<experiment>-<8 random characters>`, drawn from the
//! experiment's seed so that a replayed experiment names its trials the same way.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Kubernetes' `utilrand.String` alphabet: lowercase consonants and digits, no look-alikes.
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The name of the `seq`-th trial; `retry` moves to another name after a collision.
pub fn trial_name(experiment: &str, seed: u64, seq: u64, retry: u64) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(
        seed ^ seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ retry.rotate_left(32),
    );
    let suffix: String = (0..8)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect();
    format!("{experiment}-{suffix}")
}

/// The seed handed to the suggester for a call made when `history` trials exist.
pub fn suggest_seed(seed: u64, history: usize) -> u64 {
    seed.wrapping_add((history as u64).wrapping_mul(0xD1B5_4A32_D192_ED03))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_stable_and_katib_shaped() {
        let a = trial_name("census", 7, 0, 0);
        assert_eq!(a, trial_name("census", 7, 0, 0));
        assert_ne!(a, trial_name("census", 7, 1, 0));
        assert_ne!(a, trial_name("census", 7, 0, 1));
        let suffix = a.strip_prefix("census-").unwrap();
        assert_eq!(suffix.len(), 8);
        assert!(suffix.bytes().all(|b| ALPHABET.contains(&b)));
    }
}
