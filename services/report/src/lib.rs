//! The experiment as a Katib-shaped object (`metadata`, `spec`, `status` with Katib's field
//! names) plus its Trial objects, built from the store. `vernier report --format json` prints
//! it; the other formats (table, CSV, HTML, comparisons) live in the submodules and read the
//! same structure.

pub mod analysis;
pub mod compare;
pub mod csv;
pub mod dashboard;
mod error;
pub mod html;
pub mod observation_csv;
pub mod pareto;
pub mod svg;
pub mod table;
#[cfg(test)]
mod tests;

pub use error::ReportError;

use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};
use vernier_core::{MetricReducer, MetricSummary, Objective, TrialState, UNAVAILABLE};
use vernier_spec::Experiment;
use vernier_spec::conditions::{Condition, parse_conditions, rfc3339, trial_end_condition};
use vernier_spec::plan::{TrialOutcome, best_trial, pareto_front};
use vernier_store::{ExperimentRow, SqlStore, TrialRow};

/// One trial with its reduced metrics.
#[derive(Debug, Clone)]
pub struct TrialReport {
    pub row: TrialRow,
    pub metrics: Vec<MetricSummary>,
    /// The objective value its metric strategy selects.
    pub objective: Option<f64>,
    /// Every numeric value of the objective metric as `(time µs, value)`, in time order: the
    /// learning curve. Empty until [`load_curves`] fills it, and only for the trials whose
    /// curves the HTML page draws, so large experiments never read every raw value.
    pub curve: Vec<(i64, f64)>,
    /// Every recorded metric's value by its strategy (objectives, constraint metrics).
    pub values: BTreeMap<String, f64>,
    /// How many numeric values of the objective metric the trial logged (its curve's length).
    pub curve_points: i64,
}

/// Everything a report needs.
#[derive(Debug, Clone)]
pub struct ExperimentReport {
    pub row: ExperimentRow,
    pub spec: Experiment,
    pub trials: Vec<TrialReport>,
    pub best: Option<usize>,
    /// The feasible non-dominated trials, ascending (just `best` for one objective).
    pub front: Vec<usize>,
    /// The resolved objective (direction, strategies), so formats need not re-derive it.
    pub objective: Objective,
    /// False when the source holds only reduced observations (a cluster's Trial objects),
    /// so there are no intermediate values to draw whatever the trials logged.
    pub curves_recorded: bool,
    /// Why a running experiment has no live driver (killed before it could record an end),
    /// when that is so; `None` otherwise and for a cluster's objects.
    pub unattended: Option<vernier_store::Unattended>,
    /// Flags `vernier resume` needs besides the name to find this experiment (its `--db`).
    pub resume_flags: String,
}

/// One trial's metrics being reduced while its raw observations stream by.
#[derive(Debug)]
struct TrialAccumulator {
    /// One reducer per wanted metric, in `metric_names` order, created on first sight.
    reducers: Vec<Option<MetricReducer>>,
    /// How many numeric values the objective metric had.
    curve_points: i64,
}

impl TrialAccumulator {
    fn new(metric_names: &[String]) -> Self {
        TrialAccumulator {
            reducers: vec![None; metric_names.len()],
            curve_points: 0,
        }
    }

    fn observe(&mut self, names: &[String], objective: &str, time: i64, metric: &str, value: &str) {
        let Some(i) = names.iter().position(|n| n == metric) else {
            return;
        };
        self.reducers[i]
            .get_or_insert_with(|| MetricReducer::new(metric))
            .observe(time, value);
        if metric == objective && numeric(value).is_some() {
            self.curve_points += 1;
        }
    }

    fn finish(self) -> (Vec<MetricSummary>, i64) {
        let metrics = self
            .reducers
            .into_iter()
            .flatten()
            .map(MetricReducer::finish)
            .collect();
        (metrics, self.curve_points)
    }
}

