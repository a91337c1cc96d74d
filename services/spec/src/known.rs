//! The names Vernier recognises (algorithms, early stopping, collectors, ...), shared with the
//! crates that build algorithms and collectors so the lists cannot drift apart.

/// Every `spec.algorithm.algorithmName` Vernier can run (the one list lives in core, where
/// the algorithm registry reads it too).
pub use vernier_core::ALGORITHM_NAMES;

/// Algorithms that search several objectives (`objective.objectives` with more than one
/// entry); the others optimise a single objective.
pub const MULTI_OBJECTIVE_ALGORITHMS: &[&str] =
    &["random", "grid", "sobol", "nsga2", "bayesianoptimization"];

/// `objective.constraints[].op` values.
pub const CONSTRAINT_OPS: &[&str] = &["<=", ">=", "<", ">"];

/// Every `spec.earlyStopping.algorithmName` Vernier can run (core's one list, which the
/// early-stopping registry reads too).
pub use vernier_core::EARLY_STOPPING_NAMES;

/// `parameterType` values. Katib also admits `unknown`, which no algorithm can sample.
pub const PARAMETER_TYPES: &[&str] = &["double", "int", "discrete", "categorical"];

/// `feasibleSpace.distribution` values.
pub const DISTRIBUTIONS: &[&str] = &["uniform", "logUniform", "normal", "logNormal"];

/// `objective.type` values.
pub const OBJECTIVE_TYPES: &[&str] = &["minimize", "maximize"];

/// `objective.metricStrategies[].value` values.
pub const METRIC_STRATEGIES: &[&str] = &["min", "max", "latest"];

/// `resumePolicy` values.
pub const RESUME_POLICIES: &[&str] = &["Never", "LongRunning", "FromVolume"];

/// `metricsCollectorSpec.collector.kind` values.
pub const COLLECTOR_KINDS: &[&str] = &[
    "StdOut",
    "File",
    "TensorFlowEvent",
    "PrometheusMetric",
    "Custom",
    "Push",
];

/// Katib's default `metricsFormat` for TEXT metrics (`name=value`).
pub use vernier_core::KATIB_DEFAULT_METRICS_FORMAT as DEFAULT_METRICS_FORMAT;

/// Where the `File` and `StdOut` collectors read metrics by default.
pub const DEFAULT_METRICS_FILE: &str = "/var/log/katib/metrics.log";

/// Where the `TensorFlowEvent` collector reads event files by default.
pub const DEFAULT_TFEVENT_DIR: &str = "/var/log/katib/tfevent/";

/// Namespace used when the experiment does not name one.
pub const DEFAULT_NAMESPACE: &str = "default";
