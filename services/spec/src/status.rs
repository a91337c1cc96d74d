//! Katib's `Experiment.status` and `Trial.status` (reference §2.4, §2.5) with Katib's JSON field
//! names, so Katib's SDK and UI read what Vernier's operator writes.

use crate::conditions::Condition;
use serde::{Deserialize, Serialize};

/// The columns `vernier report --format csv` writes before the parameters' (and warm start
/// reads back): a parameter may share a name with one of them.
pub const CSV_TRIAL_COLUMNS: [&str; 4] = ["trial", "index", "condition", "best"];

/// The columns it may write after the metrics'.
pub const CSV_TAIL_COLUMNS: [&str; 5] = [
    "pareto_front",
    "feasible",
    "start_time",
    "completion_time",
    "duration_s",
];

/// The header of a parameter's column: its name, or `NAME (parameter)` when the name is one of
/// the report's own columns, so every column of the header has a name of its own.
pub fn csv_parameter_column(name: &str) -> String {
    if is_csv_own_column(name) {
        format!("{name} (parameter)")
    } else {
        name.to_string()
    }
}

/// The header of a metric's column: its name, or `NAME (metric)` when a parameter or one of
/// the report's own columns has that name.
pub fn csv_metric_column(name: &str, parameters: &[String]) -> String {
    if is_csv_own_column(name) || parameters.iter().any(|p| p == name) {
        format!("{name} (metric)")
    } else {
        name.to_string()
    }
}

fn is_csv_own_column(name: &str) -> bool {
    CSV_TRIAL_COLUMNS.contains(&name) || CSV_TAIL_COLUMNS.contains(&name)
}

/// One `{name, value}` parameter assignment as Katib writes it in trials and statuses.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParameterAssignment {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub value: String,
}

/// Katib's `Metric {name, min, max, latest}`; absent values are the text `unavailable`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MetricValues {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub min: String,
    #[serde(default)]
    pub max: String,
    #[serde(default)]
    pub latest: String,
}

/// Katib's `Observation`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Observation {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<MetricValues>,
}

/// `status.currentOptimalTrial`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OptimalTrial {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub best_trial_name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parameter_assignments: Vec<ParameterAssignment>,
    #[serde(default)]
    pub observation: Observation,
}

/// `Experiment.status`. Counters and lists are omitted when zero or empty, as Katib's
/// `omitempty` does.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExperimentStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_reconcile_time: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_optimal_trial: Option<OptimalTrial>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub running_trial_list: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_trial_list: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_trial_list: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub succeeded_trial_list: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub killed_trial_list: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub early_stopped_trial_list: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics_unavailable_trial_list: Vec<String>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub trials: i32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub trials_succeeded: i32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub trials_failed: i32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub trials_killed: i32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub trials_pending: i32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub trials_running: i32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub trials_early_stopped: i32,
    /// Katib's name really lacks the `s`: `trialMetricsUnavailable`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub trial_metrics_unavailable: i32,
}

/// `Trial.status`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrialStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_reconcile_time: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<Observation>,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_columns_get_names_of_their_own() {
        let params = ["x".to_string(), "best".to_string()];
        // (name, as a parameter's column, as a metric's column)
        let table = [
            ("lr", "lr", "lr"),
            ("x", "x", "x (metric)"),
            ("best", "best (parameter)", "best (metric)"),
            (
                "duration_s",
                "duration_s (parameter)",
                "duration_s (metric)",
            ),
        ];
        for (name, parameter, metric) in table {
            assert_eq!(csv_parameter_column(name), parameter);
            assert_eq!(csv_metric_column(name, &params), metric);
        }
    }
}
