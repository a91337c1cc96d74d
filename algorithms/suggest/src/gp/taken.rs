//! What the GP must not propose again: a configuration already taken (its key), or a point
//! that only floating-point noise tells apart from one. The acquisition's local search stops a
//! hair inside a face of the box, so on a noisy objective whose optimum lies on a face it
//! proposed `x = -2.999999999999999`, then `-2.9999999999999787`, ... beside the trial at `-3`:
//! different keys, the same configuration to a user, each a wasted trial.

use super::features::Features;
use crate::history;
use std::collections::HashSet;
use vernier_core::{Assignment, SearchSpace, TrialRecord};

/// Two points closer than this in every unit coordinate are one configuration: a billionth of
/// each parameter's range, far below any difference a trial can show, and far below the
/// steps with which the GP polishes a minimum (Branin to a regret of 1e-7 is about 1e-5 of
/// the range away from its optimum).
const NEAR: f64 = 1e-9;

/// The explored configurations, by key and by their points in the GP's unit space.
pub(crate) struct Taken {
    keys: HashSet<String>,
    points: Vec<Vec<f64>>,
}

impl Taken {
    /// Every explored trial of the history ([`history::explored`]).
    pub(crate) fn of(space: &SearchSpace, features: &Features, trials: &[TrialRecord]) -> Self {
        let mut taken = Taken {
            keys: HashSet::new(),
            points: Vec::new(),
        };
        for t in history::explored(trials) {
            taken.insert(space, features, &t.assignment);
        }
        taken
    }

    pub(crate) fn insert(&mut self, space: &SearchSpace, features: &Features, a: &Assignment) {
        if self.keys.insert(a.key()) {
            self.points.push(features.encode(space, a));
        }
    }

    /// The keys alone, for the random fallbacks, which draw exact values.
    pub(crate) fn keys(&self) -> &HashSet<String> {
        &self.keys
    }

    /// Whether `key`, whose point is `x`, is taken or lies within [`NEAR`] of a taken point.
    pub(crate) fn holds(&self, key: &str, x: &[f64]) -> bool {
        self.keys.contains(key)
            || self
                .points
                .iter()
                .any(|p| p.iter().zip(x).all(|(a, b)| (a - b).abs() <= NEAR))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::test_params::unit;

    #[test]
    fn a_point_a_hair_from_a_taken_one_is_taken() {
        let space = SearchSpace::new(vec![unit("x"), unit("y")]).unwrap();
        let features = Features::new(&space);
        let at = |x: f64, y: f64| {
            space
                .parse_assignment(&[
                    ("x".to_string(), x.to_string()),
                    ("y".into(), y.to_string()),
                ])
                .unwrap()
        };
        let mut taken = Taken::of(&space, &features, &[]);
        taken.insert(&space, &features, &at(0.0, 1.0));
        let holds = |a: &Assignment| taken.holds(&a.key(), &features.encode(&space, a));
        assert!(holds(&at(0.0, 1.0)));
        assert!(holds(&at(1e-16, 0.9999999999999787)));
        assert!(holds(&at(5e-10, 1.0)));
        assert!(!holds(&at(2e-9, 1.0)));
        assert!(!holds(&at(0.0, 0.99999)));
        assert_eq!(taken.keys().len(), 1);
    }
}
