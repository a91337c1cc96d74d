//! The driver's two steps between waits: the suggest step (proposals from the enqueued
//! trials, the built-in algorithm or an external source; each becomes a started trial) and the
//! end of a trial (observe its report, let the engine judge it, record the verdict).

use super::record::{finish_trial, insert_trial, mark_running};
use super::run::Run;
use super::tracked::Tracked;
use super::{DriverEvent, StopReason};
use crate::checkpoint;
use crate::error::RunnerError;
use crate::hooks::{PUSH_ADDRESS_ENV, apply_push_env, note_pushed_metrics};
use crate::observed::{TrialMetrics, trial_metrics};
use crate::process::{ProcessEnd, ProcessReport, StopLevel};
use crate::replicas::{TrialLaunch, run_trial};
use tokio::sync::watch;
use vernier_core::{Proposal, Suggestions, TrialRecord, TrialState};
use vernier_engine::plan::Plan;
use vernier_engine::{Finished, Place, SuggestInput, TrialEnd, Verdict};

impl Run<'_> {
    /// Asks for the planner's count of proposals and starts a trial for each; true when the
    /// driver should plan again at once rather than wait.
    pub(super) async fn start_trials(&mut self, p: &Plan) -> Result<bool, RunnerError> {
        let Some(suggestions) = self.suggestions(p.request as usize)? else {
            // The external source was asked, or its retry is not due: its answer (or the
            // retry) wakes the driver.
            return Ok(false);
        };
        self.launch_suggestions(suggestions, p.request as usize)
            .await
    }

    /// Starts a trial for each of the first `request` proposals; true when the driver should
    /// plan again at once rather than wait.
    pub(super) async fn launch_suggestions(
        &mut self,
        suggestions: Suggestions,
        request: usize,
    ) -> Result<bool, RunnerError> {
        let active = self.running.len();
        if vernier_engine::search_ended(&suggestions, active) {
            self.exhausted = true;
        }
        let launched_any = !suggestions.proposals.is_empty();
        if suggestions.state.is_some() && suggestions.state != self.status.algorithm_state {
            self.status.algorithm_state = suggestions.state.clone();
            self.save_status().await?;
        }
        for proposal in suggestions.proposals.into_iter().take(request) {
            // A stop asked for while the batch launches launches no more of it.
            if self.stop_asked() {
                break;
            }
            self.start_trial(proposal).await?;
        }
        // Katib attaches the early-stopping rule in force when a trial is created.
        let states = self.states();
        if let Some(m) = self.monitor.as_mut() {
            m.freeze(self.shell.store, self.shell.exp, &states).await?;
        }
        Ok(launched_any || self.exhausted)
    }

    /// The proposals for `count` trials: enqueued ones first, then the algorithm's. `None`
    /// when they come from the external source, which answers later (see [`super::source_call`]).
    fn suggestions(&mut self, count: usize) -> Result<Option<Suggestions>, RunnerError> {
        let exp = self.shell.exp;
        // Warm-start results come first in the history the algorithm sees; they are not this
        // experiment's trials, so the seed and the planner count only the real ones.
        let history: Vec<TrialRecord> = self
            .warm
            .records
            .iter()
            .cloned()
            .chain(self.trials.iter().map(|t| t.record.clone()))
            .collect();
        let own = &history[self.warm.records.len()..];
        let state = self.status.algorithm_state.as_deref();
        let seed = self.shell.seed;
        if let Some(queued) = vernier_engine::enqueue::enqueued(exp, own, count, state, seed)? {
            return Ok(Some(queued));
        }
        if let Some(suggester) = &self.suggester {
            let input = SuggestInput {
                history: &history,
                own: self.trials.len(),
                count,
                state: self.status.algorithm_state.as_deref(),
            };
            return Ok(Some(vernier_engine::suggest(
                suggester.as_ref(),
                exp,
                seed,
                input,
            )?));
        }
        self.ask_source(history, count);
        Ok(None)
    }

    /// Records a trial for `proposal` and starts its process (or records why it cannot).
    async fn start_trial(&mut self, proposal: Proposal) -> Result<(), RunnerError> {
        let (store, exp) = (self.shell.store, self.shell.exp);
        let seq = self.next_seq;
        self.next_seq += 1;
        let row = insert_trial(store, exp, self.shell.seed, seq, &proposal).await?;
        let name = row.name.clone();
        exp.clear_trial_dir(&name)?;
        self.trials.push(Tracked {
            assignment_text: proposal.assignment.to_string(),
            objective_text: None,
            record: TrialRecord {
                name: row.name,
                assignment: proposal.assignment,
                state: TrialState::Created,
                objective: None,
                labels: proposal.labels,
                metrics: Default::default(),
            },
        });
        let idx = self.trials.len() - 1;
        match self.prepare_launch(&name, &row.assignment, idx).await {
            Ok(launch) => self.launch(name, launch, idx).await,
            Err(e) => {
                let end = TrialEnd::Failed(e.to_string());
                // It never ran, so nothing of it is recorded.
                let observed = TrialMetrics::default();
                let ended = Ended {
                    end,
                    at_us: None,
                    early_stopped: false,
                    stopped_because: None,
                    stop_step: None,
                };
                self.record_end(idx, ended, observed, &[]).await
            }
        }
    }

    /// The rendered launch with its checkpoint directory prepared.
    async fn prepare_launch(
        &self,
        name: &str,
        assignment: &[(String, String)],
        idx: usize,
    ) -> Result<TrialLaunch, RunnerError> {
        let exp = self.shell.exp;
        let mut launch = exp.launch_for(name, assignment)?;
        let plan = checkpoint::plan(exp, name, &self.trials[idx].record.labels);
        checkpoint::apply(&plan, &mut launch);
        prepare_checkpoint(plan).await?;
        Ok(launch)
    }

    async fn launch(
        &mut self,
        name: String,
        mut launch: TrialLaunch,
        idx: usize,
    ) -> Result<(), RunnerError> {
        apply_push_env(&mut launch, self.shell.hooks);
        mark_running(self.shell.store, &name).await?;
        self.trials[idx].record.state = TrialState::Running;
        let (tx, rx) = watch::channel(StopLevel::Run);
        self.running.insert(name.clone(), tx);
        let mut collection = self.shell.exp.collection.clone();
        if self.monitor.is_some() {
            collection.recorded = Some(self.recorded.clone());
        }
        let store = self.shell.store.clone();
        let task_name = name.clone();
        self.tasks.spawn(async move {
            let report = run_trial(launch, collection, store, rx).await;
            (task_name, report)
        });
        let assignment = self.trials[idx].assignment_text.clone();
        self.tell(DriverEvent::TrialStarted { name, assignment });
        Ok(())
    }

    /// A trial's process ended: judge it and record the verdict.
    pub(super) async fn trial_ended(
        &mut self,
        name: String,
        mut report: ProcessReport,
    ) -> Result<(), RunnerError> {
        self.running.remove(&name);
        if self.lease_lost.is_some() {
            // The new holder recovers this trial; writing it here would race it.
            return Ok(());
        }
        let Some(idx) = self.trials.iter().position(|t| t.record.name == name) else {
            return Ok(());
        };
        let exp = self.shell.exp;
        note_pushed_metrics(self.shell.store, &exp.collection.source, &name, &mut report).await?;
        if report.rejected_total > 0 {
            self.warn(rejected_warning(&name, &report));
        }
        if let Some(error) = report.store_error {
            return Err(RunnerError::ObservationsNotRecorded { trial: name, error });
        }
        // A trial can break its rule and exit between two checks; Katib's collector reads each
        // value as it comes and would have stopped it, so the rule is asked once more (ASHA
        // then ranks it against the trials that reached its rung by now).
        self.apply_rule().await?;
        // A stop the driver has not acted on yet still explains a trial it interrupted.
        let stopping = match self.stopping {
            None if self.stop_asked() => Some(StopReason::Interrupted),
            known => known,
        };
        let end = trial_end(&report.end, stopping);
        let early_stopped = self.early_stopped(&name);
        let observed = trial_metrics(self.shell.store, &exp.objective, &name).await?;
        let seen: Vec<String> = if end == TrialEnd::Completed && !early_stopped {
            // The names it did report go into a MetricsUnavailable message.
            crate::reported::reported_names(exp, &report.metrics_seen, &report.collected_from).await
        } else {
            report.metrics_seen.into_iter().collect()
        };
        let ended = Ended {
            end,
            at_us: report.ended_us,
            early_stopped,
            stopped_because: self.why_stopped(&name),
            stop_step: self.stop_step(&name),
        };
        self.record_end(idx, ended, observed, &seen).await
    }

    /// Lets the engine judge trial `idx`, records the verdict and tells the observer.
    async fn record_end(
        &mut self,
        idx: usize,
        ended: Ended,
        observed: TrialMetrics,
        seen: &[String],
    ) -> Result<(), RunnerError> {
        let place = Place::Local {
            push_env: PUSH_ADDRESS_ENV,
        };
        let finished = Finished {
            end: &ended.end,
            objective_latest: observed.objective_latest.as_deref(),
            seen,
            early_stopped: ended.early_stopped,
            stopped_because: ended.stopped_because.as_deref(),
            place,
        };
        let verdict: Verdict = vernier_engine::judge(self.shell.exp, finished);
        if verdict.state == TrialState::Killed {
            self.stopped_trials += 1;
        }
        let trial = &mut self.trials[idx];
        let stop_step = ended
            .stop_step
            .filter(|_| verdict.state == TrialState::EarlyStopped);
        let store = self.shell.store;
        finish_trial(store, trial, &verdict, observed, ended.at_us, stop_step).await?;
        let event = DriverEvent::TrialFinished {
            name: self.trials[idx].record.name.clone(),
            state: verdict.state,
            objective: self.trials[idx].record.objective,
            objective_text: self.trials[idx].objective_text.clone(),
            message: verdict.message,
        };
        self.tell(event);
        Ok(())
    }
}

