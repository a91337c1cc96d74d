//! The local experiment driver: asks the planner what to do, the algorithm what to try, runs
//! trials as local processes and records everything in the store, until the experiment
//! completes or is interrupted. The store is the source of truth, so a killed driver can be
//! resumed from it.

use crate::checkpoint;
use crate::early_stop::{CHECK_EVERY, EarlyStopMonitor, classify_with};
use crate::error::RunnerError;
use crate::experiment::LocalExperiment;
use crate::hooks::{
    RunHooks, SourceRequest, apply_push_env, note_pushed_metrics, suggest_with_retry,
};
use crate::lease::ExperimentLease;
use crate::names::{suggest_seed, trial_name};
use crate::observed::trial_metrics;
use crate::process::{MetricSource, ProcessEnd, ProcessReport, StopLevel, now_us};
use crate::replicas::run_trial;
use crate::status::{conditions_json, parse_conditions, set_condition, set_terminal};
use std::collections::HashMap;
use tokio::sync::watch;
use tokio::task::JoinSet;
use vernier_core::{
    Observation, SuggestRequest, Suggestions, TrialRecord, TrialState, UNAVAILABLE,
};
use vernier_spec::plan::{Completion, TrialCounts, TrialOutcome, plan};
use vernier_store::{
    ExperimentRow, ExperimentStatusRow, SqlStore, StoreError, TrialRow, TrialUpdate,
};

/// Katib's zero time (`0001-01-01T00:00:00Z`) in µs, used for the `unavailable` observation.
const ZERO_TIME_US: i64 = -62_135_596_800_000_000;

/// Something worth telling the user while the experiment runs.
#[derive(Debug, Clone, PartialEq)]
pub enum DriverEvent {
    TrialStarted {
        name: String,
        assignment: String,
    },
    TrialFinished {
        name: String,
        state: TrialState,
        objective: Option<f64>,
        message: String,
    },
    Warning(String),
}

/// The best trial so far.
#[derive(Debug, Clone, PartialEq)]
pub struct BestSoFar {
    pub trial: String,
    /// The objective value as shown: a number, or text such as DARTS's genotype.
    pub value: String,
    pub assignment: String,
}

/// A snapshot for progress displays.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub counts: TrialCounts,
    pub best: Option<BestSoFar>,
    pub max_trials: Option<u32>,
}

/// How the run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Completed {
        completion: Completion,
        progress: Progress,
    },
    /// Stopped on request; `vernier resume` continues it.
    Interrupted { progress: Progress },
}

/// Receives events as they happen.
pub trait Observer: Send {
    fn on_event(&mut self, event: &DriverEvent, progress: &Progress);
}

/// Records a new experiment; fails if the name is taken.
pub async fn create_experiment(
    store: &SqlStore,
    exp: &LocalExperiment,
    seed: u64,
) -> Result<(), RunnerError> {
    let now = now_us();
    let mut conditions = Vec::new();
    set_condition(
        &mut conditions,
        "Created",
        true,
        "ExperimentCreated",
        "Experiment is created",
        now,
    );
    let spec_json =
        serde_json::to_string(&exp.spec).map_err(|e| RunnerError::CorruptExperiment {
            name: exp.name.clone(),
            reason: e.to_string(),
        })?;
    store
        .create_experiment(&ExperimentRow {
            name: exp.name.clone(),
            spec_json,
            seed: seed as i64,
            created_us: now,
            work_dir: exp.paths.work_dir.display().to_string(),
            log_dir: exp.paths.log_dir.display().to_string(),
            status: ExperimentStatusRow {
                phase: "Created".into(),
                reason: "ExperimentCreated".into(),
                message: "Experiment is created".into(),
                started_us: Some(now),
                completed_us: None,
                algorithm_state: None,
                conditions_json: conditions_json(&conditions),
            },
        })
        .await?;
    Ok(())
}

