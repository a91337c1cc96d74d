//! What the composition root (the CLI) may plug into a local run without the runner knowing
//! about gRPC: a DBManager endpoint trials push metrics to, and a suggestion source that
//! replaces the built-in algorithm (an external Katib suggestion plugin). The driver calls
//! these through small hooks; implementations live in `vernier-api`, composed in the CLI.

use crate::error::RunnerError;
use crate::experiment::LocalExperiment;
use crate::process::{MetricSource, ProcessReport, TrialCommand};
use crate::replicas::TrialLaunch;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinSet;
use vernier_core::{Suggestions, TrialRecord};
use vernier_store::SqlStore;

pub use crate::child::PUSH_ADDRESS_ENV;

/// Optional parts of a local run.
#[derive(Debug, Clone, Default)]
pub struct RunHooks {
    /// Where trials may push metrics (`ReportObservationLog`), told to each trial.
    pub push_address: Option<String>,
    /// Where proposals come from instead of the built-in algorithm.
    pub suggestion_source: Option<Arc<dyn SuggestionSource>>,
    /// `spec.warmStart` as the caller already read it (`vernier run` reads it to refuse a bad
    /// one before recording the experiment); `None` has the driver read it.
    pub warm_start: Option<crate::warm_start::WarmStart>,
}

/// One request for proposals, with Katib's controller semantics: the whole history, how many
/// are wanted now and how many were wanted in total so far.
#[derive(Debug, Clone, Copy)]
pub struct SourceRequest<'a> {
    pub experiment: &'a LocalExperiment,
    pub trials: &'a [TrialRecord],
    /// Katib `current_request_number`.
    pub count: usize,
    /// Katib `total_request_number`: trials so far plus `count`.
    pub total: usize,
    /// State the source returned last time, if any.
    pub state: Option<&'a str>,
}

/// Why a source gave no proposals.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SourceError {
    /// Down, unreachable or too slow: worth waiting for.
    #[error("{0}")]
    Unavailable(String),
    /// It answered, and the answer is an error (bad settings, bad request, bad reply).
    #[error("{0}")]
    Rejected(String),
}

