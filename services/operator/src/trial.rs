//! The Trial reconciler: create the trial's job (any allowed kind) owned by the Trial, follow
//! its primary container's log into the store while it runs, evaluate the job's success and
//! failure conditions, and write the Trial's conditions and observation in Katib's form.
//! On deletion the finalizer removes the trial's observation logs from the store.

use crate::context::Context;
use crate::error::{OperatorError, Result};
use crate::experiment::RENDER_ERROR_ANNOTATION;
use crate::jobs::{JobOutcome, evaluate};
use crate::logs::{FollowState, FollowTarget, Wake};
use crate::objects::{
    namespaced, now_rfc3339, now_us, owner_reference, publish, replace_status, state_of,
    trial_resource, trial_status,
};
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Instant;
use vernier_core::{Objective, Observation as Log, TrialState, UNAVAILABLE};
use vernier_spec::conditions::{set_condition, set_terminal};
use vernier_spec::status::{MetricValues, Observation, TrialStatus};
use vernier_spec::trial::{EXPERIMENT_LABEL, TRIAL_LABEL, TrialSpec};
use vernier_spec::types::{API_VERSION, ExperimentSpec};

/// Katib's finalizer name: the trial's observation logs are deleted before it goes.
pub const FINALIZER: &str = "clean-metrics-in-db";

/// How often a running trial whose log is followed is reconciled when nothing wakes it: a
/// backstop for missed wake-ups, not the way observations arrive.
const RESYNC: std::time::Duration = std::time::Duration::from_secs(300);

/// Katib's zero time (`0001-01-01T00:00:00Z`) in µs, the time of the `unavailable` log.
const ZERO_TIME_US: i64 = -62_135_596_800_000_000;

pub async fn reconcile(obj: Arc<DynamicObject>, ctx: Arc<Context>) -> Result<Action> {
    let started = Instant::now();
    let result = match reconcile_trial(&obj, &ctx).await {
        // Another writer changed the trial since it was read: read it again.
        Err(e) if crate::objects::is_conflict(&e) => {
            Ok(Action::requeue(std::time::Duration::from_millis(100)))
        }
        other => other,
    };
    ctx.metrics.reconciled("trial", started.elapsed());
    if result.is_ok() {
        ctx.backoff.reset(&key(&obj));
    }
    result
}

pub fn error_policy(obj: Arc<DynamicObject>, error: &OperatorError, ctx: Arc<Context>) -> Action {
    ctx.metrics.failed("trial");
    let delay = ctx.backoff.next(&key(&obj));
    tracing::warn!("trial {}: {error}; retrying in {delay:?}", key(&obj));
    Action::requeue(delay)
}

fn key(obj: &DynamicObject) -> String {
    format!(
        "trial/{}/{}",
        obj.namespace().unwrap_or_default(),
        obj.name_any()
    )
}

