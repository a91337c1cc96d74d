//! What algorithms learn from: the finished trials with a usable objective, as losses (smaller
//! is better whatever the direction), and the configurations already taken.

use std::collections::HashSet;
use vernier_core::{Assignment, Objective, TrialRecord};

/// Succeeded and early-stopped trials with a finite objective, as `(assignment, loss)`.
/// Failed, killed, running and metric-less trials are ignored.
pub fn observed<'a>(
    objective: &Objective,
    trials: &'a [TrialRecord],
) -> Vec<(&'a Assignment, f64)> {
    trials
        .iter()
        .filter_map(|t| {
            t.usable_objective()
                .map(|v| (&t.assignment, objective.direction.to_loss(v)))
        })
        .collect()
}

/// Keys of every configuration already proposed, in any state, so none is proposed twice.
pub fn taken(trials: &[TrialRecord]) -> HashSet<String> {
    trials.iter().map(|t| t.assignment.key()).collect()
}

/// Trials proposed but not finished: model-based algorithms treat them as pending.
pub fn pending(trials: &[TrialRecord]) -> Vec<&Assignment> {
    trials
        .iter()
        .filter(|t| t.state.is_active())
        .map(|t| &t.assignment)
        .collect()
}
