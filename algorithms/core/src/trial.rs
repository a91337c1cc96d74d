//! What algorithms and the planner know about a trial: its assignment, state and objective.

use crate::objective::Objective;
use crate::value::Assignment;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A trial's lifecycle state; the terminal ones follow Katib's Trial condition types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TrialState {
    /// Proposed and recorded, not yet started (Katib `Created`).
    Created,
    Running,
    Succeeded,
    Failed,
    Killed,
    EarlyStopped,
    MetricsUnavailable,
}

impl TrialState {
    /// Katib's condition type name.
    pub fn as_str(self) -> &'static str {
        match self {
            TrialState::Created => "Created",
            TrialState::Running => "Running",
            TrialState::Succeeded => "Succeeded",
            TrialState::Failed => "Failed",
            TrialState::Killed => "Killed",
            TrialState::EarlyStopped => "EarlyStopped",
            TrialState::MetricsUnavailable => "MetricsUnavailable",
        }
    }

    /// Parses Katib's condition type name.
    pub fn parse(s: &str) -> Option<TrialState> {
        Some(match s {
            "Created" => TrialState::Created,
            "Running" => TrialState::Running,
            "Succeeded" => TrialState::Succeeded,
            "Failed" => TrialState::Failed,
            "Killed" => TrialState::Killed,
            "EarlyStopped" => TrialState::EarlyStopped,
            "MetricsUnavailable" => TrialState::MetricsUnavailable,
            _ => return None,
        })
    }

    /// Katib counts these as completed.
    pub fn is_terminal(self) -> bool {
        !matches!(self, TrialState::Created | TrialState::Running)
    }

    /// Created or running: occupies a parallel slot.
    pub fn is_active(self) -> bool {
        !self.is_terminal()
    }
}

impl std::fmt::Display for TrialState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Label naming where a warm-start record came from (`experiment/<name>` or `file/<path>`):
/// such a record is an earlier result given to the algorithm, not one of its proposals.
pub const WARM_START_SOURCE_LABEL: &str = "vernier.warmstart/source";

/// One trial as algorithms see it.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialRecord {
    pub name: String,
    pub assignment: Assignment,
    pub state: TrialState,
    /// The objective value selected by the objective's metric strategy, if observed.
    pub objective: Option<f64>,
    pub labels: BTreeMap<String, String>,
    /// Every metric's value selected by its strategy (objective and additional metrics),
    /// for multi-objective search and constraints; empty where the caller has none.
    pub metrics: BTreeMap<String, f64>,
}

impl TrialRecord {
    /// The objective of a trial algorithms may learn from: succeeded or early-stopped with a
    /// finite objective value (Katib's suggestion services filter the same way).
    pub fn usable_objective(&self) -> Option<f64> {
        match self.state {
            TrialState::Succeeded | TrialState::EarlyStopped => {
                self.objective.filter(|v| v.is_finite())
            }
            _ => None,
        }
    }

    /// A metric's reduced value: from `metrics`, falling back to `objective` for the primary
    /// metric so callers that fill only the objective still work.
    pub fn metric(&self, objective: &Objective, name: &str) -> Option<f64> {
        self.metrics.get(name).copied().or_else(|| {
            (name == objective.metric)
                .then_some(self.objective)
                .flatten()
        })
    }

    /// An earlier result given as a warm start, not a trial of this experiment.
    pub fn is_warm_start(&self) -> bool {
        self.labels.contains_key(WARM_START_SOURCE_LABEL)
    }

    /// Succeeded or early-stopped: the trial's metrics may be learned from.
    pub fn is_finished_ok(&self) -> bool {
        matches!(self.state, TrialState::Succeeded | TrialState::EarlyStopped)
    }

    /// Every objective as a loss (smaller is better) for a finished trial with all of them
    /// finite; `None` otherwise.
    pub fn usable_losses(&self, objective: &Objective) -> Option<Vec<f64>> {
        if !self.is_finished_ok() {
            return None;
        }
        objective.losses(|n| self.metric(objective, n))
    }

    /// Total constraint violation (0 when feasible or unconstrained).
    pub fn violation(&self, objective: &Objective) -> f64 {
        objective.violation(|n| self.metric(objective, n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_names_round_trip() {
        for s in [
            TrialState::Created,
            TrialState::Running,
            TrialState::Succeeded,
            TrialState::Failed,
            TrialState::Killed,
            TrialState::EarlyStopped,
            TrialState::MetricsUnavailable,
        ] {
            assert_eq!(TrialState::parse(s.as_str()), Some(s));
        }
        assert_eq!(TrialState::parse("Done"), None);
        assert!(TrialState::Killed.is_terminal());
        assert!(TrialState::Running.is_active());
    }
}
