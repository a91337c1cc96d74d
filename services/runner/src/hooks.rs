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
use vernier_core::{Suggestions, TrialRecord};
use vernier_store::SqlStore;

pub use crate::child::PUSH_ADDRESS_ENV;
/// Why a source gave no proposals: the driver waits and retries, or stops with
/// [`RunnerError::SuggestionSource`].
pub use vernier_engine::SourceError;

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
    /// What `vernier resume NAME` needs after it to find the experiment again (` --db
    /// runs.db`, empty for the default database), for the messages the run records.
    pub resume_flags: String,
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
pub const FIRST_BACKOFF: Duration = Duration::from_millis(500);
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// How long a call may go unanswered before the user is told the run waits for it.
pub const SLOW_CALL: Duration = Duration::from_secs(10);

/// The wait before the next call after one more failed: doubled, from [`FIRST_BACKOFF`] up to
/// [`MAX_BACKOFF`].
pub fn next_backoff(last: Option<Duration>) -> Duration {
    last.map_or(FIRST_BACKOFF, |d| (d * 2).min(MAX_BACKOFF))
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

    #[test]
    fn the_backoff_doubles_up_to_its_cap() {
        let mut last = None;
        let waits: Vec<u64> = (0..9)
            .map(|_| {
                let d = next_backoff(last);
                last = Some(d);
                d.as_millis() as u64
            })
            .collect();
        assert_eq!(
            waits,
            [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]
        );
    }
}
