//! The experiment as the operator runs it: parsed, defaulted and validated by `vernier_spec`,
//! resolved by `vernier_engine` (space, objective, limits, algorithm, collector, resume
//! policy), and checked for what only the operator
//! needs (a job kind it may create, a collector it supports); the settings check is the
//! engine's. A refusal is a message naming the field and value.

use crate::context::Context;
use crate::early_stop::Stopping;
use crate::serving::{algorithm_source, served};
use kube::ResourceExt;
use kube::api::DynamicObject;
use serde_json::{Value, json};
use vernier_engine::{Collector, ResolvedExperiment, identity_seed};
use vernier_spec::types::API_VERSION;
use vernier_spec::{Experiment, parse_experiment_value_served};

/// The resolved experiment.
pub type Resolved = ResolvedExperiment;

/// Collector kinds the operator can collect from.
const COLLECTORS: [&str; 5] = ["StdOut", "Push", "File", "TensorFlowEvent", "Custom"];

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
    let served = served(ctx);
    let spec: Experiment =
        parse_experiment_value_served(&doc, &served).map_err(|e| e.to_string())?;
    check_kind(&spec, ctx)?;
    operator_refusal(&spec)?;
    let exp = ResolvedExperiment::new(spec).map_err(|e| e.to_string())?;
    // The operator has no terminal to say notes on; Katib runs such settings as they are.
    let source = algorithm_source(ctx, &exp.algorithm);
    vernier_engine::check_settings(&exp, source).map_err(|e| e.to_string())?;
    stopping(&exp, ctx).map_err(|e| format!("spec.earlyStopping: {e}"))?;
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

/// Refuses what the operator cannot run whatever its flags: a metrics collector it cannot
/// collect from, a warm start, a Job the API server refuses (`vernier validate` asks too, so
/// it never calls such an experiment valid on a cluster).
pub fn operator_refusal(spec: &Experiment) -> Result<(), String> {
    check_collector(spec)?;
    check_warm_start(spec)?;
    check_restart_policy(spec)
}

/// A batch Job whose pod template sets no `restartPolicy` is defaulted to `Always` and then
/// refused by the API server, so every trial would fail at creation; local mode only warns.
fn check_restart_policy(spec: &Experiment) -> Result<(), String> {
    let tt = spec.spec.trial_template.as_ref();
    let job = tt.and_then(|t| t.trial_spec.as_ref());
    match job.and_then(vernier_spec::validate::unset_restart_policy) {
        Some(problem) => Err(problem.to_string()),
        None => Ok(()),
    }
}

/// A warm start reads earlier experiments from the driver's own store, or a file on its
/// machine: neither is where an operator runs, and running without it would quietly search
/// from scratch.
fn check_warm_start(spec: &Experiment) -> Result<(), String> {
    match spec.spec.warm_start {
        None => Ok(()),
        Some(_) => Err(
            "spec.warmStart: is not run by the operator (it reads earlier \
             experiments from a local database or a file on the driver's machine); hint: remove \
             it, or run the experiment with `vernier run`"
                .into(),
        ),
    }
}

fn check_collector(spec: &Experiment) -> Result<(), String> {
    let collector = Collector::of(spec.spec.metrics_collector_spec.as_ref());
    let collector = collector.kind();
    if COLLECTORS.contains(&collector) {
        return check_injection(spec, collector);
    }
    Err(format!(
        "spec.metricsCollectorSpec.collector.kind: value {collector:?} is not supported by the operator; hint: use StdOut (the primary container's log is followed), File or TensorFlowEvent (read by an injected sidecar), Custom (your collector container, injected beside the trial) or Push"
    ))
}

/// Collectors that run inside the trial's pods: the operator injects them into the pod
/// templates of the job, so a job without one (an Argo Workflow, a Tekton PipelineRun) cannot
/// have them. Katib injects them with a pod webhook, which this operator does not have.
const INJECTED: [&str; 3] = ["File", "TensorFlowEvent", "Custom"];

