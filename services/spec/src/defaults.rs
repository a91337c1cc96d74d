//! Katib's mutating-webhook defaults (`experiment_defaults.go`), applied before validation.
//! Only empty fields are filled, so a user's explicit value always wins.

use crate::known::{DEFAULT_METRICS_FILE, DEFAULT_TFEVENT_DIR};
use crate::types::{
    CollectorSpec, Experiment, FileSystemPath, MetricStrategySpec, MetricsCollectorSpec, SourceSpec,
};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};

pub const DEFAULT_PARALLEL_TRIAL_COUNT: i32 = 3;
pub const DEFAULT_RESUME_POLICY: &str = "Never";
pub const DEFAULT_COLLECTOR_KIND: &str = "StdOut";
pub const DEFAULT_DISTRIBUTION: &str = "uniform";
pub const DEFAULT_PROMETHEUS_PATH: &str = "/metrics";
pub const DEFAULT_PROMETHEUS_PORT: i64 = 8080;

const JOB_SUCCESS: &str = r#"status.conditions.#(type=="Complete")#|#(status=="True")#"#;
const KUBEFLOW_SUCCESS: &str = r#"status.conditions.#(type=="Succeeded")#|#(status=="True")#"#;
const FAILURE: &str = r#"status.conditions.#(type=="Failed")#|#(status=="True")#"#;

/// Fills every empty field Katib's webhook would fill.
pub fn apply_defaults(exp: &mut Experiment) {
    let spec = &mut exp.spec;
    spec.parallel_trial_count
        .get_or_insert(DEFAULT_PARALLEL_TRIAL_COUNT);
    if spec.resume_policy.as_deref().is_none_or(str::is_empty) {
        spec.resume_policy = Some(DEFAULT_RESUME_POLICY.into());
    }
    default_objectives(exp);
    default_metric_strategies(exp);
    default_trial_template(exp);
    default_metrics_collector(exp);
    for p in &mut exp.spec.parameters {
        if let Some(fs) = &mut p.feasible_space
            && fs.distribution.as_deref().is_none_or(str::is_empty)
        {
            fs.distribution = Some(DEFAULT_DISTRIBUTION.into());
        }
    }
}

