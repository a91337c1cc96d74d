//! One run of the driver: the state it keeps between wake-ups, the loop that asks the planner
//! what to do next, and the wait for whatever happens first (a trial ends, the early-stopping
//! tick, the lease is lost, a stop request, the external source answers).

use super::record::{load_trial, set_status};
use super::source_call::{Answer, PendingCall, answer_of};
use super::tracked::{Tracked, outcomes, progress_of};
use super::{DriverEvent, Observer, Outcome, StopReason};
use crate::early_stop::{CHECK_EVERY, EarlyStopMonitor};
use crate::error::RunnerError;
use crate::experiment::LocalExperiment;
use crate::hooks::RunHooks;
use crate::lease::LeaseLoss;
use crate::process::{ProcessReport, StopLevel};
use crate::status::{conditions_json, parse_conditions, set_condition, set_terminal};
use crate::warm_start::WarmStart;
use std::collections::{HashMap, HashSet};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Interval;
use vernier_core::Suggester;
use vernier_engine::plan::{Completion, Plan, plan};
use vernier_engine::reason;
use vernier_spec::conditions::Condition;
use vernier_store::{ExperimentStatusRow, SqlStore, StoreError};

/// The least time between two looks of the early-stopping rule woken by new observations.
const RULE_GAP: std::time::Duration = std::time::Duration::from_millis(100);

/// What the driver works with and reports to.
pub(super) struct Shell<'a> {
    pub store: &'a SqlStore,
    pub exp: &'a LocalExperiment,
    pub seed: u64,
    pub hooks: &'a RunHooks,
    pub observer: &'a mut dyn Observer,
    pub stop: watch::Receiver<StopLevel>,
    /// Becomes `Some` when this driver may write no more (lease taken over, database gone).
    pub lost: watch::Receiver<Option<LeaseLoss>>,
}

/// The driver's state between wake-ups.
pub(super) struct Run<'a> {
    pub shell: Shell<'a>,
    /// The built-in algorithm; `None` when proposals come from the hooks' source.
    pub suggester: Option<Box<dyn Suggester>>,
    pub status: ExperimentStatusRow,
    pub conditions: Vec<Condition>,
    pub trials: Vec<Tracked>,
    pub next_seq: u64,
    pub warm: WarmStart,
    pub monitor: Option<EarlyStopMonitor>,
    /// Told when a running trial's observations are recorded (only with a monitor); when the
    /// rule last looked; and whether new observations wait for it to look again.
    pub recorded: std::sync::Arc<tokio::sync::Notify>,
    pub last_rule_check: tokio::time::Instant,
    pub rule_due: bool,
    /// Running trials a client marked EarlyStopped in the store (Katib's `SetTrialStatus`,
    /// e.g. from a custom collector applying its own rule): stopped, and ended EarlyStopped.
    pub requested_stops: HashSet<String>,
    /// Stop switches of the trials still running.
    pub running: HashMap<String, watch::Sender<StopLevel>>,
    pub tasks: JoinSet<(String, ProcessReport)>,
    /// While the external source is unavailable: when to ask it again, and the wait that
    /// led there (doubled after each failed call).
    pub source_retry: Option<(tokio::time::Instant, std::time::Duration)>,
    /// The call to the external source in flight, if any.
    pub pending: Option<PendingCall<'a>>,
    /// Trials this run's stop ended Killed.
    pub stopped_trials: u32,
    pub exhausted: bool,
    pub stopping: Option<StopReason>,
    /// Why this driver may write no more, once it may not.
    pub lease_lost: Option<LeaseLoss>,
}

/// What woke the driver up.
enum Wake {
    Joined(Option<Result<(String, ProcessReport), tokio::task::JoinError>>),
    EarlyStopTick,
    Recorded,
    RuleDue,
    LeaseChanged,
    StopChanged {
        closed: bool,
    },
    /// Time to ask the unavailable external source again.
    SourceRetry,
    /// The external source answered the call in flight.
    SourceAnswered(Answer),
    /// The call in flight has gone unanswered for [`crate::hooks::SLOW_CALL`].
    SourceSlow,
}

