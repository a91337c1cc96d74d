//! The driver while the external suggestion source is slow to answer: trials that end during
//! the call are recorded as they end, and a stop cancels a call that never answers.

#![allow(clippy::unwrap_used)]

use super::test_sandbox::{Sandbox, Warnings, experiment_yaml};
use super::{Outcome, run_with};
use crate::experiment::LocalExperiment;
use crate::hooks::{RunHooks, SourceError, SourceRequest, SuggestionSource};
use crate::process::StopLevel;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{Notify, watch};
use vernier_core::{Assignment, ParamValue, Proposal, Suggestions, TrialState};
use vernier_store::{SqlStore, StoreOptions};

/// Answers its first call with the given values of `x`; every later call waits until
/// `release` is notified (forever if it never is), then proposes `x = 0` as often as asked.
#[derive(Debug)]
struct Scripted {
    first: Vec<f64>,
    calls: AtomicUsize,
    in_call: AtomicBool,
    release: Notify,
}

impl Scripted {
    fn new(first: &[f64]) -> Arc<Scripted> {
        Arc::new(Scripted {
            first: first.to_vec(),
            calls: AtomicUsize::new(0),
            in_call: AtomicBool::new(false),
            release: Notify::new(),
        })
    }
}

fn proposals(xs: impl IntoIterator<Item = f64>) -> Suggestions {
    let proposals = xs
        .into_iter()
        .map(|x| Proposal::new(Assignment(vec![("x".into(), ParamValue::Double(x))])))
        .collect();
    Suggestions {
        proposals,
        state: None,
        exhausted: false,
    }
}

#[async_trait::async_trait]
impl SuggestionSource for Scripted {
    fn describe(&self) -> String {
        "scripted source".into()
    }
    async fn validate(&self, _: &LocalExperiment) -> Result<(), SourceError> {
        Ok(())
    }
    async fn suggest(&self, request: SourceRequest<'_>) -> Result<Suggestions, SourceError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
            return Ok(proposals(self.first.iter().copied()));
        }
        self.in_call.store(true, Ordering::SeqCst);
        self.release.notified().await;
        self.in_call.store(false, Ordering::SeqCst);
        Ok(proposals(std::iter::repeat_n(0.0, request.count)))
    }
}

/// The experiment of these tests: 3 trials, 2 at a time, each sleeping `x` seconds before it
/// reports `loss=x`.
async fn sandbox() -> Sandbox {
    let script = "sleep ${trialParameters.x}; echo loss=${trialParameters.x}";
    let yaml = experiment_yaml("slow-source", 3, 2, script);
    Sandbox::new(&yaml, StoreOptions::default()).await
}

async fn states(store: &SqlStore) -> Vec<TrialState> {
    let trials = store.list_trials("slow-source").await.unwrap();
    trials.iter().map(|t| t.state).collect()
}

/// Waits until the source's second call is in flight.
async fn until_in_call(source: &Scripted) {
    while !source.in_call.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until the trials recorded so far start with `want`.
async fn until_recorded(store: &SqlStore, want: &[TrialState]) {
    while !states(store).await.starts_with(want) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs the sandbox's experiment with `source` as its suggestion source until it ends. The
/// 60 s is a guard against a hang, not a measure.
async fn run_with_source(
    sb: &Sandbox,
    source: &Arc<Scripted>,
    stop: watch::Receiver<StopLevel>,
) -> Outcome {
    let hooks = RunHooks {
        suggestion_source: Some(source.clone()),
        ..RunHooks::default()
    };
    let mut quiet = Warnings::default();
    let ran = run_with(&sb.store, &sb.exp, 1, stop, &mut quiet, &hooks, &sb.lease);
    tokio::time::timeout(Duration::from_secs(60), ran)
        .await
        .expect("the run ends")
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trial_that_ends_while_the_source_is_asked_is_recorded_when_it_ends() {
    let sb = sandbox().await;
    // The first trial ends at once and the driver asks for its replacement; the second ends
    // about 1.5 s later, while that call is still unanswered.
    let source = Scripted::new(&[0.0, 1.5]);
    let (store, watched) = (sb.store.clone(), source.clone());
    let watcher = tokio::spawn(async move {
        until_in_call(&watched).await;
        until_recorded(&store, &[TrialState::Succeeded; 2]).await;
        let recorded_during_call = watched.in_call.load(Ordering::SeqCst);
        watched.release.notify_one();
        recorded_during_call
    });
    let (_stop, stop) = watch::channel(StopLevel::Run);
    // Without the fix the run hangs: the second trial is recorded only after the call
    // answers, which waits for it to be recorded.
    let outcome = run_with_source(&sb, &source, stop).await;
    assert!(
        watcher.await.unwrap(),
        "recorded while the call was in flight"
    );
    assert!(matches!(outcome, Outcome::Completed { .. }), "{outcome:?}");
    assert_eq!(states(&sb.store).await, [TrialState::Succeeded; 3]);
    let _ = sb.lease.release().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_cancels_a_call_that_never_answers() {
    let sb = sandbox().await;
    let source = Scripted::new(&[0.0]);
    let (tx, stop) = watch::channel(StopLevel::Run);
    let (store, watched) = (sb.store.clone(), source.clone());
    tokio::spawn(async move {
        until_in_call(&watched).await;
        until_recorded(&store, &[TrialState::Succeeded]).await;
        tx.send(StopLevel::Terminate).unwrap();
        // Keeps the sender, so the stop is the only way the run ends.
        std::future::pending::<()>().await;
    });
    let outcome = run_with_source(&sb, &source, stop).await;
    assert!(
        matches!(outcome, Outcome::Interrupted { stopped: 0, .. }),
        "{outcome:?}"
    );
    assert_eq!(states(&sb.store).await, [TrialState::Succeeded]);
    assert_eq!(source.calls.load(Ordering::SeqCst), 2);
    let _ = sb.lease.release().await;
}
