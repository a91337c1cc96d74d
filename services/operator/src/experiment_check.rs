//! The experiment as the operator runs it: parsed, defaulted and validated by `vernier_spec`,
//! resolved (space, objective, limits, algorithm), and checked for what only the operator
//! needs (a job kind it may create, a collector it supports, settings its algorithm and
//! early-stopping rule accept). A refusal is a message naming the field and value.

use crate::context::Context;
use crate::early_stop::Stopping;
use kube::ResourceExt;
use kube::api::DynamicObject;
use serde_json::{Value, json};
use vernier_runner::{LocalExperiment, LocalPaths};
use vernier_spec::types::API_VERSION;
use vernier_spec::{Experiment, parse_experiment_value};

/// The resolved experiment.
pub type Resolved = LocalExperiment;

/// Collector kinds the operator can collect from.
const COLLECTORS: [&str; 4] = ["StdOut", "Push", "File", "TensorFlowEvent"];

/// Parses, defaults and validates the experiment, then checks what the operator itself needs.
pub fn checked_experiment(
    obj: &DynamicObject,
    spec: Value,
    ctx: &Context,
) -> Result<Resolved, String> {
    let doc = json!({
        "apiVersion": obj.types.as_ref().map_or(API_VERSION, |t| t.api_version.as_str()),
        "kind": "Experiment",
        "metadata": {
            "name": obj.name_any(),
            "namespace": obj.namespace(),
            "labels": obj.labels(),
            "annotations": {},
        },
        "spec": spec,
    });
    let spec: Experiment = parse_experiment_value(&doc).map_err(|e| e.to_string())?;
    check_kind(&spec, ctx)?;
    check_collector(&spec)?;
    let paths = LocalPaths {
        work_dir: ".".into(),
        log_dir: ".".into(),
    };
    let exp = LocalExperiment::new(spec, paths).map_err(|e| e.to_string())?;
    check_settings(&exp, ctx)?;
    Ok(exp)
}

fn check_kind(spec: &Experiment, ctx: &Context) -> Result<(), String> {
    let tt = spec.spec.trial_template.as_ref();
    let Some(run_spec) = tt.and_then(|t| t.trial_spec.as_ref()) else {
        return Err("spec.trialTemplate.trialSpec: is required; hint: write the job inline in trialSpec or point configMap at a stored template".into());
    };
    let field = |f: &str| run_spec.get(f).and_then(Value::as_str).unwrap_or_default();
    let (api_version, kind) = (field("apiVersion"), field("kind"));
    if ctx.trial_kind(api_version, kind).is_some() {
        return Ok(());
    }
    Err(format!(
        "spec.trialTemplate.trialSpec.kind: value {kind:?} (apiVersion {api_version:?}) is not a trial resource this operator may create; hint: allowed are {}; add it with --trial-resources",
        ctx.allowed_kinds()
    ))
}

fn check_collector(spec: &Experiment) -> Result<(), String> {
    let collector = spec
        .spec
        .metrics_collector_spec
        .as_ref()
        .and_then(|m| m.collector.as_ref())
        .and_then(|c| c.kind.clone())
        .unwrap_or_else(|| "StdOut".into());
    if COLLECTORS.contains(&collector.as_str()) {
        return Ok(());
    }
    Err(format!(
        "spec.metricsCollectorSpec.collector.kind: value {collector:?} is not supported by the operator; hint: use StdOut (the primary container's log is followed), File or TensorFlowEvent (read by an injected sidecar) or Push"
    ))
}

/// Builds the algorithm and the early-stopping rule once, so a setting they refuse (unknown,
/// or out of range) fails the experiment naming the setting and value, as `vernier run` does,
/// instead of failing every reconcile and being retried forever.
fn check_settings(exp: &Resolved, ctx: &Context) -> Result<(), String> {
    vernier_algorithms::build(&exp.algorithm, &exp.settings, &exp.space, &exp.objective)
        .map_err(|e| format!("spec.algorithm: {e}"))?;
    stopping(exp, ctx)
        .map(drop)
        .map_err(|e| format!("spec.earlyStopping: {e}"))
}

/// The experiment's early-stopping rule as this operator applies it.
pub fn stopping(exp: &Resolved, ctx: &Context) -> Result<Stopping, String> {
    Stopping::build(
        exp.spec.spec.early_stopping.as_ref(),
        ctx.early_stopping.as_ref(),
    )
}

/// The experiment's seed: its `random_state` setting, else a hash of its UID (stable across
/// operator restarts, different for a re-created experiment of the same name).
pub fn experiment_seed(obj: &DynamicObject, exp: &Resolved) -> u64 {
    vernier_algorithms::seed_setting(&exp.algorithm, &exp.settings).unwrap_or_else(|| {
        let uid = obj.uid().unwrap_or_else(|| obj.name_any());
        // FNV-1a: tiny, and unlike std's hasher guaranteed stable across Rust releases.
        uid.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    })
}
