//! The first objective values of each succeeded trial, kept between `GetEarlyStoppingRules`
//! requests as Katib's medianstop service keeps each trial's average (`trials_avg_history`):
//! a Katib controller asks for rules after every suggestion, and without this every request
//! re-read every succeeded trial's whole log. A succeeded trial's logs no longer change, so an
//! entry stays true; it is keyed by the trial's completion time as well as its name, so a
//! trial of a deleted experiment recreated under the same name is not mistaken for its
//! namesake.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Entries kept before the cache starts over: about 100 bytes each plus the values.
const MAX_ENTRIES: usize = 100_000;

/// What identifies one trial's values: where they were read (the DBManager address, empty for
/// the store), the trial, its completion time, the metric, and how many values are kept.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub source: String,
    pub trial: String,
    pub completed: String,
    pub metric: String,
    pub count: usize,
}

/// The cache; clones share it.
#[derive(Debug, Clone, Default)]
pub(crate) struct FirstValues(Arc<Mutex<HashMap<Key, Vec<f64>>>>);

impl FirstValues {
    /// The values kept for `key`, if any.
    pub(crate) fn get(&self, key: &Key) -> Option<Vec<f64>> {
        self.0.lock().ok()?.get(key).cloned()
    }

    /// Keeps `values` (already cut to `key.count`) for `key`, unless the trial's completion
    /// time is unknown: then nothing says the same name will mean the same trial.
    pub(crate) fn keep(&self, key: Key, values: Vec<f64>) {
        if key.completed.trim().is_empty() {
            return;
        }
        if let Ok(mut map) = self.0.lock() {
            if map.len() >= MAX_ENTRIES {
                map.clear();
            }
            map.insert(key, values);
        }
    }
}

/// The finite numbers among a trial's logged values, the first `count` of them: text and
/// non-finite values are no value, as in the rule itself.
pub(crate) fn first_finite(values: &[String], count: usize) -> Vec<f64> {
    values
        .iter()
        .filter_map(|v| v.trim().parse::<f64>().ok().filter(|v| v.is_finite()))
        .take(count)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(trial: &str, completed: &str) -> Key {
        Key {
            source: String::new(),
            trial: trial.into(),
            completed: completed.into(),
            metric: "loss".into(),
            count: 2,
        }
    }

    #[test]
    fn a_trial_is_kept_only_with_its_completion_time() {
        let cache = FirstValues::default();
        cache.keep(key("t", "2024-01-01T00:00:00Z"), vec![1.0, 2.0]);
        cache.keep(key("u", ""), vec![3.0]);
        assert_eq!(
            cache.get(&key("t", "2024-01-01T00:00:00Z")),
            Some(vec![1.0, 2.0])
        );
        // The same name ended at another time is another trial.
        assert_eq!(cache.get(&key("t", "2025-01-01T00:00:00Z")), None);
        assert_eq!(cache.get(&key("u", "")), None);
    }

    #[test]
    fn first_finite_skips_text_and_non_finite_values() {
        let logs: Vec<String> = ["n/a", "0.1", "inf", "0.3", "0.5"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(first_finite(&logs, 2), vec![0.1, 0.3]);
        assert_eq!(first_finite(&logs, 9), vec![0.1, 0.3, 0.5]);
        assert_eq!(first_finite(&[], 2), Vec::<f64>::new());
    }
}