/// How a trial ended, as the driver saw it.
struct Ended {
    end: TrialEnd,
    /// When (microseconds since the Unix epoch); `None` for "now", a trial that never ran.
    at_us: Option<i64>,
    early_stopped: bool,
    stopped_because: Option<String>,
    /// The step the experiment's rule stopped it at, when it ranks trials by step.
    stop_step: Option<usize>,
}

/// The signals a terminal or a supervisor sends to stop a run.
const STOP_SIGNALS: [&str; 4] = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"];

/// How the engine sees a process's end; a stopped trial says why the driver stopped it.
/// A trial killed by one of the signals a stop sends while the run is being interrupted was
/// stopped with it: Ctrl-C in a terminal, or `timeout`, signals the whole process group, which
/// a trial still shares in the moment between its fork and its own group.
fn trial_end(end: &ProcessEnd, stopping: Option<StopReason>) -> TrialEnd {
    let interrupted = stopping == Some(StopReason::Interrupted);
    match end {
        ProcessEnd::Exited(0) => TrialEnd::Completed,
        ProcessEnd::Exited(code) => TrialEnd::ExitCode(*code),
        ProcessEnd::Signaled(sig) if interrupted && STOP_SIGNALS.contains(&sig.as_str()) => {
            TrialEnd::Stopped(None)
        }
        ProcessEnd::Signaled(sig) => TrialEnd::Signal(sig.clone()),
        ProcessEnd::SpawnFailed(msg) | ProcessEnd::JobFailed(msg) => TrialEnd::Failed(msg.clone()),
        ProcessEnd::Stopped => TrialEnd::Stopped(match stopping {
            Some(StopReason::Completed(c)) => Some(c),
            _ => None,
        }),
    }
}

