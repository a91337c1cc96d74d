//! `SqlStore`, the store's public face: picks the backend from the URL and forwards each call,
//! so each database is one `Backend` variant and module with the same methods.

use crate::error::StoreError;
use crate::fence::Fence;
use crate::file_identity::FileIdentity;
use crate::lease::{LeaseClaim, LeaseRow};
use crate::model::{
    ExperimentRow, ExperimentStatusRow, ExperimentSummaries, StoredMetric, TrialRow, TrialUpdate,
};
use crate::mysql::MySqlBackend;
use crate::options::{OpenMode, StoreOptions};
use crate::outage::Outages;
use crate::postgres::PostgresBackend;
use crate::sqlite::SqliteBackend;
use crate::url::{self, DatabaseUrl, SqliteTarget};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use vernier_core::Observation;

/// A pooled connection to the experiment database. Cheap to clone; clones share the pool.
#[derive(Debug, Clone)]
pub struct SqlStore {
    backend: Backend,
    /// The SQLite file opened, to notice it being deleted or replaced under this store.
    file: Option<FileIdentity>,
    /// Set on a driver's store: calls wait out a server that stops answering.
    outages: Option<Outages>,
    /// Set on a driver's store: writes are refused once its lease is another driver's.
    fence: Option<Arc<Fence>>,
}

#[derive(Debug, Clone)]
enum Backend {
    Sqlite(SqliteBackend),
    Postgres(PostgresBackend),
    MySql(MySqlBackend),
}

/// Forwards a call to whichever backend the store was opened with, once.
macro_rules! dispatch_once {
    ($self:ident . $method:ident ( $($arg:expr),* )) => {
        match &$self.backend {
            Backend::Sqlite(b) => b.$method($($arg),*).await.map_err(|e| $self.explain(e)),
            Backend::Postgres(b) => b.$method($($arg),*).await,
            Backend::MySql(b) => b.$method($($arg),*).await,
        }
    };
}

/// Forwards a call, and again while the server is unreachable if this store rides outages.
macro_rules! dispatch {
    ($self:ident . $method:ident ( $($arg:expr),* )) => {
        match &$self.outages {
            None => dispatch_once!($self.$method($($arg),*)),
            Some(outages) => outages.ride(|| async { dispatch_once!($self.$method($($arg),*)) }).await,
        }
    };
}

/// Opening a server database, given up after `within`.
async fn answered_within<T>(
    url: &str,
    within: Duration,
    opening: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    tokio::time::timeout(within, opening)
        .await
        .unwrap_or_else(|_| {
            Err(StoreError::NoAnswer {
                url: url::redact(url),
                doing: "while being opened; nothing was read or written",
                waited: within,
            })
        })
}

impl SqlStore {
    /// Opens the database at `url` with default options and brings its schema up to date.
    ///
    /// `url` is one of
    /// - `sqlite://PATH`, `sqlite:PATH` or a bare path (no query parameters are parsed).
    ///   `:memory:` gives a private in-memory database, for tests. A missing file is created;
    ///   its directory must exist. SQLite runs with WAL, `synchronous=NORMAL` and foreign keys
    ///   on, so several processes can share one file;
    /// - `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?OPTIONS]` (also `postgresql://`);
    /// - `mysql://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?OPTIONS]` (also `mariadb://`).
    ///
    /// Server databases must exist; the store creates its tables in them.
    pub async fn connect(url: &str) -> Result<SqlStore, StoreError> {
        Self::connect_with(url, StoreOptions::default()).await
    }

    /// [`SqlStore::connect`] in the given mode, with default lock timeout.
    pub async fn open(url: &str, mode: OpenMode) -> Result<SqlStore, StoreError> {
        Self::connect_with(
            url,
            StoreOptions {
                mode,
                ..StoreOptions::default()
            },
        )
        .await
    }

