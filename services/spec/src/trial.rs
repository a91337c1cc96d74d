//! Katib's `Trial.spec` (reference §2.5): one configuration of an experiment with the rendered
//! job it runs as. The operator creates these; local mode never needs them.

use crate::status::ParameterAssignment;
use crate::types::{MetricsCollectorSpec, ObjectiveSpec};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Label every Trial (and its job's pods) carries, naming its experiment.
pub const EXPERIMENT_LABEL: &str = "katib.kubeflow.org/experiment";
/// Label a trial's pods carry, naming the trial.
pub const TRIAL_LABEL: &str = "katib.kubeflow.org/trial";

/// Environment variable through which a trial learns the `host:port` of the DBManager
/// endpoint it may push metrics to (pass it as `db_manager_address` to the Katib SDK's
/// `report_metrics`), locally and on a cluster. Katib's SDK has no such variable: in
/// Kubernetes it uses the fixed service address `katib-db-manager.kubeflow:6789`.
pub const PUSH_ADDRESS_ENV: &str = "VERNIER_DB_MANAGER_ADDRESS";

/// Environment variable naming the trial, as Katib's pod webhook sets it for `Push`.
pub const TRIAL_NAME_ENV: &str = "KATIB_TRIAL_NAME";

/// `Trial.spec`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(
    feature = "crd",
    derive(kube_derive::CustomResource),
    kube(
        group = "kubeflow.org",
        version = "v1beta1",
        kind = "Trial",
        root = "TrialResource",
        namespaced,
        status = "crate::status::TrialStatus",
        schema = "disabled",
        category = "all",
        category = "kubeflow",
        category = "katib",
        printcolumn = r#"{"name":"Type","type":"string","jsonPath":".status.conditions[-1:].type"}"#,
        printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.conditions[-1:].status"}"#,
        printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
        crates(kube_core = "::kube_core")
    )
)]
pub struct TrialSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<ObjectiveSpec>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parameter_assignments: Vec<ParameterAssignment>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub early_stopping_rules: Vec<EarlyStoppingRule>,
    /// The rendered job object (any kind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_spec: Option<Value>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retain_run: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_collector: Option<MetricsCollectorSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary_pod_labels: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary_container_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success_condition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_condition: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

/// One `earlyStoppingRules` entry: stop when `name` compares to `value` after `startStep`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EarlyStoppingRule {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub value: String,
    #[serde(default)]
    pub comparison: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_step: Option<i32>,
}
