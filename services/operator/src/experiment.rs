//! The Experiment reconciler: validate and default the spec with `vernier_spec`, ask the shared
//! planner what to do, create Trial objects for the algorithm's proposals, and write Katib's
//! status (conditions, counters, trial lists, `currentOptimalTrial`).
//!
//! Trials are named `<experiment>-<suffix>` from the experiment's seed and the trial's sequence
//! number, and every reconcile lists the trials (from the operator's Trial cache, which a
//! change reaches before the reconcile it causes): a restarted operator (or a retried
//! reconcile) continues the sequence where the existing trials end and never creates a trial
//! twice. A cache that lags behind a create only makes the next create of that sequence
//! number meet the existing trial (a 409), which is then taken as it is.

use crate::context::Context;
use crate::error::{OperatorError, Result};
use crate::objects::{
    experiment_resource, namespaced, now_rfc3339, owned_trials, owner_reference, patch_status,
    publish, state_of, trial_resource, trial_status,
};
use crate::trial::FINALIZER;
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use vernier_algorithms::checkpoint::{parent_trial, trial_dir_setting};
use vernier_core::{
    Assignment, EarlyStoppingRequest, Objective, SuggestRequest, TrialProgress, TrialRecord,
    TrialState,
};
use vernier_runner::names::{suggest_seed, trial_name};
use vernier_runner::{LocalExperiment, LocalPaths};
use vernier_spec::conditions::{set_condition, set_terminal};
use vernier_spec::plan::{TrialOutcome, plan};
use vernier_spec::status::{ExperimentStatus, OptimalTrial, ParameterAssignment, TrialStatus};
use vernier_spec::trial::{EXPERIMENT_LABEL, TrialSpec};
use vernier_spec::types::API_VERSION;
use vernier_spec::{Experiment, parse_experiment_value};

/// Annotation on each Trial: its position in the experiment's sequence.
pub const SEQ_ANNOTATION: &str = "vernier/trial-seq";
/// Annotation on a Trial whose template could not be rendered: why.
pub const RENDER_ERROR_ANNOTATION: &str = "vernier/render-error";
/// Annotation on the Experiment holding the algorithm's opaque state between calls.
pub const ALGORITHM_STATE_ANNOTATION: &str = "vernier/algorithm-state";

/// Status fields a merge patch must clear when they become empty.
const CLEARABLE: &[&str] = &[
    "currentOptimalTrial",
    "runningTrialList",
    "pendingTrialList",
    "failedTrialList",
    "succeededTrialList",
    "killedTrialList",
    "earlyStoppedTrialList",
    "metricsUnavailableTrialList",
    "trials",
    "trialsSucceeded",
    "trialsFailed",
    "trialsKilled",
    "trialsPending",
    "trialsRunning",
    "trialsEarlyStopped",
    "trialMetricsUnavailable",
];

/// Trial objects created at once within one reconcile.
const CREATE_CONCURRENCY: usize = 16;

/// Katib's condition reason for an experiment that fails validation.
pub const INVALID_REASON: &str = "ExperimentInvalid";

pub async fn reconcile(obj: Arc<DynamicObject>, ctx: Arc<Context>) -> Result<Action> {
    let started = Instant::now();
    let result = reconcile_experiment(&obj, &ctx).await;
    ctx.metrics.reconciled("experiment", started.elapsed());
    if result.is_ok() {
        ctx.backoff.reset(&key(&obj));
    }
    result
}

pub fn error_policy(obj: Arc<DynamicObject>, error: &OperatorError, ctx: Arc<Context>) -> Action {
    ctx.metrics.failed("experiment");
    let delay = ctx.backoff.next(&key(&obj));
    tracing::warn!("experiment {}: {error}; retrying in {delay:?}", key(&obj));
    Action::requeue(delay)
}

fn key(obj: &DynamicObject) -> String {
    format!(
        "experiment/{}/{}",
        obj.namespace().unwrap_or_default(),
        obj.name_any()
    )
}

/// One trial of the experiment as listed.
struct Listed {
    obj: Arc<DynamicObject>,
    spec: TrialSpec,
    status: TrialStatus,
    state: TrialState,
    objective: Option<f64>,
    /// Every metric the objective records, by its strategy (objectives, constraints).
    metrics: BTreeMap<String, f64>,
    /// The objective's observed value is text (DARTS's genotype), not a number.
    text_objective: bool,
}