/// The rule by which a logged value counts as a number (as `MetricReducer` applies it).
fn numeric(value: &str) -> Option<f64> {
    value.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

/// Each trial's reduced metrics (in `metric_names` order) and objective curve length, from the
/// store's summaries; trials logged before the store kept summaries are reduced from their
/// raw logs instead, in one streaming pass.
async fn reduced_metrics(
    store: &SqlStore,
    name: &str,
    metric_names: &[String],
    objective: &str,
) -> Result<HashMap<String, (Vec<MetricSummary>, i64)>, ReportError> {
    let summaries = store.experiment_summaries(name).await?;
    let mut out: HashMap<String, (Vec<MetricSummary>, i64)> = HashMap::new();
    for m in summaries.metrics {
        let entry = out.entry(m.trial).or_default();
        if m.summary.name == objective {
            entry.1 = m.numeric_count;
        }
        if metric_names.contains(&m.summary.name) {
            entry.0.push(m.summary);
        }
    }
    for metrics in out.values_mut() {
        metrics
            .0
            .sort_by_key(|s| metric_names.iter().position(|n| *n == s.name));
    }
    if summaries.unreduced.is_empty() {
        return Ok(out);
    }
    let unreduced: HashSet<String> = summaries.unreduced.into_iter().collect();
    let mut acc: HashMap<String, TrialAccumulator> = HashMap::new();
    store
        .for_each_experiment_observation(name, &mut |trial, time, metric, value| {
            if !unreduced.contains(trial) {
                return;
            }
            if !acc.contains_key(trial) {
                acc.insert(trial.to_string(), TrialAccumulator::new(metric_names));
            }
            if let Some(a) = acc.get_mut(trial) {
                a.observe(metric_names, objective, time, metric, value);
            }
        })
        .await?;
    for (trial, a) in acc {
        out.insert(trial, a.finish());
    }
    Ok(out)
}

/// Loads an experiment, its trials and their reduced observations: a few queries whose size
/// follows the number of trials, not of logged values. Curves are left empty
/// ([`load_curves`] reads the ones the HTML page draws).
pub async fn load(store: &SqlStore, name: &str) -> Result<ExperimentReport, ReportError> {
    let row = store
        .get_experiment(name)
        .await?
        .ok_or_else(|| ReportError::ExperimentNotFound(name.to_string()))?;
    let spec = vernier_spec::parse_stored_experiment(&row.spec_json).map_err(|e| {
        ReportError::CorruptExperiment {
            name: name.to_string(),
            reason: e.to_string(),
        }
    })?;
    let objective = spec.objective()?;
    let metric_names = objective.metric_names();
    let mut reduced = reduced_metrics(store, name, &metric_names, &objective.metric).await?;
    let trials = store
        .list_trials(name)
        .await?
        .into_iter()
        .map(|row| {
            let (metrics, curve_points) = reduced.remove(&row.name).unwrap_or_default();
            (row, metrics, curve_points)
        })
        .collect();
    Ok(assemble(row, spec, objective, trials, true))
}

/// Whether a running experiment's driver is gone (see [`vernier_store::unattended`]), with
/// `holder_gone` telling a lease holder known to be gone (its pid no longer runs here); the
/// caller sets [`ExperimentReport::unattended`] with it.
pub async fn unattended(
    store: &SqlStore,
    row: &ExperimentRow,
    holder_gone: impl Fn(&vernier_store::LeaseRow) -> bool,
) -> Result<Option<vernier_store::Unattended>, ReportError> {
    if analysis::phase_is_final(&row.status.phase) {
        return Ok(None);
    }
    let lease = store.get_lease(&row.name).await?;
    let now_us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX));
    Ok(vernier_store::unattended(
        lease.as_ref(),
        row.created_us,
        now_us,
        vernier_store::LEASE_TTL,
        lease.as_ref().is_some_and(holder_gone),
    ))
}

/// Builds the report from an experiment and its trials with their reduced metrics and
/// objective curve lengths, whatever they were read from (the store, or a cluster's
/// Experiment and Trial objects): objective values by strategy, then the best trial and the
/// front by the same planner rules the runs use. `curves_recorded` says whether the source
/// keeps raw intermediate values at all, so a page without curves can say why.
pub fn assemble(
    row: ExperimentRow,
    spec: Experiment,
    objective: Objective,
    trials: Vec<(TrialRow, Vec<MetricSummary>, i64)>,
    curves_recorded: bool,
) -> ExperimentReport {
    let trials: Vec<TrialReport> = trials
        .into_iter()
        .map(|(row, metrics, curve_points)| {
            let value = metrics
                .iter()
                .find(|m| m.name == objective.metric)
                .and_then(|m| m.value(objective.strategy));
            let values = metrics
                .iter()
                .filter_map(|m| Some((m.name.clone(), m.value(objective.strategy_for(&m.name)?)?)))
                .collect();
            TrialReport {
                row,
                metrics,
                objective: value,
                curve: Vec::new(),
                curve_points,
                values,
            }
        })
        .collect();
    let outcomes: Vec<TrialOutcome<'_>> = trials
        .iter()
        .map(|t| TrialOutcome {
            name: &t.row.name,
            state: t.row.state,
            objective: t.objective,
            metrics: &t.values,
            text_objective: t
                .metrics
                .iter()
                .find(|m| m.name == objective.metric)
                .is_some_and(|m| m.text(objective.strategy).is_some()),
        })
        .collect();
    let best = best_trial(&objective, &outcomes);
    let front = pareto_front(&objective, &outcomes);
    ExperimentReport {
        row,
        spec,
        trials,
        best,
        front,
        objective,
        curves_recorded,
        unattended: None,
        resume_flags: String::new(),
    }
}