    /// [`SqlStore::connect`] with explicit options.
    pub async fn connect_with(url: &str, options: StoreOptions) -> Result<SqlStore, StoreError> {
        let wait = options.lock_timeout;
        let parsed = url::parse(url)?;
        let path = match &parsed {
            DatabaseUrl::Sqlite(SqliteTarget::File(path)) => Some(path.clone()),
            _ => None,
        };
        let backend = match parsed {
            DatabaseUrl::Sqlite(target) => {
                Backend::Sqlite(SqliteBackend::connect(url, &target, wait, options.mode).await?)
            }
            DatabaseUrl::Postgres(u) => Backend::Postgres(
                answered_within(
                    &u,
                    options.connect_within,
                    PostgresBackend::connect(&u, wait),
                )
                .await?,
            ),
            DatabaseUrl::MySql(u) => Backend::MySql(
                answered_within(&u, options.connect_within, MySqlBackend::connect(&u, wait))
                    .await?,
            ),
        };
        let file = path.as_deref().and_then(FileIdentity::of);
        Ok(SqlStore {
            backend,
            file,
            outages: None,
            fence: None,
        })
    }

    /// A clone whose calls, when the connection to the server is lost, wait and try again every
    /// second until it answers or `give_up` turns `true` (see [`crate::outage`]). For drivers,
    /// whose trials keep running through a database restart; the clone shares the pool.
    pub fn riding_outages(&self, give_up: watch::Receiver<bool>) -> SqlStore {
        let server = match &self.backend {
            Backend::Sqlite(_) => None,
            Backend::Postgres(b) => Some(b.url().to_owned()),
            Backend::MySql(b) => Some(b.url().to_owned()),
        };
        SqlStore {
            outages: Some(Outages::new(give_up, server)),
            ..self.clone()
        }
    }

    /// A clone whose writes of trials, observations and the experiment's status first prove
    /// that `owner` still holds `experiment`'s lease (at most once a second; see
    /// [`crate::fence`]), failing with [`StoreError::LeaseLost`] once it does not.
    pub fn fenced_by(&self, experiment: &str, owner: &str) -> SqlStore {
        SqlStore {
            fence: Some(Arc::new(Fence::new(experiment, owner))),
            ..self.clone()
        }
    }

    /// Proves the fencing lease before a write, when it is due.
    async fn fenced(&self) -> Result<(), StoreError> {
        let Some(fence) = &self.fence else {
            return Ok(());
        };
        let now = chrono::Utc::now().timestamp_micros();
        if !fence.due(now) {
            return Ok(());
        }
        // Renewal fails with `LeaseLost` once another driver holds the lease.
        self.renew_lease(&fence.experiment, &fence.owner, now)
            .await?;
        fence.proven(now);
        Ok(())
    }

