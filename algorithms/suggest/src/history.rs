//! What algorithms learn from: the finished trials with a usable objective, as losses (smaller
//! is better whatever the direction), and the configurations already taken.

use std::collections::HashSet;
use vernier_core::{Assignment, Objective, ParamValue, SearchSpace, TrialRecord, TrialState};

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

/// The constraint violation of each trial `observed` returns, in the same order (all 0 for
/// an unconstrained objective).
pub fn observed_violations(objective: &Objective, trials: &[TrialRecord]) -> Vec<f64> {
    trials
        .iter()
        .filter(|t| t.usable_objective().is_some())
        .map(|t| t.violation(objective))
        .collect()
}

/// Keys of every configuration already explored, so none is proposed twice.
pub fn taken(trials: &[TrialRecord]) -> HashSet<String> {
    explored(trials).map(|t| t.assignment.key()).collect()
}

/// The trials whose configuration counts as explored: proposed, in any state but Killed. A
/// trial killed by an interruption (Ctrl-C, a lost driver) ran to no verdict, so its
/// configuration may be proposed again after a resume, and a finite space is not exhausted
/// while it waits.
pub fn explored(trials: &[TrialRecord]) -> impl Iterator<Item = &TrialRecord> {
    trials.iter().filter(|t| is_explored(t))
}

/// Whether `t`'s configuration counts as explored ([`explored`]); a trial that does not holds
/// no place in a schedule either (a Hyperband or ASHA rung hands it out again).
pub fn is_explored(t: &TrialRecord) -> bool {
    t.state != TrialState::Killed
}

/// The value of parameter `name`, found directly when the assignment is in space order (as
/// every assignment Vernier builds is) and by a search otherwise.
pub fn value_of<'a>(a: &'a Assignment, i: usize, name: &str) -> Option<&'a ParamValue> {
    match a.0.get(i) {
        Some((n, v)) if n == name => Some(v),
        _ => a.get(name),
    }
}

/// A cheap stand-in for `Assignment::key` when checking many trials for repeats: a hash of the
/// values in space order (doubles by bit pattern, `-0` as `0`, lists by their exact text, as the
/// key does). Formatting every trial's key costs more than the rest of a suggestion; a hash
/// collision would only skip one candidate.
pub fn fingerprint(space: &SearchSpace, a: &Assignment) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for (i, p) in space.parameters().iter().enumerate() {
        match value_of(a, i, &p.name) {
            Some(ParamValue::Double(x)) => (0u8, (x + 0.0).to_bits()).hash(&mut h),
            Some(ParamValue::Int(i)) => (1u8, *i).hash(&mut h),
            Some(ParamValue::Choice(c)) => (2u8, c).hash(&mut h),
            None => 3u8.hash(&mut h),
        }
    }
    h.finish()
}

/// Fingerprints of every configuration already explored (see [`explored`]).
pub fn taken_fingerprints(space: &SearchSpace, trials: &[TrialRecord]) -> HashSet<u64> {
    explored(trials)
        .map(|t| fingerprint(space, &t.assignment))
        .collect()
}

/// Trials proposed but not finished: model-based algorithms treat them as pending.
pub fn pending(trials: &[TrialRecord]) -> Vec<&Assignment> {
    trials
        .iter()
        .filter(|t| t.state.is_active())
        .map(|t| &t.assignment)
        .collect()
}