async fn reconcile_experiment(obj: &DynamicObject, ctx: &Context) -> Result<Action> {
    if obj.meta().deletion_timestamp.is_some() {
        // Trials are owned by the experiment: the garbage collector removes them.
        return Ok(Action::await_change());
    }
    let ns = obj.namespace().unwrap_or_else(|| "default".into());
    let name = obj.name_any();
    let api = namespaced(ctx, &experiment_resource(), &ns);
    let old_status: ExperimentStatus = obj
        .data
        .get("status")
        .cloned()
        .and_then(|s| serde_json::from_value(s).ok())
        .unwrap_or_default();
    let mut status = old_status.clone();
    let now = now_rfc3339();
    let now_us = crate::objects::now_us();
    if !status.conditions.iter().any(|c| c.type_ == "Created") {
        status.start_time.get_or_insert_with(|| now.clone());
        set_condition(
            &mut status.conditions,
            "Created",
            true,
            "ExperimentCreated",
            "Experiment is created",
            now_us,
        );
    }

    let spec = obj.data.get("spec").cloned().unwrap_or(Value::Null);
    let spec = match crate::template_source::resolve(&ctx.client, spec).await? {
        crate::template_source::Resolved::Spec(spec) => spec,
        crate::template_source::Resolved::Invalid(message) => {
            return invalid(ctx, obj, &api, status, &old_status, message).await;
        }
    };
    let exp = match checked_experiment(obj, spec, ctx) {
        Ok(exp) => exp,
        Err(message) => return invalid(ctx, obj, &api, status, &old_status, message).await,
    };

    if let Some(terminal) = status
        .conditions
        .iter()
        .find(|c| (c.type_ == "Succeeded" || c.type_ == "Failed") && c.status == "True")
    {
        let restartable = vernier_spec::plan::continues_after_completion(
            exp.spec.spec.resume_policy.as_deref(),
            terminal.type_ == "Succeeded",
            &terminal.reason,
            exp.limits.max_trials,
            status.trials.max(0) as u32,
        );
        if !restartable {
            return Ok(Action::await_change());
        }
        status
            .conditions
            .retain(|c| c.type_ != "Succeeded" && c.type_ != "Failed");
        set_condition(
            &mut status.conditions,
            "Restarting",
            true,
            "ExperimentRestarting",
            "Experiment is restarted",
            now_us,
        );
        status.completion_time = None;
        publish(
            ctx,
            obj,
            &experiment_resource(),
            false,
            "ExperimentRestarting",
            format!("experiment {name} continues: maxTrialCount was raised"),
        )
        .await;
    }

    let mut listed = list_trials(ctx, obj, &ns, &name, &exp).await?;
    early_stop(ctx, &exp, &ns, &listed).await?;

    let algorithm_state = obj.annotations().get(ALGORITHM_STATE_ANNOTATION).cloned();
    let seed = experiment_seed(obj, &exp);
    let mut p = plan(&exp.objective, exp.limits, &outcomes(&listed), false);
    if p.completion.is_none() && p.request > 0 {
        let records = records(&exp, &listed);
        let settings = vernier_algorithms::with_random_state(&exp.settings, seed);
        let suggester =
            vernier_algorithms::build(&exp.algorithm, &settings, &exp.space, &exp.objective)
                .map_err(|e| OperatorError::Algorithm(e.to_string()))?;
        let suggestions = vernier_algorithms::suggest_guarded(
            suggester.as_ref(),
            &SuggestRequest {
                space: &exp.space,
                objective: &exp.objective,
                trials: &records,
                count: p.request as usize,
                seed: suggest_seed(seed, records.len()),
                state: algorithm_state.as_deref(),
            },
        )
        .map_err(|e| OperatorError::Algorithm(e.to_string()))?;
        if suggestions.state.is_some() && suggestions.state != algorithm_state {
            let patch = json!({"metadata": {"annotations": {ALGORITHM_STATE_ANNOTATION: suggestions.state}}});
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
        let active = p.counts.active();
        let exhausted = suggestions.exhausted || (suggestions.proposals.is_empty() && active == 0);
        // Creates run concurrently (API round trips dominate); results come back in sequence
        // order, and the first error stops the batch after the trials already created.
        let first_seq = listed.len() as u64;
        let mut creates = Vec::new();
        for (i, proposal) in suggestions
            .proposals
            .iter()
            .take(p.request as usize)
            .enumerate()
        {
            creates.push(create_trial(
                ctx,
                obj,
                &exp,
                &ns,
                seed,
                first_seq + i as u64,
                &proposal.assignment,
                &proposal.labels,
            ));
        }
        if !creates.is_empty() {
            ensure_checkpoint_claim(ctx, obj, &exp, &ns).await?;
        }
        let mut created = futures_util::stream::iter(creates).buffered(CREATE_CONCURRENCY);
        while let Some(trial) = created.next().await {
            let trial = trial?;
            // Met an existing trial the cache did not show yet: count it once.
            if !listed.iter().any(|l| l.obj.uid() == trial.obj.uid()) {
                listed.push(trial);
            }
        }
        p = plan(&exp.objective, exp.limits, &outcomes(&listed), exhausted);
    }

    write_status(&mut status, &listed, &p);
    if let Some(completion) = p.completion {
        let kind = if completion.succeeded() {
            "Succeeded"
        } else {
            "Failed"
        };
        set_terminal(
            &mut status.conditions,
            kind,
            completion.reason(),
            completion.message(),
            now_us,
        );
        status.completion_time = Some(now.clone());
        status.conditions.retain(|c| c.type_ != "Restarting");
        publish(
            ctx,
            obj,
            &experiment_resource(),
            !completion.succeeded(),
            &format!("Experiment{kind}"),
            completion.message().to_string(),
        )
        .await;
    } else {
        status.conditions.retain(|c| c.type_ != "Restarting");
        set_condition(
            &mut status.conditions,
            "Running",
            true,
            "ExperimentRunning",
            "Experiment is running",
            now_us,
        );
    }
    if status != old_status {
        status.last_reconcile_time = Some(now);
        patch_status(&api, &name, &status, CLEARABLE).await?;
    }
    Ok(if p.completion.is_some() {
        Action::await_change()
    } else {
        Action::requeue(Duration::from_secs(300))
    })
}

/// With `suggestion_trial_dir` set, the experiment's checkpoint volume claim exists before
/// its trials do (created once, owned by the experiment; an existing one is kept as is).
async fn ensure_checkpoint_claim(
    ctx: &Context,
    owner: &DynamicObject,
    exp: &LocalExperiment,
    ns: &str,
) -> Result<()> {
    if trial_dir_setting(&exp.settings).is_none() {
        return Ok(());
    }
    let name = crate::checkpoints::claim_name(&owner.name_any(), &exp.algorithm);
    let owner_ref = owner_reference(owner, API_VERSION, "Experiment")
        .and_then(|o| serde_json::to_value(o).ok());
    let claim: PersistentVolumeClaim = serde_json::from_value(crate::checkpoints::claim_object(
        &name, ns, owner_ref,
    ))
    .map_err(|e| OperatorError::Malformed {
        object: format!("persistentvolumeclaim {name}"),
        message: e.to_string(),
    })?;
    let api: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), ns);
    match api.create(&PostParams::default(), &claim).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// The rendered job with the trial's checkpoint directory (and its parent's copy) when the
