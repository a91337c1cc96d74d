//! The trials as the driver tracks them, and what the planner and progress displays see of
//! them.

use super::{BestSoFar, Progress};
use crate::experiment::LocalExperiment;
use vernier_core::TrialRecord;
use vernier_engine::plan::{TrialCounts, TrialOutcome, best_trial, pareto_front};

/// One trial as the driver tracks it.
#[derive(Debug, Clone)]
pub(super) struct Tracked {
    pub record: TrialRecord,
    pub assignment_text: String,
    /// The objective's selected text, when it is not a number (DARTS's genotype).
    pub objective_text: Option<String>,
}

/// The trials as the planner sees them.
pub(super) fn outcomes(trials: &[Tracked]) -> Vec<TrialOutcome<'_>> {
    trials
        .iter()
        .map(|t| TrialOutcome {
            name: &t.record.name,
            state: t.record.state,
            objective: t.record.objective,
            metrics: &t.record.metrics,
            text_objective: t.objective_text.is_some(),
        })
        .collect()
}

pub(super) fn progress_of(exp: &LocalExperiment, trials: &[Tracked]) -> Progress {
    let outcomes = outcomes(trials);
    let counts = TrialCounts::of(&outcomes);
    let best = best_trial(&exp.objective, &outcomes).and_then(|i| {
        Some(BestSoFar {
            trial: trials[i].record.name.clone(),
            value: trials[i]
                .record
                .objective
                .map(|v| vernier_core::Short(v).to_string())
                .or_else(|| trials[i].objective_text.clone())?,
            assignment: trials[i].assignment_text.clone(),
            front: front_note(exp, &outcomes, i),
        })
    });
    Progress {
        counts,
        best,
        max_trials: exp.limits.max_trials,
        enqueued_left: 0,
    }
}

/// For several objectives, the best trial's other objective values and the front's size.
fn front_note(
    exp: &LocalExperiment,
    outcomes: &[TrialOutcome<'_>],
    best: usize,
) -> Option<(String, usize)> {
    let objective = &exp.objective;
    if !objective.is_multi() {
        return None;
    }
    let others: Vec<String> = objective.objectives[1..]
        .iter()
        .filter_map(|term| {
            let v = outcomes[best].metric(objective, &term.metric)?;
            Some(format!("{}={}", term.metric, vernier_core::Short(v)))
        })
        .collect();
    Some((others.join(", "), pareto_front(objective, outcomes).len()))
}