async fn reconcile_trial(obj: &DynamicObject, ctx: &Context) -> Result<Action> {
    let ns = obj.namespace().unwrap_or_else(|| "default".into());
    let name = obj.name_any();
    let api = namespaced(ctx, &trial_resource(), &ns);
    let has_finalizer = obj.finalizers().iter().any(|f| f == FINALIZER);
    if obj.meta().deletion_timestamp.is_some() {
        ctx.followers.stop(&follow_key(obj));
        if has_finalizer {
            ctx.store.delete_observations(&name).await?;
            let rest: Vec<&String> = obj
                .finalizers()
                .iter()
                .filter(|f| *f != FINALIZER)
                .collect();
            let patch = json!({"metadata": {"finalizers": rest}});
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
        return Ok(Action::await_change());
    }
    if !has_finalizer {
        let mut all: Vec<String> = obj.finalizers().to_vec();
        all.push(FINALIZER.into());
        let patch = json!({"metadata": {"finalizers": all}});
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        return Ok(Action::await_change());
    }

    let old = trial_status(obj);
    let mut status = old.clone();
    let state = state_of(&status.conditions);
    let spec = match obj.data.get("spec").map(TrialSpec::deserialize) {
        Some(Ok(spec)) => spec,
        unreadable => {
            let why = match unreadable {
                Some(Err(e)) => format!("spec: {e}"),
                _ => "spec: is required".into(),
            };
            return fail(ctx, obj, &api, status, &old, "TrialFailed", why).await;
        }
    };
    let objective = objective_of(&spec);

    if state.is_terminal() {
        ctx.followers.stop(&follow_key(obj));
        if !spec.retain_run
            && let Some(run_spec) = &spec.run_spec
            && let Some((job_api, _)) = job_api(ctx, run_spec, &ns)
        {
            match job_api.delete(&name, &DeleteParams::background()).await {
                Ok(_) => {
                    publish(
                        ctx,
                        obj,
                        &trial_resource(),
                        false,
                        "JobDeleted",
                        format!("job {name} deleted because the trial is {state}"),
                    )
                    .await
                }
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(e.into()),
            }
        }
        return Ok(Action::await_change());
    }

    let Some(run_spec) = spec.run_spec.clone() else {
        let why = obj
            .annotations()
            .get(RENDER_ERROR_ANNOTATION)
            .cloned()
            .unwrap_or_else(|| "spec.runSpec: is required".into());
        return fail(ctx, obj, &api, status, &old, "TrialFailed", why).await;
    };
    let Some((job_api, kind)) = job_api(ctx, &run_spec, &ns) else {
        let k = run_spec
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let v = run_spec
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let message = format!(
            "spec.runSpec.kind: value {k:?} (apiVersion {v:?}) is not a trial resource this operator may create; hint: allowed are {}",
            ctx.allowed_kinds()
        );
        return fail(ctx, obj, &api, status, &old, "TrialFailed", message).await;
    };

    let now = now_us();
    let job = match job_api.get_opt(&name).await? {
        Some(job) => job,
        None if state == TrialState::Created
            && !status.conditions.iter().any(|c| c.type_ == "Running") =>
        {
            let run_spec = crate::sidecar::inject(&ctx.config, &spec, &name, run_spec);
            let job = job_object(obj, &spec, run_spec, &name, &ns);
            match job_api.create(&PostParams::default(), &job).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 409 => {}
                Err(kube::Error::Api(e)) if e.code == 404 => {
                    let message = format!(
                        "Trial has failed. Job message: the API server does not serve {kind} ({}); hint: install the operator that provides it",
                        e.message
                    );
                    return fail(
                        ctx,
                        obj,
                        &api,
                        status,
                        &old,
                        "TrialFailed. Job reason: KindNotServed",
                        message,
                    )
                    .await;
                }
                Err(e) => return Err(e.into()),
            }
            status.start_time.get_or_insert_with(now_rfc3339);
            set_condition(
                &mut status.conditions,
                "Created",
                true,
                "TrialCreated",
                "Trial is created",
                now,
            );
            publish(
                ctx,
                obj,
                &trial_resource(),
                false,
                "JobCreated",
                format!("{kind} {name} created"),
            )
            .await;
            update(&api, obj, &mut status, &old).await?;
            return Ok(Action::requeue(ctx.config.observation_interval));
        }
        None => {
            return fail(
                ctx,
                obj,
                &api,
                status,
                &old,
                "TrialFailed. Job reason: JobDeleted",
                format!(
                    "Trial has failed. Job message: {kind} {name} was deleted before it finished"
                ),
            )
            .await;
        }
    };

    let job_json = serde_json::to_value(&job).map_err(|e| OperatorError::Malformed {
        object: format!("job {name}"),
        message: e.to_string(),
    })?;
    let success = spec.success_condition.clone().unwrap_or_default();
    let failure = spec.failure_condition.clone().unwrap_or_default();
    let collects_log = collector_kind(&spec) == "StdOut";
    let target = || FollowTarget {
        namespace: ns.clone(),
        trial: name.clone(),
        pod_labels: spec.primary_pod_labels.clone().unwrap_or_default(),
        container: spec.primary_container_name.clone().unwrap_or_default(),
        metrics: objective
            .as_ref()
            .map(Objective::metric_names)
            .unwrap_or_default(),
        formats: spec
            .metrics_collector
            .as_ref()
            .and_then(|m| m.source.as_ref())
            .and_then(|s| s.filter.as_ref())
            .map(|f| f.metrics_format.clone())
            .unwrap_or_default(),
    };
    let wake = || {
        let shared = ctx.shared.clone();
        let (ns, name) = (ns.clone(), name.clone());
        Wake {
            interval: ctx.config.observation_interval,
            wake: Arc::new(move || shared.wake_trial(&ns, &name)),
        }
    };
    match evaluate(&job_json, &success, &failure) {
        JobOutcome::Running => {
            if collects_log {
                ctx.followers.ensure(
                    &follow_key(obj),
                    ctx.client.clone(),
                    ctx.store.clone(),
                    target(),
                    wake(),
                );
            }
            set_condition(
                &mut status.conditions,
                "Running",
                true,
                "TrialRunning",
                "Trial is running",
                now,
            );
            if let Some(objective) = &objective {
                status.observation = observation(ctx, &name, objective).await?;
            }
            if state != TrialState::Running {
                publish(
                    ctx,
                    obj,
                    &trial_resource(),
                    false,
                    "JobRunning",
                    format!("{kind} {name} is running"),
                )
                .await;
            }
            update(&api, obj, &mut status, &old).await?;
            // The log follower wakes the trial when it records something; pushed metrics
            // arrive through the gRPC server, which does not, so those are re-read.
            Ok(if collects_log && ctx.shared.is_running() {
                Action::requeue(RESYNC)
            } else {
                Action::requeue(ctx.config.observation_interval)
            })
        }
        JobOutcome::Failed { reason, message } => {
            if let Some(objective) = &objective {
                status.observation = observation(ctx, &name, objective).await?;
            }
            ctx.followers.stop(&follow_key(obj));
            let reason = format!("TrialFailed. Job reason: {reason}");
            let message = format!("Trial has failed. Job message: {message}");
            set_terminal(&mut status.conditions, "Failed", &reason, &message, now);
            status.completion_time = Some(now_rfc3339());
            publish(ctx, obj, &trial_resource(), true, "JobFailed", message).await;
            update(&api, obj, &mut status, &old).await?;
            Ok(Action::await_change())
        }
        JobOutcome::Succeeded { .. } => {
            if collects_log {
                match ctx.followers.ensure(
                    &follow_key(obj),
                    ctx.client.clone(),
                    ctx.store.clone(),
                    target(),
                    wake(),
                ) {
                    FollowState::Done => {}
                    FollowState::Following => {
                        // The log is still being read; the trial is judged on all of it. The
                        // follower wakes the trial when the log ends; the requeue is a backstop.
                        return Ok(Action::requeue(std::time::Duration::from_secs(5)));
                    }
                }
            }
            let Some(objective) = objective else {
                return fail(
                    ctx,
                    obj,
                    &api,
                    status,
                    &old,
                    "TrialFailed",
                    "spec.objective: is required to judge the trial".into(),
                )
                .await;
            };
            status.observation = observation(ctx, &name, &objective).await?;
            let observed = status
                .observation
                .as_ref()
                .and_then(|o| {
                    crate::objects::metric_value(o, &objective.metric, objective.strategy)
                })
                .is_some();
            if observed {
                set_terminal(
                    &mut status.conditions,
                    "Succeeded",
                    "TrialSucceeded",
                    "Trial has succeeded",
                    now,
                );
                publish(
                    ctx,
                    obj,
                    &trial_resource(),
                    false,
                    "JobSucceeded",
                    format!("{kind} {name} succeeded"),
                )
                .await;
            } else {
                ctx.store
                    .report_observations(
                        &name,
                        &[Log {
                            metric: objective.metric.clone(),
                            timestamp_us: ZERO_TIME_US,
                            value: UNAVAILABLE.into(),
                        }],
                    )
                    .await?;
                status.observation = observation(ctx, &name, &objective).await?;
                let hint = match crate::sidecar::metrics_location(&spec) {
                    Some(("File", path)) => format!(
                        "write a line such as `{}=0.5` to {path:?}, the File collector's path",
                        objective.metric
                    ),
                    Some((_, dir)) => format!(
                        "write a scalar summary tagged {:?} to an event file under {dir:?}",
                        objective.metric
                    ),
                    None if collector_kind(&spec) == "Push" => format!(
                        "report {:?} with ReportObservationLog to the operator's DBManager (e.g. the Katib SDK's report_metrics)",
                        objective.metric
                    ),
                    None => format!(
                        "print a line such as `{}=0.5` from container {:?}",
                        objective.metric,
                        spec.primary_container_name.clone().unwrap_or_default()
                    ),
                };
                let message = format!(
                    "Metrics are not available: the job succeeded but the objective metric {:?} was never reported; hint: {hint}",
                    objective.metric,
                );
                set_terminal(
                    &mut status.conditions,
                    "MetricsUnavailable",
                    "MetricsUnavailable",
                    &message,
                    now,
                );
                publish(
                    ctx,
                    obj,
                    &trial_resource(),
                    true,
                    "MetricsUnavailable",
                    message,
                )
                .await;
            }
            ctx.followers.stop(&follow_key(obj));
            status.completion_time = Some(now_rfc3339());
            update(&api, obj, &mut status, &old).await?;
            Ok(Action::await_change())
        }
    }
}