impl<'a> Run<'a> {
    /// Loads the experiment's trials and marks it Running.
    pub async fn start(shell: Shell<'a>) -> Result<Run<'a>, RunnerError> {
        let (store, exp) = (shell.store, shell.exp);
        let suggester = match &shell.hooks.suggestion_source {
            Some(_) => None,
            None => Some(vernier_engine::build_suggester(exp, shell.seed)?),
        };
        exp.create_log_dir()?;
        let row = store
            .get_experiment(&exp.name)
            .await?
            .ok_or_else(|| RunnerError::ExperimentNotFound(exp.name.clone()))?;
        let rows = store.list_trials(&exp.name).await?;
        let mut monitor = EarlyStopMonitor::for_experiment(exp)?;
        if let Some(m) = monitor.as_mut() {
            m.resume(&rows);
        }
        let mut trials = Vec::new();
        for t in rows {
            trials.push(load_trial(store, exp, t).await?);
        }
        let mut run = Run {
            conditions: parse_conditions(&row.status.conditions_json),
            status: row.status,
            next_seq: trials.len() as u64,
            trials,
            warm: match &shell.hooks.warm_start {
                Some(warm) => warm.clone(),
                None => crate::warm_start::load(store, exp).await?,
            },
            monitor,
            recorded: Default::default(),
            last_rule_check: tokio::time::Instant::now(),
            rule_due: false,
            requested_stops: HashSet::new(),
            suggester,
            shell,
            running: HashMap::new(),
            tasks: JoinSet::new(),
            source_retry: None,
            pending: None,
            stopped_trials: 0,
            exhausted: false,
            stopping: None,
            lease_lost: None,
        };
        run.start_notes();
        run.mark_running().await?;
        Ok(run)
    }

    fn start_notes(&mut self) {
        let exp = self.shell.exp;
        for note in crate::replicas::experiment_notes(exp) {
            self.warn(note);
        }
        for name in self.warm.missing.clone() {
            self.warn(format!(
                "warm start: experiment {name:?} no longer exists (deleted after this one started); the run goes on without its trials"
            ));
        }
        let algorithm = &exp.resolved.algorithm;
        let results = self.warm.records.len();
        if results > 0 && self.shell.hooks.suggestion_source.is_some() {
            // Katib's controller sends a suggestion service this experiment's trials only,
            // and so does the plugin source: the service never learns from the others.
            self.warn(format!(
                "warm start: the suggestion plugin for {algorithm} is sent this experiment's \
                 trials only, as Katib's controller sends them, so the {results} earlier \
                 result(s) steer nothing"
            ));
        } else if results > 0
            && let Some(why) = vernier_algorithms::warm_start_shortfall(algorithm, results)
        {
            self.warn(format!("warm start: {why}"));
        }
        if self.warm.skipped > 0 {
            let mut metrics = vec![exp.objective.metric.clone()];
            metrics.extend(exp.objective.secondary_search_metrics());
            self.warn(format!(
                "warm start: {} earlier result(s) skipped (no {} value, or outside this search space); {} used",
                self.warm.skipped,
                metrics.join(" or "),
                self.warm.records.len()
            ));
        }
    }

    async fn mark_running(&mut self) -> Result<(), RunnerError> {
        let now = crate::process::now_us();
        set_condition(
            &mut self.conditions,
            "Running",
            true,
            reason::EXPERIMENT_RUNNING,
            reason::EXPERIMENT_RUNNING_MESSAGE,
            now,
        );
        self.status.phase = "Running".into();
        self.status.reason = reason::EXPERIMENT_RUNNING.into();
        self.status.message = reason::EXPERIMENT_RUNNING_MESSAGE.into();
        self.status.completed_us = None;
        self.save_status().await
    }

    /// Runs the experiment to its end; on an error (a plugin's bad reply, a database that
    /// refuses a write) the running trials are stopped and recorded Killed first, as Ctrl-C
    /// would, so none is left Running with its process gone.
    pub async fn drive(mut self) -> Result<Outcome, RunnerError> {
        match self.steer().await {
            Ok(why) => self.finish(why).await,
            Err(error) => {
                self.abandon(&error).await;
                Err(error)
            }
        }
    }

    /// The loop: ask the planner, wind down, start trials, or wait for something to happen;
    /// returns why the experiment ends once no trial runs.
    async fn steer(&mut self) -> Result<StopReason, RunnerError> {
        let mut tick = tokio::time::interval(CHECK_EVERY);
        loop {
            // A stop asked for before the first wait (Ctrl-C right after start) must keep
            // trials from starting, not only end them once started.
            if self.stopping.is_none() && self.stop_asked() {
                self.stop_requested(false);
            }
            let p = self.plan();
            if self.stopping.is_none()
                && let Some(completion) = p.completion
            {
                self.wind_down(StopReason::Completed(completion), StopLevel::Terminate);
            }
            if self.stopping.is_some() {
                // Nothing more starts: a call in flight is cancelled.
                self.pending = None;
            }
            if let Some(loss) = &self.lease_lost
                && self.running.is_empty()
            {
                let experiment = self.shell.exp.name.clone();
                return Err(loss.clone().into_error(experiment).into());
            }
            if let Some(why) = self.stopping
                && self.running.is_empty()
            {
                return Ok(stop_or_completion(why, p.completion, self.stopped_trials));
            }
            if self.stopping.is_none() && p.request > 0 && self.start_trials(&p).await? {
                continue;
            }
            if self.running.is_empty() && !self.waiting_for_source() {
                // Nothing runs, nothing may start and the planner has not ended the
                // experiment: only an algorithm that stopped proposing gets here.
                self.stopping = Some(StopReason::Completed(Completion::SuggestionEndReached));
                continue;
            }
            let wake = self.wait(&mut tick).await;
            self.on_wake(wake).await?;
        }
    }

    pub(super) fn plan(&self) -> Plan {
        let exp = self.shell.exp;
        plan(
            &exp.objective,
            exp.limits,
            &outcomes(&self.trials),
            self.exhausted,
        )
    }

    /// Starts stopping every running trial at `level`, for `why`.
    pub fn wind_down(&mut self, why: StopReason, level: StopLevel) {
        self.stopping = Some(why);
        self.signal_all(level);
    }

    fn signal_all(&self, level: StopLevel) {
        for tx in self.running.values() {
            let _ = tx.send(level);
        }
    }

    /// Whether proposals are awaited from the external source: a call is in flight, or the
    /// source is unavailable and asked again later.
    pub fn waiting_for_source(&self) -> bool {
        (self.pending.is_some() || self.source_retry.is_some()) && self.stopping.is_none()
    }

    async fn wait(&mut self, tick: &mut Interval) -> Wake {
        let ticking = !self.running.is_empty() && self.stopping.is_none();
        let watching_lease = self.lease_lost.is_none();
        let retry_at = self
            .source_retry
            .map_or_else(tokio::time::Instant::now, |(at, _)| at);
        // A retry already due waits for a free place: the next plan that has one asks.
        let retrying = self.waiting_for_source() && retry_at > tokio::time::Instant::now();
        let calling = self.pending.is_some();
        let slow_at = self.pending.as_ref().and_then(|p| p.slow_at);
        tokio::select! {
            answer = answer_of(&mut self.pending), if calling => Wake::SourceAnswered(answer),
            _ = tokio::time::sleep_until(slow_at.unwrap_or(retry_at)), if slow_at.is_some() => Wake::SourceSlow,
            _ = tokio::time::sleep_until(retry_at), if retrying => Wake::SourceRetry,
            joined = self.tasks.join_next() => Wake::Joined(joined),
            _ = tick.tick(), if ticking => Wake::EarlyStopTick,
            _ = self.recorded.notified(), if ticking && self.monitor.is_some() && !self.rule_due => Wake::Recorded,
            _ = tokio::time::sleep_until(self.last_rule_check + RULE_GAP), if ticking && self.rule_due => Wake::RuleDue,
            Ok(()) = self.shell.lost.changed(), if watching_lease => Wake::LeaseChanged,
            changed = self.shell.stop.changed() => Wake::StopChanged { closed: changed.is_err() },
        }
    }

    async fn on_wake(&mut self, wake: Wake) -> Result<(), RunnerError> {
        match wake {
            Wake::Joined(None) => Ok(()),
            Wake::Joined(Some(Ok((name, report)))) => self.trial_ended(name, report).await,
            Wake::Joined(Some(Err(e))) => {
                self.warn(format!("a trial task failed: {e}"));
                Ok(())
            }
            Wake::EarlyStopTick => self.early_stop().await,
            // The rule looks RULE_GAP after it last did at the earliest: a trainer printing
            // many lines a second would otherwise have it read the store after each one.
            Wake::Recorded => {
                self.rule_due = true;
                Ok(())
            }
            Wake::RuleDue => self.apply_rule().await,
            Wake::LeaseChanged => {
                let loss = self.shell.lost.borrow().clone();
                if loss.is_some() {
                    self.lease_lost = loss;
                    self.wind_down(StopReason::Interrupted, StopLevel::Terminate);
                }
                Ok(())
            }
            Wake::StopChanged { closed } => {
                self.stop_requested(closed);
                Ok(())
            }
            // The next plan asks the source again.
            Wake::SourceRetry => Ok(()),
            Wake::SourceAnswered(answer) => self.source_answered(answer).await,
            Wake::SourceSlow => {
                self.source_slow();
                Ok(())
            }
        }
    }

    async fn early_stop(&mut self) -> Result<(), RunnerError> {
        let requested = self.requested_early_stops().await?;
        self.stop_early(requested);
        self.apply_rule().await
    }

    /// Asks the experiment's early-stopping rule whom it stops now and stops them.
    pub(super) async fn apply_rule(&mut self) -> Result<(), RunnerError> {
        self.last_rule_check = tokio::time::Instant::now();
        self.rule_due = false;
        let states = self.states();
        if let Some(m) = self.monitor.as_mut() {
            let stops = m.check(self.shell.store, self.shell.exp, &states).await?;
            self.stop_early(stops);
        }
        Ok(())
    }

    fn stop_early(&self, names: Vec<String>) {
        for name in names {
            if let Some(tx) = self.running.get(&name) {
                let _ = tx.send(StopLevel::Terminate);
            }
        }
    }

    /// Running trials newly marked EarlyStopped in the store by a client of the gRPC API.
    async fn requested_early_stops(&mut self) -> Result<Vec<String>, RunnerError> {
        let mut fresh = Vec::new();
        for name in self.running.keys() {
            if self.requested_stops.contains(name) {
                continue;
            }
            let stored = self.shell.store.get_trial(name).await?;
            if stored.is_some_and(|t| t.state == vernier_core::TrialState::EarlyStopped) {
                fresh.push(name.clone());
            }
        }
        self.requested_stops.extend(fresh.iter().cloned());
        Ok(fresh)
    }

    /// Whether `trial` ends EarlyStopped: the experiment's rule or a client stopped it.
    pub fn early_stopped(&self, trial: &str) -> bool {
        self.requested_stops.contains(trial)
            || self.monitor.as_ref().is_some_and(|m| m.stopped(trial))
    }

    /// Why the experiment's rule stopped `trial`, when the rule said.
    pub fn why_stopped(&self, trial: &str) -> Option<String> {
        let monitor = self.monitor.as_ref()?;
        monitor.why_stopped(trial).map(str::to_string)
    }

    /// The step the experiment's rule stopped `trial` at, when it ranks trials by step.
    pub fn stop_step(&self, trial: &str) -> Option<usize> {
        self.monitor.as_ref()?.stop_step(trial)
    }

    /// Each trial's name and state, in creation order.
    pub fn states(&self) -> Vec<(String, vernier_core::TrialState)> {
        self.trials
            .iter()
            .map(|t| (t.record.name.clone(), t.record.state))
            .collect()
    }

    /// Whether a stop was asked for (Ctrl-C, SIGTERM), acted on by the loop yet or not.
    pub(super) fn stop_asked(&self) -> bool {
        *self.shell.stop.borrow() != StopLevel::Run
    }

    fn stop_requested(&mut self, closed: bool) {
        let level = if closed {
            StopLevel::Terminate
        } else {
            *self.shell.stop.borrow()
        };
        if level != StopLevel::Run {
            if !matches!(self.stopping, Some(StopReason::Completed(_))) {
                self.stopping = Some(StopReason::Interrupted);
            }
            self.signal_all(level);
        }
        if closed {
            // Nobody can ask again; stop watching.
            self.shell.stop = watch::channel(StopLevel::Terminate).1;
        }
    }

    /// After `error`: stops the running trials, records how each ended and marks the
    /// experiment Interrupted, as far as the store lets it. Nothing is written once another
    /// driver holds the lease or the database is gone, nor while another session holds it
    /// locked: each write would wait out the lock timeout again (minutes of silence for a few
    /// rows), and `vernier resume` marks the trials left running Killed.
    async fn abandon(&mut self, error: &RunnerError) {
        if self.lease_lost.is_some() {
            return;
        }
        self.stopping = Some(StopReason::Interrupted);
        self.signal_all(StopLevel::Terminate);
        if matches!(error, RunnerError::Store(StoreError::Locked { .. })) {
            self.warn(format!(
                "{error}\nstopping the running trials without recording how they ended (each \
                 write would wait for the lock again)"
            ));
            while self.tasks.join_next().await.is_some() {}
            return;
        }
        while let Some(joined) = self.tasks.join_next().await {
            if let Ok((name, report)) = joined
                && let Err(e) = self.trial_ended(name, report).await
            {
                self.warn(format!("while stopping after an error: {e}"));
            }
        }
        let msg = format!(
            "Experiment was interrupted by an error: {error}; {}",
            resume_advice(error, self.shell.exp, &self.shell.hooks.resume_flags)
        );
        self.set_interrupted(&msg);
        let _ = self.save_status().await;
    }

    fn set_interrupted(&mut self, msg: &str) {
        let now = crate::process::now_us();
        let r = reason::EXPERIMENT_INTERRUPTED;
        set_condition(&mut self.conditions, "Running", false, r, msg, now);
        set_status(&mut self.status, "Interrupted", r, msg);
    }

    /// Writes the final status once no trial runs.
    async fn finish(mut self, why: StopReason) -> Result<Outcome, RunnerError> {
        let mut progress = self.progress();
        let records: Vec<_> = self.trials.iter().map(|t| t.record.clone()).collect();
        // An entry that cannot be read was refused when the run began; it cannot be left.
        let seed = self.shell.seed;
        let left = vernier_engine::enqueue::pending(self.shell.exp, &records, usize::MAX, seed);
        progress.enqueued_left = left.map_or(0, |p| p.len());
        let now = crate::process::now_us();
        let outcome = match why {
            StopReason::Completed(c) => {
                let kind = if c.succeeded() { "Succeeded" } else { "Failed" };
                set_terminal(&mut self.conditions, kind, c.reason(), c.message(), now);
                set_status(&mut self.status, kind, c.reason(), c.message());
                self.status.completed_us = Some(now);
                Outcome::Completed {
                    completion: c,
                    progress,
                }
            }
            StopReason::Interrupted => {
                let msg = format!(
                    "Experiment was interrupted; `vernier resume {}{}` continues it",
                    self.shell.exp.name, self.shell.hooks.resume_flags
                );
                self.set_interrupted(&msg);
                Outcome::Interrupted {
                    progress,
                    stopped: self.stopped_trials,
                }
            }
        };
        self.save_status().await?;
        Ok(outcome)
    }

    pub async fn save_status(&mut self) -> Result<(), RunnerError> {
        self.status.conditions_json = conditions_json(&self.conditions);
        let exp = self.shell.exp;
        Ok(self
            .shell
            .store
            .update_experiment_status(&exp.name, &self.status)
            .await?)
    }

    pub fn progress(&self) -> super::Progress {
        progress_of(self.shell.exp, &self.trials)
    }

    pub fn warn(&mut self, message: String) {
        self.tell(DriverEvent::Warning(message));
    }

    pub fn tell(&mut self, event: DriverEvent) {
        let progress = self.progress();
        self.shell.observer.on_event(&event, &progress);
    }
}

/// Why the run ends once no trial runs: a stop gives way to a completion the planner already
/// sees, since a resume would only find the experiment over. A reached goal or failure limit
/// would have stopped the running trials anyway; the trial budget only when the stop ended no
/// trial (Killed trials count towards it, so the stop itself may have used it up).
fn stop_or_completion(why: StopReason, completion: Option<Completion>, stopped: u32) -> StopReason {
    match (why, completion) {
        (StopReason::Interrupted, Some(Completion::MaxTrialsReached)) if stopped > 0 => why,
        (StopReason::Interrupted, Some(c)) => StopReason::Completed(c),
        _ => why,
    }
}

/// What `vernier resume` does for an experiment an error interrupted. A suggestion source
/// that refused the experiment (its settings, say) is asked the same again on resume.
fn resume_advice(error: &RunnerError, exp: &LocalExperiment, flags: &str) -> String {
    let name = &exp.name;
    match error {
        RunnerError::SuggestionSource { .. } => format!(
            "`vernier resume {name}{flags}` asks the suggestion source again (`--suggestion-plugin \
             {}=HOST:PORT` asks another); settings it refused are refused again, so then delete \
             the experiment and run it with other settings",
            exp.resolved.algorithm
        ),
        _ => format!("`vernier resume {name}{flags}` continues it"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_gives_way_to_a_completion_it_did_not_cause() {
        let max = Some(Completion::MaxTrialsReached);
        let cases = [
            (
                StopReason::Interrupted,
                max,
                0,
                StopReason::Completed(Completion::MaxTrialsReached),
            ),
            (StopReason::Interrupted, max, 1, StopReason::Interrupted),
            (StopReason::Interrupted, None, 0, StopReason::Interrupted),
            (
                StopReason::Interrupted,
                Some(Completion::GoalReached),
                2,
                StopReason::Completed(Completion::GoalReached),
            ),
            (
                StopReason::Completed(Completion::GoalReached),
                max,
                0,
                StopReason::Completed(Completion::GoalReached),
            ),
        ];
        for (why, completion, stopped, want) in cases {
            assert_eq!(stop_or_completion(why, completion, stopped), want);
        }
    }

    #[test]
    fn a_refusing_suggestion_source_is_not_promised_to_continue() {
        let exp = crate::experiment::tests::experiment("    collector:\n      kind: StdOut", "a");
        let refused = RunnerError::SuggestionSource {
            source_name: "suggestion plugin random at 127.0.0.1:7000".into(),
            message: "InvalidArgument: setting n: value \"abc\"".into(),
        };
        let advice = resume_advice(&refused, &exp, "");
        assert!(
            advice.contains("`--suggestion-plugin random=HOST:PORT` asks another")
                && advice.contains("delete the experiment"),
            "{advice}"
        );
        let other = RunnerError::WarmStart("gone".into());
        assert_eq!(
            resume_advice(&other, &exp, " --db runs.db"),
            "`vernier resume e --db runs.db` continues it"
        );
    }
}
