//! Enqueued configurations (`spec.enqueuedTrials`, appended to by `vernier enqueue`): run
//! before the algorithm proposes anything, in the order listed. A trial made from entry `i`
//! carries the label `vernier.enqueue/index = i`, so a resumed experiment runs each entry once.

use crate::error::RunnerError;
use crate::experiment::LocalExperiment;
use std::collections::HashSet;
use vernier_core::{Proposal, TrialRecord};
use vernier_spec::enqueue::{ENQUEUED_LABEL, enqueued_assignment, pairs_of};

/// Up to `count` entries that have no trial yet, as proposals.
pub fn pending(
    exp: &LocalExperiment,
    trials: &[TrialRecord],
    count: usize,
) -> Result<Vec<Proposal>, RunnerError> {
    let done: HashSet<usize> = trials
        .iter()
        .filter_map(|t| t.labels.get(ENQUEUED_LABEL)?.parse().ok())
        .collect();
    let mut out = Vec::new();
    for (index, entry) in exp.spec.spec.enqueued_trials.iter().enumerate() {
        if out.len() == count {
            break;
        }
        if done.contains(&index) {
            continue;
        }
        let assignment = enqueued_assignment(&exp.space, &pairs_of(entry))
            .map_err(|message| RunnerError::Enqueued { index, message })?;
        let mut p = Proposal::new(assignment);
        p.labels
            .insert(ENQUEUED_LABEL.to_string(), index.to_string());
        out.push(p);
    }
    Ok(out)
}