fn follow_key(obj: &DynamicObject) -> String {
    obj.uid()
        .unwrap_or_else(|| format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name_any()))
}

fn collector_kind(spec: &TrialSpec) -> String {
    spec.metrics_collector
        .as_ref()
        .and_then(|m| m.collector.as_ref())
        .and_then(|c| c.kind.clone())
        .unwrap_or_else(|| "StdOut".into())
}

/// The trial's objective with strategies resolved, through the same conversion as an
/// experiment's.
pub(crate) fn objective_of(spec: &TrialSpec) -> Option<Objective> {
    let exp = vernier_spec::Experiment {
        spec: ExperimentSpec {
            objective: spec.objective.clone(),
            ..Default::default()
        },
        ..Default::default()
    };
    exp.objective().ok()
}

/// The API for the job's kind, if that kind is allowed.
fn job_api(
    ctx: &Context,
    run_spec: &Value,
    ns: &str,
) -> Option<(kube::Api<DynamicObject>, String)> {
    let api_version = run_spec.get("apiVersion").and_then(Value::as_str)?;
    let kind = run_spec.get("kind").and_then(Value::as_str)?;
    let k = ctx.trial_kind(api_version, kind)?;
    Some((namespaced(ctx, &k.api_resource(), ns), kind.to_string()))
}