/// experiment sets `suggestion_trial_dir`; unchanged otherwise.
fn with_checkpoints(
    ctx: &Context,
    exp: &LocalExperiment,
    experiment: &str,
    trial: &str,
    labels: &BTreeMap<String, String>,
    run_spec: Value,
) -> Value {
    let Some(mount_path) = trial_dir_setting(&exp.settings) else {
        return run_spec;
    };
    let claim = crate::checkpoints::claim_name(experiment, &exp.algorithm);
    let primary = exp
        .spec
        .spec
        .trial_template
        .as_ref()
        .and_then(|t| t.primary_container_name.as_deref());
    let c = crate::checkpoints::TrialCheckpoint {
        claim: &claim,
        mount_path,
        experiment,
        trial,
        parent: parent_trial(labels),
        primary_container: primary,
        image: &ctx.config.collector_image,
    };
    crate::checkpoints::inject(&c, run_spec)
}

/// Parses, defaults and validates the experiment, then checks what the operator itself needs.
fn checked_experiment(
    obj: &DynamicObject,
    spec: Value,
    ctx: &Context,
) -> std::result::Result<LocalExperiment, String> {
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
    let tt = spec.spec.trial_template.as_ref();
    let Some(run_spec) = tt.and_then(|t| t.trial_spec.as_ref()) else {
        return Err("spec.trialTemplate.trialSpec: is required; hint: write the job inline in trialSpec or point configMap at a stored template".into());
    };
    let api_version = run_spec
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = run_spec
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if ctx.trial_kind(api_version, kind).is_none() {
        return Err(format!(
            "spec.trialTemplate.trialSpec.kind: value {kind:?} (apiVersion {api_version:?}) is not a trial resource this operator may create; hint: allowed are {}; add it with --trial-resources",
            ctx.allowed_kinds()
        ));
    }
    let collector = spec
        .spec
        .metrics_collector_spec
        .as_ref()
        .and_then(|m| m.collector.as_ref())
        .and_then(|c| c.kind.clone())
        .unwrap_or_else(|| "StdOut".into());
    if !["StdOut", "Push", "File", "TensorFlowEvent", "Custom"].contains(&collector.as_str()) {
        return Err(format!(
            "spec.metricsCollectorSpec.collector.kind: value {collector:?} is not supported by the operator; hint: use StdOut (the primary container's log is followed), File or TensorFlowEvent (read by an injected sidecar), Custom (your collector container, injected beside the trial) or Push"
        ));
    }
    let paths = LocalPaths {
        work_dir: ".".into(),
        log_dir: ".".into(),
    };
    let exp = LocalExperiment::new(spec, paths).map_err(|e| e.to_string())?;
    check_settings(&exp, ctx)?;
    Ok(exp)
}

