//! An experiment's trials as the reconciler sees them: listed from the operator's Trial cache
//! (or the API when the controllers are not running) in sequence order, each with its state
//! and its metrics reduced by their strategies, and the views the planner and the algorithm
//! take of them.

use crate::context::Context;
use crate::names::SEQ_ANNOTATION;
use crate::objects::{namespaced, owned_by, owned_trials, rfc3339_us, trial_resource};
use crate::trial_spec::objective_of;
use crate::trial_state::{metric_is_text, metric_value, state_of, trial_status};
use kube::ResourceExt;
use kube::api::DynamicObject;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use vernier_core::{Objective, SearchSpace, TrialRecord, TrialState};
use vernier_engine::TimedTrial;
use vernier_spec::plan::TrialOutcome;
use vernier_spec::status::TrialStatus;
use vernier_spec::trial::{EXPERIMENT_LABEL, TrialSpec};

/// One trial of the experiment as listed.
#[derive(Debug)]
pub struct Listed {
    pub obj: Arc<DynamicObject>,
    pub spec: TrialSpec,
    pub status: TrialStatus,
    pub state: TrialState,
    pub objective: Option<f64>,
    /// Every metric the objective records, by its strategy (objectives, constraints).
    pub metrics: BTreeMap<String, f64>,
    /// The objective's observed value is text (DARTS's genotype), not a number.
    pub text_objective: bool,
}

impl Listed {
    /// The trial `obj` with `spec`, its status read for `objective`.
    pub fn read(obj: Arc<DynamicObject>, spec: TrialSpec, objective: &Objective) -> Listed {
        let status = trial_status(&obj);
        let state = state_of(&status.conditions);
        let metrics = metrics_of(&status, objective);
        let value = metrics.get(&objective.metric).copied();
        let text_objective = value.is_none()
            && status
                .observation
                .as_ref()
                .is_some_and(|o| metric_is_text(o, &objective.metric));
        Listed {
            obj,
            spec,
            status,
            state,
            objective: value,
            metrics,
            text_objective,
        }
    }

    pub fn name(&self) -> String {
        self.obj.name_any()
    }
}

/// The trials of experiment `obj` (named `name` in `ns`), in sequence order.
pub async fn list_trials(
    ctx: &Context,
    obj: &DynamicObject,
    ns: &str,
    name: &str,
    objective: &Objective,
) -> crate::Result<Vec<Listed>> {
    let trials = owned(ctx, obj, ns, name).await?;
    Ok(in_order(trials, objective))
}

/// The trials as [`list_trials`] lists them, read for the objective the newest of them was
/// created with: for an experiment whose edited spec cannot be read. `None` when no trial
/// holds a readable objective.
pub async fn list_trials_as_created(
    ctx: &Context,
    obj: &DynamicObject,
    ns: &str,
    name: &str,
) -> crate::Result<Option<(Objective, Vec<Listed>)>> {
    let trials = owned(ctx, obj, ns, name).await?;
    let newest = trials
        .iter()
        .filter_map(|t| Some((seq_of(t)?, objective_of(&spec_of(t)?)?)))
        .max_by_key(|(seq, _)| *seq);
    Ok(newest.map(|(_, objective)| {
        let listed = in_order(trials, &objective);
        (objective, listed)
    }))
}

/// `trials` read for `objective`, in sequence order.
fn in_order(trials: Vec<Arc<DynamicObject>>, objective: &Objective) -> Vec<Listed> {
    let mut listed: Vec<(u64, Listed)> = trials
        .into_iter()
        .map(|t| {
            let seq = seq_of(&t).unwrap_or(u64::MAX);
            // A trial whose spec cannot be read still counts (it occupies its sequence number).
            let spec = spec_of(&t).unwrap_or_default();
            (seq, Listed::read(t, spec, objective))
        })
        .collect();
    listed.sort_by(|(a, x), (b, y)| a.cmp(b).then_with(|| x.name().cmp(&y.name())));
    listed.into_iter().map(|(_, l)| l).collect()
}

fn spec_of(trial: &DynamicObject) -> Option<TrialSpec> {
    TrialSpec::deserialize(trial.data.get("spec")?).ok()
}

/// The sequence number a trial was created with (its annotation), if it has a readable one.
pub fn seq_of(trial: &DynamicObject) -> Option<u64> {
    trial.annotations().get(SEQ_ANNOTATION)?.parse().ok()
}