/// `objective.objectives` (Vernier extension) fills Katib's primary fields from its first
/// entry, lists the other objectives and the constraint metrics as additional metrics (so
/// Katib's collector records them too) and gives each its own strategy: an objective's from
/// its own direction, a constraint's `latest` (the value the trial ended with).
fn default_objectives(exp: &mut Experiment) {
    let Some(obj) = &mut exp.spec.objective else {
        return;
    };
    if let Some(first) = obj.objectives.first().cloned() {
        if obj
            .objective_metric_name
            .as_deref()
            .is_none_or(str::is_empty)
        {
            obj.objective_metric_name = Some(first.metric_name.clone());
        }
        if let Some(t) = first.type_.as_deref() {
            fill(&mut obj.type_, t);
        }
        if obj.goal.is_none() {
            obj.goal = first.goal;
        }
    }
    let primary = obj.objective_metric_name.clone().unwrap_or_default();
    let mut extra: Vec<(String, Option<&'static str>)> = Vec::new();
    for t in obj.objectives.iter().skip(1) {
        let strategy = match t.type_.as_deref() {
            Some("minimize") => Some("min"),
            Some("maximize") => Some("max"),
            _ => None,
        };
        extra.push((t.metric_name.clone(), strategy));
    }
    for c in &obj.constraints {
        extra.push((c.metric_name.clone(), Some("latest")));
    }
    // Sets of what is listed already keep this linear in the number of metrics.
    let mut listed: HashSet<String> = obj.additional_metric_names.iter().cloned().collect();
    let mut has_strategy: HashSet<String> = obj
        .metric_strategies
        .iter()
        .map(|s| s.name.clone())
        .collect();
    for (name, strategy) in extra {
        if name.is_empty() || name == primary {
            continue;
        }
        if listed.insert(name.clone()) {
            obj.additional_metric_names.push(name.clone());
        }
        if let Some(value) = strategy
            && has_strategy.insert(name.clone())
        {
            obj.metric_strategies.push(MetricStrategySpec {
                name,
                value: value.into(),
            });
        }
    }
}

fn default_metric_strategies(exp: &mut Experiment) {
    let Some(obj) = &mut exp.spec.objective else {
        return;
    };
    // Katib gives additional metrics the objective's rule too, despite its comment saying
    // "latest"; reproduced on purpose.
    let strategy = match obj.type_.as_deref() {
        Some("minimize") => "min",
        Some("maximize") => "max",
        _ => "latest",
    };
    let names: Vec<String> = obj
        .objective_metric_name
        .iter()
        .chain(obj.additional_metric_names.iter())
        .filter(|n| !n.is_empty())
        .cloned()
        .collect();
    let mut has_strategy: HashSet<String> = obj
        .metric_strategies
        .iter()
        .map(|s| s.name.clone())
        .collect();
    for name in names {
        if has_strategy.insert(name.clone()) {
            obj.metric_strategies.push(MetricStrategySpec {
                name,
                value: strategy.into(),
            });
        }
    }
}

/// The success and failure conditions Katib fills in for a trial of `kind`, if it fills any.
pub fn default_conditions(kind: &str) -> Option<(&'static str, &'static str)> {
    let success = match kind {
        "Job" | "TrainJob" => JOB_SUCCESS,
        // Katib's `KubeflowJobKinds`: MXJob is among them, though the training operator has
        // since dropped it.
        "TFJob" | "PyTorchJob" | "XGBoostJob" | "MXJob" | "MPIJob" => KUBEFLOW_SUCCESS,
        _ => return None,
    };
    Some((success, FAILURE))
}

fn default_trial_template(exp: &mut Experiment) {
    let Some(tt) = &mut exp.spec.trial_template else {
        return;
    };
    // A ConfigMap template is not known until fetched, so Katib leaves its conditions alone.
    let Some(kind) = tt
        .trial_spec
        .as_ref()
        .and_then(|s| s.get("kind"))
        .and_then(Value::as_str)
    else {
        return;
    };
    let Some((success, failure)) = default_conditions(kind) else {
        return;
    };
    let labels: &[(&str, &str)] = match kind {
        "TrainJob" => &[
            ("jobset.sigs.k8s.io/replicatedjob-name", "node"),
            ("batch.kubernetes.io/job-completion-index", "0"),
        ],
        "Job" => &[],
        _ => &[("training.kubeflow.org/job-role", "master")],
    };
    fill(&mut tt.success_condition, success);
    fill(&mut tt.failure_condition, failure);
    if !labels.is_empty()
        && tt
            .primary_pod_labels
            .as_ref()
            .is_none_or(BTreeMap::is_empty)
    {
        tt.primary_pod_labels = Some(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
    }
}

fn default_metrics_collector(exp: &mut Experiment) {
    let mc = exp
        .spec
        .metrics_collector_spec
        .get_or_insert_with(MetricsCollectorSpec::default);
    // As Katib's `setDefaultMetricsCollector`: only a missing collector becomes StdOut; a
    // collector without a kind stays so and is refused by validation.
    let collector = mc.collector.get_or_insert_with(|| CollectorSpec {
        kind: Some(DEFAULT_COLLECTOR_KIND.to_string()),
        ..CollectorSpec::default()
    });
    let kind = collector.kind.clone().unwrap_or_default();
    match kind.as_str() {
        "PrometheusMetric" => {
            let source = mc.source.get_or_insert_with(SourceSpec::default);
            let http = source
                .http_get
                .get_or_insert_with(|| Value::Object(Default::default()));
            if let Value::Object(map) = http {
                if map
                    .get("path")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
                {
                    map.insert("path".into(), DEFAULT_PROMETHEUS_PATH.into());
                }
                let port_unset = match map.get("port") {
                    None | Some(Value::Null) => true,
                    Some(Value::Number(n)) => n.as_i64() == Some(0),
                    Some(Value::String(s)) => s.is_empty() || s == "0",
                    Some(_) => false,
                };
                if port_unset {
                    map.insert("port".into(), DEFAULT_PROMETHEUS_PORT.into());
                }
            }
        }
        "File" => {
            let fsp = file_system_path(mc);
            fill(&mut fsp.kind, "File");
            fill(&mut fsp.path, DEFAULT_METRICS_FILE);
            fill(&mut fsp.format, "TEXT");
        }
        "TensorFlowEvent" => {
            let fsp = file_system_path(mc);
            fill(&mut fsp.kind, "Directory");
            fill(&mut fsp.path, DEFAULT_TFEVENT_DIR);
        }
        _ => {}
    }
}

fn file_system_path(mc: &mut MetricsCollectorSpec) -> &mut FileSystemPath {
    mc.source
        .get_or_insert_with(SourceSpec::default)
        .file_system_path
        .get_or_insert_with(FileSystemPath::default)
}

fn fill(field: &mut Option<String>, value: &str) {
    if field.as_deref().is_none_or(str::is_empty) {
        *field = Some(value.to_string());
    }
}