/// Marks trials left Created or Running by a driver that died (e.g. `kill -9`) as Killed:
/// their observations up to then stay recorded, and replica process groups of distributed
/// trials still running are stopped. Returns how many.
pub async fn recover_interrupted(store: &SqlStore, experiment: &str) -> Result<usize, RunnerError> {
    let now = now_us();
    let mut n = 0;
    let log_dir = store
        .get_experiment(experiment)
        .await?
        .map(|e| std::path::PathBuf::from(e.log_dir));
    for t in store.list_trials(experiment).await? {
        if t.state.is_active() {
            if let Some(dir) = &log_dir {
                crate::replicas::orphans::stop_orphans(dir, &t.name).await;
            }
            store
                .update_trial(
                    &t.name,
                    &TrialUpdate {
                        state: TrialState::Killed,
                        reason: "TrialInterrupted".into(),
                        message: "the vernier process running this trial stopped before it finished; observations recorded until then are kept".into(),
                        started_us: None,
                        completed_us: Some(now),
                        attempt: None,
                    },
                )
                .await?;
            n += 1;
        }
    }
    Ok(n)
}

/// One trial as the driver tracks it.
#[derive(Debug, Clone)]
struct Tracked {
    record: TrialRecord,
    assignment_text: String,
    /// The objective's selected text, when it is not a number (DARTS's genotype).
    objective_text: Option<String>,
}

/// Runs the experiment until it completes or `stop` asks it to end.
pub async fn run(
    store: &SqlStore,
    exp: &LocalExperiment,
    seed: u64,
    stop: watch::Receiver<StopLevel>,
    observer: &mut dyn Observer,
    lease: &ExperimentLease,
) -> Result<Outcome, RunnerError> {
    run_with(
        store,
        exp,
        seed,
        stop,
        observer,
        &RunHooks::default(),
        lease,
    )
    .await
}

