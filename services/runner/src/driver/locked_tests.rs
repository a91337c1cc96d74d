//! The driver when another session holds the database locked past the store's lock timeout:
//! it ends with the lock's error at once, instead of waiting the timeout out again for every
//! record of the stop.

#![allow(clippy::unwrap_used)]

use super::run;
use super::test_sandbox::{Sandbox, Warnings, experiment_yaml};
use crate::error::RunnerError;
use crate::process::StopLevel;
use sqlx::{Connection, Executor};
use std::time::Duration;
use tokio::sync::{oneshot, watch};
use vernier_store::{SqlStore, StoreError, StoreOptions};

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
    let options = StoreOptions {
        lock_timeout: Duration::from_millis(300),
        ..StoreOptions::default()
    };
    let script = "echo loss=${trialParameters.x}; sleep 5";
    let sb = Sandbox::new(&experiment_yaml("locked", 3, 1, script), options).await;
    let (store, exp, lease) = (&sb.store, &sb.exp, &sb.lease);

    let (release, released) = oneshot::channel::<()>();
    let holder_url = sb.url.clone();
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
        run(store, exp, 1, stop, &mut observer, lease),
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
    let _ = sb.lease.release().await;
}
