//! Trials this operator created that its trial cache has not shown yet. The Experiment
//! reconciler plans from the cache; one that lags behind the creates of the last reconcile (a
//! watch event late, or two arriving out of order) would count too few trials, ask the
//! algorithm again and overshoot `maxTrialCount`, or hand PBT a generation without its
//! parents. So a reconcile that still expects unseen trials waits for the cache instead, as
//! controller-runtime's expectations do. An expectation lapses after [`EXPECTATION_TTL`], so a
//! trial deleted before the cache saw it cannot stall its experiment.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a created trial is waited for.
pub const EXPECTATION_TTL: Duration = Duration::from_secs(5);

/// Per experiment (`namespace/name`), the trials created and not yet seen, with when.
#[derive(Debug, Default)]
pub struct Expectations {
    unseen: Mutex<HashMap<String, Vec<(String, Instant)>>>,
}

impl Expectations {
    /// Records that `trials` of `experiment` were just created.
    pub fn created(&self, experiment: &str, trials: impl IntoIterator<Item = String>) {
        let now = Instant::now();
        let mut unseen = self.unseen.lock().unwrap_or_else(|e| e.into_inner());
        let entry = unseen.entry(experiment.to_string()).or_default();
        entry.extend(trials.into_iter().map(|t| (t, now)));
        if entry.is_empty() {
            unseen.remove(experiment);
        }
    }

    /// Whether the listing of `experiment` (its trials' names) still lacks a trial this
    /// operator created in the last [`EXPECTATION_TTL`]; forgets the ones it shows.
    pub fn waiting(&self, experiment: &str, listed: &[String], now: Instant) -> bool {
        let mut unseen = self.unseen.lock().unwrap_or_else(|e| e.into_inner());
        let Some(entry) = unseen.get_mut(experiment) else {
            return false;
        };
        entry.retain(|(name, at)| {
            !listed.contains(name) && now.duration_since(*at) < EXPECTATION_TTL
        });
        let waiting = !entry.is_empty();
        if !waiting {
            unseen.remove(experiment);
        }
        waiting
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(listed: &[&str]) -> Vec<String> {
        listed.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn a_created_trial_is_waited_for_until_listed_or_lapsed() {
        let e = Expectations::default();
        let t0 = Instant::now();
        assert!(!e.waiting("ns/x", &names(&[]), t0));
        e.created("ns/x", ["x-a".to_string(), "x-b".to_string()]);
        assert!(e.waiting("ns/x", &names(&["x-a"]), t0));
        assert!(!e.waiting("ns/y", &names(&[]), t0));
        assert!(!e.waiting("ns/x", &names(&["x-a", "x-b"]), t0));
        // Seen once, forgotten: a later listing without it (deleted) waits for nothing.
        assert!(!e.waiting("ns/x", &names(&[]), t0));
        e.created("ns/x", ["x-c".to_string()]);
        assert!(e.waiting("ns/x", &names(&[]), Instant::now()));
        assert!(!e.waiting("ns/x", &names(&[]), Instant::now() + EXPECTATION_TTL));
    }
}
