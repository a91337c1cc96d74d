//! The Trial reconciler, an observe → decide → act shell: kube's finalizer helper keeps
//! Katib's finalizer on each Trial (on deletion the trial's observation logs leave the store);
//! a live trial's spec and job are read, [`crate::trial_decide`] picks the step, and the step
//! creates the job, follows its primary container's log into the store, or writes the Trial's
//! conditions and observation in Katib's form.

use crate::context::Context;
use crate::error::{OperatorError, Result};
use crate::events::publish;
use crate::jobs::evaluate;
use crate::logs::{FollowState, Wake};
use crate::names::RENDER_ERROR_ANNOTATION;
use crate::objects::{
    is_conflict, namespaced, now_rfc3339, now_us, owned_by_another_trial, replace_status,
    trial_resource,
};
use crate::trial_decide::{self as decide, Failure, Step, Verdict};
use crate::trial_job::{job_api, job_object, release};
use crate::trial_observed::{objective_values, observation};
use crate::trial_spec::{follow_target, follows_log, objective_of};
use crate::trial_state::{latest_of, state_of, trial_status};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{self, Event, finalizer};
use serde::Deserialize;
use std::sync::Arc;
use std::time::{Duration, Instant};
use vernier_core::{Objective, Observation as Log, TrialState};
use vernier_engine::reason::{
    TRIAL_CREATED, TRIAL_CREATED_MESSAGE, TRIAL_EARLY_STOPPED, TRIAL_RUNNING,
    TRIAL_RUNNING_MESSAGE, TRIAL_SUCCEEDED, TRIAL_SUCCEEDED_MESSAGE, early_stopped_message,
};
use vernier_spec::conditions::{set_condition, set_terminal, set_trial_end};
use vernier_spec::status::TrialStatus;
use vernier_spec::trial::TrialSpec;

pub use crate::names::FINALIZER;

/// How often a running trial whose log is followed is reconciled when nothing wakes it: a
/// backstop for missed wake-ups, not the way observations arrive.
const RESYNC: Duration = Duration::from_secs(300);

/// A succeeded job whose log is still being read is looked at again this soon; the follower
/// wakes the trial when the log ends, so this too is a backstop.
const DRAIN_RECHECK: Duration = Duration::from_secs(5);

/// Another writer changed the trial since it was read: read it again this soon.
const CONFLICT_RETRY: Duration = Duration::from_millis(100);

