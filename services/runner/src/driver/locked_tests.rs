//! The driver when another session holds the database locked past the store's lock timeout:
//! it ends with the lock's error at once, instead of waiting the timeout out again for every
//! record of the stop.

#![allow(clippy::unwrap_used)]

use super::{DriverEvent, Observer, Progress, run};
use crate::error::RunnerError;
use crate::experiment::{LocalExperiment, LocalPaths};
use crate::lease::ExperimentLease;
use crate::process::StopLevel;
use sqlx::{Connection, Executor};
use std::time::Duration;
use tokio::sync::{oneshot, watch};
use vernier_store::{SqlStore, StoreError, StoreOptions};

const EXPERIMENT: &str = r#"
apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: locked
spec:
  maxTrialCount: 3
  parallelTrialCount: 1
  objective:
    type: minimize
    objectiveMetricName: loss
  algorithm:
    algorithmName: random
  parameters:
    - name: x
      parameterType: double
      feasibleSpace: {min: "0", max: "1"}
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
                command: ["sh", "-c", "echo loss=${trialParameters.x}; sleep 5"]
"#;

/// Keeps the warnings.
#[derive(Default)]
struct Warnings(Vec<String>);

impl Observer for Warnings {
    fn on_event(&mut self, event: &DriverEvent, _: &Progress) {
        if let DriverEvent::Warning(w) = event {
            self.0.push(w.clone());
        }
    }
}

/// Whether the first trial's value is recorded: the lock is taken after it, so the trial's
/// end is the write that meets the lock (a value printed under the lock waits for it instead,
/// as long as the trial runs).
async fn first_value_recorded(store: &SqlStore) -> bool {
    let Ok(trials) = store.list_trials("locked").await else {
        return false;
    };
    let Some(first) = trials.first() else {
        return false;
    };
    let logs = store.observations(&first.name, None, None, None).await;
    logs.is_ok_and(|l| !l.is_empty())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_locked_elsewhere_ends_the_run_without_waiting_for_each_record() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("v.db").display());
    let options = StoreOptions {
        lock_timeout: Duration::from_millis(300),
        ..StoreOptions::default()
    };
    let store = SqlStore::connect_with(&url, options).await.unwrap();
    let spec = vernier_spec::parse_experiment(EXPERIMENT).unwrap();
    let paths = LocalPaths {
        work_dir: dir.path().to_path_buf(),
        log_dir: dir.path().join("logs"),
    };
    let exp = LocalExperiment::new(spec, paths).unwrap();
    exp.create_log_dir().unwrap();
    super::create_experiment(&store, &exp, 1).await.unwrap();
    let lease = ExperimentLease::acquire(&store, "locked").await.unwrap();

    let (release, released) = oneshot::channel::<()>();
    let holder_url = url.clone();
    let watched = store.clone();
    let holder = tokio::spawn(async move {
        while !first_value_recorded(&watched).await {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let mut other = sqlx::SqliteConnection::connect(&holder_url).await.unwrap();
        other.execute("BEGIN IMMEDIATE").await.unwrap();
        let _ = released.await;
        other.execute("ROLLBACK").await.unwrap();
        let _ = other.close().await;
    });
    let mut observer = Warnings::default();
    let (_stop, stop) = watch::channel(StopLevel::Run);
    // A guard against a hang, not a measure: the run ends about when its first trial does.
    let ended = tokio::time::timeout(
        Duration::from_secs(120),
        run(&store, &exp, 1, stop, &mut observer, &lease),
    )
    .await
    .expect("the run ends while the database stays locked");
    let _ = release.send(());
    holder.await.unwrap();

    assert!(
        matches!(ended, Err(RunnerError::Store(StoreError::Locked { .. }))),
        "{ended:?}"
    );
    let said = observer.0.join("\n");
    assert!(
        said.contains("stayed locked by another session")
            && said.contains("stopping the running trials without recording how they ended"),
        "{said}"
    );
    // What was recorded before the lock is kept: the experiment and its first trial.
    let trials = store.list_trials("locked").await.unwrap();
    assert!(!trials.is_empty());
    let _ = lease.release().await;
}