/// [`run`] with optional parts plugged in (push endpoint, external suggestion source).
///
/// `lease` is this process's lease on the experiment (see [`crate::lease`]): if another
/// driver takes it over, running trials are stopped and nothing more is recorded.
pub async fn run_with(
    store: &SqlStore,
    exp: &LocalExperiment,
    seed: u64,
    mut stop: watch::Receiver<StopLevel>,
    observer: &mut dyn Observer,
    hooks: &RunHooks,
    lease: &ExperimentLease,
) -> Result<Outcome, RunnerError> {
    // Refused before the first trial, never by failing trial after trial.
    let verdict = crate::local_support::local_verdict(&exp.spec);
    if !verdict.runnable() {
        return Err(RunnerError::NotLocal(vernier_spec::SpecErrors(
            verdict.refused,
        )));
    }
    if lease.experiment() != exp.name {
        return Err(RunnerError::CorruptExperiment {
            name: exp.name.clone(),
            reason: format!(
                "driven under the lease of experiment {:?}",
                lease.experiment()
            ),
        });
    }
    let mut lost = lease.watch_lost();
    let mut lease_lost = false;
    let settings = vernier_algorithms::with_random_state(&exp.settings, seed);
    let suggester = match &hooks.suggestion_source {
        Some(_) => None,
        None => Some(vernier_algorithms::build(
            &exp.algorithm,
            &settings,
            &exp.space,
            &exp.objective,
        )?),
    };
    std::fs::create_dir_all(&exp.paths.log_dir).map_err(|source| RunnerError::LogDir {
        path: exp.paths.log_dir.display().to_string(),
        source,
    })?;
    let row = store
        .get_experiment(&exp.name)
        .await?
        .ok_or_else(|| RunnerError::ExperimentNotFound(exp.name.clone()))?;
    let mut status = row.status.clone();
    let mut conditions = parse_conditions(&status.conditions_json);

    let mut trials: Vec<Tracked> = Vec::new();
    for t in store.list_trials(&exp.name).await? {
        trials.push(load_trial(store, exp, t).await?);
    }
    let mut next_seq = trials.len() as u64;
    for note in crate::replicas::experiment_notes(exp) {
        observer.on_event(&DriverEvent::Warning(note), &progress_of(exp, &trials));
    }
    let warm = crate::warm_start::load(store, exp).await?;
    if warm.skipped > 0 {
        observer.on_event(
            &DriverEvent::Warning(format!(
                "warm start: {} earlier trial(s) skipped (no {} value, or outside this search space); {} used",
                warm.skipped,
                exp.objective.metric,
                warm.records.len()
            )),
            &progress_of(exp, &trials),
        );
    }

    let now = now_us();
    set_condition(
        &mut conditions,
        "Running",
        true,
        "ExperimentRunning",
        "Experiment is running",
        now,
    );
    status.phase = "Running".into();
    status.reason = "ExperimentRunning".into();
    status.message = "Experiment is running".into();
    status.conditions_json = conditions_json(&conditions);
    status.completed_us = None;
    store.update_experiment_status(&exp.name, &status).await?;

    let mut monitor = EarlyStopMonitor::for_experiment(exp)?;
    let mut early_stop_tick = tokio::time::interval(CHECK_EVERY);
    let mut running: HashMap<String, watch::Sender<StopLevel>> = HashMap::new();
    let mut tasks: JoinSet<(String, ProcessReport)> = JoinSet::new();
    let mut exhausted = false;
    let mut stopping: Option<StopReason> = None;

    loop {
        let p = plan(&exp.objective, exp.limits, &outcomes(&trials), exhausted);

        if stopping.is_none()
            && let Some(completion) = p.completion
        {
            stopping = Some(StopReason::Completed(completion));
            for tx in running.values() {
                let _ = tx.send(StopLevel::Terminate);
            }
        }

        if lease_lost && running.is_empty() {
            return Err(StoreError::LeaseLost {
                experiment: exp.name.clone(),
            }
            .into());
        }
        if let Some(reason) = stopping
            && running.is_empty()
        {
            let progress = progress_of(exp, &trials);
            let now = now_us();
            let outcome = match reason {
                StopReason::Completed(c) => {
                    let kind = if c.succeeded() { "Succeeded" } else { "Failed" };
                    set_terminal(&mut conditions, kind, c.reason(), c.message(), now);
                    status.phase = kind.into();
                    status.reason = c.reason().into();
                    status.message = c.message().into();
                    status.completed_us = Some(now);
                    Outcome::Completed {
                        completion: c,
                        progress,
                    }
                }
                StopReason::Interrupted => {
                    let msg = format!(
                        "Experiment was interrupted; `vernier resume {}` continues it",
                        exp.name
                    );
                    set_condition(
                        &mut conditions,
                        "Running",
                        false,
                        "ExperimentInterrupted",
                        &msg,
                        now,
                    );
                    status.phase = "Interrupted".into();
                    status.reason = "ExperimentInterrupted".into();
                    status.message = msg;
                    Outcome::Interrupted { progress }
                }
            };
            status.conditions_json = conditions_json(&conditions);
            store.update_experiment_status(&exp.name, &status).await?;
            return Ok(outcome);
        }

        if stopping.is_none() && p.request > 0 {
            // Warm-start results come first in the history the algorithm sees; they are not
            // this experiment's trials, so the seed and the planner count only the real ones.
            let records: Vec<TrialRecord> = warm
                .records
                .iter()
                .cloned()
                .chain(trials.iter().map(|t| t.record.clone()))
                .collect();
            let queued =
                crate::enqueue::pending(exp, &records[warm.records.len()..], p.request as usize)?;
            let suggestions = if !queued.is_empty() {
                Suggestions {
                    proposals: queued,
                    state: status.algorithm_state.clone(),
                    exhausted: false,
                }
            } else {
                match (&suggester, &hooks.suggestion_source) {
                    (Some(suggester), _) => vernier_algorithms::suggest_guarded(
                        suggester.as_ref(),
                        &SuggestRequest {
                            space: &exp.space,
                            objective: &exp.objective,
                            trials: &records,
                            count: p.request as usize,
                            seed: suggest_seed(seed, trials.len()),
                            state: status.algorithm_state.as_deref(),
                        },
                    )?,
                    (None, Some(source)) => {
                        let request = SourceRequest {
                            experiment: exp,
                            trials: &records,
                            count: p.request as usize,
                            total: trials.len() + p.request as usize,
                            state: status.algorithm_state.as_deref(),
                        };
                        let mut warn = |message: String| {
                            observer.on_event(
                                &DriverEvent::Warning(message),
                                &progress_of(exp, &trials),
                            );
                        };
                        match suggest_with_retry(source.as_ref(), request, &mut stop, &mut warn)
                            .await?
                        {
                            Some(s) => s,
                            None => {
                                stopping = Some(StopReason::Interrupted);
                                for tx in running.values() {
                                    let _ = tx.send(*stop.borrow());
                                }
                                continue;
                            }
                        }
                    }
                    (None, None) => unreachable!("a run has a built-in algorithm or a source"),
                }
            };
            // An algorithm may return fewer proposals than asked while it waits for running
            // trials (Hyperband's rungs); with nothing running it would wait forever, so that
            // counts as the end of the search.
            if suggestions.exhausted || (suggestions.proposals.is_empty() && running.is_empty()) {
                exhausted = true;
            }
            let launched_any = !suggestions.proposals.is_empty();
            if suggestions.state.is_some() && suggestions.state != status.algorithm_state {
                status.algorithm_state = suggestions.state.clone();
                store.update_experiment_status(&exp.name, &status).await?;
            }
            for proposal in suggestions.proposals.into_iter().take(p.request as usize) {
                let seq = next_seq;
                next_seq += 1;
                let row = insert_trial(store, exp, seed, seq, &proposal).await?;
                let tracked = Tracked {
                    assignment_text: proposal.assignment.to_string(),
                    objective_text: None,
                    record: TrialRecord {
                        name: row.name.clone(),
                        assignment: proposal.assignment,
                        state: TrialState::Created,
                        objective: None,
                        labels: proposal.labels,
                        metrics: Default::default(),
                    },
                };
                let name = tracked.record.name.clone();
                trials.push(tracked);
                let idx = trials.len() - 1;
                let launched = match exp.launch_for(&name, &row.assignment) {
                    Ok(mut launch) => {
                        let plan = checkpoint::plan(exp, &name, &trials[idx].record.labels);
                        checkpoint::apply(&plan, &mut launch);
                        prepare_checkpoint(plan).await.map(|()| launch)
                    }
                    Err(e) => Err(e),
                };
                match launched {
                    Ok(mut launch) => {
                        apply_push_env(&mut launch, hooks);
                        let started = now_us();
                        store
                            .update_trial(
                                &name,
                                &TrialUpdate {
                                    state: TrialState::Running,
                                    reason: "TrialRunning".into(),
                                    message: "Trial is running".into(),
                                    started_us: Some(started),
                                    completed_us: None,
                                    attempt: None,
                                },
                            )
                            .await?;
                        trials[idx].record.state = TrialState::Running;
                        let (tx, rx) = watch::channel(StopLevel::Run);
                        running.insert(name.clone(), tx);
                        let collection = exp.collection.clone();
                        let store = store.clone();
                        tasks.spawn(async move {
                            let report = run_trial(launch, collection, store, rx).await;
                            (name, report)
                        });
                        let event = DriverEvent::TrialStarted {
                            name: trials[idx].record.name.clone(),
                            assignment: trials[idx].assignment_text.clone(),
                        };
                        observer.on_event(&event, &progress_of(exp, &trials));
                    }
                    Err(e) => {
                        let message = e.to_string();
                        finish_trial(
                            store,
                            exp,
                            &mut trials[idx],
                            TrialState::Failed,
                            "TrialFailed",
                            &message,
                        )
                        .await?;
                        let event = DriverEvent::TrialFinished {
                            name,
                            state: TrialState::Failed,
                            objective: None,
                            message,
                        };
                        observer.on_event(&event, &progress_of(exp, &trials));
                    }
                }
            }
            // Katib attaches the early-stopping rule in force when a trial is created.
            if let Some(m) = monitor.as_mut() {
                let states: Vec<(String, TrialState)> = trials
                    .iter()
                    .map(|t| (t.record.name.clone(), t.record.state))
                    .collect();
                m.freeze(store, exp, &states).await?;
            }
            if launched_any || exhausted {
                continue;
            }
        }

        if running.is_empty() {
            // Nothing runs, nothing may start and the planner has not ended the experiment:
            // only an algorithm that stopped proposing gets here.
            stopping = Some(StopReason::Completed(Completion::SuggestionEndReached));
            continue;
        }

        tokio::select! {
            joined = tasks.join_next() => {
                let Some(joined) = joined else { continue };
                let (name, mut report) = match joined {
                    Ok(v) => v,
                    Err(e) => {
                        observer.on_event(&DriverEvent::Warning(format!("a trial task failed: {e}")), &progress_of(exp, &trials));
                        continue;
                    }
                };
                running.remove(&name);
                if lease_lost {
                    // The new holder recovers this trial; writing it here would race it.
                    continue;
                }
                let Some(idx) = trials.iter().position(|t| t.record.name == name) else { continue };
                note_pushed_metrics(store, &exp.collection.source, &name, &mut report).await?;
                let (state, reason, message) =
                    classify_with(monitor.as_ref(), &name, classify(exp, &report, stopping));
                if report.rejected_total > 0 {
                    let shown: Vec<&str> = report.rejected.iter().take(3).map(String::as_str).collect();
                    observer.on_event(
                        &DriverEvent::Warning(format!(
                            "trial {name}: {} metric line(s) or value(s) could not be used and were skipped: {}",
                            report.rejected_total,
                            shown.join(", ")
                        )),
                        &progress_of(exp, &trials),
                    );
                }
                if let Some(err) = &report.store_error {
                    return Err(RunnerError::ObservationsNotRecorded { trial: name, error: err.clone() });
                }
                if state == TrialState::MetricsUnavailable {
                    store
                        .report_observations(&name, &[Observation {
                            metric: exp.objective.metric.clone(),
                            timestamp_us: ZERO_TIME_US,
                            value: UNAVAILABLE.into(),
                        }])
                        .await?;
                }
                finish_trial(store, exp, &mut trials[idx], state, reason, &message).await?;
                let event = DriverEvent::TrialFinished {
                    name,
                    state,
                    objective: trials[idx].record.objective,
                    message,
                };
                observer.on_event(&event, &progress_of(exp, &trials));
            }
            _ = early_stop_tick.tick(), if monitor.is_some() && stopping.is_none() => {
                if let Some(m) = monitor.as_mut() {
                    let states: Vec<(String, TrialState)> =
                        trials.iter().map(|t| (t.record.name.clone(), t.record.state)).collect();
                    for name in m.check(store, exp, &states).await? {
                        if let Some(tx) = running.get(&name) {
                            let _ = tx.send(StopLevel::Terminate);
                        }
                    }
                }
            }
            Ok(()) = lost.changed(), if !lease_lost => {
                if *lost.borrow() {
                    lease_lost = true;
                    stopping = Some(StopReason::Interrupted);
                    for tx in running.values() {
                        let _ = tx.send(StopLevel::Terminate);
                    }
                }
            }
            changed = stop.changed() => {
                let level = if changed.is_err() { StopLevel::Terminate } else { *stop.borrow() };
                if level != StopLevel::Run {
                    if !matches!(stopping, Some(StopReason::Completed(_))) {
                        stopping = Some(StopReason::Interrupted);
                    }
                    for tx in running.values() {
                        let _ = tx.send(level);
                    }
                }
                if changed.is_err() {
                    // Nobody can ask again; stop watching.
                    stop = watch::channel(StopLevel::Terminate).1;
                }
            }
        }
    }
}

