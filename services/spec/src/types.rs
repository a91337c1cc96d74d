//! Serde types mirroring Katib's v1beta1 `Experiment` resource field for field, so a Katib YAML
//! parses unchanged and serialises back without inventing fields.
//!
//! Scalars the user may leave out are `Option`s and lists default to empty, both skipped when
//! serialising: parse → serialise → parse is the identity and nothing absent is ever written.
//! Enum-like fields (`parameterType`, `objective.type`, ...) stay strings so that a bad value is
//! reported by validation with its path instead of as an opaque serde error.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The only API version Vernier accepts.
pub const API_VERSION: &str = "kubeflow.org/v1beta1";
/// The only kind Vernier accepts.
pub const KIND: &str = "Experiment";

/// A Katib `Experiment` (`kubeflow.org/v1beta1`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Experiment {
    // Defaulted so that a missing value is reported by the version check, with a hint.
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: ExperimentSpec,
    /// Kept opaque: Vernier writes status with Katib's names but never needs to read it here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Value>,
}

/// Kubernetes object metadata; keys Vernier does not use are kept verbatim in `extra`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `Experiment.spec`. With the `crd` feature it also defines the `ExperimentResource` custom
/// resource (schema-less, like Katib's CRD: every check is done by validation, with paths).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(
    feature = "crd",
    derive(kube_derive::CustomResource),
    kube(
        group = "kubeflow.org",
        version = "v1beta1",
        kind = "Experiment",
        root = "ExperimentResource",
        namespaced,
        status = "crate::status::ExperimentStatus",
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
pub struct ExperimentSpec {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<ParameterSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<ObjectiveSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<AlgorithmSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early_stopping: Option<AlgorithmSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial_template: Option<TrialTemplate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_trial_count: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_trial_count: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_failed_trial_count: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_collector_spec: Option<MetricsCollectorSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nas_config: Option<NasConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_policy: Option<String>,
    /// Vernier extension: earlier results that seed the algorithm's history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm_start: Option<WarmStartSpec>,
    /// Vernier extension: configurations to run before the algorithm proposes any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub enqueued_trials: Vec<EnqueuedTrial>,
}

/// `spec.warmStart` (Vernier extension): results of earlier experiments in the same store
/// and/or a file of known results, given to the algorithm as history.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WarmStartSpec {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub experiments: Vec<String>,
    /// A CSV or JSON-lines file, relative to the experiment file's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// One entry of `spec.enqueuedTrials` (Vernier extension): a hand-picked configuration.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnqueuedTrial {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parameter_assignments: Vec<ParameterAssignmentSpec>,
}

/// A parameter's value as Katib's Trial writes it: `{name, value}`, the value as text.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParameterAssignmentSpec {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub value: String,
}

/// One entry of `spec.parameters` (also used inside `nasConfig.operations`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParameterSpec {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameter_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feasible_space: Option<FeasibleSpace>,
}

/// `feasibleSpace`. Katib keeps every bound as a string. An unquoted YAML number arrives here
/// as written (`0.010` stays `"0.010"`) because the YAML deserializer hands any plain scalar
/// to a string field verbatim; see `parse`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FeasibleSpace {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub list: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distribution: Option<String>,
}

impl FeasibleSpace {
    /// Katib's "feasibleSpace must be specified" treats an all-empty space as missing.
    pub fn is_empty(&self) -> bool {
        self.max.is_none()
            && self.min.is_none()
            && self.list.is_empty()
            && self.step.is_none()
            && self.distribution.is_none()
    }

    /// `step` when it says something: Katib's services (`if param.step:`) and its webhook
    /// (`Step != ""`) read an empty step as none, as the gRPC conversion does.
    pub fn given_step(&self) -> Option<&String> {
        self.step.as_ref().filter(|s| !s.trim().is_empty())
    }
}

/// `spec.objective`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectiveSpec {
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective_metric_name: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_metric_names: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metric_strategies: Vec<MetricStrategySpec>,
    /// Vernier extension: every objective of a multi-objective experiment, the primary first
    /// (its name and type are Katib's `objectiveMetricName` and `type`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objectives: Vec<ObjectiveTermSpec>,
    /// Vernier extension: metrics a trial must satisfy to be feasible.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<ConstraintSpec>,
}