pub async fn reconcile(obj: Arc<DynamicObject>, ctx: Arc<Context>) -> Result<Action> {
    if !ctx.tenure.holds() {
        // Woken from a pause past the leader lease: the controllers stop at the next round.
        return Ok(Action::await_change());
    }
    let started = Instant::now();
    let key = key(&obj);
    let result = match reconcile_trial(obj, &ctx).await {
        Err(e) if is_conflict(&e) => Ok(Action::requeue(CONFLICT_RETRY)),
        other => other,
    };
    ctx.metrics.reconciled("trial", started.elapsed());
    if result.is_ok() {
        ctx.backoff.reset(&key);
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

async fn reconcile_trial(obj: Arc<DynamicObject>, ctx: &Context) -> Result<Action> {
    let ns = obj.namespace().unwrap_or_else(|| "default".into());
    let api = namespaced(&ctx.client, &trial_resource(), &ns);
    finalizer(&api, FINALIZER, obj, |event| async move {
        match event {
            Event::Apply(trial) => apply(&trial, ctx).await,
            Event::Cleanup(trial) => cleanup(&trial, ctx).await,
        }
    })
    .await
    .map_err(from_finalizer)
}

fn from_finalizer(error: finalizer::Error<OperatorError>) -> OperatorError {
    match error {
        finalizer::Error::ApplyFailed(e) | finalizer::Error::CleanupFailed(e) => e,
        finalizer::Error::AddFinalizer(e) | finalizer::Error::RemoveFinalizer(e) => e.into(),
        other => OperatorError::Malformed {
            object: "trial".into(),
            message: other.to_string(),
        },
    }
}

/// The trial is being deleted: its log is no longer followed, its job is let go (the garbage
/// collector deletes it with the trial) and its observations go.
async fn cleanup(obj: &DynamicObject, ctx: &Context) -> Result<Action> {
    ctx.followers.stop(&follow_key(obj));
    let ns = obj.namespace().unwrap_or_else(|| "default".into());
    let run_spec = read_spec(obj).ok().and_then(|s| s.run_spec);
    if let Some((jobs, _)) = run_spec.and_then(|r| job_api(ctx, &r, &ns)) {
        release(&jobs, &obj.name_any(), obj.uid().as_deref()).await?;
    }
    ctx.store.delete_observations(&obj.name_any()).await?;
    Ok(Action::await_change())
}

/// How soon a trial waiting for a deleted namesake's job to go looks again.
const PREDECESSOR_RECHECK: Duration = Duration::from_secs(1);

/// Observe the trial and its job, decide the step, act on it.
async fn apply(obj: &DynamicObject, ctx: &Context) -> Result<Action> {
    let live = Live::read(obj, ctx);
    let spec = match read_spec(obj) {
        Ok(spec) => spec,
        Err(why) => return live.fail(Failure::trial(why)).await,
    };
    if live.state.is_terminal() {
        return ended(&live, &spec).await;
    }
    let (jobs, kind) = match job_target(&live, &spec) {
        Ok(target) => target,
        Err(failure) => return live.fail(failure).await,
    };
    let job = jobs.get_opt(&live.name).await?;
    if let Some(j) = &job
        && owned_by_another_trial(j, obj.uid().as_deref())
    {
        // A deleted trial of this name left its job, which the garbage collector removes;
        // this trial's own job is created once it is gone, never taken over.
        tracing::debug!(
            "trial {}/{}: waiting for a predecessor's job to go",
            live.ns,
            live.name
        );
        return Ok(Action::requeue(PREDECESSOR_RECHECK));
    }
    let outcome = job.as_ref().map(|j| outcome_of(j, &spec)).transpose()?;
    let deleting = job
        .as_ref()
        .is_some_and(|j| j.metadata.deletion_timestamp.is_some());
    let (state, ever_running) = (live.state, live.ever_running());
    match decide::on_job(outcome, deleting, state, ever_running, &kind, &live.name) {
        Step::CreateJob => create_job(live, &spec, &jobs, &kind).await,
        Step::Fail(failure) => live.fail(failure).await,
        Step::Running => running(live, &spec).await,
        Step::JobFailed(failure) => job_failed(live, &spec, failure).await,
        Step::JobSucceeded { reason, message } => {
            let job = (reason.as_str(), message.as_str());
            succeeded(live, &spec, job).await
        }
    }
}

fn read_spec(obj: &DynamicObject) -> std::result::Result<TrialSpec, String> {
    match obj.data.get("spec").map(TrialSpec::deserialize) {
        Some(Ok(spec)) => Ok(spec),
        Some(Err(e)) => Err(format!("spec: {e}")),
        None => Err("spec: is required".into()),
    }
}

/// The API of the trial's job and its kind, or why the trial cannot have one.
fn job_target(
    live: &Live<'_>,
    spec: &TrialSpec,
) -> std::result::Result<(Api<DynamicObject>, String), Failure> {
    let Some(run_spec) = &spec.run_spec else {
        let why = live.obj.annotations().get(RENDER_ERROR_ANNOTATION).cloned();
        return Err(Failure::trial(
            why.unwrap_or_else(|| "spec.runSpec: is required".into()),
        ));
    };
    job_api(live.ctx, run_spec, &live.ns)
        .ok_or_else(|| decide::kind_refused(run_spec, &live.ctx.allowed_kinds()))
}

fn outcome_of(job: &DynamicObject, spec: &TrialSpec) -> Result<crate::jobs::JobOutcome> {
    let json = serde_json::to_value(job).map_err(|e| OperatorError::Malformed {
        object: format!("job {}", job.name_any()),
        message: e.to_string(),
    })?;
    let success = spec.success_condition.as_deref().unwrap_or_default();
    let failure = spec.failure_condition.as_deref().unwrap_or_default();
    Ok(evaluate(&json, success, failure))
}

/// A finished trial: its log is no longer followed, its job is let go, and goes unless
/// `retainRun`.
async fn ended(live: &Live<'_>, spec: &TrialSpec) -> Result<Action> {
    live.ctx.followers.stop(&follow_key(live.obj));
    let jobs = spec
        .run_spec
        .as_ref()
        .and_then(|r| job_api(live.ctx, r, &live.ns));
    let Some((jobs, _)) = jobs else {
        return Ok(Action::await_change());
    };
    release(&jobs, &live.name, live.obj.uid().as_deref()).await?;
    if spec.retain_run {
        return Ok(Action::await_change());
    }
    match jobs.delete(&live.name, &DeleteParams::background()).await {
        Ok(_) => {
            let note = format!(
                "job {} deleted because the trial is {}",
                live.name, live.state
            );
            live.event(false, "JobDeleted", note).await;
        }
        Err(kube::Error::Api(e)) if e.code == 404 => {}
        Err(e) => return Err(e.into()),
    }
    Ok(Action::await_change())
}

async fn create_job(
    mut live: Live<'_>,
    spec: &TrialSpec,
    jobs: &Api<DynamicObject>,
    kind: &str,
) -> Result<Action> {
    let run_spec = spec.run_spec.clone().unwrap_or_default();
    let run_spec = crate::sidecar::inject(&live.ctx.config, spec, &live.name, run_spec);
    let job = job_object(live.obj, run_spec, &live.name, &live.ns);
    match jobs.create(&PostParams::default(), &job).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(kube::Error::Api(e)) if e.code == 404 => {
            return live.fail(decide::kind_not_served(kind, &e.message)).await;
        }
        Err(kube::Error::Api(e)) if e.code == 422 => {
            return live.fail(decide::job_invalid(kind, &e.message)).await;
        }
        Err(e) => return Err(e.into()),
    }
    live.status.start_time.get_or_insert_with(now_rfc3339);
    live.condition("Created", TRIAL_CREATED, TRIAL_CREATED_MESSAGE);
    let note = format!("Job {} has been created", live.name);
    live.announce(false, "JobCreated", note);
    live.save().await?;
    Ok(Action::requeue(live.ctx.config.observation_interval))
}

async fn running(mut live: Live<'_>, spec: &TrialSpec) -> Result<Action> {
    let follows = follows_log(spec);
    if follows {
        live.follow(spec, false);
    }
    live.condition("Running", TRIAL_RUNNING, TRIAL_RUNNING_MESSAGE);
    if let Some(objective) = objective_of(spec) {
        live.observe(&objective).await?;
    }
    if live.state != TrialState::Running {
        let note = format!("Job {} is running", live.name);
        live.announce(false, "JobRunning", note);
    }
    live.save().await?;
    // The log follower wakes the trial when it records something, and the job's watch when
    // the job ends; pushed metrics arrive through the gRPC server, which wakes nothing, and
    // the end of a job of a kind not watched is seen by no watch, so those are re-read.
    let shared = &live.ctx.shared;
    Ok(
        if follows && shared.is_running() && shared.watches(spec.run_spec.as_ref()) {
            Action::requeue(RESYNC)
        } else {
            Action::requeue(live.ctx.config.observation_interval)
        },
    )
}

async fn job_failed(mut live: Live<'_>, spec: &TrialSpec, failure: Failure) -> Result<Action> {
    if let Some(objective) = objective_of(spec) {
        live.observe(&objective).await?;
    }
    live.ctx.followers.stop(&follow_key(live.obj));
    live.end(TrialState::Failed, &failure.reason, &failure.message);
    // Katib posts JobFailed as a Normal event (the trial's Failed condition is the alarm).
    live.announce(false, "JobFailed", failure.message);
    live.save().await?;
    Ok(Action::await_change())
}

/// The job succeeded: once its log is read to the end, the trial is judged on what it
/// reported.
async fn succeeded(mut live: Live<'_>, spec: &TrialSpec, job: (&str, &str)) -> Result<Action> {
    let followed = follows_log(spec).then(|| live.follow(spec, true));
    if followed == Some(FollowState::Following) {
        return Ok(Action::requeue(DRAIN_RECHECK));
    }
    let Some(objective) = objective_of(spec) else {
        let why = "spec.objective: is required to judge the trial";
        return live.fail(Failure::trial(why)).await;
    };
    live.observe(&objective).await?;
    let (verdict, by_rule) = judge(&live, spec, &objective).await?;
    let stop_step = by_rule.as_ref().and_then(|(_, stop)| stop.step);
    match (verdict, by_rule) {
        (_, Some((rule, stop))) => live.early_stopped(&rule, stop.why.as_deref()),
        (Verdict::EarlyStopped, None) => live.early_stopped(crate::early_stop::FROZEN_RULE, None),
        (Verdict::Succeeded, None) => {
            let base = (TRIAL_SUCCEEDED, TRIAL_SUCCEEDED_MESSAGE);
            let (reason, message) = decide::with_job(base, job.0, job.1);
            live.end(TrialState::Succeeded, &reason, &message);
            let note = format!("Job {} has succeeded", live.name);
            live.announce(false, "JobSucceeded", note);
        }
        (Verdict::MetricsUnavailable(verdict), None) => {
            let unavailable = Unavailable {
                spec,
                objective: &objective,
                followed,
                job,
            };
            metrics_unavailable(&mut live, unavailable, verdict).await?;
        }
    }
    live.ctx.followers.stop(&follow_key(live.obj));
    live.save().await?;
    if let Some(step) = stop_step {
        crate::stop_trials::record_stop_step(live.ctx, &live.ns, &live.name, step).await;
    }
    Ok(Action::await_change())
}

/// A stop by a rule over the whole history: the rule's name and the stop.
type StoppedByRule = Option<(String, crate::stop_trials::Stop)>;

/// What the trial reported, judged: the verdict of the rules frozen into its spec and, when
/// they let it succeed, a stop by a rule over the whole history (ASHA), which overrides it.
async fn judge(
    live: &Live<'_>,
    spec: &TrialSpec,
    objective: &Objective,
) -> Result<(Verdict, StoppedByRule)> {
    let metric = &objective.metric;
    let observed = vernier_engine::objective_reported(
        live.status
            .observation
            .as_ref()
            .and_then(|o| latest_of(o, metric)),
    );
    let seen = if observed {
        Vec::new()
    } else {
        seen_names(live).await?
    };
    let values = match spec.early_stopping_rules.is_empty() {
        true => Vec::new(),
        false => objective_values(&live.ctx.store, &live.name, metric).await?,
    };
    let reported = decide::Reported {
        metric,
        observed,
        values: &values,
        seen: &seen,
    };
    let verdict = decide::verdict(reported, spec);
    let by_rule = match (&verdict, spec.early_stopping_rules.is_empty()) {
        (Verdict::Succeeded, true) => {
            crate::stop_trials::stopped_at_its_end(live.ctx, live.obj, objective).await?
        }
        _ => None,
    };
    Ok((verdict, by_rule))
}

/// Every metric name the trial reported, in the store or seen by its log follower, for the
/// MetricsUnavailable message.
async fn seen_names(live: &Live<'_>) -> Result<Vec<String>> {
    let mut names = live.reported_names().await?;
    for name in live.ctx.followers.seen(&follow_key(live.obj)) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    Ok(names)
}

/// What ending a succeeded job's trial MetricsUnavailable needs besides the verdict.
struct Unavailable<'s> {
    spec: &'s TrialSpec,
    objective: &'s Objective,
    /// How the log follower ended, when the log is followed.
    followed: Option<FollowState>,
    /// The job's reason and message.
    job: (&'s str, &'s str),
}

