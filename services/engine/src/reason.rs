//! Katib's condition reasons and messages, written once. The reasons of a finished experiment
//! (goal reached, max trials, max failed, search space exhausted) belong to the planner's
//! [`Completion`](crate::plan::Completion), which decides them.

/// A trial was created.
pub const TRIAL_CREATED: &str = "TrialCreated";
pub const TRIAL_CREATED_MESSAGE: &str = "Trial is created";
/// A trial's job is running.
pub const TRIAL_RUNNING: &str = "TrialRunning";
pub const TRIAL_RUNNING_MESSAGE: &str = "Trial is running";
/// A trial ended and reported its objective.
pub const TRIAL_SUCCEEDED: &str = "TrialSucceeded";
pub const TRIAL_SUCCEEDED_MESSAGE: &str = "Trial has succeeded";
/// A trial's job failed (or could not start).
pub const TRIAL_FAILED: &str = "TrialFailed";
/// A trial was stopped because the experiment ended or was interrupted.
pub const TRIAL_KILLED: &str = "TrialKilled";
/// The early-stopping rule stopped a trial.
pub const TRIAL_EARLY_STOPPED: &str = "TrialEarlyStopped";
pub const TRIAL_EARLY_STOPPED_MESSAGE: &str = "Trial is early stopped";

/// Katib's message for an early-stopped trial, with why when the rule said (ASHA's rung and
/// place); the same from `vernier run` and the operator, whose event names the rule.
pub fn early_stopped_message(why: Option<&str>) -> String {
    let because = why.map(|w| format!(": {w}")).unwrap_or_default();
    format!("{TRIAL_EARLY_STOPPED_MESSAGE}{because}")
}
/// A trial ended well but never reported its objective.
pub const METRICS_UNAVAILABLE: &str = "MetricsUnavailable";
/// The process driving a local trial died before the trial ended (Vernier's own reason).
pub const TRIAL_INTERRUPTED: &str = "TrialInterrupted";

pub const EXPERIMENT_CREATED: &str = "ExperimentCreated";
pub const EXPERIMENT_CREATED_MESSAGE: &str = "Experiment is created";
pub const EXPERIMENT_RUNNING: &str = "ExperimentRunning";
pub const EXPERIMENT_RUNNING_MESSAGE: &str = "Experiment is running";
/// A finished experiment continues after `maxTrialCount` was raised.
pub const EXPERIMENT_RESTARTING: &str = "ExperimentRestarting";
pub const EXPERIMENT_RESTARTING_MESSAGE: &str = "Experiment is restarted";
/// A local run stopped on request; `vernier resume` continues it (Vernier's own reason).
pub const EXPERIMENT_INTERRUPTED: &str = "ExperimentInterrupted";
/// The experiment fails validation or its settings are refused.
pub const EXPERIMENT_INVALID: &str = "ExperimentInvalid";
