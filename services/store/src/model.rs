//! The rows the store reads and writes, independent of the database backend.

use std::collections::BTreeMap;
use vernier_core::TrialState;

/// One experiment: its full Katib spec (opaque JSON to the store) and its status.
#[derive(Debug, Clone, PartialEq)]
pub struct ExperimentRow {
    pub name: String,
    /// The full Katib `Experiment` object as JSON.
    pub spec_json: String,
    pub seed: i64,
    /// Microseconds since the Unix epoch; `list_experiments` orders by it.
    pub created_us: i64,
    /// Local mode: the directory trial processes start in (empty in Kubernetes mode).
    pub work_dir: String,
    /// Local mode: where `<trial>.log` files are kept (empty in Kubernetes mode).
    pub log_dir: String,
    pub status: ExperimentStatusRow,
}

/// The mutable part of an experiment, written as a whole by `update_experiment_status`.
#[derive(Debug, Clone, PartialEq)]
pub struct ExperimentStatusRow {
    /// `Created`, `Running`, `Succeeded`, `Failed` or `Interrupted`.
    pub phase: String,
    pub reason: String,
    pub message: String,
    pub started_us: Option<i64>,
    pub completed_us: Option<i64>,
    /// The suggester's opaque state, if it keeps one.
    pub algorithm_state: Option<String>,
    /// Katib's `status.conditions` array as JSON; opaque to the store.
    pub conditions_json: String,
}

/// One trial of an experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialRow {
    pub experiment: String,
    /// Unique across all experiments (Katib's observation logs are keyed by trial name alone).
    pub name: String,
    /// Creation order within the experiment; unique per experiment.
    pub seq: i64,
    /// Parameter name and value, in the order the suggester produced them.
    pub assignment: Vec<(String, String)>,
    pub labels: BTreeMap<String, String>,
    pub state: TrialState,
    pub reason: String,
    pub message: String,
    pub created_us: i64,
    pub started_us: Option<i64>,
    pub completed_us: Option<i64>,
    /// How many times the trial was re-run after a resume.
    pub attempt: i64,
    /// Katib's `spec.earlyStoppingRules` frozen for it, as JSON; opaque to the store. `None`
    /// while no rule is in force for it.
    pub early_stopping_rules: Option<String>,
    /// The step an early-stopping rule that ranks trials by step (ASHA) stopped it at: the
    /// rule is shown its values up to that step only. `None` for a trial no such rule stopped.
    pub stop_step: Option<i64>,
}

/// A trial state change. `state`, `reason` and `message` always overwrite; `started_us`,
/// `completed_us`, `attempt` and `stop_step` overwrite only when `Some`, so a caller that only
/// knows the new state cannot erase a start time by accident.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialUpdate {
    pub state: TrialState,
    pub reason: String,
    pub message: String,
    pub started_us: Option<i64>,
    pub completed_us: Option<i64>,
    pub attempt: Option<i64>,
    /// [`TrialRow::stop_step`], written with the EarlyStopped state it explains.
    pub stop_step: Option<i64>,
}

/// One metric of one trial as the store keeps it reduced: Katib's `Metric {name, min, max,
/// latest}` and how many of its values were numbers (a learning curve needs two).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMetric {
    pub trial: String,
    pub summary: vernier_core::MetricSummary,
    pub numeric_count: i64,
}

/// The reduced observations of an experiment's trials.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ExperimentSummaries {
    /// Grouped by trial in `seq` order, metrics by name within a trial.
    pub metrics: Vec<StoredMetric>,
    /// Trials whose logs were recorded before the store kept summaries (an older database):
    /// their entries in `metrics` may be missing or partial, so callers reduce their raw logs.
    pub unreduced: Vec<String>,
}
