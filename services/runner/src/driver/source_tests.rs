//! The driver while the external suggestion source is slow to answer: trials that end during
//! the call are recorded as they end, and a stop cancels a call that never answers.

#![allow(clippy::unwrap_used)]

use super::{Observer, Outcome, run_with};
use crate::experiment::{LocalExperiment, LocalPaths};
use crate::hooks::{RunHooks, SourceError, SourceRequest, SuggestionSource};
use crate::lease::ExperimentLease;
use crate::process::StopLevel;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{Notify, watch};
use vernier_core::{Assignment, ParamValue, Proposal, Suggestions, TrialState};
use vernier_store::SqlStore;

/// Each trial sleeps `x` seconds, then reports `loss=x`.
const EXPERIMENT: &str = r#"
apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: slow-source
spec:
  maxTrialCount: 3
  parallelTrialCount: 2
  objective:
    type: minimize
    objectiveMetricName: loss
  algorithm:
    algorithmName: random
  parameters:
    - name: x
      parameterType: double
      feasibleSpace: {min: "0", max: "5"}
  trialTemplate:
    primaryContainerName: main
    trialParameters:
      - name: x
        reference: x
    trialSpec:
      apiVersion: batch/v1
      kind: Job
      spec:
        template:
          spec:
            restartPolicy: Never
            containers:
              - name: main
                image: none
                command: ["sh", "-c", "sleep ${trialParameters.x}; echo loss=${trialParameters.x}"]
"#;

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

struct Quiet;

impl Observer for Quiet {
    fn on_event(&mut self, _: &super::DriverEvent, _: &super::Progress) {}
}

struct Sandbox {
    _dir: tempfile::TempDir,
    store: SqlStore,
    exp: LocalExperiment,
    lease: ExperimentLease,
}

async fn sandbox() -> Sandbox {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("v.db").display());
    let store = SqlStore::connect(&url).await.unwrap();
    let spec = vernier_spec::parse_experiment(EXPERIMENT).unwrap();
    let paths = LocalPaths {
        work_dir: dir.path().to_path_buf(),
        log_dir: dir.path().join("logs"),
    };
    let exp = LocalExperiment::new(spec, paths).unwrap();
    exp.create_log_dir().unwrap();
    super::create_experiment(&store, &exp, 1).await.unwrap();
    let lease = ExperimentLease::acquire(&store, &exp.name).await.unwrap();
    Sandbox {
        _dir: dir,
        store,
        exp,
        lease,
    }
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trial_that_ends_while_the_source_is_asked_is_recorded_when_it_ends() {
    let sb = sandbox().await;
    // The first trial ends at once and the driver asks for its replacement; the second ends
    // about 1.5 s later, while that call is still unanswered.
    let source = Scripted::new(&[0.0, 1.5]);
    let hooks = RunHooks {
        suggestion_source: Some(source.clone()),
        ..RunHooks::default()
    };
    let (store, watched) = (sb.store.clone(), source.clone());
    let watcher = tokio::spawn(async move {
        until_in_call(&watched).await;
        until_recorded(&store, &[TrialState::Succeeded; 2]).await;
        let recorded_during_call = watched.in_call.load(Ordering::SeqCst);
        watched.release.notify_one();
        recorded_during_call
    });
    let (_stop, stop) = watch::channel(StopLevel::Run);
    let mut quiet = Quiet;
    // A guard against a hang, not a measure: without the fix, the second trial is recorded
    // only after the call answers, which waits for it to be recorded.
    let ran = run_with(&sb.store, &sb.exp, 1, stop, &mut quiet, &hooks, &sb.lease);
    let outcome = tokio::time::timeout(Duration::from_secs(60), ran)
        .await
        .expect("the run ends")
        .unwrap();
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
    let hooks = RunHooks {
        suggestion_source: Some(source.clone()),
        ..RunHooks::default()
    };
    let (tx, stop) = watch::channel(StopLevel::Run);
    let (store, watched) = (sb.store.clone(), source.clone());
    tokio::spawn(async move {
        until_in_call(&watched).await;
        until_recorded(&store, &[TrialState::Succeeded]).await;
        tx.send(StopLevel::Terminate).unwrap();
        // Keeps the sender, so the stop is the only way the run ends.
        std::future::pending::<()>().await;
    });
    let mut quiet = Quiet;
    let ran = run_with(&sb.store, &sb.exp, 1, stop, &mut quiet, &hooks, &sb.lease);
    let outcome = tokio::time::timeout(Duration::from_secs(60), ran)
        .await
        .expect("the run ends")
        .unwrap();
    assert!(
        matches!(outcome, Outcome::Interrupted { stopped: 0, .. }),
        "{outcome:?}"
    );
    assert_eq!(states(&sb.store).await, [TrialState::Succeeded]);
    assert_eq!(source.calls.load(Ordering::SeqCst), 2);
    let _ = sb.lease.release().await;
}
