//! Early stopping's reads and writes for the experiment reconciler: the objective values
//! trials reported (from the store), the rules frozen for trials created now, and marking the
//! running trials a rule stops EarlyStopped (the trial reconciler then deletes their jobs).

use crate::accepted_spec::{ANNOTATION as ACCEPTED_SPEC, kept_json};
use crate::context::Context;
use crate::early_stop::Stopping;
use crate::error::{OperatorError, Result};
use crate::events::publish;
use crate::experiment_check::Resolved;
use crate::experiment_trials::{Listed, list_trials};
use crate::names::STOP_STEP_ANNOTATION;
use crate::objects::{
    experiment_resource, namespaced, now_rfc3339, now_us, replace_status, trial_resource,
};
use kube::ResourceExt;
use kube::api::{DynamicObject, Patch, PatchParams};
use vernier_core::{EarlyStopper, EarlyStoppingRequest, Objective, TrialProgress, TrialState};
use vernier_engine::frozen_rules::{breaks, frozen_rules};
use vernier_engine::reason::{TRIAL_EARLY_STOPPED, early_stopped_message};
use vernier_spec::conditions::set_terminal;
use vernier_spec::trial::EarlyStoppingRule;
use vernier_spec::types::AlgorithmSpec;

/// Katib's `earlyStoppingRules` for trials created now (empty unless medianstop).
pub async fn rules_for_new_trials(
    ctx: &Context,
    stopping: &Stopping,
    exp: &Resolved,
    listed: &[Listed],
) -> Result<Vec<EarlyStoppingRule>> {
    let Stopping::Frozen(median) = stopping else {
        return Ok(Vec::new());
    };
    let metric = &exp.objective.metric;
    let values = values_of(ctx, metric, listed, |l| l.state == TrialState::Succeeded).await?;
    let progress = progress(listed, &values, None);
    Ok(frozen_rules(median, &exp.objective, &progress))
}

/// Marks EarlyStopped the running trials the experiment's rule stops now.
pub async fn stop_trials(
    ctx: &Context,
    stopping: &Stopping,
    exp: &Resolved,
    ns: &str,
    listed: &[Listed],
) -> Result<()> {
    let key = format!("{ns}/{}", exp.name);
    let stops: Vec<Stop> = match stopping {
        Stopping::Off => {
            warn_if_unavailable(ctx, exp, ns);
            return Ok(());
        }
        Stopping::Frozen(_) => frozen_stops(ctx, exp, listed)
            .await?
            .into_iter()
            .map(|name| Stop {
                name,
                why: None,
                step: None,
            })
            .collect(),
        Stopping::Continuous(rule) => {
            let values = counted_values(ctx, &key, &exp.objective.metric, listed).await?;
            let judged = judged_counts(ctx, &key, listed, &values);
            continuous_stops(rule.as_ref(), &exp.objective, listed, &values, &judged)?
        }
    };
    for stop in stops {
        let rule = (stopping.name(), stop.why.as_deref());
        if let Some(uid) = mark_stopped(ctx, exp, ns, listed, &stop.name, rule).await?
            && let Some(step) = stop.step
        {
            ctx.judged.stopped_at(&key, &uid, step);
            record_stop_step(ctx, ns, &stop.name, step).await;
        }
    }
    Ok(())
}

/// Writes on trial `name` the step the rule stopped it at ([`STOP_STEP_ANNOTATION`]), so an
/// operator started later (a restart, another replica taking over) still shows the rule its
/// values up to that step only. The status subresource takes no metadata, so this follows the
/// write that marked the trial EarlyStopped; should it fail, this replica still knows the step
/// ([`crate::context::Judged`]) and only an operator started later ranks the trial on all its
/// values, as every operator did before the step was kept on the Trial.
pub async fn record_stop_step(ctx: &Context, ns: &str, name: &str, step: usize) {
    let api = namespaced(&ctx.client, &trial_resource(), ns);
    let patch = serde_json::json!({"metadata": {"annotations": {
        STOP_STEP_ANNOTATION: step.to_string()
    }}});
    let params = PatchParams::default();
    match api.patch(name, &params, &Patch::Merge(&patch)).await {
        Ok(_) => {}
        // Deleted meanwhile: nothing is left to rank.
        Err(kube::Error::Api(e)) if e.code == 404 => {}
        Err(e) => tracing::warn!(
            "trial {ns}/{name}: the step early stopping stopped it at ({step}) was not written \
             on it ({e}); an operator started later ranks it on all its values"
        ),
    }
}

/// The step a rule stopped `trial` at, as recorded on it ([`record_stop_step`]).
pub(crate) fn recorded_stop_step(trial: &DynamicObject) -> Option<usize> {
    trial.annotations().get(STOP_STEP_ANNOTATION)?.parse().ok()
}

/// A trial a rule stops: why, when it said, and at which step, when it ranks trials by step.
#[derive(Debug)]
pub struct Stop {
    pub name: String,
    pub why: Option<String>,
    pub step: Option<usize>,
}