/// Builds the algorithm and the early-stopping rule once, so a setting they refuse (unknown,
/// or out of range) fails the experiment naming the setting and value, as `vernier run` does,
/// instead of failing every reconcile and being retried forever.
fn check_settings(exp: &LocalExperiment, ctx: &Context) -> std::result::Result<(), String> {
    vernier_algorithms::build(&exp.algorithm, &exp.settings, &exp.space, &exp.objective)
        .map_err(|e| format!("spec.algorithm: {e}"))?;
    if let (Some(es), Some(factory)) = (
        exp.spec.spec.early_stopping.as_ref(),
        ctx.early_stopping.as_ref(),
    ) {
        let settings: Vec<(String, String)> = es
            .algorithm_settings
            .iter()
            .map(|s| (s.name.clone(), s.value.clone()))
            .collect();
        let name = es.algorithm_name.as_deref().unwrap_or_default();
        factory(name, &settings).map_err(|e| format!("spec.earlyStopping: {e}"))?;
    }
    Ok(())
}

/// Marks the experiment Failed with the validation errors, once, with a Warning event.
async fn invalid(
    ctx: &Context,
    obj: &DynamicObject,
    api: &kube::Api<DynamicObject>,
    mut status: ExperimentStatus,
    old: &ExperimentStatus,
    message: String,
) -> Result<Action> {
    let now_us = crate::objects::now_us();
    set_terminal(
        &mut status.conditions,
        "Failed",
        INVALID_REASON,
        &message,
        now_us,
    );
    if status.conditions != old.conditions {
        status.completion_time = Some(now_rfc3339());
        status.last_reconcile_time = Some(now_rfc3339());
        patch_status(api, &obj.name_any(), &status, &[]).await?;
        publish(
            ctx,
            obj,
            &experiment_resource(),
            true,
            "ValidationFailed",
            message,
        )
        .await;
    }
    Ok(Action::await_change())
}

/// The experiment's seed: its `random_state` setting, else a hash of its UID (stable across
/// operator restarts, different for a re-created experiment of the same name).
fn experiment_seed(obj: &DynamicObject, exp: &LocalExperiment) -> u64 {
    vernier_algorithms::seed_setting(&exp.algorithm, &exp.settings).unwrap_or_else(|| {
        let uid = obj.uid().unwrap_or_else(|| obj.name_any());
        // FNV-1a: tiny, and unlike std's hasher guaranteed stable across Rust releases.
        uid.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    })
}