/// Ends the trial MetricsUnavailable, recording Katib's `unavailable` observation.
async fn metrics_unavailable(
    live: &mut Live<'_>,
    why: Unavailable<'_>,
    mut verdict: vernier_engine::Verdict,
) -> Result<()> {
    // The engine's hint tells how to print the metric; here the log was never found.
    if why.followed == Some(FollowState::NoPod) {
        let target = follow_target(why.spec, &live.ns, &live.name);
        verdict.message = format!(
            "Metrics are not available: the job succeeded but no pod matched {:?}, so \
             no log was read; hint: check spec.trialTemplate.primaryPodLabels against \
             the labels of the pods the job creates",
            crate::logs::pod_selector(&target)
        );
    }
    if let Some(log) = &verdict.unavailable {
        live.record(why.objective, log).await?;
    }
    // Katib's reason names the job's (`MetricsUnavailable. Job reason: ...`); the
    // message is the engine's, which says what was seen and how to fix it.
    let (reason, _) = decide::with_job((verdict.reason, ""), why.job.0, "");
    live.end(TrialState::MetricsUnavailable, &reason, &verdict.message);
    live.announce(true, verdict.reason, verdict.message);
    Ok(())
}

fn follow_key(obj: &DynamicObject) -> String {
    obj.uid()
        .unwrap_or_else(|| format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name_any()))
}