/// The sequence number of the next trial: after the highest in use, so a trial deleted by hand
/// does not leave its number to be taken again by a living trial's.
pub fn next_seq(listed: &[Listed]) -> u64 {
    let after_highest = listed
        .iter()
        .filter_map(|l| seq_of(&l.obj))
        .max()
        .map_or(0, |m| m.saturating_add(1));
    after_highest.max(listed.len() as u64)
}

/// The Trial objects this experiment owns, from the cache while the controllers run.
async fn owned(
    ctx: &Context,
    obj: &DynamicObject,
    ns: &str,
    name: &str,
) -> crate::Result<Vec<Arc<DynamicObject>>> {
    if let Some(cache) = ctx.shared.trials().await {
        let uid = obj.uid();
        return Ok(cache.state_filter(|t| {
            t.namespace().as_deref() == Some(ns)
                && t.labels().get(EXPERIMENT_LABEL).map(String::as_str) == Some(name)
                && owned_by(t, uid.as_deref())
        }));
    }
    let api = namespaced(&ctx.client, &trial_resource(), ns);
    let trials = owned_trials(&api, obj, name).await?;
    Ok(trials.into_iter().map(Arc::new).collect())
}

/// Every metric of the objective reduced by its strategy, from the trial's observation.
pub fn metrics_of(status: &TrialStatus, objective: &Objective) -> BTreeMap<String, f64> {
    let Some(observation) = status.observation.as_ref() else {
        return BTreeMap::new();
    };
    objective
        .metric_names()
        .into_iter()
        .filter_map(|m| {
            let strategy = objective.strategy_for(&m)?;
            let v = metric_value(observation, &m, strategy)?;
            Some((m.to_string(), v))
        })
        .collect()
}

/// The planner's view of the trials.
pub fn outcomes(listed: &[Listed]) -> Vec<TrialOutcome<'_>> {
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
pub fn records(space: &SearchSpace, listed: &[Listed]) -> Vec<TrialRecord> {
    listed
        .iter()
        .filter_map(|l| {
            let pairs: Vec<(String, String)> = l
                .spec
                .parameter_assignments
                .iter()
                .map(|a| (a.name.clone(), a.value.clone()))
                .collect();
            let assignment = space.parse_assignment(&pairs).ok()?;
            Some(TrialRecord {
                name: l.name(),
                assignment,
                state: l.state,
                objective: l.objective,
                labels: l.obj.labels().clone(),
                metrics: l.metrics.clone(),
            })
        })
        .collect()
}

/// The records as a suggestion service is told of them, each with its Trial's start and
/// completion times.
pub fn timed<'a>(records: &'a [TrialRecord], listed: &[Listed]) -> Vec<TimedTrial<'a>> {
    let by_name: HashMap<String, &TrialStatus> =
        listed.iter().map(|l| (l.name(), &l.status)).collect();
    let time = |t: Option<&String>| t.and_then(|t| rfc3339_us(t));
    records
        .iter()
        .map(|record| {
            let status = by_name.get(&record.name);
            TimedTrial {
                record,
                started_us: time(status.and_then(|s| s.start_time.as_ref())),
                completed_us: time(status.and_then(|s| s.completion_time.as_ref())),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use vernier_core::Direction;

    fn listed(seqs: &[Option<&str>]) -> Vec<Listed> {
        let objective = Objective::new("acc", Direction::Maximize);
        seqs.iter()
            .enumerate()
            .map(|(i, seq)| {
                let mut obj = DynamicObject::new(&format!("t{i}"), &trial_resource());
                if let Some(seq) = seq {
                    obj.annotations_mut()
                        .insert(SEQ_ANNOTATION.into(), (*seq).into());
                }
                Listed::read(Arc::new(obj), TrialSpec::default(), &objective)
            })
            .collect()
    }

    #[test]
    fn the_next_trial_number_follows_the_highest_in_use() {
        // (sequence annotations of the listed trials, next number)
        let table: [(&[Option<&str>], u64); 5] = [
            (&[], 0),
            (&[Some("0"), Some("1")], 2),
            // Trial 0 deleted by hand: 1 is still in use.
            (&[Some("1")], 2),
            (&[Some("0"), Some("4"), Some("2")], 5),
            // Unreadable numbers still occupy a place.
            (&[Some("x"), None, Some("0")], 3),
        ];
        for (seqs, next) in table {
            assert_eq!(next_seq(&listed(seqs)), next, "{seqs:?}");
        }
    }
}