/// Reads the learning curves (every numeric objective value, in time order) of the first
/// `max` trials in rank order that logged at least two: the ones the HTML page draws. One
/// query per such trial, so at most `max` small queries.
pub async fn load_curves(
    store: &SqlStore,
    report: &mut ExperimentReport,
    max: usize,
) -> Result<(), ReportError> {
    load_curves_keeping(store, report, max, None).await
}

/// [`load_curves`], taking the curve of a trial that had ended in `earlier` (a report of the
/// same experiment read before) with as many values from there instead of reading it again:
/// an ended trial's values do not change, and a live page re-reads its report at each change.
pub async fn load_curves_keeping(
    store: &SqlStore,
    report: &mut ExperimentReport,
    max: usize,
    earlier: Option<&ExperimentReport>,
) -> Result<(), ReportError> {
    let metric = report.objective.metric.clone();
    let wanted: Vec<usize> = report
        .ranked()
        .into_iter()
        .filter(|&i| report.trials[i].curve_points >= 2)
        .take(max)
        .collect();
    for i in wanted {
        let t = &mut report.trials[i];
        if let Some(kept) = earlier.and_then(|e| ended_curve(e, t)) {
            t.curve = kept;
            continue;
        }
        t.curve = store
            .observations(&t.row.name, Some(&metric), None, None)
            .await?
            .into_iter()
            .filter_map(|o| numeric(&o.value).map(|v| (o.timestamp_us, v)))
            .collect();
    }
    Ok(())
}

/// The curve `earlier` holds for trial `t`, when the trial had ended there with the same
/// number of values.
fn ended_curve(earlier: &ExperimentReport, t: &TrialReport) -> Option<Vec<(i64, f64)>> {
    let before = earlier.trials.iter().find(|b| b.row.name == t.row.name)?;
    let ended = before.row.state.is_terminal() && t.row.state.is_terminal();
    let same = before.curve_points == t.curve_points && !before.curve.is_empty();
    (ended && same).then(|| before.curve.clone())
}

fn assignments_json(assignment: &[(String, String)]) -> Value {
    Value::Array(
        assignment
            .iter()
            .map(|(n, v)| json!({"name": n, "value": v}))
            .collect(),
    )
}

/// Katib's Trial conditions, rebuilt from the trial's recorded times and state.
fn trial_conditions(t: &TrialRow) -> Vec<Condition> {
    let mut out = Vec::new();
    let cond = |type_: &str, status: bool, reason: &str, message: &str, us: i64| Condition {
        type_: type_.into(),
        status: if status { "True" } else { "False" }.into(),
        reason: reason.into(),
        message: message.into(),
        last_update_time: rfc3339(us),
        last_transition_time: rfc3339(us),
    };
    out.push(cond(
        "Created",
        true,
        "TrialCreated",
        "Trial is created",
        t.created_us,
    ));
    if let Some(started) = t.started_us {
        // Katib turns Running False keeping its own reason and message.
        let still = t.state == TrialState::Running;
        let at = if still {
            started
        } else {
            t.completed_us.unwrap_or(started)
        };
        out.push(cond(
            "Running",
            still,
            "TrialRunning",
            "Trial is running",
            at,
        ));
    }
    if t.state.is_terminal() {
        let (type_, status) = trial_end_condition(t.state);
        out.push(cond(
            type_,
            status,
            &t.reason,
            &t.message,
            t.completed_us.unwrap_or(t.created_us),
        ));
    }
    out
}

