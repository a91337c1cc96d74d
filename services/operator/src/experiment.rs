//! The Experiment reconciler, an observe → decide → act shell: the spec is validated and
//! resolved ([`crate::experiment_check`]), the trials are listed
//! ([`crate::experiment_trials`]), the shared planner decides how many trials to ask the
//! algorithm for and whether the experiment is over, new Trial objects are created
//! ([`crate::trial_create`]), and Katib's status is written (conditions, counters, trial
//! lists, `currentOptimalTrial`).
//!
//! Trials are named `<experiment>-<suffix>` from the experiment's UID and the trial's sequence
//! number (numbers continue after the highest in use), and every reconcile lists the trials
//! (from the operator's Trial cache, which a change reaches before the reconcile it causes): a restarted operator (or a retried
//! reconcile) continues the sequence where the existing trials end and never creates a trial
//! twice. A reconcile whose cache does not show every trial this operator just created waits
//! for it ([`crate::expectations`]); a create that still meets the existing trial of its
//! sequence number (a 409) takes it as it is.

use crate::accepted_spec::{
    ANNOTATION as ACCEPTED_SPEC, COUNTS_ANNOTATION, Effective, MAX_KEPT_BYTES, STATUS_COPY,
    annotation_json, count_refusal, counts_changed, counts_of, effective, kept_json, refused_note,
    with_counts_of,
};
use crate::context::Context;
use crate::early_stop::Stopping;
use crate::error::{OperatorError, Result};
use crate::events::publish;
use crate::experiment_check::{Resolved, checked_experiment, experiment_seed, stopping};
use crate::experiment_trials::{
    Listed, list_trials, list_trials_as_created, outcomes, records, timed,
};
use crate::names::ALGORITHM_STATE_ANNOTATION;
use crate::objects::{
    experiment_resource, is_conflict, namespaced, now_rfc3339, now_us, patch_status,
};
use crate::serving::serving;
use crate::stop_trials::{rules_for_new_trials, stop_trials};
use crate::trial_create::{Batch, create_trials};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vernier_core::{Suggestions, TrialState};
use vernier_engine::reason::{
    EXPERIMENT_CREATED, EXPERIMENT_CREATED_MESSAGE, EXPERIMENT_INVALID, EXPERIMENT_RESTARTING,
    EXPERIMENT_RESTARTING_MESSAGE, EXPERIMENT_RUNNING, EXPERIMENT_RUNNING_MESSAGE,
};
use vernier_engine::{ExternalRequest, SourceError, SuggestInput, resume, search_ended};
use vernier_spec::conditions::{set_condition, set_terminal};
use vernier_spec::plan::{Completion, Limits, Plan, plan};
use vernier_spec::status::{ExperimentStatus, OptimalTrial};
use vernier_store::{LEASE_TTL, StoreError};

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

/// The experiment changed since it was read (see [`Run::save_as_read`]): read it again this
/// soon.
const CONFLICT_RETRY: Duration = Duration::from_millis(100);

/// A running experiment is reconciled at least this often (trial changes wake it sooner).
const RESYNC: Duration = Duration::from_secs(300);

/// How often a suggestion Deployment still starting is looked at again (its pod answers only
/// after its readiness probe's first period, 10 s by Katib's default).
const SERVICE_STARTING: Duration = Duration::from_secs(2);

/// The Normal event telling that a deployed suggestion service is not answering yet (Katib
/// shows the Suggestion's `DeploymentReady` condition `False`, reason `DeploymentNotReady`).
const DEPLOYMENT_NOT_READY: &str = "SuggestionDeploymentNotReady";

/// What was asked for, or how soon to ask a suggestion service again that gave no answer.
type Answer<T> = std::result::Result<T, Duration>;

/// Katib's condition reason for an experiment that fails validation.
pub const INVALID_REASON: &str = EXPERIMENT_INVALID;