fn check_injection(spec: &Experiment, collector: &str) -> Result<(), String> {
    let tt = spec.spec.trial_template.as_ref();
    let Some(job) = tt.and_then(|t| t.trial_spec.as_ref()) else {
        return Ok(());
    };
    if !INJECTED.contains(&collector) || crate::trial_job::has_pod_template(job) {
        return Ok(());
    }
    let kind = job.get("kind").and_then(Value::as_str).unwrap_or_default();
    Err(format!(
        "spec.metricsCollectorSpec.collector.kind: value {collector:?} is injected into the pod \
         templates of the trial's job, and a {kind} has none (Katib injects collectors with a pod \
         webhook, which vernier operator does not have); hint: print the metrics and use StdOut \
         (the log of the primary pods, found by primaryPodLabels, is followed), or use Push: add the \
         trial parameter {{name: trialName, reference: ${{trialSpec.Name}}}} and set \
         KATIB_TRIAL_NAME to ${{trialParameters.trialName}} in the training container's env"
    ))
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
    exp.setting_seed()
        .unwrap_or_else(|| identity_seed(&obj.uid().unwrap_or_else(|| obj.name_any())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn experiment(collector: &str, job: Value) -> Experiment {
        let doc = json!({
            "apiVersion": API_VERSION, "kind": "Experiment",
            "metadata": {"name": "e", "namespace": "default"},
            "spec": {
                "objective": {"type": "maximize", "objectiveMetricName": "acc"},
                "algorithm": {"algorithmName": "random"},
                "metricsCollectorSpec": {"collector": {"kind": collector,
                    "customCollector": {"name": "c", "image": "c"}}},
                "parameters": [{"name": "lr", "parameterType": "double",
                    "feasibleSpace": {"min": "0.1", "max": "0.2"}}],
                "trialTemplate": {
                    "primaryContainerName": "main",
                    "successCondition": "status.phase",
                    "failureCondition": "status.failed",
                    "trialParameters": [{"name": "lr", "reference": "lr"}],
                    "trialSpec": job
                }
            }
        });
        vernier_spec::parse_experiment_value(&doc).expect("experiment")
    }

    #[test]
    fn collectors_injected_into_pods_need_a_pod_template() {
        let container = json!({"name": "main", "image": "x", "args": ["${trialParameters.lr}"]});
        let job = json!({"apiVersion": "batch/v1", "kind": "Job",
            "spec": {"template": {"spec": {"containers": [container],
                "restartPolicy": "Never"}}}});
        let workflow = json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
            "spec": {"templates": [{"name": "main", "container": container}]}});
        let cases = [
            ("StdOut", &workflow, None),
            ("Push", &workflow, None),
            ("File", &job, None),
            ("Custom", &job, None),
            (
                "File",
                &workflow,
                Some("value \"File\" is injected into the pod templates"),
            ),
            ("TensorFlowEvent", &workflow, Some("a Workflow has none")),
            (
                "Custom",
                &workflow,
                Some("hint: print the metrics and use StdOut"),
            ),
        ];
        for (collector, job, refused) in cases {
            let got = operator_refusal(&experiment(collector, job.clone()));
            match refused {
                None => assert_eq!(got, Ok(()), "{collector} {job}"),
                Some(text) => {
                    let e = got.expect_err(collector);
                    assert!(e.contains(text), "{e}");
                }
            }
        }
    }

    #[test]
    fn a_job_the_api_server_defaults_to_restart_always_is_refused() {
        let container = json!({"name": "main", "image": "x", "args": ["${trialParameters.lr}"]});
        let job = |pod: Value| json!({"apiVersion": "batch/v1", "kind": "Job", "spec": {"template": {"spec": pod}}});
        let unset = job(json!({"containers": [container]}));
        let e = operator_refusal(&experiment("StdOut", unset)).expect_err("unset");
        assert!(
            e.starts_with(
                "spec.trialTemplate.trialSpec.spec.template.spec.restartPolicy: is not set"
            ),
            "{e}"
        );
        assert!(e.contains("hint: set restartPolicy: Never"), "{e}");
        for policy in ["Never", "OnFailure"] {
            let set = job(json!({"containers": [container], "restartPolicy": policy}));
            assert_eq!(
                operator_refusal(&experiment("StdOut", set)),
                Ok(()),
                "{policy}"
            );
        }
    }
}