/// Why the driver is winding down.
#[derive(Debug, Clone, Copy, PartialEq)]
enum StopReason {
    Completed(Completion),
    Interrupted,
}

/// How a trial reports its objective through the experiment's collector.
fn unavailable_hint(source: &MetricSource, metric: &str) -> String {
    match source {
        MetricSource::Output | MetricSource::TextFile => format!(
            "print a line such as `{metric}=0.5`, or set spec.metricsCollectorSpec.source.filter.metricsFormat"
        ),
        MetricSource::JsonFile => {
            format!("write a JSON line such as {{\"{metric}\": \"0.5\"}} to the metrics file")
        }
        MetricSource::TfEventDir => format!(
            "write a scalar summary tagged {metric:?} to an events.out.tfevents.* file under $VERNIER_METRICS_DIR"
        ),
        MetricSource::Prometheus { port, path } => format!(
            "serve `{metric} 0.5` at http://127.0.0.1:{port}{path} for at least a second before exiting"
        ),
        MetricSource::Pushed => format!(
            "call report_metrics({{\"{metric}\": 0.5}}, db_manager_address=os.environ[\"{}\"]) from the Katib SDK, or send DBManager.ReportObservationLog to that address",
            crate::hooks::PUSH_ADDRESS_ENV
        ),
        MetricSource::Custom(_) => format!(
            "have the custom collector report {metric:?} with DBManager.ReportObservationLog to ${} (its output is in the trial's log)",
            crate::hooks::PUSH_ADDRESS_ENV
        ),
    }
}