pub async fn reconcile(obj: Arc<DynamicObject>, ctx: Arc<Context>) -> Result<Action> {
    if !ctx.tenure.holds() {
        // Woken from a pause past the leader lease: the controllers stop at the next round.
        return Ok(Action::await_change());
    }
    let started = Instant::now();
    let result = match reconcile_experiment(&obj, &ctx).await {
        Err(e) if is_conflict(&e) => Ok(Action::requeue(CONFLICT_RETRY)),
        other => other,
    };
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

async fn reconcile_experiment(obj: &DynamicObject, ctx: &Context) -> Result<Action> {
    let mut run = Run::read(obj, ctx);
    if obj.meta().deletion_timestamp.is_some() {
        // Trials are owned by the experiment: the garbage collector removes them.
        crate::serving::forget(ctx, obj, &run.ns);
        ctx.service_backoff.reset(&run.key());
        ctx.leases.release(&ctx.store, &run.ns, &run.name).await?;
        return Ok(Action::await_change());
    }
    let ended = run.ended();
    let kept = kept_json(obj, ACCEPTED_SPEC, "spec");
    let kept_counts = kept_json(obj, COUNTS_ANNOTATION, "counts");
    let spec = run.spec_to_run(kept.as_ref(), kept_counts.as_ref()).await;
    // A finished experiment's service is not asked (nor deployed again) to check its settings.
    let check = ended.as_ref().is_none_or(|e| e.reason == INVALID_REASON);
    let (exp, counts_new) = match (
        resolve(obj, &run.ns, spec.clone(), ctx, check).await?,
        &ended,
    ) {
        (Ok(exp), _) => {
            let counts_new = kept_counts
                .as_ref()
                .is_none_or(|k| counts_changed(&spec, k));
            let kept_counts = kept_counts.filter(|_| !counts_new);
            run.keep_accepted(&spec, kept.as_ref(), kept_counts.as_ref())
                .await?;
            (exp, counts_new)
        }
        // A finished experiment keeps its one terminal condition, whatever its spec (or the
        // ConfigMap of its template) says now: Katib never validates it again.
        (Err(_), Some(e)) if e.reason != INVALID_REASON => {
            ctx.leases.release(&ctx.store, &run.ns, &run.name).await?;
            return Ok(Action::await_change());
        }
        // Katib's webhook refuses an invalid edit of a running experiment, which runs on;
        // here the edit is stored, so no trial starts until the spec is valid again.
        (Err(message), None) if run.status.trials > 0 => return run.edit_refused(message).await,
        (Err(message), _) => return run.invalid(message).await,
    };
    if let Some(ended) = ended {
        if ended.reason == INVALID_REASON {
            run.revalidated().await;
        } else if restartable(&exp, &run.status, &ended) {
            run.restart().await;
        } else {
            ctx.leases.release(&ctx.store, &run.ns, &run.name).await?;
            if let Some(service) = serving(ctx, obj, &run.ns, &exp.algorithm) {
                service.retire(ctx, exp.resume_policy).await?;
            }
            run.note_unused_raise(&exp, &ended, counts_new).await;
            let listed = list_trials(ctx, obj, &run.ns, &run.name, &exp.objective).await?;
            return run.refresh_ended(&exp, &listed).await;
        }
    }
    if let Err(e) = ctx.leases.hold(&ctx.store, &run.ns, &run.name).await {
        return run.wait_for_lease(e).await;
    }
    drive(run, &exp, obj, ctx).await
}

/// One round of a running experiment: the early-stopping rule stops trials, the trials the
/// planner asks for are created, and the status is written.
async fn drive(run: Run<'_>, exp: &Resolved, obj: &DynamicObject, ctx: &Context) -> Result<Action> {
    let stopping = stopping(exp, ctx).map_err(OperatorError::Algorithm)?;
    let mut listed = list_trials(ctx, obj, &run.ns, &run.name, &exp.objective).await?;
    let names: Vec<String> = listed.iter().map(Listed::name).collect();
    if ctx.expectations.waiting(&run.key(), &names, Instant::now()) {
        // The cache has not shown every trial the last reconcile created: plan from it later.
        return Ok(Action::requeue(Duration::from_millis(100)));
    }
    stop_trials(ctx, &stopping, exp, &run.ns, &listed).await?;
    let mut p = plan(&exp.objective, exp.limits, &outcomes(&listed), false);
    let mut retry = None;
    if p.completion.is_none() && p.request > 0 {
        let active = p.counts.active() as usize;
        match run
            .create_requested(exp, &stopping, &mut listed, (p.request, active))
            .await?
        {
            Ok(exhausted) => p = plan(&exp.objective, exp.limits, &outcomes(&listed), exhausted),
            Err(wait) => retry = Some(wait),
        }
    }
    let running = listed.iter().any(|l| l.state == TrialState::Running);
    let watching = !matches!(stopping, Stopping::Off) && running;
    let again = look_again(watching, ctx.config.observation_interval);
    let again = retry.map_or(again, |wait| wait.min(again));
    run.finish(&listed, &p, again).await
}

/// How soon a running experiment is reconciled again when nothing changes: at the observation
/// interval while an early-stopping rule watches running trials, since a trial can break it
/// without its Trial object changing (the same value reported again leaves its observation as
/// it was, so nothing would wake the experiment), else at the periodic resync.
fn look_again(watching: bool, observation_interval: Duration) -> Duration {
    match watching {
        true => observation_interval.min(RESYNC),
        false => RESYNC,
    }
}

/// The refusals told with a Warning event, as a JSON object of a digest of each note by kind
/// of refusal ([`Run::announce`]).
const ANNOUNCED_ANNOTATION: &str = "vernier.kubeflow.org/announced";

/// `spec` (a configMap template read from the cluster) validated and resolved, or why not;
/// with `check`, also by the suggestion service serving its algorithm, if one does.
async fn resolve(
    obj: &DynamicObject,
    ns: &str,
    spec: Value,
    ctx: &Context,
    check: bool,
) -> Result<std::result::Result<Resolved, String>> {
    use crate::template_source::{Resolved as Source, resolve};
    let exp = match resolve(&ctx.client, spec).await? {
        Source::Spec(spec) => checked_experiment(obj, spec, ctx),
        Source::Invalid(message) => Err(message),
    };
    let service = serving(ctx, obj, ns, exp.as_ref().map_or("", |e| &e.algorithm));
    match (exp, service) {
        (Ok(exp), Some(service)) if check => Ok(service.check(ctx, &exp).await?.map(|()| exp)),
        (exp, _) => Ok(exp),
    }
}

/// A terminal condition of the experiment: its type and reason.
struct Ended {
    succeeded: bool,
    reason: String,
}

impl Ended {
    /// As the engine's resume rule reads it.
    fn as_resume(&self) -> resume::Ended<'_> {
        resume::Ended {
            succeeded: self.succeeded,
            reason: &self.reason,
        }
    }
}

