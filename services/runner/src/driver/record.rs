//! What the driver writes to and reads from the store: the experiment row and its status, trial
//! rows, and each trial's observed metrics.

use super::tracked::Tracked;
use crate::error::RunnerError;
use crate::experiment::LocalExperiment;
use crate::observed::{TrialMetrics, trial_metrics};
use crate::process::now_us;
use crate::status::{conditions_json, set_condition};
use vernier_core::{Proposal, TrialRecord, TrialState};
use vernier_engine::{Verdict, reason, trial_name};
use vernier_store::{
    ExperimentRow, ExperimentStatusRow, SqlStore, StoreError, TrialRow, TrialUpdate,
};

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
        reason::EXPERIMENT_CREATED,
        reason::EXPERIMENT_CREATED_MESSAGE,
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
                reason: reason::EXPERIMENT_CREATED.into(),
                message: reason::EXPERIMENT_CREATED_MESSAGE.into(),
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
/// trials still running are stopped. The dead driver's last heartbeat (`last_heard_us`), or
/// the trial's last output if later, is their completion time (else now), so their durations
/// are not the time nobody drove them. Returns how many.
pub async fn recover_interrupted(
    store: &SqlStore,
    experiment: &str,
    last_heard_us: Option<i64>,
) -> Result<usize, RunnerError> {
    let now = now_us();
    let mut n = 0;
    let log_dir = store
        .get_experiment(experiment)
        .await?
        .map(|e| std::path::PathBuf::from(e.log_dir));
    for t in store.list_trials(experiment).await? {
        if t.state.is_active() {
            // Read before the orphans are stopped, whose last words are not its running time.
            let last_output = log_dir.as_deref().and_then(|d| last_output_us(d, &t.name));
            if let Some(dir) = &log_dir {
                crate::orphans::stop_orphans(dir, &t.name).await;
            }
            store
                .update_trial(
                    &t.name,
                    &TrialUpdate {
                        state: TrialState::Killed,
                        reason: reason::TRIAL_INTERRUPTED.into(),
                        message: "the vernier process running this trial stopped before it finished; observations recorded until then are kept".into(),
                        started_us: None,
                        completed_us: Some(interrupted_at(
                            now,
                            last_heard_us,
                            t.started_us,
                            last_output,
                        )),
                        attempt: None,
                        stop_step: None,
                    },
                )
                .await?;
            n += 1;
        }
    }
    Ok(n)
}

/// When an interrupted trial is taken to have ended: the later of the dead driver's last
/// heartbeat and the trial's last output (a trial printing between two heartbeats ran at
/// least that long), never before it started nor after `now`; `now` when the driver's last
/// heartbeat is unknown.
fn interrupted_at(
    now: i64,
    last_heard: Option<i64>,
    started: Option<i64>,
    last_output: Option<i64>,
) -> i64 {
    let Some(heard) = last_heard else {
        return now;
    };
    [Some(heard), started, last_output]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(heard)
        .min(now)
}

/// When the trial's log file (`<log dir>/<trial>.log`) was last written, in µs.
fn last_output_us(log_dir: &std::path::Path, trial: &str) -> Option<i64> {
    let modified = std::fs::metadata(log_dir.join(format!("{trial}.log")))
        .ok()?
        .modified()
        .ok()?;
    let since = modified.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(since.as_micros()).ok()
}

/// Records a new trial for `proposal`, named from the seed (another name after a collision).
pub(super) async fn insert_trial(
    store: &SqlStore,
    exp: &LocalExperiment,
    seed: u64,
    seq: u64,
    proposal: &Proposal,
) -> Result<TrialRow, RunnerError> {
    // Katib's `TrialLabels`: the experiment's labels, then the suggestion's, then its name.
    let mut labels = exp.spec.metadata.labels.clone();
    labels.extend(proposal.labels.clone());
    labels.insert("katib.kubeflow.org/experiment".into(), exp.name.clone());
    for retry in 0.. {
        let row = TrialRow {
            experiment: exp.name.clone(),
            name: trial_name(&exp.name, seed, seq, retry),
            seq: seq as i64,
            assignment: proposal.assignment.to_strings(),
            labels: labels.clone(),
            state: TrialState::Created,
            reason: reason::TRIAL_CREATED.into(),
            message: reason::TRIAL_CREATED_MESSAGE.into(),
            created_us: now_us(),
            started_us: None,
            completed_us: None,
            attempt: 0,
            early_stopping_rules: None,
            stop_step: None,
        };
        match store.insert_trial(&row).await {
            Ok(()) => return Ok(row),
            Err(StoreError::TrialExists(_)) if retry < 16 => continue,
            Err(e) => return Err(e.into()),
        }
    }
    unreachable!("the retry loop returns")
}

/// Records that a trial's process started.
pub(super) async fn mark_running(store: &SqlStore, trial: &str) -> Result<(), RunnerError> {
    let update = TrialUpdate {
        state: TrialState::Running,
        reason: reason::TRIAL_RUNNING.into(),
        message: reason::TRIAL_RUNNING_MESSAGE.into(),
        started_us: Some(now_us()),
        completed_us: None,
        attempt: None,
        stop_step: None,
    };
    Ok(store.update_trial(trial, &update).await?)
}

/// Records the verdict (with Katib's `unavailable` observation when it has one) and keeps
/// `observed`, the trial's metrics as read before the verdict, on the tracked trial: recording
/// the `unavailable` observation of a MetricsUnavailable trial changes none of them. The trial
/// completed at `ended_us` when its end was seen, else now; `stop_step` is the step the
/// experiment's rule stopped it at, recorded with its state so a resumed run still knows it.
pub(super) async fn finish_trial(
    store: &SqlStore,
    trial: &mut Tracked,
    verdict: &Verdict,
    observed: TrialMetrics,
    ended_us: Option<i64>,
    stop_step: Option<usize>,
) -> Result<(), RunnerError> {
    let name = &trial.record.name;
    if let Some(unavailable) = &verdict.unavailable {
        store
            .report_observations(name, std::slice::from_ref(unavailable))
            .await?;
    }
    let update = TrialUpdate {
        state: verdict.state,
        reason: verdict.reason.into(),
        message: verdict.message.clone(),
        started_us: None,
        completed_us: Some(ended_us.unwrap_or_else(now_us)),
        attempt: None,
        stop_step: stop_step.and_then(|s| i64::try_from(s).ok()),
    };
    store.update_trial(name, &update).await?;
    trial.record.state = verdict.state;
    trial.record.objective = observed.objective;
    trial.record.metrics = observed.metrics;
    trial.objective_text = observed.objective_text;
    Ok(())
}

/// A stored trial as the driver tracks it.
pub(super) async fn load_trial(
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

/// Sets the experiment's phase, reason and message together.
pub(super) fn set_status(
    status: &mut ExperimentStatusRow,
    phase: &str,
    reason: &str,
    message: &str,
) {
    status.phase = phase.into();
    status.reason = reason.into();
    status.message = message.into();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (now, last heartbeat, started, last output, taken end)
    #[test]
    fn an_interrupted_trial_ends_at_its_last_sign_of_life() {
        let cases = [
            (100, None, Some(10), Some(50), 100),
            (100, Some(20), Some(10), None, 20),
            (100, Some(20), Some(30), None, 30),
            (100, Some(20), Some(10), Some(45), 45),
            (100, Some(20), Some(10), Some(150), 100),
            (100, Some(20), None, None, 20),
        ];
        for (i, (now, heard, started, output, want)) in cases.into_iter().enumerate() {
            assert_eq!(
                interrupted_at(now, heard, started, output),
                want,
                "case {i}"
            );
        }
    }
}