async fn list_trials(
    ctx: &Context,
    obj: &DynamicObject,
    ns: &str,
    name: &str,
    exp: &LocalExperiment,
) -> Result<Vec<Listed>> {
    let trials: Vec<Arc<DynamicObject>> = match ctx.shared.trials().await {
        Some(cache) => {
            let uid = obj.uid();
            cache.state_filter(|t| {
                t.namespace().as_deref() == Some(ns)
                    && t.labels().get(EXPERIMENT_LABEL).map(String::as_str) == Some(name)
                    && crate::objects::owned_by(t, uid.as_deref())
            })
        }
        None => {
            let api = namespaced(ctx, &trial_resource(), ns);
            owned_trials(&api, obj, name)
                .await?
                .into_iter()
                .map(Arc::new)
                .collect()
        }
    };
    let mut listed: Vec<(u64, Listed)> = Vec::with_capacity(trials.len());
    for t in trials {
        let seq = t
            .annotations()
            .get(SEQ_ANNOTATION)
            .and_then(|s| s.parse().ok())
            .unwrap_or(u64::MAX);
        // A trial whose spec cannot be read still counts (it occupies its sequence number).
        let spec: TrialSpec = t
            .data
            .get("spec")
            .and_then(|s| TrialSpec::deserialize(s).ok())
            .unwrap_or_default();
        let status = trial_status(&t);
        let state = state_of(&status.conditions);
        let metrics = metrics_of(&status, &exp.objective);
        let objective = metrics.get(&exp.objective.metric).copied();
        let text_objective = objective.is_none()
            && status
                .observation
                .as_ref()
                .is_some_and(|o| crate::objects::metric_is_text(o, &exp.objective.metric));
        listed.push((
            seq,
            Listed {
                obj: t,
                spec,
                status,
                state,
                objective,
                metrics,
                text_objective,
            },
        ));
    }
    listed.sort_by(|(a, x), (b, y)| {
        a.cmp(b)
            .then_with(|| x.obj.name_any().cmp(&y.obj.name_any()))
    });
    Ok(listed.into_iter().map(|(_, l)| l).collect())
}

/// Every metric of the objective reduced by its strategy, from the trial's observation.
fn metrics_of(status: &TrialStatus, objective: &Objective) -> BTreeMap<String, f64> {
    let Some(observation) = status.observation.as_ref() else {
        return BTreeMap::new();
    };
    objective
        .metric_names()
        .into_iter()
        .filter_map(|m| {
            let strategy = objective.strategy_for(&m)?;
            let v = crate::objects::metric_value(observation, &m, strategy)?;
            Some((m.to_string(), v))
        })
        .collect()
}

fn outcomes(listed: &[Listed]) -> Vec<TrialOutcome<'_>> {
    listed
        .iter()
        .map(|l| TrialOutcome {
            name: l.obj.metadata.name.as_deref().unwrap_or_default(),
            state: l.state,
            objective: l.objective,
            metrics: &l.metrics,
            text_objective: l.text_objective,
        })
        .collect()
}

