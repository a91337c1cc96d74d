//! Trial names in Katib's form `<experiment>-<8 random characters>` and the seeds behind them,
//! drawn from the experiment's seed so that a replayed experiment names its trials the same
//! way and its algorithm proposes the same points.

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

/// The seed handed to the suggester; core owns the rule so the benchmark harness shares it.
pub use vernier_core::suggest_seed;

/// A seed from a stable identity (a Kubernetes UID): FNV-1a, which unlike std's hasher is
/// guaranteed stable across Rust releases, so a restarted operator keeps the seed.
pub fn identity_seed(identity: &str) -> u64 {
    identity.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
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
        // Fixed forever: a resumed experiment must name its trials as before.
        assert_eq!(a, "census-fgggkzbz");
        assert_eq!(trial_name("census", 7, 1, 0), "census-mqrwfkgd");
    }

    #[test]
    fn identity_seeds_are_fnv1a() {
        // FNV-1a's published test vectors.
        assert_eq!(identity_seed(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(identity_seed("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(identity_seed("foobar"), 0x8594_4171_f739_67e8);
    }
}