/// Turns a process report into Katib's trial condition.
fn classify(
    exp: &LocalExperiment,
    report: &ProcessReport,
    stopping: Option<StopReason>,
) -> (TrialState, &'static str, String) {
    match &report.end {
        ProcessEnd::Exited(0) if report.metrics_seen.contains(&exp.objective.metric) => (
            TrialState::Succeeded,
            "TrialSucceeded",
            "Trial has succeeded".into(),
        ),
        ProcessEnd::Exited(0) => (
            TrialState::MetricsUnavailable,
            "MetricsUnavailable",
            format!(
                "the trial exited with code 0 but never reported the objective metric {:?}\nhint: {}",
                exp.objective.metric,
                unavailable_hint(&exp.collection.source, &exp.objective.metric)
            ),
        ),
        ProcessEnd::Exited(code) => (
            TrialState::Failed,
            "TrialFailed",
            format!("the trial process exited with code {code}"),
        ),
        ProcessEnd::Signaled(sig) => (
            TrialState::Failed,
            "TrialFailed",
            format!("the trial process was killed by signal {sig}"),
        ),
        ProcessEnd::SpawnFailed(msg) | ProcessEnd::JobFailed(msg) => {
            (TrialState::Failed, "TrialFailed", msg.clone())
        }
        ProcessEnd::Stopped => match stopping {
            Some(StopReason::Completed(c)) => (
                TrialState::Killed,
                "TrialKilled",
                format!("stopped because the experiment completed ({})", c.reason()),
            ),
            _ => (
                TrialState::Killed,
                "TrialKilled",
                "stopped because the experiment was interrupted".into(),
            ),
        },
    }
}

