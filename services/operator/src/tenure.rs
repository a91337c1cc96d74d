//! How long this replica may still act as the leader. The API server fences writes to
//! Kubernetes objects by resourceVersion, but nothing fences the store: a leader paused (a
//! frozen VM, SIGSTOP) past its lease, whose successor has since taken over, would on waking
//! append what its log followers read before its next election round steps it down. Writers
//! the API server does not fence ask [`Tenure::holds`] first.

use std::sync::Mutex;
use std::time::{Duration, SystemTime};
use tokio::time::Instant;

/// Until when the lease this replica last renewed is surely its own.
#[derive(Debug, Default)]
pub struct Tenure {
    state: Mutex<State>,
}

#[derive(Debug, Default, Clone, Copy)]
enum State {
    /// No leader election: the only replica always acts.
    #[default]
    Unelected,
    /// Elected: acts until both clocks reach these times (the wall clock moves on through a
    /// suspended machine, the monotonic one through a clock set back).
    Until(Instant, SystemTime),
}

impl Tenure {
    /// Whether this replica may write now.
    pub fn holds(&self) -> bool {
        match *self.state.lock().unwrap_or_else(|e| e.into_inner()) {
            State::Unelected => true,
            State::Until(instant, wall) => Instant::now() < instant && SystemTime::now() < wall,
        }
    }

    /// The lease was renewed by a round that began at `began` (both clocks): it is this
    /// replica's for `lease` from then, since a candidate waits that long after the renewal.
    pub fn renewed(&self, began: (Instant, SystemTime), lease: Duration) {
        let until = State::Until(began.0 + lease, began.1 + lease);
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = until;
    }

    /// This replica leads no more (or not yet).
    pub fn ended(&self) {
        let now = State::Until(Instant::now(), SystemTime::now());
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenure_holds_until_its_lease_runs_out_and_not_after_it_ended() {
        let lease = Duration::from_secs(15);
        let t = Tenure::default();
        assert!(t.holds(), "without an election the replica always acts");
        t.ended();
        assert!(!t.holds());
        t.renewed((Instant::now(), SystemTime::now()), lease);
        assert!(t.holds());
        // Renewed 16 s ago by the monotonic clock (a pause past the lease), or by the wall
        // clock (a suspended machine): run out either way.
        let before = |ago| Instant::now().checked_sub(ago).expect("clock");
        t.renewed((before(Duration::from_secs(16)), SystemTime::now()), lease);
        assert!(!t.holds());
        let long_ago = SystemTime::now() - Duration::from_secs(16);
        t.renewed((Instant::now(), long_ago), lease);
        assert!(!t.holds());
    }
}