/// Whether an ended experiment continues (Katib: a LongRunning/FromVolume experiment whose
/// `maxTrialCount` was raised past its trials).
fn restartable(exp: &Resolved, status: &ExperimentStatus, ended: &Ended) -> bool {
    let trials = status.trials.max(0) as u32;
    exp.resume_policy
        .continues(ended.as_resume(), exp.limits.max_trials, trials)
}

/// One reconcile of one experiment: who it is, and its status as read and as being written.
struct Run<'a> {
    ctx: &'a Context,
    obj: &'a DynamicObject,
    api: Api<DynamicObject>,
    ns: String,
    name: String,
    old: ExperimentStatus,
    status: ExperimentStatus,
}

impl<'a> Run<'a> {
    /// Reads the status, with Katib's Created condition and start time on a new experiment.
    fn read(obj: &'a DynamicObject, ctx: &'a Context) -> Run<'a> {
        let ns = obj.namespace().unwrap_or_else(|| "default".into());
        let old: ExperimentStatus = obj
            .data
            .get("status")
            .cloned()
            .and_then(|s| serde_json::from_value(s).ok())
            .unwrap_or_default();
        let mut status = old.clone();
        if !status.conditions.iter().any(|c| c.type_ == "Created") {
            status.start_time.get_or_insert_with(now_rfc3339);
            let (reason, message) = (EXPERIMENT_CREATED, EXPERIMENT_CREATED_MESSAGE);
            set_condition(
                &mut status.conditions,
                "Created",
                true,
                reason,
                message,
                now_us(),
            );
        }
        Run {
            ctx,
            obj,
            api: namespaced(&ctx.client, &experiment_resource(), &ns),
            ns,
            name: obj.name_any(),
            old,
            status,
        }
    }

    fn ended(&self) -> Option<Ended> {
        let c = self
            .status
            .conditions
            .iter()
            .find(|c| (c.type_ == "Succeeded" || c.type_ == "Failed") && c.status == "True")?;
        Some(Ended {
            succeeded: c.type_ == "Succeeded",
            reason: c.reason.clone(),
        })
    }

    /// The ended experiment continues: Restarting replaces its terminal condition.
    async fn restart(&mut self) {
        let conditions = &mut self.status.conditions;
        conditions.retain(|c| c.type_ != "Succeeded" && c.type_ != "Failed");
        let (reason, message) = (EXPERIMENT_RESTARTING, EXPERIMENT_RESTARTING_MESSAGE);
        set_condition(conditions, "Restarting", true, reason, message, now_us());
        self.status.completion_time = None;
        let note = format!(
            "experiment {} continues: maxTrialCount was raised",
            self.name
        );
        self.event(false, EXPERIMENT_RESTARTING, note).await;
    }

    /// A spec marked invalid was corrected (or its template's ConfigMap appeared): the
    /// experiment starts as if just created, since Katib's webhook would have refused the
    /// invalid version and accepted this one.
    async fn revalidated(&mut self) {
        let conditions = &mut self.status.conditions;
        conditions.retain(|c| c.type_ != "Failed");
        self.status.completion_time = None;
        let note = format!("experiment {}: the spec is valid now; it runs", self.name);
        self.event(false, "ValidationSucceeded", note).await;
    }

    /// An ended experiment's trials may still finish (those running when the goal was
    /// reached): its counters, lists and best trial follow them, its terminal condition
    /// stays, and no trial is created (Katib reconciles a completed experiment until no
    /// trial runs).
    async fn refresh_ended(mut self, exp: &Resolved, listed: &[Listed]) -> Result<Action> {
        let p = plan(&exp.objective, exp.limits, &outcomes(listed), false);
        write_status(&mut self.status, listed, &p);
        self.save().await?;
        Ok(Action::await_change())
    }

    /// Writes the status when it changed: counters, lists, the best trial and conditions.
    async fn save(&mut self) -> Result<()> {
        self.write_status(None).await
    }

    /// Writes the status when it changed, only over the experiment as it was read: an ending
    /// decided on a stale copy of a running experiment fails with a conflict instead of ending
    /// it, and announcing its end, again.
    async fn save_as_read(&mut self) -> Result<()> {
        let read_at = self.obj.resource_version();
        self.write_status(read_at.as_deref()).await
    }

    async fn write_status(&mut self, read_at: Option<&str>) -> Result<()> {
        if self.status != self.old {
            self.status.last_reconcile_time = Some(now_rfc3339());
            let (api, name) = (&self.api, &self.name);
            patch_status(api, name, &self.status, CLEARABLE, read_at).await?;
        }
        Ok(())
    }

    /// A running experiment whose spec an edit made invalid: its running trials go on, no
    /// trial starts, and a Warning event says why until the spec is valid again. Its counters,
    /// lists and best trial still follow the trials, judged by the objective they were created
    /// with (the edited one may be what is invalid); nothing ends it meanwhile.
    async fn edit_refused(mut self, message: String) -> Result<Action> {
        let note = format!(
            "the edited spec is invalid, so no trial starts until it is corrected (Katib's \
             webhook would refuse the edit); running trials go on: {message}"
        );
        self.event(true, "ValidationFailed", note).await;
        let listed = list_trials_as_created(self.ctx, self.obj, &self.ns, &self.name).await?;
        let Some((objective, listed)) = listed else {
            return Ok(Action::await_change());
        };
        // Only the counts and the best trial are written: no limit, and no ending.
        let unlimited = Limits {
            parallel: 0,
            max_trials: None,
            max_failed: None,
        };
        let p = plan(&objective, unlimited, &outcomes(&listed), false);
        write_status(&mut self.status, &listed, &p);
        self.save().await?;
        Ok(Action::await_change())
    }

    /// A finished experiment whose `maxTrialCount` was raised but that does not continue:
    /// Katib's webhook refuses that edit; here a Warning event says why nothing happens. One
    /// that reached maxTrialCount is told about its `resumePolicy`; one that ended otherwise
    /// (failed, or reached its goal) only when the counts were just edited (`counts_new`), as
    /// its maxTrialCount may have been above its trials all along.
    async fn note_unused_raise(&self, exp: &Resolved, ended: &Ended, counts_new: bool) {
        let trials = self.status.trials.max(0) as u32;
        let raised = exp.limits.max_trials.is_some_and(|max| max > trials);
        let reopenable = exp.resume_policy.reopenable(ended.as_resume(), trials);
        if !raised || reopenable {
            self.announce("restart", "RestartRefused", None).await;
            return;
        }
        let note = if ended.reason == Completion::MaxTrialsReached.reason() {
            format!(
                "maxTrialCount is above the {trials} trial(s) run, but an experiment with \
                 resumePolicy {} does not continue (Katib's webhook refuses this edit); hint: \
                 experiments that should continue are created with resumePolicy LongRunning \
                 or FromVolume",
                exp.resume_policy.as_str()
            )
        } else if counts_new {
            format!(
                "the edit of the trial counts is not applied: an experiment that ended with \
                 {} does not continue, only one that reached maxTrialCount with resumePolicy \
                 LongRunning or FromVolume (Katib's webhook refuses this edit); hint: create \
                 a new experiment to search again",
                ended.reason
            )
        } else {
            return;
        };
        self.announce("restart", "RestartRefused", Some(note)).await;
    }

    /// Marks the experiment Failed with the validation errors, once, with a Warning event.
    async fn invalid(mut self, message: String) -> Result<Action> {
        let reason = INVALID_REASON;
        set_terminal(
            &mut self.status.conditions,
            "Failed",
            reason,
            &message,
            now_us(),
        );
        if self.status.conditions != self.old.conditions {
            self.status.completion_time = Some(now_rfc3339());
            self.status.last_reconcile_time = Some(now_rfc3339());
            patch_status(&self.api, &self.name, &self.status, &[], None).await?;
            self.event(true, "ValidationFailed", message).await;
        }
        // A change of the experiment wakes it; a change of its template's ConfigMap does not.
        let from_config_map = self
            .obj
            .data
            .pointer("/spec/trialTemplate/configMap")
            .is_some_and(|c| !c.is_null());
        Ok(match from_config_map {
            true => Action::requeue(self.ctx.config.config_map_recheck),
            false => Action::await_change(),
        })
    }

    /// The spec to run: the stored one, or where an edit is refused the one last accepted
    /// (`kept`), and where a count edit is refused the counts last accepted (`kept_counts`);
    /// each refusal is announced.
    async fn spec_to_run(&self, kept: Option<&Value>, kept_counts: Option<&Value>) -> Value {
        let stored = self.obj.data.get("spec").cloned().unwrap_or(Value::Null);
        let (spec, refused) = match effective(&stored, kept) {
            Effective::Current => (stored, None),
            Effective::Accepted { spec, field } => (spec, Some(refused_note(&field))),
        };
        self.refused("spec", refused).await;
        let refused =
            kept_counts.and_then(|k| Some((k, count_refusal(&spec, k, self.status.trials)?)));
        // Told again when the refused counts change, not as the trials the note counts grow.
        let edited_counts = counts_of(&spec).to_string();
        let spec = match &refused {
            Some((k, _)) => with_counts_of(&spec, k),
            None => spec,
        };
        let refused = refused.map(|(_, note)| (note, edited_counts));
        self.announce_as("counts", "EditRefused", refused).await;
        spec
    }

    /// The experiment's key among the expectations of trials created and not yet seen.
    fn key(&self) -> String {
        format!("{}/{}", self.ns, self.name)
    }

    /// Asks the algorithm for `request` trials, with `active` trials pending or running, and
    /// creates them, adding them to `listed`; whether the search has ended, or how soon to
    /// ask again a suggestion service that gave no answer (told with a Warning event).
    async fn create_requested(
        &self,
        exp: &Resolved,
        stopping: &Stopping,
        listed: &mut Vec<Listed>,
        (request, active): (u32, usize),
    ) -> Result<Answer<bool>> {
        let ctx = self.ctx;
        let suggested = match self.suggest(exp, listed, request).await? {
            Ok(suggested) => suggested,
            Err(retry) => return Ok(Err(retry)),
        };
        let exhausted = search_ended(&suggested, active);
        self.save_algorithm_state(suggested.state).await?;
        let batch = Batch {
            ctx,
            owner: self.obj,
            exp,
            ns: &self.ns,
            rules: rules_for_new_trials(ctx, stopping, exp, listed).await?,
        };
        let proposals = &suggested.proposals[..suggested.proposals.len().min(request as usize)];
        let known = listed.len();
        let created = create_trials(&batch, proposals, listed).await;
        let fresh = listed[known..].iter().map(|l| l.name().to_string());
        ctx.expectations.created(&self.key(), fresh);
        created?;
        Ok(Ok(exhausted))
    }

    /// The proposals for `count` more trials, from the trials so far: enqueued configurations
    /// first, then the algorithm's, or the suggestion service's.
    async fn suggest(
        &self,
        exp: &Resolved,
        listed: &[Listed],
        count: u32,
    ) -> Result<Answer<Suggestions>> {
        let algorithm_error =
            |e: vernier_engine::EngineError| OperatorError::Algorithm(e.to_string());
        let records = records(&exp.space, listed);
        let state = self
            .obj
            .annotations()
            .get(ALGORITHM_STATE_ANNOTATION)
            .map(String::as_str);
        let seed = experiment_seed(self.obj, exp);
        let queued = vernier_engine::enqueue::enqueued(exp, &records, count as usize, state, seed);
        if let Some(queued) = queued.map_err(algorithm_error)? {
            return Ok(Ok(queued));
        }
        if let Some(service) = serving(self.ctx, self.obj, &self.ns, &exp.algorithm) {
            if !service.ready(self.ctx, exp.resume_policy).await? {
                let note = format!(
                    "{} is starting: no trial is asked of it until its Deployment is Available \
                     (looked at again every {} s); hint: `kubectl describe deployment` shows \
                     why its pod is not ready",
                    service.describe,
                    SERVICE_STARTING.as_secs()
                );
                self.note_once("deployment", DEPLOYMENT_NOT_READY, Some(note))
                    .await;
                return Ok(Err(SERVICE_STARTING));
            }
            self.note_once("deployment", DEPLOYMENT_NOT_READY, None)
                .await;
            let request = ExternalRequest {
                experiment: exp,
                trials: timed(&records, listed),
                count: count as usize,
                total: listed.len() + count as usize,
                state,
            };
            let answer = service.services.suggest(&service.address, request).await;
            if matches!(answer, Err(SourceError::Unavailable(_))) {
                service.unanswered(self.ctx);
            }
            return Ok(self.service_answered(&service.describe, answer).await);
        }
        let suggester = vernier_engine::build_suggester(exp, seed).map_err(algorithm_error)?;
        let input = SuggestInput {
            history: &records,
            own: records.len(),
            count: count as usize,
            state,
        };
        let suggested = vernier_engine::suggest(suggester.as_ref(), exp, seed, input);
        suggested.map(Ok).map_err(algorithm_error)
    }

    /// The service's proposals; a failed call is told with a Warning event, once while it
    /// fails the same way, and the experiment asks again after a growing wait (Katib's
    /// controller requeues the Suggestion; neither a refusal nor an outage ends the search).
    async fn service_answered(
        &self,
        source: &str,
        answer: std::result::Result<Suggestions, SourceError>,
    ) -> Answer<Suggestions> {
        let (how, message) = match answer {
            Ok(suggestions) => {
                self.ctx.service_backoff.reset(&self.key());
                self.announce("suggestion", "SuggestionFailed", None).await;
                return Ok(suggestions);
            }
            Err(SourceError::Unavailable(m)) => ("is unavailable", m),
            Err(SourceError::Rejected(m)) => ("refused the request", m),
        };
        let wait = self.ctx.service_backoff.next(&self.key());
        let note = format!(
            "{source} {how} ({message}); no trial is created until it answers, asked again in \
             {:.1} s; hint: check the service's log, and the address the operator was given \
             (--suggestion-plugin, --suggestion-config)",
            wait.as_secs_f64()
        );
        let about = format!("{source} {how}");
        self.announce_as("suggestion", "SuggestionFailed", Some((note, about)))
            .await;
        Err(wait)
    }

    /// Keeps what later edits are checked against, of `spec`, valid and about to run: the
    /// spec itself when none is `kept` yet, its counts when none are kept (`kept_counts` is
    /// `None` also when the counts just changed).
    async fn keep_accepted(
        &self,
        spec: &Value,
        kept: Option<&Value>,
        kept_counts: Option<&Value>,
    ) -> Result<()> {
        let mut annotations = serde_json::Map::new();
        let new_counts = kept_counts.is_none().then(|| counts_of(spec));
        if let Some(counts) = &new_counts {
            annotations.insert(COUNTS_ANNOTATION.into(), counts.to_string().into());
        }
        let new_spec = match kept {
            Some(_) => None,
            None => {
                let text = spec.to_string();
                if text.len() > MAX_KEPT_BYTES {
                    tracing::warn!(
                        "experiment {}/{}: its spec ({} bytes) is too large to keep in an \
                         annotation, so edits Katib's webhook refuses are applied to it",
                        self.ns,
                        self.name,
                        text.len()
                    );
                    None
                } else {
                    annotations.insert(ACCEPTED_SPEC.into(), text.into());
                    Some(spec)
                }
            }
        };
        if !annotations.is_empty() {
            let patch = json!({"metadata": {"annotations": annotations}});
            self.api
                .patch(&self.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
        self.copy_accepted(new_spec.or(kept), new_counts.as_ref().or(kept_counts))
            .await
    }

    /// Keeps the status copy of the accepted spec and counts (see [`STATUS_COPY`]) equal to
    /// what the annotations hold after [`Run::keep_accepted`], writing it when it differs
    /// (also for an experiment accepted before the copy existed).
    async fn copy_accepted(&self, spec: Option<&Value>, counts: Option<&Value>) -> Result<()> {
        let now = self.obj.data.pointer(&format!("/status/{STATUS_COPY}"));
        let held = |key: &str| now.and_then(|n| n.get(key));
        if now.is_some() && held("spec") == spec && held("counts") == counts {
            return Ok(());
        }
        // Only what is kept: a null in a merge patch would delete the key, and the copy would
        // never equal what the server then holds.
        let copy: serde_json::Map<String, Value> = [("spec", spec), ("counts", counts)]
            .into_iter()
            .filter_map(|(k, v)| Some((k.to_string(), v?.clone())))
            .collect();
        let patch = json!({"status": {STATUS_COPY: copy}});
        self.api
            .patch_status(&self.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        Ok(())
    }

    /// Keeps the algorithm's opaque state on the Experiment when it changed.
    async fn save_algorithm_state(&self, state: Option<String>) -> Result<()> {
        let old = self.obj.annotations().get(ALGORITHM_STATE_ANNOTATION);
        if state.is_none() || state.as_ref() == old {
            return Ok(());
        }
        let patch = json!({"metadata": {"annotations": {ALGORITHM_STATE_ANNOTATION: state}}});
        let params = PatchParams::default();
        self.api
            .patch(&self.name, &params, &Patch::Merge(&patch))
            .await?;
        Ok(())
    }

    /// Writes counters, lists, the best trial and the Running or terminal condition.
    async fn finish(mut self, listed: &[Listed], p: &Plan, again: Duration) -> Result<Action> {
        // Restarting stays once set, as Katib leaves it (`wait_for_experiment_condition(...,
        // "Restarting")` of its SDK waits for it).
        write_status(&mut self.status, listed, p);
        let mut ending = None;
        match p.completion {
            Some(completion) => {
                let kind = if completion.succeeded() {
                    "Succeeded"
                } else {
                    "Failed"
                };
                let (reason, message) = (completion.reason(), completion.message());
                set_terminal(&mut self.status.conditions, kind, reason, message, now_us());
                self.status.completion_time = Some(now_rfc3339());
                ending = Some((
                    !completion.succeeded(),
                    format!("Experiment{kind}"),
                    message,
                ));
            }
            None => {
                let (reason, message) = (EXPERIMENT_RUNNING, EXPERIMENT_RUNNING_MESSAGE);
                set_condition(
                    &mut self.status.conditions,
                    "Running",
                    true,
                    reason,
                    message,
                    now_us(),
                );
            }
        }
        // Told only once the status that says it is written.
        if let Some((warning, reason, message)) = ending {
            self.save_as_read().await?;
            self.event(warning, &reason, message.to_string()).await;
        } else {
            self.save().await?;
        }
        Ok(match p.completion {
            Some(_) => {
                let leases = &self.ctx.leases;
                leases
                    .release(&self.ctx.store, &self.ns, &self.name)
                    .await?;
                Action::await_change()
            }
            None => Action::requeue(again),
        })
    }

    /// Another driver (a `vernier run` sharing the operator's database) holds the experiment's
    /// lease: drive nothing, say who holds it, and look again once a lapsed lease could be
    /// taken over.
    async fn wait_for_lease(&self, error: StoreError) -> Result<Action> {
        let StoreError::LeaseHeld {
            host,
            pid,
            since,
            heartbeat_age_s,
            ..
        } = &error
        else {
            return Err(error.into());
        };
        let note = format!(
            "experiment {} is driven by a local vernier (pid {pid} on host {host}, since \
             {since}, last heartbeat {heartbeat_age_s} s ago) that shares the operator's \
             database; no trials are created while it holds the experiment's lease; hint: stop \
             it, or rename one of the two experiments",
            self.name
        );
        tracing::warn!("{note}");
        self.event(true, "LeaseHeld", note).await;
        Ok(Action::requeue(LEASE_TTL))
    }

    /// An `EditRefused` Warning for a refusal of `kind` (`spec` or `counts`), told once while
    /// it holds; `None`: nothing of that kind is refused now.
    async fn refused(&self, kind: &str, note: Option<String>) {
        self.announce(kind, "EditRefused", note).await;
    }

    /// Tells a standing refusal (`note`; `None` once it cleared) of `kind` with a Warning
    /// event, once: again only when it changes or after it cleared. What was told is also kept
    /// on the Experiment ([`ANNOUNCED_ANNOTATION`]), so a restarted operator does not tell
    /// every standing refusal again.
    async fn announce(&self, kind: &str, reason: &str, note: Option<String>) {
        let note = note.map(|n| (n.clone(), n));
        self.announce_as(kind, reason, note).await;
    }

    /// [`Run::announce`] of a note whose text may change while the refusal it tells does not:
    /// `about` says what is refused, and only a change of it is told again.
    async fn announce_as(&self, kind: &str, reason: &str, note: Option<(String, String)>) {
        self.announce_event(true, kind, reason, note).await;
    }

    /// A passing state of `kind` (`note`; `None` once it is over) told once with a Normal
    /// event, as [`Run::announce`] tells a refusal.
    async fn note_once(&self, kind: &str, reason: &str, note: Option<String>) {
        let note = note.map(|n| (n.clone(), n));
        self.announce_event(false, kind, reason, note).await;
    }

    async fn announce_event(
        &self,
        warning: bool,
        kind: &str,
        reason: &str,
        note: Option<(String, String)>,
    ) {
        let (note, about) = note.unzip();
        let key = format!("{}/{}/{kind}", self.ns, self.name);
        let fresh = self.ctx.announced.first(&key, about.as_deref());
        // Anything but an object there (edited by hand) counts as nothing told.
        let mut told = match annotation_json(self.obj, ANNOUNCED_ANNOTATION) {
            Some(Value::Object(map)) => map,
            _ => serde_json::Map::new(),
        };
        let before = told.get(kind).cloned();
        let Some(note) = note else {
            if told.remove(kind).is_some() {
                self.keep_announced(&told).await;
            }
            return;
        };
        let digest = json!(crate::events::note_digest(
            about.as_deref().unwrap_or(&note)
        ));
        if !fresh || before.as_ref() == Some(&digest) {
            return;
        }
        self.event(warning, reason, note).await;
        told.insert(kind.to_string(), digest);
        self.keep_announced(&told).await;
    }

    async fn keep_announced(&self, told: &serde_json::Map<String, Value>) {
        let text = Value::Object(told.clone()).to_string();
        let patch = json!({"metadata": {"annotations": {ANNOUNCED_ANNOTATION: text}}});
        if let Err(e) = self
            .api
            .patch(&self.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::warn!(
                "experiment {}/{}: cannot keep what was told: {e}",
                self.ns,
                self.name
            );
        }
    }

    async fn event(&self, warning: bool, reason: &str, note: String) {
        let recorder = &self.ctx.recorder;
        publish(
            recorder,
            self.obj,
            &experiment_resource(),
            warning,
            reason,
            note,
        )
        .await;
    }
}

/// Counters, trial lists and the best trial, from the listed trials.
fn write_status(status: &mut ExperimentStatus, listed: &[Listed], p: &Plan) {
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
            .map(Listed::name)
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
        best_trial_name: best.name(),
        parameter_assignments: best.spec.parameter_assignments.clone(),
        observation: best.status.observation.clone().unwrap_or_default(),
    });
}