/// The history handed to the algorithm; trials whose assignment does not fit the space (e.g.
/// edited by hand) are left out rather than failing the experiment.
fn records(exp: &LocalExperiment, listed: &[Listed]) -> Vec<TrialRecord> {
    listed
        .iter()
        .filter_map(|l| {
            let pairs: Vec<(String, String)> = l
                .spec
                .parameter_assignments
                .iter()
                .map(|a| (a.name.clone(), a.value.clone()))
                .collect();
            let assignment = exp.space.parse_assignment(&pairs).ok()?;
            Some(TrialRecord {
                name: l.obj.name_any(),
                assignment,
                state: l.state,
                objective: l.objective,
                labels: l.obj.labels().clone(),
                metrics: l.metrics.clone(),
            })
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
async fn create_trial(
    ctx: &Context,
    owner: &DynamicObject,
    exp: &LocalExperiment,
    ns: &str,
    seed: u64,
    seq: u64,
    assignment: &Assignment,
    proposal_labels: &BTreeMap<String, String>,
) -> Result<Listed> {
    let api = namespaced(ctx, &trial_resource(), ns);
    let exp_name = owner.name_any();
    let owner_ref = owner_reference(owner, API_VERSION, "Experiment");
    let pairs = assignment.to_strings();
    let tt = exp.spec.spec.trial_template.clone().unwrap_or_default();
    let mut labels = owner.labels().clone();
    labels.extend(proposal_labels.clone());
    labels.insert(EXPERIMENT_LABEL.into(), exp_name.clone());
    for retry in 0..16 {
        let name = trial_name(&exp_name, seed, seq, retry);
        let mut annotations = BTreeMap::from([(SEQ_ANNOTATION.to_string(), seq.to_string())]);
        let run_spec = match vernier_spec::render_trial_spec(&exp.spec, &name, &pairs) {
            Ok(v) => Some(with_checkpoints(
                ctx,
                exp,
                &exp_name,
                &name,
                proposal_labels,
                v,
            )),
            Err(e) => {
                annotations.insert(RENDER_ERROR_ANNOTATION.into(), e.to_string());
                None
            }
        };
        let spec = TrialSpec {
            objective: exp.spec.spec.objective.clone(),
            parameter_assignments: pairs
                .iter()
                .map(|(n, v)| ParameterAssignment {
                    name: n.clone(),
                    value: v.clone(),
                })
                .collect(),
            early_stopping_rules: Vec::new(),
            run_spec,
            retain_run: tt.retain.unwrap_or(false),
            metrics_collector: exp.spec.spec.metrics_collector_spec.clone(),
            primary_pod_labels: tt.primary_pod_labels.clone(),
            primary_container_name: tt.primary_container_name.clone(),
            success_condition: tt.success_condition.clone(),
            failure_condition: tt.failure_condition.clone(),
            labels: BTreeMap::new(),
        };
        let trial = json!({
            "apiVersion": API_VERSION,
            "kind": "Trial",
            "metadata": {
                "name": name,
                "namespace": ns,
                "labels": labels,
                "annotations": annotations,
                "ownerReferences": owner_ref.iter().collect::<Vec<_>>(),
                "finalizers": [FINALIZER],
            },
            "spec": spec,
        });
        let trial: DynamicObject =
            serde_json::from_value(trial).map_err(|e| OperatorError::Malformed {
                object: format!("trial {name}"),
                message: e.to_string(),
            })?;
        match api.create(&PostParams::default(), &trial).await {
            Ok(created) => {
                ctx.metrics.trial_created();
                return Ok(Listed {
                    obj: Arc::new(created),
                    spec,
                    status: TrialStatus::default(),
                    state: TrialState::Created,
                    objective: None,
                    metrics: BTreeMap::new(),
                    text_objective: false,
                });
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {
                // Ours from an interrupted reconcile (same owner and sequence number): keep it.
                if let Some(existing) = api.get_opt(&name).await? {
                    let same_owner = existing
                        .owner_references()
                        .iter()
                        .any(|o| Some(&o.uid) == owner.uid().as_ref());
                    let same_seq =
                        existing.annotations().get(SEQ_ANNOTATION) == Some(&seq.to_string());
                    if same_owner && same_seq {
                        let status = trial_status(&existing);
                        let state = state_of(&status.conditions);
                        let metrics = metrics_of(&status, &exp.objective);
                        let objective = metrics.get(&exp.objective.metric).copied();
                        // Just created by an interrupted reconcile: nothing observed yet.
                        return Ok(Listed {
                            obj: Arc::new(existing),
                            spec,
                            status,
                            state,
                            objective,
                            metrics,
                            text_objective: false,
                        });
                    }
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(OperatorError::Malformed {
        object: format!("experiment {exp_name}"),
        message: "16 trial names in a row were taken; hint: delete stale trials of this experiment"
            .into(),
    })
}

/// Counters, trial lists and the best trial, from the listed trials.
fn write_status(status: &mut ExperimentStatus, listed: &[Listed], p: &vernier_spec::plan::Plan) {
    let c = p.counts;
    status.trials = c.total as i32;
    status.trials_pending = c.pending as i32;
    status.trials_running = c.running as i32;
    status.trials_succeeded = c.succeeded as i32;
    status.trials_failed = c.failed as i32;
    status.trials_killed = c.killed as i32;
    status.trials_early_stopped = c.early_stopped as i32;
    status.trial_metrics_unavailable = c.metrics_unavailable as i32;
    let names = |s: TrialState| -> Vec<String> {
        listed
            .iter()
            .filter(|l| l.state == s)
            .map(|l| l.obj.name_any())
            .collect()
    };
    status.pending_trial_list = names(TrialState::Created);
    status.running_trial_list = names(TrialState::Running);
    status.succeeded_trial_list = names(TrialState::Succeeded);
    status.failed_trial_list = names(TrialState::Failed);
    status.killed_trial_list = names(TrialState::Killed);
    status.early_stopped_trial_list = names(TrialState::EarlyStopped);
    status.metrics_unavailable_trial_list = names(TrialState::MetricsUnavailable);
    status.current_optimal_trial = p.best.and_then(|i| listed.get(i)).map(|best| OptimalTrial {
        best_trial_name: best.obj.name_any(),
        parameter_assignments: best.spec.parameter_assignments.clone(),
        observation: best.status.observation.clone().unwrap_or_default(),
    });
}

/// The early-stopping hook: asks the configured rule which running trials to stop and marks
/// them EarlyStopped; the trial reconciler then deletes their jobs.
async fn early_stop(
    ctx: &Context,
    exp: &LocalExperiment,
    ns: &str,
    listed: &[Listed],
) -> Result<()> {
    let Some(es) = exp.spec.spec.early_stopping.as_ref() else {
        return Ok(());
    };
    let algorithm = es.algorithm_name.clone().unwrap_or_default();
    let Some(factory) = ctx.early_stopping.as_ref() else {
        let experiment = listed
            .first()
            .and_then(|l| l.obj.owner_references().first().map(|o| o.name.clone()))
            .unwrap_or_default();
        tracing::warn!(
            "experiment {ns}/{experiment}: early stopping {algorithm:?} is not available in this operator; trials run to completion"
        );
        return Ok(());
    };
    let settings: Vec<(String, String)> = es
        .algorithm_settings
        .iter()
        .map(|s| (s.name.clone(), s.value.clone()))
        .collect();
    let stopper = factory(&algorithm, &settings).map_err(OperatorError::Algorithm)?;
    let mut values: Vec<Vec<f64>> = Vec::with_capacity(listed.len());
    for l in listed {
        // A trial not started yet has no log to read.
        if l.state == TrialState::Created {
            values.push(Vec::new());
            continue;
        }
        let logs = ctx
            .store
            .observations(&l.obj.name_any(), Some(&exp.objective.metric), None, None)
            .await?;
        values.push(
            logs.iter()
                .filter_map(|o| o.value.trim().parse::<f64>().ok())
                .collect(),
        );
    }
    let names: Vec<String> = listed.iter().map(|l| l.obj.name_any()).collect();
    let progress: Vec<TrialProgress<'_>> = listed
        .iter()
        .zip(&values)
        .zip(&names)
        .map(|((l, v), n)| TrialProgress {
            name: n,
            state: l.state,
            values: v,
        })
        .collect();
    let stop = stopper
        .trials_to_stop(&EarlyStoppingRequest {
            objective: &exp.objective,
            trials: &progress,
        })
        .map_err(|e| OperatorError::Algorithm(e.to_string()))?;
    let api = namespaced(ctx, &trial_resource(), ns);
    for name in stop {
        let Some(l) = listed
            .iter()
            .find(|l| l.obj.name_any() == name && l.state == TrialState::Running)
        else {
            continue;
        };
        let mut status = l.status.clone();
        let now = crate::objects::now_us();
        set_terminal(
            &mut status.conditions,
            "EarlyStopped",
            "TrialEarlyStopped",
            &format!("Trial is early stopped by {}", stopper.name()),
            now,
        );
        status.completion_time = Some(now_rfc3339());
        match crate::objects::replace_status(&api, &l.obj, &status).await {
            Ok(()) => {}
            // The trial changed since it was listed; the next reconcile decides again.
            Err(kube::Error::Api(e)) if e.code == 409 => continue,
            Err(e) => return Err(e.into()),
        }
        publish(
            ctx,
            &l.obj,
            &trial_resource(),
            false,
            "TrialEarlyStopped",
            format!("{} stopped trial {name}", stopper.name()),
        )
        .await;
    }
    Ok(())
}