/// Copies the parent's checkpoint directory off the async workers (it may hold a model).
async fn prepare_checkpoint(plan: checkpoint::CheckpointPlan) -> Result<(), RunnerError> {
    let own = plan.own.clone();
    let done = tokio::task::spawn_blocking(move || checkpoint::prepare(&plan)).await;
    let reason = match done {
        Ok(Ok(())) => return Ok(()),
        Ok(Err(e)) => e.to_string(),
        Err(e) => e.to_string(),
    };
    Err(RunnerError::Checkpoint { path: own, reason })
}

async fn insert_trial(
    store: &SqlStore,
    exp: &LocalExperiment,
    seed: u64,
    seq: u64,
    proposal: &vernier_core::Proposal,
) -> Result<TrialRow, RunnerError> {
    let mut labels = proposal.labels.clone();
    labels.insert("katib.kubeflow.org/experiment".into(), exp.name.clone());
    for retry in 0.. {
        let row = TrialRow {
            experiment: exp.name.clone(),
            name: trial_name(&exp.name, seed, seq, retry),
            seq: seq as i64,
            assignment: proposal.assignment.to_strings(),
            labels: labels.clone(),
            state: TrialState::Created,
            reason: "TrialCreated".into(),
            message: "Trial is created".into(),
            created_us: now_us(),
            started_us: None,
            completed_us: None,
            attempt: 0,
        };
        match store.insert_trial(&row).await {
            Ok(()) => return Ok(row),
            Err(StoreError::TrialExists(_)) if retry < 16 => continue,
            Err(e) => return Err(e.into()),
        }
    }
    unreachable!("the retry loop returns")
}