/// The running trials a rule over the whole history stops, with why when it says; `judged`
/// holds how many values of each trial it has judged before.
fn continuous_stops(
    rule: &dyn EarlyStopper,
    objective: &Objective,
    listed: &[Listed],
    values: &[Vec<f64>],
    judged: &[usize],
) -> Result<Vec<Stop>> {
    let request = EarlyStoppingRequest {
        objective,
        trials: &progress(listed, values, Some(judged)),
    };
    let stop = rule.trials_to_stop(&request);
    let names = stop.map_err(|e| OperatorError::Algorithm(e.to_string()))?;
    let explained = |name: String| Stop {
        why: rule.explain(&request, &name),
        step: rule.stop_step(&request, &name),
        name,
    };
    Ok(names.into_iter().map(explained).collect())
}

/// Whether the experiment's rule over the whole history stops `trial`, whose job has just
/// succeeded, on the values it reported since the experiment's last reconcile: a fast trial
/// passes rungs between two reconciles, and the local driver too asks the rule once more when
/// a trial ends. `Some` holds the rule's name and the stop; the step it stopped the trial at
/// is remembered here, and the caller writes it on the trial ([`record_stop_step`]) once the
/// trial is marked EarlyStopped.
pub async fn stopped_at_its_end(
    ctx: &Context,
    trial: &DynamicObject,
    objective: &Objective,
) -> Result<Option<(String, Stop)>> {
    let Some((experiment, ns)) = owner_of(ctx, trial).await? else {
        return Ok(None);
    };
    let Some(es) = early_stopping_of(&experiment) else {
        return Ok(None);
    };
    let Ok(Stopping::Continuous(rule)) = Stopping::build(Some(&es), ctx.early_stopping.as_ref())
    else {
        return Ok(None);
    };
    let name = experiment.name_any();
    let key = format!("{ns}/{name}");
    let listed = list_trials(ctx, &experiment, &ns, &name, objective).await?;
    let values = counted_values(ctx, &key, &objective.metric, &listed).await?;
    let uid = uid_of(trial);
    let judged: Vec<usize> = listed
        .iter()
        .zip(&values)
        .map(|(l, v)| match uid_of(&l.obj) == uid {
            true => ctx.judged.seen(&key, &uid, v.len()),
            false => v.len(),
        })
        .collect();
    let stops = continuous_stops(rule.as_ref(), objective, &listed, &values, &judged)?;
    let trial_name = trial.name_any();
    let Some(stop) = stops.into_iter().find(|s| s.name == trial_name) else {
        return Ok(None);
    };
    if let Some(step) = stop.step {
        ctx.judged.stopped_at(&key, &uid, step);
    }
    Ok(Some((rule.name().to_string(), stop)))
}

/// The Experiment that owns `trial` and its namespace, if it still exists.
async fn owner_of(ctx: &Context, trial: &DynamicObject) -> Result<Option<(DynamicObject, String)>> {
    let ns = trial.namespace().unwrap_or_else(|| "default".into());
    let owner = trial
        .owner_references()
        .iter()
        .find(|o| o.kind == "Experiment");
    let Some(owner) = owner else {
        return Ok(None);
    };
    let api = namespaced(&ctx.client, &experiment_resource(), &ns);
    Ok(api.get_opt(&owner.name).await?.map(|e| (e, ns)))
}

/// The experiment's `spec.earlyStopping` as it runs: the accepted spec's when an edit of it
/// was refused (it is not editable).
fn early_stopping_of(experiment: &DynamicObject) -> Option<AlgorithmSpec> {
    let accepted = kept_json(experiment, ACCEPTED_SPEC, "spec");
    let spec = accepted.as_ref().or_else(|| experiment.data.get("spec"))?;
    serde_json::from_value(spec.get("earlyStopping")?.clone()).ok()
}

/// Running trials whose own frozen rules their values break.
async fn frozen_stops(ctx: &Context, exp: &Resolved, listed: &[Listed]) -> Result<Vec<String>> {
    let metric = &exp.objective.metric;
    let ruled =
        |l: &Listed| l.state == TrialState::Running && !l.spec.early_stopping_rules.is_empty();
    let values = values_of(ctx, metric, listed, ruled).await?;
    Ok(listed
        .iter()
        .zip(&values)
        .filter(|(l, v)| ruled(l) && breaks(&l.spec.early_stopping_rules, metric, v))
        .map(|(l, _)| l.name())
        .collect())
}

fn warn_if_unavailable(ctx: &Context, exp: &Resolved, ns: &str) {
    let Some(es) = exp.spec.spec.early_stopping.as_ref() else {
        return;
    };
    if ctx.early_stopping.is_none() {
        let algorithm = es.algorithm_name.clone().unwrap_or_default();
        tracing::warn!(
            "experiment {ns}/{}: early stopping {algorithm:?} is not available in this operator; trials run to completion",
            exp.name
        );
    }
}