fn rejected_warning(name: &str, report: &ProcessReport) -> String {
    let shown: Vec<&str> = report.rejected.iter().take(3).map(String::as_str).collect();
    let more = match report.rejected_total.saturating_sub(shown.len()) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    format!(
        "trial {name}: {} problem(s) reading its metrics, what could not be used was skipped: {}{more}",
        report.rejected_total,
        shown.join(", ")
    )
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

#[cfg(test)]
mod tests {
    use super::*;
    use vernier_engine::plan::Completion;

    /// The warning shows three rejected lines and says how many more there were.
    #[test]
    fn rejected_lines_are_counted_past_those_shown() {
        let mut report = ProcessReport::stopped(Vec::new());
        report.rejected = ["a=x", "b=y", "c=z", "d=w"].map(String::from).to_vec();
        report.rejected_total = 7;
        assert_eq!(
            rejected_warning("t", &report),
            "trial t: 7 problem(s) reading its metrics, what could not be used was skipped: a=x, \
             b=y, c=z and 4 more"
        );
        report.rejected.truncate(2);
        report.rejected_total = 2;
        assert!(rejected_warning("t", &report).ends_with("skipped: a=x, b=y"));
    }

    #[test]
    fn process_ends_map_to_engine_ends() {
        let done = Some(StopReason::Completed(Completion::GoalReached));
        let cases = [
            (ProcessEnd::Exited(0), None, TrialEnd::Completed),
            (ProcessEnd::Exited(3), None, TrialEnd::ExitCode(3)),
            (
                ProcessEnd::Signaled("SIGKILL".into()),
                None,
                TrialEnd::Signal("SIGKILL".into()),
            ),
            (
                ProcessEnd::SpawnFailed("x".into()),
                None,
                TrialEnd::Failed("x".into()),
            ),
            (
                ProcessEnd::JobFailed("y".into()),
                None,
                TrialEnd::Failed("y".into()),
            ),
            (ProcessEnd::Stopped, None, TrialEnd::Stopped(None)),
            (
                ProcessEnd::Stopped,
                Some(StopReason::Interrupted),
                TrialEnd::Stopped(None),
            ),
            (
                ProcessEnd::Stopped,
                done,
                TrialEnd::Stopped(Some(Completion::GoalReached)),
            ),
            // The group's Ctrl-C reached the trial itself while the run was stopping.
            (
                ProcessEnd::Signaled("SIGINT".into()),
                Some(StopReason::Interrupted),
                TrialEnd::Stopped(None),
            ),
            (
                ProcessEnd::Signaled("SIGTERM".into()),
                Some(StopReason::Interrupted),
                TrialEnd::Stopped(None),
            ),
            // A crash is a crash, and a SIGINT without a stop is the trial's own.
            (
                ProcessEnd::Signaled("SIGSEGV".into()),
                Some(StopReason::Interrupted),
                TrialEnd::Signal("SIGSEGV".into()),
            ),
            (
                ProcessEnd::Signaled("SIGINT".into()),
                None,
                TrialEnd::Signal("SIGINT".into()),
            ),
            (
                ProcessEnd::Signaled("SIGINT".into()),
                done,
                TrialEnd::Signal("SIGINT".into()),
            ),
        ];
        for (end, stopping, want) in cases {
            assert_eq!(trial_end(&end, stopping), want, "{end:?} {stopping:?}");
        }
    }
}