    /// Which database this store talks to: `sqlite`, `postgres` or `mysql`.
    pub fn backend_name(&self) -> &'static str {
        match &self.backend {
            Backend::Sqlite(_) => "sqlite",
            Backend::Postgres(_) => "postgres",
            Backend::MySql(_) => "mysql",
        }
    }

    /// Checks that the database answers (and, for a SQLite file, is still where it was opened).
    pub async fn ping(&self) -> Result<(), StoreError> {
        self.check_in_place()?;
        dispatch!(self.ping())
    }

    /// [`StoreError::DatabaseFileGone`] if the SQLite file this store opened has been deleted
    /// or replaced since (writes would still succeed, into a file nobody can open again).
    /// Server databases always pass: a lost server fails the next query by itself.
    pub fn check_in_place(&self) -> Result<(), StoreError> {
        self.file.as_ref().map_or(Ok(()), FileIdentity::check)
    }

    /// Closes the pool and waits for its connections to finish; later calls fail.
    pub async fn close(&self) {
        match &self.backend {
            Backend::Sqlite(b) => b.close().await,
            Backend::Postgres(b) => b.close().await,
            Backend::MySql(b) => b.close().await,
        }
    }

    /// A failed call on a SQLite file that has been deleted or replaced since it was opened
    /// fails because of that ("no such table", "disk I/O error"): say so instead.
    fn explain(&self, error: StoreError) -> StoreError {
        match self.check_in_place() {
            Err(gone) => gone,
            Ok(()) => error,
        }
    }

    /// Fails with [`StoreError::ExperimentExists`] if the name is taken.
    pub async fn create_experiment(&self, e: &ExperimentRow) -> Result<(), StoreError> {
        match dispatch!(self.create_experiment(e)) {
            Err(taken @ StoreError::ExperimentExists(_)) if self.outages.is_some() => {
                let stored = self.get_experiment(&e.name).await?;
                ours_or(taken, stored.as_ref() == Some(e))
            }
            other => other,
        }
    }

    pub async fn get_experiment(&self, name: &str) -> Result<Option<ExperimentRow>, StoreError> {
        let row: Option<ExperimentRow> = dispatch!(self.get_experiment(name))?;
        Ok(row.filter(|r| r.name == name))
    }

    /// All experiments, oldest first (ties by name).
    pub async fn list_experiments(&self) -> Result<Vec<ExperimentRow>, StoreError> {
        dispatch!(self.list_experiments())
    }

    /// Replaces the whole status; [`StoreError::NotFound`] if there is no such experiment.
    pub async fn update_experiment_status(
        &self,
        name: &str,
        status: &ExperimentStatusRow,
    ) -> Result<(), StoreError> {
        self.fenced().await?;
        dispatch!(self.update_experiment_status(name, status))
    }

    /// Replaces the stored spec (`vernier enqueue` appends to `spec.enqueuedTrials`);
    /// [`StoreError::NotFound`] if there is no such experiment.
    pub async fn update_experiment_spec(
        &self,
        name: &str,
        spec_json: &str,
    ) -> Result<(), StoreError> {
        self.fenced().await?;
        dispatch!(self.update_experiment_spec(name, spec_json))
    }

    /// Deletes the experiment, its trials and their observation logs in one transaction.
    /// Returns whether the experiment existed.
    pub async fn delete_experiment(&self, name: &str) -> Result<bool, StoreError> {
        if !exact_key(name) {
            return Ok(false);
        }
        dispatch!(self.delete_experiment(name))
    }

    /// The experiment's lease row, if a driver holds (or held and died with) one. Readers
    /// never need it; it tells commands that change an experiment who drives it.
    pub async fn get_lease(&self, experiment: &str) -> Result<Option<LeaseRow>, StoreError> {
        dispatch!(self.get_lease(experiment))
    }

    /// Takes the experiment's lease for `claim` in one transaction: granted when no one holds
    /// it, when `claim.owner` already does (its heartbeat is renewed), or when the holder's
    /// heartbeat is older than `ttl` at `now_us` or `holder_gone` says it is gone; otherwise
    /// [`StoreError::LeaseHeld`] names the holder. Returns the stale lease taken over, if any.
    /// Two claimants racing for a free lease: one wins, the other sees it held.
    pub async fn acquire_lease(
        &self,
        experiment: &str,
        claim: &LeaseClaim,
        now_us: i64,
        ttl: Duration,
        holder_gone: &(dyn Fn(&LeaseRow) -> bool + Send + Sync),
    ) -> Result<Option<LeaseRow>, StoreError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match dispatch!(self.acquire_lease(experiment, claim, now_us, ttl, holder_gone)) {
                // Both claimants saw no row and inserted: the loser retries and sees the winner.
                Err(StoreError::Query { error, .. }) if attempt < 4 && is_race(&error) => {}
                other => return other,
            }
        }
    }

    /// Renews the heartbeat of a lease `owner` holds; [`StoreError::LeaseLost`] if it holds
    /// it no more (another driver took it over after the heartbeat lapsed).
    pub async fn renew_lease(
        &self,
        experiment: &str,
        owner: &str,
        now_us: i64,
    ) -> Result<(), StoreError> {
        dispatch!(self.renew_lease(experiment, owner, now_us))
    }

    /// Drops the lease if `owner` still holds it; returns whether it did.
    pub async fn release_lease(&self, experiment: &str, owner: &str) -> Result<bool, StoreError> {
        dispatch!(self.release_lease(experiment, owner))
    }

    /// Fails with [`StoreError::TrialExists`] if the name is taken (in any experiment),
    /// [`StoreError::TrialSeqTaken`] if the experiment already has a trial with this `seq`,
    /// and [`StoreError::NotFound`] if the experiment does not exist.
    pub async fn insert_trial(&self, t: &TrialRow) -> Result<(), StoreError> {
        self.fenced().await?;
        match dispatch!(self.insert_trial(t)) {
            Err(taken @ (StoreError::TrialExists(_) | StoreError::TrialSeqTaken { .. }))
                if self.outages.is_some() =>
            {
                let stored = self.get_trial(&t.name).await?;
                ours_or(taken, stored.as_ref() == Some(t))
            }
            other => other,
        }
    }

    /// Applies `update` (see [`TrialUpdate`] for which fields overwrite);
    /// [`StoreError::NotFound`] if there is no such trial.
    pub async fn update_trial(&self, name: &str, update: &TrialUpdate) -> Result<(), StoreError> {
        self.fenced().await?;
        dispatch!(self.update_trial(name, update))
    }

    /// Records the early-stopping rules frozen for trial `name` (JSON, see
    /// [`TrialRow::early_stopping_rules`]); [`StoreError::NotFound`] if there is no such trial.
    pub async fn set_trial_early_stopping_rules(
        &self,
        name: &str,
        rules_json: &str,
    ) -> Result<(), StoreError> {
        self.fenced().await?;
        dispatch!(self.set_trial_early_stopping_rules(name, rules_json))
    }

    pub async fn get_trial(&self, name: &str) -> Result<Option<TrialRow>, StoreError> {
        let row: Option<TrialRow> = dispatch!(self.get_trial(name))?;
        Ok(row.filter(|r| r.name == name))
    }

    /// The experiment's trials in creation order (`seq`).
    pub async fn list_trials(&self, experiment: &str) -> Result<Vec<TrialRow>, StoreError> {
        if !exact_key(experiment) {
            return Ok(Vec::new());
        }
        dispatch!(self.list_trials(experiment))
    }

    /// Appends observation logs for `trial` in one transaction (Katib `ReportObservationLog`)
    /// and merges them into the trial's reduced observation in the same transaction, so the
    /// two never disagree while the experiment runs. Once the trial and its experiment have
    /// ended (both `completed_us` set) the trial's reduced observation is final, as in Katib:
    /// logs still arrive and are kept, but change neither its metrics nor the best trial. The trial need not be in the trials
    /// table: in Kubernetes mode trials are custom resources. An empty slice does nothing.
    pub async fn report_observations(
        &self,
        trial: &str,
        logs: &[Observation],
    ) -> Result<(), StoreError> {
        self.fenced().await?;
        // Into a deleted file they would be acknowledged and lost.
        self.check_in_place()?;
        let Some(outages) = &self.outages else {
            return self.send_observations(trial, logs, false).await;
        };
        let mut sent = false;
        outages
            .ride(|| self.send_observations(trial, logs, std::mem::replace(&mut sent, true)))
            .await
    }

    /// One attempt at [`Self::report_observations`]; `again` when an earlier one lost its
    /// connection, which may have broken after the server committed the batch and before it
    /// answered: then the batch is not sent twice.
    async fn send_observations(
        &self,
        trial: &str,
        logs: &[Observation],
        again: bool,
    ) -> Result<(), StoreError> {
        if again && self.holds_batch(trial, logs).await? {
            return Ok(());
        }
        dispatch_once!(self.report_observations(trial, logs))
    }

    /// Whether `logs`, written in one transaction, are stored already: their last row is
    /// there at least as often as the batch holds it. Rows carry their own microsecond
    /// timestamps, so an identical row written before the batch is not a practical worry.
    async fn holds_batch(&self, trial: &str, logs: &[Observation]) -> Result<bool, StoreError> {
        let Some(last) = logs.last() else {
            return Ok(true);
        };
        let in_batch = logs.iter().filter(|o| *o == last).count() as i64;
        let stored = dispatch_once!(self.count_observation(trial, last))?;
        Ok(stored >= in_batch)
    }

    /// A trial's observation logs (Katib `GetObservationLog`): optionally one metric only and
    /// only times within `start_us..=end_us`; ordered by time, then by insertion.
    pub async fn observations(
        &self,
        trial: &str,
        metric: Option<&str>,
        start_us: Option<i64>,
        end_us: Option<i64>,
    ) -> Result<Vec<Observation>, StoreError> {
        dispatch!(self.observations(trial, metric, start_us, end_us))
    }

    /// Every observation log of every trial of the experiment, as `(trial name, observation)`,
    /// in one query: ordered by trial `seq`, then time, then insertion.
    pub async fn observations_for_experiment(
        &self,
        experiment: &str,
    ) -> Result<Vec<(String, Observation)>, StoreError> {
        let mut out = Vec::new();
        self.for_each_experiment_observation(experiment, &mut |trial, time, metric, value| {
            out.push((
                trial.to_owned(),
                Observation {
                    metric: metric.to_owned(),
                    timestamp_us: time,
                    value: value.to_owned(),
                },
            ));
        })
        .await?;
        Ok(out)
    }

    /// Streams every observation log of the experiment to `f` as `(trial, time µs, metric,
    /// value)`, grouped by trial in `seq` order and in time order within a trial, without
    /// holding them all in memory: reports of experiments with millions of observations reduce
    /// them on the fly.
    pub async fn for_each_experiment_observation(
        &self,
        experiment: &str,
        f: &mut (dyn FnMut(&str, i64, &str, &str) + Send),
    ) -> Result<(), StoreError> {
        // Not retried: rows already handed to `f` would be handed to it again.
        dispatch_once!(self.for_each_experiment_observation(experiment, f))
    }

    /// Deletes a trial's observation logs and its reduced observation (Katib
    /// `DeleteObservationLog`); returns how many logs.
    pub async fn delete_observations(&self, trial: &str) -> Result<u64, StoreError> {
        self.fenced().await?;
        dispatch!(self.delete_observations(trial))
    }

    /// The reduced observations (min, max, latest per metric) of the experiment's trials, in
    /// two queries whatever the number of logs: what reports read instead of the raw logs.
    pub async fn experiment_summaries(
        &self,
        experiment: &str,
    ) -> Result<ExperimentSummaries, StoreError> {
        dispatch!(self.experiment_summaries(experiment))
    }

    /// One trial's reduced observation, metrics by name, and whether it is complete (false
    /// for a trial whose logs predate the summaries: reduce its raw logs instead).
    pub async fn trial_summary(
        &self,
        trial: &str,
    ) -> Result<(Vec<StoredMetric>, bool), StoreError> {
        dispatch!(self.trial_summary(trial))
    }

    /// The trial's metrics reduced to min, max and latest, from its stored summary, or from its
    /// raw logs when they predate the summaries; only the metrics in `names` that have logs,
    /// in the order of `names`.
    pub async fn trial_metric_summaries(
        &self,
        trial: &str,
        names: &[String],
    ) -> Result<Vec<vernier_core::MetricSummary>, StoreError> {
        let (stored, complete) = self.trial_summary(trial).await?;
        if complete {
            let mut stored: Vec<_> = stored.into_iter().map(|m| m.summary).collect();
            return Ok(names
                .iter()
                .filter_map(|n| {
                    let i = stored.iter().position(|s| &s.name == n)?;
                    Some(stored.swap_remove(i))
                })
                .collect());
        }
        let logs = self.observations(trial, None, None, None).await?;
        Ok(names
            .iter()
            .filter_map(|n| vernier_core::MetricSummary::reduce(n, &logs))
            .collect())
    }

    /// The names of the metrics the trial reported a value for, sorted, from its stored
    /// summary or from its raw logs when they predate the summaries. Katib's `unavailable`
    /// marker (recorded for an objective that was never reported) is not a report.
    pub async fn reported_metric_names(&self, trial: &str) -> Result<Vec<String>, StoreError> {
        use vernier_core::UNAVAILABLE;
        let (stored, complete) = self.trial_summary(trial).await?;
        let mut names: Vec<String> = if complete {
            stored
                .into_iter()
                .filter(|m| m.numeric_count > 0 || m.summary.latest != UNAVAILABLE)
                .map(|m| m.summary.name)
                .collect()
        } else {
            let logs = self.observations(trial, None, None, None).await?;
            logs.into_iter()
                .filter(|o| o.value != UNAVAILABLE)
                .map(|o| o.metric)
                .collect()
        };
        names.sort_unstable();
        names.dedup();
        Ok(names)
    }
}