/// The job to create: the rendered run spec, owned by the Trial, with the trial and
/// experiment labels on the job and on every pod template inside it, so that the trial's
/// pods can be found by label whatever controller creates them.
fn job_object(
    trial: &DynamicObject,
    spec: &TrialSpec,
    mut run_spec: Value,
    name: &str,
    ns: &str,
) -> DynamicObject {
    let mut labels = serde_json::Map::new();
    labels.insert(TRIAL_LABEL.into(), name.into());
    if let Some(exp) = trial.labels().get(EXPERIMENT_LABEL) {
        labels.insert(EXPERIMENT_LABEL.into(), exp.clone().into());
    }
    label_pod_templates(&mut run_spec, &labels);
    if let Some(obj) = run_spec.as_object_mut() {
        let meta = obj.entry("metadata").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert("name".into(), name.into());
            meta.insert("namespace".into(), ns.into());
            let l = meta.entry("labels").or_insert_with(|| json!({}));
            if let Some(l) = l.as_object_mut() {
                l.extend(labels.clone());
            }
            if let Some(owner) = owner_reference(trial, API_VERSION, "Trial") {
                meta.insert("ownerReferences".into(), json!([owner]));
            }
        }
    }
    let _ = spec;
    serde_json::from_value(run_spec.clone()).unwrap_or_else(|_| DynamicObject {
        types: None,
        metadata: Default::default(),
        data: run_spec,
    })
}

