//! Writing a trial's observations through a database lock another session holds. The store
//! gives up on one statement after its lock timeout; dropping the batch then would lose values
//! the trial printed, so the recorder tries again, and the trial meanwhile waits on its output
//! pipe (the recorder's queue is bounded). Only a stop (Ctrl-C, the experiment ending) ends
//! the waiting, with the store's error; the batch is then kept and written before the next one
//! ([`Backlog`]), so a lock that outlasts the stop leaves no gap in the middle of a series.

use vernier_core::Observation;
use vernier_store::{SqlStore, StoreError};

/// Records `logs` for `trial`, trying again while the database stays locked and `stopping`
/// says the trial is not being stopped.
pub(crate) async fn record_observations(
    store: &SqlStore,
    trial: &str,
    logs: &[Observation],
    stopping: impl Fn() -> bool,
) -> Result<(), StoreError> {
    let mut warned = false;
    loop {
        match store.report_observations(trial, logs).await {
            Err(StoreError::Locked { url, waited, .. }) if !stopping() => {
                if !warned {
                    tracing::warn!(
                        "database {url} has been locked by another session for more than \
                         {waited:?}; {} observation(s) of trial {trial} wait and are recorded \
                         once it is free (the trial waits too)\nhint: end the session holding \
                         the lock; Ctrl-C stops the run, and `vernier resume` continues it",
                        logs.len()
                    );
                    warned = true;
                }
            }
            other => return other,
        }
    }
}

/// Observations a stopped write could not record, written first with the next batch.
#[derive(Debug, Default)]
pub(crate) struct Backlog {
    unwritten: Vec<Observation>,
}

impl Backlog {
    /// Records what earlier writes left, then `logs`, in order ([`record_observations`]); on
    /// failure keeps them all for the next call.
    pub(crate) async fn write(
        &mut self,
        store: &SqlStore,
        trial: &str,
        logs: Vec<Observation>,
        stopping: impl Fn() -> bool,
    ) -> Result<(), StoreError> {
        self.unwritten.extend(logs);
        record_observations(store, trial, &self.unwritten, stopping).await?;
        self.unwritten.clear();
        Ok(())
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.unwritten.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_store::{obs, with_trial};
    use sqlx::{Connection, Executor};
    use std::time::Duration;
    use vernier_core::TrialState;
    use vernier_store::StoreOptions;

    /// A file store waiting 200 ms for locks, with experiment `e` and its trial `e-0`.
    async fn store(dir: &std::path::Path) -> (SqlStore, String) {
        let url = format!("sqlite://{}", dir.join("v.db").display());
        let options = StoreOptions {
            lock_timeout: Duration::from_millis(200),
            ..StoreOptions::default()
        };
        let store = SqlStore::connect_with(&url, options).await.unwrap();
        with_trial(&store, TrialState::Running).await;
        (store, url)
    }

    /// Holds the database's write lock from another connection for `held`.
    async fn lock_for(url: &str, held: Duration) -> tokio::task::JoinHandle<()> {
        let mut other = sqlx::SqliteConnection::connect(url).await.unwrap();
        other.execute("BEGIN IMMEDIATE").await.unwrap();
        tokio::spawn(async move {
            tokio::time::sleep(held).await;
            other.execute("ROLLBACK").await.unwrap();
            let _ = other.close().await;
        })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lock_held_past_the_timeout_delays_observations_but_keeps_them() {
        let dir = tempfile::tempdir().unwrap();
        let (store, url) = store(dir.path()).await;
        // Five times the store's lock timeout.
        let holder = lock_for(&url, Duration::from_millis(1000)).await;
        let logs = [obs("loss", 1, "0.5"), obs("loss", 2, "0.4")];
        record_observations(&store, "e-0", &logs, || false)
            .await
            .unwrap();
        holder.await.unwrap();
        let logs = store.observations("e-0", None, None, None).await.unwrap();
        assert_eq!(logs.len(), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stopped_trial_stops_waiting_with_the_stores_error() {
        let dir = tempfile::tempdir().unwrap();
        let (store, url) = store(dir.path()).await;
        let holder = lock_for(&url, Duration::from_millis(1000)).await;
        let err = record_observations(&store, "e-0", &[obs("loss", 1, "0.5")], || true)
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::Locked { .. }), "{err:?}");
        holder.await.unwrap();
    }

    /// A batch a stopped write gave up on is written, in its place, with the next batch once
    /// the lock is gone: the series has no gap.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_given_up_on_while_stopping_is_written_with_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let (store, url) = store(dir.path()).await;
        let holder = lock_for(&url, Duration::from_millis(1000)).await;
        let mut backlog = Backlog::default();
        let first = vec![obs("loss", 1, "0.5"), obs("loss", 2, "0.4")];
        let err = backlog.write(&store, "e-0", first, || true).await;
        assert!(matches!(err, Err(StoreError::Locked { .. })), "{err:?}");
        assert!(!backlog.is_empty());
        holder.await.unwrap();
        backlog
            .write(&store, "e-0", vec![obs("loss", 3, "0.3")], || true)
            .await
            .unwrap();
        assert!(backlog.is_empty());
        let values: Vec<String> = store
            .observations("e-0", None, None, None)
            .await
            .unwrap()
            .into_iter()
            .map(|o| o.value)
            .collect();
        assert_eq!(values, ["0.5", "0.4", "0.3"]);
    }
}
