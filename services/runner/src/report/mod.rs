//! The experiment as a Katib-shaped object (`metadata`, `spec`, `status` with Katib's field
//! names) plus its Trial objects, built from the store. `vernier report --format json` prints
//! it; the other formats (table, CSV, HTML, comparisons) live in the submodules and read the
//! same structure.

pub mod analysis;
pub mod compare;
pub mod csv;
pub mod html;
pub mod pareto;
pub mod svg;
pub mod table;
#[cfg(test)]
mod tests;

use crate::error::RunnerError;
use crate::status::{Condition, parse_conditions, rfc3339};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use vernier_core::{MetricReducer, MetricSummary, Objective, TrialState};
use vernier_spec::Experiment;
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
    /// learning curve. Only this metric is kept so that large experiments stay small in memory.
    pub curve: Vec<(i64, f64)>,
    /// Every recorded metric's value by its strategy (objectives, constraint metrics).
    pub values: BTreeMap<String, f64>,
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
}

/// One trial's metrics being reduced while its observations stream by.
#[derive(Debug)]
struct TrialAccumulator {
    /// One reducer per wanted metric, in `metric_names` order, created on first sight.
    reducers: Vec<Option<MetricReducer>>,
    /// The objective metric's numeric values over time.
    curve: Vec<(i64, f64)>,
}

impl TrialAccumulator {
    fn new(metric_names: &[String]) -> Self {
        TrialAccumulator {
            reducers: vec![None; metric_names.len()],
            curve: Vec::new(),
        }
    }

    fn observe(&mut self, names: &[String], objective: &str, time: i64, metric: &str, value: &str) {
        let Some(i) = names.iter().position(|n| n == metric) else {
            return;
        };
        self.reducers[i]
            .get_or_insert_with(|| MetricReducer::new(metric))
            .observe(time, value);
        if metric == objective
            && let Ok(v) = value.trim().parse::<f64>()
            && v.is_finite()
        {
            self.curve.push((time, v));
        }
    }

    fn finish(self) -> (Vec<MetricSummary>, Vec<(i64, f64)>) {
        let metrics = self
            .reducers
            .into_iter()
            .flatten()
            .map(MetricReducer::finish)
            .collect();
        (metrics, self.curve)
    }
}

/// Loads an experiment, its trials and their observations (one query for all observations).
pub async fn load(store: &SqlStore, name: &str) -> Result<ExperimentReport, RunnerError> {
    let row = store
        .get_experiment(name)
        .await?
        .ok_or_else(|| RunnerError::ExperimentNotFound(name.to_string()))?;
    let spec = vernier_spec::parse_experiment(&row.spec_json).map_err(|e| {
        RunnerError::CorruptExperiment {
            name: name.to_string(),
            reason: e.to_string(),
        }
    })?;
    let objective = spec.objective()?;
    let metric_names = objective.metric_names();
    // Observations are reduced as they stream out of the store: a 10,000-trial experiment
    // with millions of rows never holds them all in memory.
    let mut acc: HashMap<String, TrialAccumulator> = HashMap::new();
    let mut current: Option<(String, TrialAccumulator)> = None;
    store
        .for_each_experiment_observation(name, &mut |trial, time, metric, value| {
            if current.as_ref().is_none_or(|(t, _)| t != trial) {
                if let Some((t, a)) = current.take() {
                    acc.insert(t, a);
                }
                current = Some((trial.to_string(), TrialAccumulator::new(&metric_names)));
            }
            if let Some((_, a)) = current.as_mut() {
                a.observe(&metric_names, &objective.metric, time, metric, value);
            }
        })
        .await?;
    if let Some((t, a)) = current.take() {
        acc.insert(t, a);
    }
    let trials: Vec<TrialReport> = store
        .list_trials(name)
        .await?
        .into_iter()
        .map(|row| {
            let (metrics, curve) = acc
                .remove(&row.name)
                .map(TrialAccumulator::finish)
                .unwrap_or_default();
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
                curve,
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
        })
        .collect();
    let best = best_trial(&objective, &outcomes);
    let front = pareto_front(&objective, &outcomes);
    Ok(ExperimentReport {
        row,
        spec,
        trials,
        best,
        front,
        objective,
    })
}

fn assignments_json(assignment: &[(String, String)]) -> Value {
    Value::Array(
        assignment
            .iter()
            .map(|(n, v)| json!({"name": n, "value": v}))
            .collect(),
    )
}

fn metrics_json(metrics: &[MetricSummary]) -> Value {
    Value::Array(
        metrics
            .iter()
            .map(|m| {
                json!({"name": m.name, "min": m.min_text(), "max": m.max_text(), "latest": m.latest})
            })
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
        let still = t.state == TrialState::Running;
        let (reason, message, at) = if still {
            ("TrialRunning", "Trial is running", started)
        } else {
            (
                t.reason.as_str(),
                t.message.as_str(),
                t.completed_us.unwrap_or(started),
            )
        };
        out.push(cond("Running", still, reason, message, at));
    }
    if t.state.is_terminal() {
        out.push(cond(
            t.state.as_str(),
            true,
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
        let count = |s: TrialState| self.trials.iter().filter(|t| t.row.state == s).count();
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
                    "observation": {"metrics": metrics_json(&t.metrics)},
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
                        "observation": {"metrics": metrics_json(&t.metrics)},
                    })
                })
                .collect();
            st.insert("paretoFront".into(), Value::Array(front));
        }
        for (k, v) in lists {
            st.insert(k.into(), json!(v));
        }
        st.insert("trials".into(), json!(self.trials.len()));
        st.insert(
            "trialsSucceeded".into(),
            json!(count(TrialState::Succeeded)),
        );
        st.insert("trialsFailed".into(), json!(count(TrialState::Failed)));
        st.insert("trialsKilled".into(), json!(count(TrialState::Killed)));
        st.insert("trialsPending".into(), json!(count(TrialState::Created)));
        st.insert("trialsRunning".into(), json!(count(TrialState::Running)));
        st.insert(
            "trialsEarlyStopped".into(),
            json!(count(TrialState::EarlyStopped)),
        );
        st.insert(
            "trialMetricsUnavailable".into(),
            json!(count(TrialState::MetricsUnavailable)),
        );
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

    fn trial_json(&self, t: &TrialReport) -> Value {
        let objective = serde_json::to_value(&self.spec.spec.objective).unwrap_or(Value::Null);
        json!({
            "apiVersion": "kubeflow.org/v1beta1",
            "kind": "Trial",
            "metadata": {"name": t.row.name, "labels": t.row.labels},
            "spec": {
                "objective": objective,
                "parameterAssignments": assignments_json(&t.row.assignment),
            },
            "status": {
                "startTime": t.row.started_us.map(rfc3339),
                "completionTime": t.row.completed_us.map(rfc3339),
                "conditions": trial_conditions(&t.row),
                "observation": {"metrics": metrics_json(&t.metrics)},
            },
        })
    }
}