/// Whether `key` can be compared in SQL as it is: MySQL's and MariaDB's collations pad with
/// spaces, so there `'q6  ' = 'q6'`, and `vernier delete 'q6  '` would delete `q6`. No stored
/// experiment or trial name ends with a space (names are Kubernetes object names), so such a
/// key matches nothing on any store.
fn exact_key(key: &str) -> bool {
    !key.ends_with(' ')
}

/// A store that rides outages sends an insert again when the connection broke before the
/// server answered, though the server may have committed it: finding exactly the row it sent
/// is that insert having worked, not somebody else's duplicate.
fn ours_or(taken: StoreError, stored_is_ours: bool) -> Result<(), StoreError> {
    if stored_is_ours { Ok(()) } else { Err(taken) }
}

/// A unique violation or deadlock between two transactions inserting the same lease row.
fn is_race(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Database(db) => {
            db.kind() == sqlx::error::ErrorKind::UniqueViolation
                || matches!(db.code().as_deref(), Some("40P01" | "40001"))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(metric: &str, timestamp_us: i64, value: &str) -> Observation {
        Observation {
            metric: metric.to_owned(),
            timestamp_us,
            value: value.to_owned(),
        }
    }

    #[tokio::test]
    async fn a_batch_sent_again_after_its_commit_is_not_stored_twice() {
        let store = SqlStore::connect(":memory:").await.unwrap();
        let batch = vec![
            obs("loss", 1, "0.9"),
            obs("acc", 1, "0.5"),
            obs("loss", 2, "0.8"),
        ];
        let seven = obs("loss", 3, "0.7");
        // (what, batch, sent again, rows stored after it)
        let steps = [
            ("first attempt", batch.clone(), false, 3),
            // The answer was lost after the commit: the next attempt finds the batch.
            ("committed, sent again", batch, true, 3),
            // Lost before the commit: the next attempt writes it.
            ("lost before its commit", vec![seven.clone()], true, 4),
            // A first attempt always writes, even a row equal to a stored one.
            ("first attempt, a stored row", vec![seven.clone()], false, 5),
            // A repeat is written again until the batch's count of it is stored.
            ("sent again, repeat stored", vec![seven.clone(); 2], true, 5),
            ("sent again, repeat short", vec![seven; 3], true, 8),
        ];
        for (what, logs, again, rows) in steps {
            store.send_observations("t", &logs, again).await.unwrap();
            let stored = store.observations("t", None, None, None).await.unwrap();
            assert_eq!(stored.len(), rows, "{what}");
        }
        let (summary, _) = store.trial_summary("t").await.unwrap();
        let loss = summary.iter().find(|m| m.summary.name == "loss").unwrap();
        assert_eq!(loss.numeric_count, 7);
    }
}