/// The objective values each started trial reported so far (a trial not started yet has no
/// log to read), those of a trial the rule stopped at a step up to that step: the step this
/// replica remembers, else the one written on the trial (by a replica before it).
async fn counted_values(
    ctx: &Context,
    experiment: &str,
    metric: &str,
    listed: &[Listed],
) -> Result<Vec<Vec<f64>>> {
    let mut values = values_of(ctx, metric, listed, |l| l.state != TrialState::Created).await?;
    for (l, v) in listed.iter().zip(values.iter_mut()) {
        let remembered = ctx.judged.stop_step(experiment, &uid_of(&l.obj));
        if let Some(step) = remembered.or_else(|| recorded_stop_step(&l.obj)) {
            v.truncate(step);
        }
    }
    Ok(values)
}

/// The objective values reported so far by each trial that `read` selects (none for others).
async fn values_of(
    ctx: &Context,
    metric: &str,
    listed: &[Listed],
    read: impl Fn(&Listed) -> bool,
) -> Result<Vec<Vec<f64>>> {
    let mut values = Vec::with_capacity(listed.len());
    for l in listed {
        if !read(l) {
            values.push(Vec::new());
            continue;
        }
        values.push(crate::trial_observed::objective_values(&ctx.store, &l.name(), metric).await?);
    }
    Ok(values)
}

/// How many values of each trial the rule saw at the experiment's last reconcile (see
/// [`crate::context::Judged`]): a running trial's recorded count, every other trial's all.
fn judged_counts(
    ctx: &Context,
    experiment: &str,
    listed: &[Listed],
    values: &[Vec<f64>],
) -> Vec<usize> {
    let running: Vec<usize> = (0..listed.len())
        .filter(|&i| listed[i].state == TrialState::Running)
        .collect();
    let now: Vec<(String, usize)> = running
        .iter()
        .map(|&i| (uid_of(&listed[i].obj), values[i].len()))
        .collect();
    let mut judged: Vec<usize> = values.iter().map(Vec::len).collect();
    for (&i, seen) in running.iter().zip(ctx.judged.swap(experiment, &now)) {
        judged[i] = seen;
    }
    judged
}

fn progress<'a>(
    listed: &'a [Listed],
    values: &'a [Vec<f64>],
    judged: Option<&[usize]>,
) -> Vec<TrialProgress<'a>> {
    listed
        .iter()
        .zip(values)
        .enumerate()
        .map(|(i, (l, v))| TrialProgress {
            name: l.obj.metadata.name.as_deref().unwrap_or_default(),
            state: l.state,
            values: v,
            judged: judged.and_then(|j| j.get(i).copied()).unwrap_or(v.len()),
        })
        .collect()
}

/// Marks trial `name` EarlyStopped if it is still running as listed, with its observation
/// read at that moment: an ended trial is not observed again, and Katib's trial controller
/// updates an early-stopped trial's observation, so it shows the values that stopped it.
/// `rule` is the rule's name and why it stopped the trial, when it said. Returns the trial's
/// UID once it is marked.
async fn mark_stopped(
    ctx: &Context,
    exp: &Resolved,
    ns: &str,
    listed: &[Listed],
    name: &str,
    (rule, why): (&str, Option<&str>),
) -> Result<Option<String>> {
    let running = |l: &&Listed| l.name() == name && l.state == TrialState::Running;
    let Some(l) = listed.iter().find(running) else {
        return Ok(None);
    };
    let mut status = l.status.clone();
    let observed = crate::trial_observed::observation(&ctx.store, name, &exp.objective).await?;
    if observed.is_some() {
        status.observation = observed;
    }
    let message = early_stopped_message(why);
    set_terminal(
        &mut status.conditions,
        "EarlyStopped",
        TRIAL_EARLY_STOPPED,
        &message,
        now_us(),
    );
    status.completion_time = Some(now_rfc3339());
    let api = namespaced(&ctx.client, &trial_resource(), ns);
    match replace_status(&api, &l.obj, &status).await {
        Ok(()) => {}
        // The trial changed since it was listed; the next reconcile decides again.
        Err(kube::Error::Api(e)) if e.code == 409 => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let note = stopped_note(rule, name, why);
    publish(
        &ctx.recorder,
        &l.obj,
        &trial_resource(),
        false,
        TRIAL_EARLY_STOPPED,
        note,
    )
    .await;
    Ok(Some(uid_of(&l.obj)))
}

/// The event note for a trial `rule` stopped, with why when it said.
pub fn stopped_note(rule: &str, trial: &str, why: Option<&str>) -> String {
    let because = why.map(|w| format!(": {w}")).unwrap_or_default();
    format!("{rule} stopped trial {trial}{because}")
}

/// The key a trial's judged counts and stop step are kept under: its UID (its name for an
/// object without one, as the API server always gives one).
fn uid_of(trial: &DynamicObject) -> String {
    trial.uid().unwrap_or_else(|| trial.name_any())
}