/// Records a terminal state and the objective value from the stored observations.
async fn finish_trial(
    store: &SqlStore,
    exp: &LocalExperiment,
    trial: &mut Tracked,
    state: TrialState,
    reason: &str,
    message: &str,
) -> Result<(), RunnerError> {
    store
        .update_trial(
            &trial.record.name,
            &TrialUpdate {
                state,
                reason: reason.into(),
                message: message.into(),
                started_us: None,
                completed_us: Some(now_us()),
                attempt: None,
            },
        )
        .await?;
    trial.record.state = state;
    let observed = trial_metrics(store, &exp.objective, &trial.record.name).await?;
    trial.record.objective = observed.objective;
    trial.record.metrics = observed.metrics;
    trial.objective_text = observed.objective_text;
    Ok(())
}

async fn load_trial(
    store: &SqlStore,
    exp: &LocalExperiment,
    row: TrialRow,
) -> Result<Tracked, RunnerError> {
    let assignment = exp.space.parse_assignment(&row.assignment).map_err(|e| {
        RunnerError::CorruptExperiment {
            name: exp.name.clone(),
            reason: format!("trial {}: {e}", row.name),
        }
    })?;
    let observed = trial_metrics(store, &exp.objective, &row.name).await?;
    Ok(Tracked {
        assignment_text: assignment.to_string(),
        objective_text: observed.objective_text,
        record: TrialRecord {
            name: row.name,
            assignment,
            state: row.state,
            objective: observed.objective,
            labels: row.labels,
            metrics: observed.metrics,
        },
    })
}

/// The trials as the planner sees them.
fn outcomes(trials: &[Tracked]) -> Vec<TrialOutcome<'_>> {
    trials
        .iter()
        .map(|t| TrialOutcome {
            name: &t.record.name,
            state: t.record.state,
            objective: t.record.objective,
            metrics: &t.record.metrics,
            text_objective: t.objective_text.is_some(),
        })
        .collect()
}

fn progress_of(exp: &LocalExperiment, trials: &[Tracked]) -> Progress {
    let outcomes = outcomes(trials);
    let counts = TrialCounts::of(&outcomes);
    let best = vernier_spec::plan::best_trial(&exp.objective, &outcomes).and_then(|i| {
        Some(BestSoFar {
            trial: trials[i].record.name.clone(),
            value: trials[i]
                .record
                .objective
                .map(|v| v.to_string())
                .or_else(|| trials[i].objective_text.clone())?,
            assignment: trials[i].assignment_text.clone(),
        })
    });
    Progress {
        counts,
        best,
        max_trials: exp.limits.max_trials,
    }
}