/// One entry of `objective.objectives` (Vernier extension).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectiveTermSpec {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub metric_name: String,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<f64>,
}

/// One entry of `objective.constraints` (Vernier extension): `metricName op value`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConstraintSpec {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub metric_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
}

/// One `{name, value}` of `objective.metricStrategies`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MetricStrategySpec {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
}

/// `spec.algorithm` and `spec.earlyStopping` share this shape.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AlgorithmSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm_name: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub algorithm_settings: Vec<AlgorithmSetting>,
}

/// One `{name, value}` algorithm setting.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AlgorithmSetting {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
}

/// `spec.trialTemplate`. Katib inlines its `TrialSource` (`trialSpec` or `configMap`) here.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrialTemplate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retain: Option<bool>,
    /// Any Kubernetes object (Job, TFJob, a CRD...): free-form by design.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial_spec: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<ConfigMapSource>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trial_parameters: Vec<TrialParameterSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary_pod_labels: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary_container_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success_condition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_condition: Option<String>,
}

/// `trialTemplate.configMap`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMapSource {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_path: Option<String>,
}

/// One `trialTemplate.trialParameters` entry.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrialParameterSpec {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reference: String,
}

/// `spec.metricsCollectorSpec`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MetricsCollectorSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collector: Option<CollectorSpec>,
}

/// `metricsCollectorSpec.source`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceSpec {
    /// A Kubernetes `HTTPGetAction`, kept verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_get: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_system_path: Option<FileSystemPath>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<FilterSpec>,
}

/// `source.fileSystemPath`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileSystemPath {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
}

/// `source.filter`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FilterSpec {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics_format: Vec<String>,
}

/// `metricsCollectorSpec.collector`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CollectorSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// A Kubernetes `Container`, kept verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_collector: Option<Value>,
}

/// `spec.nasConfig` (parsed and shape-checked; no Vernier algorithm searches architectures).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NasConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph_config: Option<GraphConfig>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operations: Vec<Operation>,
}

impl NasConfig {
    /// What a run searches, for a user who sees no parameters: `nasConfig (1 layer(s), 4
    /// operation(s))`.
    pub fn describe(&self) -> String {
        let layers = self
            .graph_config
            .as_ref()
            .and_then(|g| g.num_layers)
            .unwrap_or(0);
        format!(
            "nasConfig ({layers} layer(s), {} operation(s))",
            self.operations.len()
        )
    }
}

/// `nasConfig.graphConfig`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GraphConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_layers: Option<i32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input_sizes: Vec<i32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_sizes: Vec<i32>,
}

/// One `nasConfig.operations` entry.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Operation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_type: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<ParameterSpec>,
}

/// Every field name of the schema above; used to suggest a fix for a misspelt key.
pub(crate) const FIELD_NAMES: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "spec",
    "status",
    "name",
    "namespace",
    "labels",
    "annotations",
    "parameters",
    "parameterType",
    "feasibleSpace",
    "max",
    "min",
    "list",
    "step",
    "distribution",
    "objective",
    "type",
    "goal",
    "objectiveMetricName",
    "additionalMetricNames",
    "metricStrategies",
    "objectives",
    "metricName",
    "constraints",
    "op",
    "value",
    "algorithm",
    "algorithmName",
    "algorithmSettings",
    "earlyStopping",
    "trialTemplate",
    "retain",
    "trialSpec",
    "configMap",
    "configMapName",
    "configMapNamespace",
    "templatePath",
    "trialParameters",
    "description",
    "reference",
    "primaryPodLabels",
    "primaryContainerName",
    "successCondition",
    "failureCondition",
    "parallelTrialCount",
    "maxTrialCount",
    "maxFailedTrialCount",
    "metricsCollectorSpec",
    "source",
    "httpGet",
    "fileSystemPath",
    "path",
    "format",
    "filter",
    "metricsFormat",
    "collector",
    "customCollector",
    "nasConfig",
    "graphConfig",
    "numLayers",
    "inputSizes",
    "outputSizes",
    "operations",
    "operationType",
    "resumePolicy",
    "warmStart",
    "experiments",
    "file",
    "enqueuedTrials",
    "parameterAssignments",
];
