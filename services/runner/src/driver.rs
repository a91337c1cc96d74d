//! The local experiment driver: observe (the store, finished trial processes, stop requests),
//! decide (the engine: planner, suggest step, verdicts), act (start and stop processes, record
//! in the store), until the experiment completes or is interrupted. The store is the source of
//! truth, so a killed driver can be resumed from it.

#[cfg(test)]
mod locked_tests;
mod record;
#[cfg(test)]
mod resume_tests;
mod run;
mod source_answer;
mod source_call;
#[cfg(test)]
mod source_tests;
mod step;
#[cfg(test)]
mod test_sandbox;
mod tracked;

use crate::error::RunnerError;
use crate::experiment::LocalExperiment;
use crate::hooks::RunHooks;
use crate::lease::ExperimentLease;
use crate::process::StopLevel;
use tokio::sync::watch;
use vernier_core::TrialState;
use vernier_engine::plan::{Completion, TrialCounts};
use vernier_store::SqlStore;

pub use record::{create_experiment, recover_interrupted};

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
        /// The objective's selected text when it is not a number (DARTS's genotype).
        objective_text: Option<String>,
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
    /// With several objectives: the others' values (`cost=1.77, size=0.5`) and how many trials
    /// are on the Pareto front, of which this one is best in the primary objective.
    pub front: Option<(String, usize)>,
}

/// A snapshot for progress displays.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub counts: TrialCounts,
    pub best: Option<BestSoFar>,
    pub max_trials: Option<u32>,
    /// Entries of `spec.enqueuedTrials` with no trial yet; counted only when the run ends.
    pub enqueued_left: usize,
}

/// How the run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Completed {
        completion: Completion,
        progress: Progress,
    },
    /// Stopped on request; `vernier resume` continues it. `stopped` running trials were
    /// stopped and recorded Killed.
    Interrupted { progress: Progress, stopped: u32 },
}

/// Receives events as they happen.
pub trait Observer: Send {
    fn on_event(&mut self, event: &DriverEvent, progress: &Progress);
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
    stop: watch::Receiver<StopLevel>,
    observer: &mut dyn Observer,
    hooks: &RunHooks,
    lease: &ExperimentLease,
) -> Result<Outcome, RunnerError> {
    preflight(exp, lease)?;
    // Trials keep running through a database restart; the driver waits for the server with
    // them until it answers or the user stops the run. Once another driver has taken the
    // lease over (this one was suspended), nothing more is written.
    let riding = store
        .riding_outages(give_up_on(stop.clone()))
        .fenced_by(lease.experiment(), lease.owner());
    let shell = run::Shell {
        store: &riding,
        exp,
        seed,
        hooks,
        observer,
        stop,
        lost: lease.watch_lost(),
    };
    let outcome = run::Run::start(shell).await?.drive().await?;
    // A run shorter than one heartbeat must still say that its records went nowhere.
    store.check_in_place()?;
    Ok(outcome)
}

/// `true` from the first stop request on (Ctrl-C, SIGTERM, a lost terminal).
fn give_up_on(mut stop: watch::Receiver<StopLevel>) -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(*stop.borrow() != StopLevel::Run);
    tokio::spawn(async move {
        if stop
            .wait_for(|level| *level != StopLevel::Run)
            .await
            .is_ok()
        {
            let _ = tx.send(true);
        }
    });
    rx
}

/// Refused before the first trial, never by failing trial after trial.
fn preflight(exp: &LocalExperiment, lease: &ExperimentLease) -> Result<(), RunnerError> {
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
    Ok(())
}

/// Why the driver is winding down.
#[derive(Debug, Clone, Copy, PartialEq)]
enum StopReason {
    Completed(Completion),
    Interrupted,
}
