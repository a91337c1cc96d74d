//! Fencing a driver's writes with its lease. A driver that was suspended (a laptop lid closed,
//! SIGSTOP) past the lease's ttl may have been replaced by `vernier resume`; when it runs again
//! its tasks may write what they buffered before its heartbeat notices. A fenced store proves
//! the lease is still this driver's before a write whenever the last proof is a second old or
//! more by the wall clock (which, unlike a monotonic clock, moves on through a suspend), so such
//! a driver records nothing more once it was taken over.

use std::sync::atomic::{AtomicI64, Ordering};

/// How old the last proof of the lease may be before a write proves it again.
const PROVE_AFTER_US: i64 = 1_000_000;

/// The lease a store's writes are fenced by.
#[derive(Debug)]
pub(crate) struct Fence {
    pub(crate) experiment: String,
    pub(crate) owner: String,
    /// Wall-clock time of the last proof, in µs; `i64::MIN` before the first.
    proven_us: AtomicI64,
}

impl Fence {
    pub(crate) fn new(experiment: &str, owner: &str) -> Fence {
        Fence {
            experiment: experiment.to_owned(),
            owner: owner.to_owned(),
            proven_us: AtomicI64::new(i64::MIN),
        }
    }

    /// Whether a write at `now_us` must prove the lease first: the last proof is a second old,
    /// or in the future (the clock was set back).
    pub(crate) fn due(&self, now_us: i64) -> bool {
        let last = self.proven_us.load(Ordering::SeqCst);
        last == i64::MIN || !(0..PROVE_AFTER_US).contains(&now_us.saturating_sub(last))
    }

    pub(crate) fn proven(&self, now_us: i64) {
        self.proven_us.store(now_us, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_proves_the_lease_when_the_last_proof_is_a_second_old_or_in_the_future() {
        let f = Fence::new("e", "me");
        assert!(f.due(5_000_000));
        f.proven(5_000_000);
        // (now, due)
        let table = [
            (5_000_000, false),
            (5_999_999, false),
            (6_000_000, true),
            (65_000_000, true),
            (4_999_999, true),
        ];
        for (now, due) in table {
            assert_eq!(f.due(now), due, "{now}");
        }
    }
}