/// A source of proposals other than the built-in algorithms.
#[async_trait::async_trait]
pub trait SuggestionSource: Send + Sync + std::fmt::Debug {
    /// Names the source in messages, e.g. `suggestion plugin random at 127.0.0.1:7000`.
    fn describe(&self) -> String;
    /// Checks the experiment's algorithm settings once, before anything is recorded.
    async fn validate(&self, experiment: &LocalExperiment) -> Result<(), SourceError>;
    /// Asks for proposals once.
    async fn suggest(&self, request: SourceRequest<'_>) -> Result<Suggestions, SourceError>;
}

/// First wait after a failed call; doubled up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// A trial task's end, as the driver's `JoinSet` gives it.
pub type JoinedTrial = Result<(String, ProcessReport), tokio::task::JoinError>;

/// How a wait for an external source ended.
#[derive(Debug)]
pub enum SourceWait {
    Answered(Suggestions),
    /// The run was asked to stop.
    Stopped,
    /// A running trial ended while the source was unavailable: the driver records it (and
    /// may find the experiment over) before it asks again.
    TrialEnded(JoinedTrial),
}

/// Asks `source` until it answers, waiting with exponential backoff while it is unavailable
/// and telling `on_wait` each time. A stop ends the wait at once, also during a call that
/// hangs; a trial of `running` that ends during a backoff ends it too.
pub async fn suggest_with_retry(
    source: &dyn SuggestionSource,
    request: SourceRequest<'_>,
    stop: &mut watch::Receiver<crate::process::StopLevel>,
    running: &mut JoinSet<(String, ProcessReport)>,
    on_wait: &mut dyn FnMut(String),
) -> Result<SourceWait, RunnerError> {
    let mut backoff = FIRST_BACKOFF;
    loop {
        let answer = tokio::select! {
            answer = source.suggest(request) => answer,
            () = stop_asked(stop) => return Ok(SourceWait::Stopped),
        };
        match answer {
            Ok(s) => return Ok(SourceWait::Answered(s)),
            Err(SourceError::Rejected(message)) => {
                return Err(RunnerError::SuggestionSource {
                    source_name: source.describe(),
                    message,
                });
            }
            Err(SourceError::Unavailable(message)) => {
                on_wait(format!(
                    "{} is unavailable ({message}); the experiment waits and retries in {:.1} s",
                    source.describe(),
                    backoff.as_secs_f64()
                ));
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    () = stop_asked(stop) => return Ok(SourceWait::Stopped),
                    Some(joined) = running.join_next(), if !running.is_empty() => {
                        return Ok(SourceWait::TrialEnded(joined));
                    }
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// Resolves once `stop` asks the run to end (or its sender is gone).
async fn stop_asked(stop: &mut watch::Receiver<crate::process::StopLevel>) {
    while *stop.borrow_and_update() == crate::process::StopLevel::Run {
        if stop.changed().await.is_err() {
            return;
        }
    }
}

/// Tells the trial (every replica of a distributed one) where to push metrics.
pub fn apply_push_env(launch: &mut TrialLaunch, hooks: &RunHooks) {
    let Some(addr) = &hooks.push_address else {
        return;
    };
    let commands: Vec<&mut TrialCommand> = match launch {
        TrialLaunch::Process(cmd, _) => vec![cmd],
        TrialLaunch::Replicas(job) => job
            .processes
            .iter_mut()
            .filter_map(|p| p.command.as_mut())
            .collect(),
    };
    for cmd in commands {
        cmd.env.push((PUSH_ADDRESS_ENV.to_string(), addr.clone()));
    }
}

/// With the `Push` and `Custom` collectors nothing is parsed locally: the metrics a trial
/// reported are the ones that reached the store through the DBManager endpoint.
pub async fn note_pushed_metrics(
    store: &SqlStore,
    source: &MetricSource,
    trial: &str,
    report: &mut ProcessReport,
) -> Result<(), RunnerError> {
    if matches!(source, MetricSource::Pushed | MetricSource::Custom(_)) {
        for o in store.observations(trial, None, None, None).await? {
            report.metrics_seen.insert(o.metric);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::process::StopLevel;

    /// A plugin that is down (`hangs`: accepts the call and never answers).
    #[derive(Debug)]
    struct Down {
        hangs: bool,
    }

    #[async_trait::async_trait]
    impl SuggestionSource for Down {
        fn describe(&self) -> String {
            "plugin".into()
        }
        async fn validate(&self, _: &LocalExperiment) -> Result<(), SourceError> {
            Ok(())
        }
        async fn suggest(&self, _: SourceRequest<'_>) -> Result<Suggestions, SourceError> {
            if self.hangs {
                std::future::pending::<()>().await;
            }
            Err(SourceError::Unavailable("connection refused".into()))
        }
    }

    async fn wait_for(
        hangs: bool,
        stop: &mut watch::Receiver<StopLevel>,
        running: &mut JoinSet<(String, ProcessReport)>,
    ) -> SourceWait {
        let exp = crate::experiment::tests::experiment("    collector:\n      kind: StdOut", "a");
        let request = SourceRequest {
            experiment: &exp,
            trials: &[],
            count: 1,
            total: 1,
            state: None,
        };
        let mut told = Vec::new();
        let mut on_wait = |m| told.push(m);
        let source = Down { hangs };
        let waited = suggest_with_retry(&source, request, stop, running, &mut on_wait);
        tokio::time::timeout(Duration::from_secs(20), waited)
            .await
            .expect("the wait ends")
            .unwrap()
    }

    /// While the source is down, a trial that ends is handed back to be recorded, and a stop
    /// ends the wait, also during a call that never answers.
    #[tokio::test]
    async fn a_wait_for_a_source_ends_when_a_trial_ends_or_the_run_stops() {
        let (tx, mut stop) = watch::channel(StopLevel::Run);
        let mut running = JoinSet::new();
        running.spawn(async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            ("t-1".to_string(), ProcessReport::stopped(Vec::new()))
        });
        match wait_for(false, &mut stop, &mut running).await {
            SourceWait::TrialEnded(joined) => assert_eq!(joined.unwrap().0, "t-1"),
            other => panic!("{other:?}"),
        }
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            tx.send(StopLevel::Terminate).unwrap();
        });
        let waited = wait_for(true, &mut stop, &mut running).await;
        assert!(matches!(waited, SourceWait::Stopped), "{waited:?}");
    }
}