impl ExperimentReport {
    /// The experiment as Katib would show it, plus a `trials` array of Trial objects.
    pub fn to_katib_json(&self) -> Value {
        let status = &self.row.status;
        let mut st = serde_json::Map::new();
        st.insert("startTime".into(), json!(status.started_us.map(rfc3339)));
        st.insert(
            "completionTime".into(),
            json!(status.completed_us.map(rfc3339)),
        );
        st.insert(
            "conditions".into(),
            serde_json::to_value(parse_conditions(&status.conditions_json)).unwrap_or(Value::Null),
        );
        if let Some(i) = self.best {
            let t = &self.trials[i];
            st.insert(
                "currentOptimalTrial".into(),
                json!({
                    "bestTrialName": t.row.name,
                    "parameterAssignments": assignments_json(&t.row.assignment),
                    "observation": {"metrics": self.metrics_json(&t.metrics)},
                }),
            );
        }
        if self.objective.is_multi() {
            // Vernier extension: Katib's status has room for one optimal trial only.
            let front: Vec<Value> = self
                .front
                .iter()
                .map(|&i| {
                    let t = &self.trials[i];
                    json!({
                        "trialName": t.row.name,
                        "parameterAssignments": assignments_json(&t.row.assignment),
                        "observation": {"metrics": self.metrics_json(&t.metrics)},
                    })
                })
                .collect();
            st.insert("paretoFront".into(), Value::Array(front));
        }
        st.extend(self.trial_lists_and_counts());
        let mut exp = serde_json::to_value(&self.spec).unwrap_or(Value::Null);
        if let Value::Object(map) = &mut exp {
            map.insert("status".into(), Value::Object(st));
            map.insert(
                "trials".into(),
                Value::Array(self.trials.iter().map(|t| self.trial_json(t)).collect()),
            );
        }
        exp
    }

    /// The status fields that list and count trials by state, named as Katib's.
    fn trial_lists_and_counts(&self) -> serde_json::Map<String, Value> {
        let mut lists: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for t in &self.trials {
            let list = match t.row.state {
                TrialState::Created => "pendingTrialList",
                TrialState::Running => "runningTrialList",
                TrialState::Succeeded => "succeededTrialList",
                TrialState::Failed => "failedTrialList",
                TrialState::Killed => "killedTrialList",
                TrialState::EarlyStopped => "earlyStoppedTrialList",
                TrialState::MetricsUnavailable => "metricsUnavailableTrialList",
            };
            lists.entry(list).or_default().push(&t.row.name);
        }
        let mut st: serde_json::Map<String, Value> = lists
            .into_iter()
            .map(|(k, v)| (k.into(), json!(v)))
            .collect();
        let count = |s: TrialState| self.trials.iter().filter(|t| t.row.state == s).count();
        st.insert("trials".into(), json!(self.trials.len()));
        let counts = [
            ("trialsSucceeded", TrialState::Succeeded),
            ("trialsFailed", TrialState::Failed),
            ("trialsKilled", TrialState::Killed),
            ("trialsPending", TrialState::Created),
            ("trialsRunning", TrialState::Running),
            ("trialsEarlyStopped", TrialState::EarlyStopped),
            ("trialMetricsUnavailable", TrialState::MetricsUnavailable),
        ];
        for (field, state) in counts {
            st.insert(field.into(), json!(count(state)));
        }
        st
    }

    /// A trial's observation as Katib's controller writes it: every metric with a strategy
    /// (the objective and the additional metrics) has an entry, `unavailable` for one the trial
    /// did not report, once the trial has reported any.
    fn metrics_json(&self, metrics: &[MetricSummary]) -> Value {
        let mut out: Vec<Value> = metrics
            .iter()
            .map(|m| {
                json!({"name": m.name, "min": m.min_text(), "max": m.max_text(), "latest": m.latest})
            })
            .collect();
        if !metrics.is_empty() {
            let unreported = self.objective.metric_names().into_iter();
            let unreported = unreported.filter(|n| metrics.iter().all(|m| &m.name != n));
            out.extend(unreported.map(|name| {
                json!({"name": name, "min": UNAVAILABLE, "max": UNAVAILABLE, "latest": UNAVAILABLE})
            }));
        }
        Value::Array(out)
    }

    fn trial_json(&self, t: &TrialReport) -> Value {
        let objective = serde_json::to_value(&self.spec.spec.objective).unwrap_or(Value::Null);
        let mut spec = json!({
            "objective": objective,
            "parameterAssignments": assignments_json(&t.row.assignment),
        });
        // Katib's field for the rule the trial was judged by, when one was frozen for it.
        let rules = t.row.early_stopping_rules.as_deref();
        if let Some(rules) = rules.and_then(|r| serde_json::from_str::<Value>(r).ok()) {
            spec["earlyStoppingRules"] = rules;
        }
        json!({
            "apiVersion": "kubeflow.org/v1beta1",
            "kind": "Trial",
            "metadata": {"name": t.row.name, "labels": t.row.labels},
            "spec": spec,
            "status": {
                "startTime": t.row.started_us.map(rfc3339),
                "completionTime": t.row.completed_us.map(rfc3339),
                "conditions": trial_conditions(&t.row),
                "observation": {"metrics": self.metrics_json(&t.metrics)},
            },
        })
    }
}