/// One reconcile of one live trial: who it is, and its status as read and as being written.
struct Live<'a> {
    ctx: &'a Context,
    obj: &'a DynamicObject,
    api: Api<DynamicObject>,
    name: String,
    ns: String,
    state: TrialState,
    old: TrialStatus,
    status: TrialStatus,
    /// Events that tell of the status being written, published once it is: a reconcile of a
    /// stale copy fails its write with a conflict and so announces nothing twice.
    announced: Vec<(bool, &'static str, String)>,
}

impl<'a> Live<'a> {
    fn read(obj: &'a DynamicObject, ctx: &'a Context) -> Live<'a> {
        let ns = obj.namespace().unwrap_or_else(|| "default".into());
        let old = trial_status(obj);
        Live {
            ctx,
            obj,
            api: namespaced(&ctx.client, &trial_resource(), &ns),
            name: obj.name_any(),
            ns,
            state: state_of(&old.conditions),
            status: old.clone(),
            old,
            announced: Vec::new(),
        }
    }

    fn ever_running(&self) -> bool {
        self.status.conditions.iter().any(|c| c.type_ == "Running")
    }

    fn condition(&mut self, type_: &str, reason: &str, message: &str) {
        set_condition(
            &mut self.status.conditions,
            type_,
            true,
            reason,
            message,
            now_us(),
        );
    }

    /// Sets the condition the trial ends with in `state`, and the completion time.
    fn end(&mut self, state: TrialState, reason: &str, message: &str) {
        set_trial_end(
            &mut self.status.conditions,
            state,
            reason,
            message,
            now_us(),
        );
        self.status.completion_time = Some(now_rfc3339());
    }

    /// Ends the trial Failed, once: a trial already failed this way is left as it is.
    async fn fail(mut self, failure: Failure) -> Result<Action> {
        let (reason, message) = (&failure.reason, &failure.message);
        set_terminal(
            &mut self.status.conditions,
            "Failed",
            reason,
            message,
            now_us(),
        );
        if self.status != self.old {
            self.status.completion_time = Some(now_rfc3339());
            self.save().await?;
            self.event(false, "JobFailed", failure.message).await;
        }
        Ok(Action::await_change())
    }

    async fn event(&self, warning: bool, reason: &str, note: String) {
        let recorder = &self.ctx.recorder;
        publish(recorder, self.obj, &trial_resource(), warning, reason, note).await;
    }

    /// Queues an event for when [`Live::save`] has written the status it tells of.
    /// Ends the trial EarlyStopped by `rule`, with why in words when it said.
    fn early_stopped(&mut self, rule: &str, why: Option<&str>) {
        let message = early_stopped_message(why);
        self.end(TrialState::EarlyStopped, TRIAL_EARLY_STOPPED, &message);
        let note = crate::stop_trials::stopped_note(rule, &self.name, why);
        self.announce(false, TRIAL_EARLY_STOPPED, note);
    }

    fn announce(&mut self, warning: bool, reason: &'static str, note: String) {
        self.announced.push((warning, reason, note));
    }

    /// Replaces the status when it changed (an unchanged write would only wake the
    /// experiment), then publishes the events announced for it.
    async fn save(&mut self) -> Result<()> {
        if self.status != self.old {
            self.status.last_reconcile_time = Some(now_rfc3339());
            replace_status(&self.api, self.obj, &self.status).await?;
        }
        for (warning, reason, note) in std::mem::take(&mut self.announced) {
            self.event(warning, reason, note).await;
        }
        Ok(())
    }

    /// Starts following the primary container's logs unless they are followed already,
    /// saying whether the job has ended (no further pod will come).
    fn follow(&self, spec: &TrialSpec, job_ended: bool) -> FollowState {
        let ctx = self.ctx;
        let shared = ctx.shared.clone();
        let (ns, name) = (self.ns.clone(), self.name.clone());
        let wake = Wake {
            interval: ctx.config.observation_interval,
            wake: Arc::new(move || shared.wake_trial(&ns, &name)),
        };
        let target = follow_target(spec, &self.ns, &self.name);
        let clients = (ctx.client.clone(), ctx.store.clone(), ctx.tenure.clone());
        ctx.followers
            .ensure(&follow_key(self.obj), clients, target, wake, job_ended)
    }

    /// Katib's observation of the trial, read again.
    async fn observe(&mut self, objective: &Objective) -> Result<()> {
        self.status.observation = observation(&self.ctx.store, &self.name, objective).await?;
        Ok(())
    }

    /// Records one observation (Katib's `unavailable` value for the objective) and reads the
    /// status observation again.
    async fn record(&mut self, objective: &Objective, log: &Log) -> Result<()> {
        let logs = std::slice::from_ref(log);
        self.ctx.store.report_observations(&self.name, logs).await?;
        self.observe(objective).await
    }

    /// The names of every metric the trial reported, not only the experiment's, for the
    /// MetricsUnavailable message. An `unavailable` recorded by an earlier reconcile that
    /// could not save its status is not a report.
    async fn reported_names(&self) -> Result<Vec<String>> {
        Ok(self.ctx.store.reported_metric_names(&self.name).await?)
    }
}