/// Adds `labels` to `metadata.labels` of every pod template (an object with `spec.containers`
/// under a `template` key), wherever it sits in the job.
fn label_pod_templates(value: &mut Value, labels: &serde_json::Map<String, Value>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if k == "template"
                    && v.pointer("/spec/containers").is_some_and(Value::is_array)
                    && let Some(t) = v.as_object_mut()
                {
                    let meta = t.entry("metadata").or_insert_with(|| json!({}));
                    if let Some(meta) = meta.as_object_mut() {
                        let l = meta.entry("labels").or_insert_with(|| json!({}));
                        if let Some(l) = l.as_object_mut() {
                            l.extend(labels.clone());
                        }
                    }
                }
                label_pod_templates(v, labels);
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| label_pod_templates(v, labels)),
        _ => {}
    }
}

/// Katib's observation: `{name, min, max, latest}` for every metric with observations, from
/// the store's reduced observation (one query however long the log).
async fn observation(
    ctx: &Context,
    trial: &str,
    objective: &Objective,
) -> Result<Option<Observation>> {
    let metrics: Vec<MetricValues> = ctx
        .store
        .trial_metric_summaries(trial, &objective.metric_names())
        .await?
        .into_iter()
        .map(|s| MetricValues {
            min: s.min_text(),
            max: s.max_text(),
            latest: s.latest,
            name: s.name,
        })
        .collect();
    Ok((!metrics.is_empty()).then_some(Observation { metrics }))
}

/// Patches the status when it changed (an unchanged patch would only wake the experiment).
async fn update(
    api: &kube::Api<DynamicObject>,
    obj: &DynamicObject,
    status: &mut TrialStatus,
    old: &TrialStatus,
) -> Result<()> {
    if status != old {
        status.last_reconcile_time = Some(now_rfc3339());
        replace_status(api, obj, status).await?;
    }
    Ok(())
}

async fn fail(
    ctx: &Context,
    obj: &DynamicObject,
    api: &kube::Api<DynamicObject>,
    mut status: TrialStatus,
    old: &TrialStatus,
    reason: &str,
    message: String,
) -> Result<Action> {
    set_terminal(&mut status.conditions, "Failed", reason, &message, now_us());
    if status != *old {
        status.completion_time = Some(now_rfc3339());
        update(api, obj, &mut status, old).await?;
        publish(ctx, obj, &trial_resource(), true, "JobFailed", message).await;
    }
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_every_pod_template() {
        let mut tf = json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "spec": {"tfReplicaSpecs": {
                "Chief": {"template": {"spec": {"containers": [{"name": "tensorflow"}]}}},
                "PS": {"template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "tensorflow"}]}}}
            }}
        });
        let mut labels = serde_json::Map::new();
        labels.insert(TRIAL_LABEL.into(), "t-1".into());
        label_pod_templates(&mut tf, &labels);
        assert_eq!(
            tf.pointer(
                "/spec/tfReplicaSpecs/Chief/template/metadata/labels/katib.kubeflow.org~1trial"
            ),
            Some(&json!("t-1"))
        );
        assert_eq!(
            tf.pointer("/spec/tfReplicaSpecs/PS/template/metadata/labels/a"),
            Some(&json!("b"))
        );
        assert_eq!(
            tf.pointer(
                "/spec/tfReplicaSpecs/PS/template/metadata/labels/katib.kubeflow.org~1trial"
            ),
            Some(&json!("t-1"))
        );
    }

    #[test]
    fn trial_objective_resolves_default_strategy() {
        let spec: TrialSpec = serde_json::from_value(json!({
            "objective": {"type": "maximize", "objectiveMetricName": "accuracy", "additionalMetricNames": ["loss"]}
        }))
        .unwrap();
        let o = objective_of(&spec).unwrap();
        assert_eq!(o.metric_names(), vec!["accuracy", "loss"]);
        assert_eq!(o.strategy, vernier_core::MetricStrategy::Max);
    }
}
