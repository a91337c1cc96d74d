//! Every statement the store runs, written once: [`SqlBackend`] runs them on a pool of any sqlx
//! database that implements [`Dialect`], which supplies what differs (placeholders, the summary
//! upsert, write transactions and row locks, error codes). Opening a database differs too much
//! to share and stays in each backend module.

use crate::codec;
use crate::dialect::Dialect;
use crate::error::{ErrorContext, StoreError};
use crate::lease::{self, LeaseClaim, LeaseRow, LeaseWrite};
use crate::model::{
    ExperimentRow, ExperimentStatusRow, ExperimentSummaries, StoredMetric, TrialRow, TrialUpdate,
};
use crate::records::{
    ExperimentRecord, LeaseRecord, SummaryRecord, TrialRecord, lease_row, select_experiment,
    select_lease, select_trial, summary_columns,
};
use crate::summary::{BatchSummary, reduce_batch};
use futures_util::TryStreamExt;
use sqlx::error::ErrorKind;
use sqlx::{
    ColumnIndex, Decode, Encode, Executor, IntoArguments, Pool, QueryBuilder, Row, Transaction,
    Type,
};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Mutex, MutexGuard};
use vernier_core::Observation;

/// How long the statement a dialect runs before closing may wait (for readers to let go).
const ON_CLOSE_WAIT: Duration = Duration::from_secs(2);

/// A deadlock between two writers aborts one of them; it is retried this many times.
const DEADLOCK_RETRIES: usize = 3;

/// One open database: its pool, and how to word its errors.
pub(crate) struct SqlBackend<D: Dialect> {
    pool: Pool<D>,
    /// Queues this process's writers in FIFO order where the dialect asks for it (SQLite):
    /// without it they would meet at SQLite's file lock, whose busy handler polls with sleeps
    /// of up to 100 ms; with it only writers from other processes ever wait there.
    write_lock: Arc<Mutex<()>>,
    errors: ErrorContext,
    /// Opened to read only (`report`, `list`): nothing to fold in at close.
    reads_only: bool,
}

// By hand: a derive would ask `D: Clone + Debug` of the driver's marker type.
impl<D: Dialect> Clone for SqlBackend<D> {
    fn clone(&self) -> Self {
        SqlBackend {
            pool: self.pool.clone(),
            write_lock: Arc::clone(&self.write_lock),
            errors: self.errors.clone(),
            reads_only: self.reads_only,
        }
    }
}

impl<D: Dialect> std::fmt::Debug for SqlBackend<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlBackend")
            .field("database", &D::NAME)
            .field("url", &self.errors.url)
            .finish_non_exhaustive()
    }
}

impl<D: Dialect> SqlBackend<D> {
    pub(crate) fn new(pool: Pool<D>, url: String, lock_timeout: Duration) -> Self {
        SqlBackend {
            pool,
            write_lock: Arc::new(Mutex::new(())),
            errors: ErrorContext { url, lock_timeout },
            reads_only: false,
        }
    }

    /// The same backend on a pool opened to read only.
    pub(crate) fn reading_only(mut self) -> Self {
        self.reads_only = true;
        self
    }

    /// The statement run before closing: the dialect's, but none on a pool that only reads,
    /// which cannot do what it does (fold SQLite's `-wal` file in) and would only wait, for
    /// as long as another session holds the database locked, to be refused.
    fn on_close(&self) -> Option<&'static str> {
        D::ON_CLOSE.filter(|_| !self.reads_only)
    }

    /// The database's url, password redacted.
    pub(crate) fn url(&self) -> &str {
        &self.errors.url
    }

    /// This process's turn to write, where the dialect queues writers.
    async fn writer(&self) -> Option<MutexGuard<'_, ()>> {
        match D::QUEUE_WRITERS {
            true => Some(self.write_lock.lock().await),
            false => None,
        }
    }

    async fn begin_write(&self) -> Result<Transaction<'static, D>, sqlx::Error> {
        match D::BEGIN_WRITE {
            Some(begin) => self.pool.begin_with(begin).await,
            None => self.pool.begin().await,
        }
    }

    /// Turns a driver error of `action` on `name` into the store's error.
    fn fail<'a>(
        &'a self,
        action: &'static str,
        name: &'a str,
    ) -> impl Fn(sqlx::Error) -> StoreError + 'a {
        move |e| self.errors.query::<D>(action, name, e)
    }
}

fn kind_of(e: &sqlx::Error) -> Option<ErrorKind> {
    match e {
        sqlx::Error::Database(db) => Some(db.kind()),
        _ => None,
    }
}

impl<D> SqlBackend<D>
where
    D: Dialect,
    for<'c> &'c mut D::Connection: Executor<'c, Database = D>,
    D::Arguments: IntoArguments<D> + Default,
    for<'a> &'a str: Encode<'a, D> + Decode<'a, D> + Type<D> + ColumnIndex<D::Row>,
    for<'a> String: Encode<'a, D> + Decode<'a, D> + Type<D>,
    for<'a> i64: Encode<'a, D> + Decode<'a, D> + Type<D>,
    for<'a> f64: Encode<'a, D> + Decode<'a, D> + Type<D>,
    for<'a> Option<String>: Encode<'a, D> + Decode<'a, D>,
    for<'a> Option<i64>: Encode<'a, D> + Decode<'a, D>,
    for<'a> Option<f64>: Encode<'a, D> + Decode<'a, D>,
    usize: ColumnIndex<D::Row>,
{
    /// Runs the dialect's closing statement (best effort, briefly), then closes the pool.
    pub(crate) async fn close(&self) {
        if let Some(sql) = self.on_close()
            && !self.pool.is_closed()
        {
            let done = tokio::time::timeout(ON_CLOSE_WAIT, sqlx::raw_sql(sql).execute(&self.pool));
            if let Ok(Err(e)) = done.await {
                tracing::debug!("{sql} before closing {}: {e}", self.errors.url);
            }
        }
        self.pool.close().await;
    }

    pub(crate) async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query(D::sql("SELECT 1"))
            .execute(&self.pool)
            .await
            .map_err(self.fail("reach database", "ping"))?;
        Ok(())
    }

    pub(crate) async fn create_experiment(&self, e: &ExperimentRow) -> Result<(), StoreError> {
        let _writer = self.writer().await;
        let s = &e.status;
        sqlx::query(D::sql(
            "INSERT INTO experiments (name, spec_json, seed, created_us, phase, reason, message, \
             started_us, completed_us, algorithm_state, conditions_json, work_dir, log_dir) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        ))
        .bind(&e.name)
        .bind(&e.spec_json)
        .bind(e.seed)
        .bind(e.created_us)
        .bind(&s.phase)
        .bind(&s.reason)
        .bind(&s.message)
        .bind(s.started_us)
        .bind(s.completed_us)
        .bind(&s.algorithm_state)
        .bind(&s.conditions_json)
        .bind(&e.work_dir)
        .bind(&e.log_dir)
        .execute(&self.pool)
        .await
        .map_err(|err| match kind_of(&err) {
            Some(ErrorKind::UniqueViolation) => StoreError::ExperimentExists(e.name.clone()),
            _ => self.errors.query::<D>("create experiment", &e.name, err),
        })?;
        Ok(())
    }

    pub(crate) async fn get_experiment(
        &self,
        name: &str,
    ) -> Result<Option<ExperimentRow>, StoreError> {
        let row: Option<ExperimentRecord> =
            sqlx::query_as(D::sql(concat!(select_experiment!(), " WHERE name = ?")))
                .bind(name)
                .fetch_optional(&self.pool)
                .await
                .map_err(self.fail("read experiment", name))?;
        Ok(row.map(ExperimentRow::from))
    }

    pub(crate) async fn list_experiments(&self) -> Result<Vec<ExperimentRow>, StoreError> {
        let rows: Vec<ExperimentRecord> = sqlx::query_as(D::sql(concat!(
            select_experiment!(),
            " ORDER BY created_us, name"
        )))
        .fetch_all(&self.pool)
        .await
        .map_err(self.fail("list the experiments of", &self.errors.url))?;
        Ok(rows.into_iter().map(ExperimentRow::from).collect())
    }

    pub(crate) async fn update_experiment_status(
        &self,
        name: &str,
        s: &ExperimentStatusRow,
    ) -> Result<(), StoreError> {
        let _writer = self.writer().await;
        let done = sqlx::query(D::sql(
            "UPDATE experiments SET phase = ?, reason = ?, message = ?, started_us = ?, \
             completed_us = ?, algorithm_state = ?, conditions_json = ? WHERE name = ?",
        ))
        .bind(&s.phase)
        .bind(&s.reason)
        .bind(&s.message)
        .bind(s.started_us)
        .bind(s.completed_us)
        .bind(&s.algorithm_state)
        .bind(&s.conditions_json)
        .bind(name)
        .execute(&self.pool)
        .await
        .map_err(self.fail("update status of experiment", name))?;
        found::<D>(&done, "experiment", name)
    }

    pub(crate) async fn update_experiment_spec(
        &self,
        name: &str,
        spec_json: &str,
    ) -> Result<(), StoreError> {
        self.set_text(
            "UPDATE experiments SET spec_json = ? WHERE name = ?",
            spec_json,
            "update spec of experiment",
            ("experiment", name),
        )
        .await
    }

    /// Writes one text column of the row `(kind, name)`; `action` names the write in errors.
    async fn set_text(
        &self,
        sql: &'static str,
        value: &str,
        action: &'static str,
        (kind, name): (&'static str, &str),
    ) -> Result<(), StoreError> {
        let _writer = self.writer().await;
        let done = sqlx::query(D::sql(sql))
            .bind(value)
            .bind(name)
            .execute(&self.pool)
            .await
            .map_err(self.fail(action, name))?;
        found::<D>(&done, kind, name)
    }

    pub(crate) async fn delete_experiment(&self, name: &str) -> Result<bool, StoreError> {
        let _writer = self.writer().await;
        let err = self.fail("delete experiment", name);
        let mut tx = self.begin_write().await.map_err(&err)?;
        // Logs and summaries have no foreign key (Katib's table has none), so they go first,
        // while the trial names are still there to find them by.
        for sql in [
            "DELETE FROM observation_logs WHERE trial_name IN \
             (SELECT name FROM trials WHERE experiment = ?)",
            "DELETE FROM observation_summaries WHERE trial_name IN \
             (SELECT name FROM trials WHERE experiment = ?)",
            "DELETE FROM observation_summaries_pending WHERE trial_name IN \
             (SELECT name FROM trials WHERE experiment = ?)",
            "DELETE FROM experiment_leases WHERE experiment = ?",
        ] {
            sqlx::query(D::sql(sql))
                .bind(name)
                .execute(&mut *tx)
                .await
                .map_err(&err)?;
        }
        let done = sqlx::query(D::sql("DELETE FROM experiments WHERE name = ?"))
            .bind(name)
            .execute(&mut *tx)
            .await
            .map_err(&err)?;
        tx.commit().await.map_err(&err)?;
        Ok(D::rows_affected(&done) > 0)
    }

    pub(crate) async fn get_lease(&self, experiment: &str) -> Result<Option<LeaseRow>, StoreError> {
        let row: Option<LeaseRecord> =
            sqlx::query_as(D::sql(concat!(select_lease!(), " WHERE experiment = ?")))
                .bind(experiment)
                .fetch_optional(&self.pool)
                .await
                .map_err(self.fail("read lease of experiment", experiment))?;
        Ok(row.map(lease_row))
    }

    pub(crate) async fn acquire_lease(
        &self,
        experiment: &str,
        claim: &LeaseClaim,
        now_us: i64,
        ttl: Duration,
        holder_gone: &(dyn Fn(&LeaseRow) -> bool + Send + Sync),
    ) -> Result<Option<LeaseRow>, StoreError> {
        let _writer = self.writer().await;
        let err = self.fail("take lease of experiment", experiment);
        let mut tx = self.begin_write().await.map_err(&err)?;
        let current: Option<LeaseRecord> = sqlx::query_as(D::sql(D::SELECT_LEASE_LOCKED))
            .bind(experiment)
            .fetch_optional(&mut *tx)
            .await
            .map_err(&err)?;
        let current = current.map(lease_row);
        let gone = current.as_ref().is_some_and(holder_gone);
        let write = lease::settle(current, experiment, claim, now_us, ttl, gone)?;
        let replaced = match write {
            LeaseWrite::Renew => {
                sqlx::query(D::sql(
                    "UPDATE experiment_leases SET heartbeat_us = ? WHERE experiment = ?",
                ))
                .bind(now_us)
                .bind(experiment)
                .execute(&mut *tx)
                .await
                .map_err(&err)?;
                None
            }
            LeaseWrite::Take { replacing } => {
                // Only the row decided on: a row another claimant committed meanwhile must
                // make this insert fail, not be deleted unseen.
                if let Some(stale) = &replacing {
                    sqlx::query(D::sql(
                        "DELETE FROM experiment_leases WHERE experiment = ? AND owner = ?",
                    ))
                    .bind(experiment)
                    .bind(&stale.owner)
                    .execute(&mut *tx)
                    .await
                    .map_err(&err)?;
                }
                sqlx::query(D::sql(
                    "INSERT INTO experiment_leases (experiment, owner, host, pid, acquired_us, \
                     heartbeat_us) VALUES (?, ?, ?, ?, ?, ?)",
                ))
                .bind(experiment)
                .bind(&claim.owner)
                .bind(&claim.host)
                .bind(claim.pid)
                .bind(now_us)
                .bind(now_us)
                .execute(&mut *tx)
                .await
                .map_err(&err)?;
                replacing
            }
        };
        tx.commit().await.map_err(&err)?;
        Ok(replaced)
    }

    pub(crate) async fn renew_lease(
        &self,
        experiment: &str,
        owner: &str,
        now_us: i64,
    ) -> Result<(), StoreError> {
        let _writer = self.writer().await;
        let done = sqlx::query(D::sql(
            "UPDATE experiment_leases SET heartbeat_us = ? WHERE experiment = ? AND owner = ?",
        ))
        .bind(now_us)
        .bind(experiment)
        .bind(owner)
        .execute(&self.pool)
        .await
        .map_err(self.fail("renew lease of experiment", experiment))?;
        if D::rows_affected(&done) == 0 {
            return Err(StoreError::LeaseLost {
                experiment: experiment.to_owned(),
            });
        }
        Ok(())
    }

    pub(crate) async fn release_lease(
        &self,
        experiment: &str,
        owner: &str,
    ) -> Result<bool, StoreError> {
        let _writer = self.writer().await;
        let done = sqlx::query(D::sql(
            "DELETE FROM experiment_leases WHERE experiment = ? AND owner = ?",
        ))
        .bind(experiment)
        .bind(owner)
        .execute(&self.pool)
        .await
        .map_err(self.fail("release lease of experiment", experiment))?;
        Ok(D::rows_affected(&done) > 0)
    }

    pub(crate) async fn insert_trial(&self, t: &TrialRow) -> Result<(), StoreError> {
        let _writer = self.writer().await;
        let assignment = codec::encode_assignment(&t.name, &t.assignment)?;
        let labels = codec::encode_labels(&t.name, &t.labels)?;
        sqlx::query(D::sql(
            "INSERT INTO trials (experiment, name, seq, assignment_json, labels_json, state, \
             reason, message, created_us, started_us, completed_us, attempt, \
             early_stopping_rules_json, stop_step) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        ))
        .bind(&t.experiment)
        .bind(&t.name)
        .bind(t.seq)
        .bind(assignment)
        .bind(labels)
        .bind(t.state.as_str())
        .bind(&t.reason)
        .bind(&t.message)
        .bind(t.created_us)
        .bind(t.started_us)
        .bind(t.completed_us)
        .bind(t.attempt)
        .bind(&t.early_stopping_rules)
        .bind(t.stop_step)
        .execute(&self.pool)
        .await
        .map_err(|err| self.trial_insert_error(t, err))?;
        Ok(())
    }

    fn trial_insert_error(&self, t: &TrialRow, err: sqlx::Error) -> StoreError {
        let seq_key = match &err {
            sqlx::Error::Database(db) => D::is_seq_key(db.as_ref()),
            _ => false,
        };
        match kind_of(&err) {
            Some(ErrorKind::UniqueViolation) if seq_key => StoreError::TrialSeqTaken {
                experiment: t.experiment.clone(),
                seq: t.seq,
            },
            Some(ErrorKind::UniqueViolation) => StoreError::TrialExists(t.name.clone()),
            Some(ErrorKind::ForeignKeyViolation) => {
                StoreError::not_found("experiment", &t.experiment)
            }
            _ => self.errors.query::<D>("insert trial", &t.name, err),
        }
    }

    pub(crate) async fn update_trial(&self, name: &str, u: &TrialUpdate) -> Result<(), StoreError> {
        let _writer = self.writer().await;
        let done = sqlx::query(D::sql(
            "UPDATE trials SET state = ?, reason = ?, message = ?, \
             started_us = COALESCE(?, started_us), completed_us = COALESCE(?, completed_us), \
             attempt = COALESCE(?, attempt), stop_step = COALESCE(?, stop_step) WHERE name = ?",
        ))
        .bind(u.state.as_str())
        .bind(&u.reason)
        .bind(&u.message)
        .bind(u.started_us)
        .bind(u.completed_us)
        .bind(u.attempt)
        .bind(u.stop_step)
        .bind(name)
        .execute(&self.pool)
        .await
        .map_err(self.fail("update trial", name))?;
        found::<D>(&done, "trial", name)
    }

    pub(crate) async fn set_trial_early_stopping_rules(
        &self,
        name: &str,
        rules_json: &str,
    ) -> Result<(), StoreError> {
        self.set_text(
            "UPDATE trials SET early_stopping_rules_json = ? WHERE name = ?",
            rules_json,
            "record early-stopping rules of trial",
            ("trial", name),
        )
        .await
    }

    pub(crate) async fn get_trial(&self, name: &str) -> Result<Option<TrialRow>, StoreError> {
        let row: Option<TrialRecord> =
            sqlx::query_as(D::sql(concat!(select_trial!(), " WHERE name = ?")))
                .bind(name)
                .fetch_optional(&self.pool)
                .await
                .map_err(self.fail("read trial", name))?;
        row.map(TrialRow::try_from).transpose()
    }

    pub(crate) async fn list_trials(&self, experiment: &str) -> Result<Vec<TrialRow>, StoreError> {
        let rows: Vec<TrialRecord> = sqlx::query_as(D::sql(concat!(
            select_trial!(),
            " WHERE experiment = ? ORDER BY seq"
        )))
        .bind(experiment)
        .fetch_all(&self.pool)
        .await
        .map_err(self.fail("list trials of experiment", experiment))?;
        rows.into_iter().map(TrialRow::try_from).collect()
    }

    pub(crate) async fn report_observations(
        &self,
        trial: &str,
        logs: &[Observation],
    ) -> Result<(), StoreError> {
        if logs.is_empty() {
            return Ok(());
        }
        let summaries = reduce_batch(logs);
        let _writer = self.writer().await;
        let mut attempt = 0;
        loop {
            match self.try_report_observations(trial, logs, &summaries).await {
                Err(e) if deadlocked::<D>(&e) && attempt < DEADLOCK_RETRIES => attempt += 1,
                r => return r.map_err(self.fail("record observations of trial", trial)),
            }
        }
    }

    /// How many of `trial`'s rows hold exactly `o`: its metric, time and value.
    pub(crate) async fn count_observation(
        &self,
        trial: &str,
        o: &Observation,
    ) -> Result<i64, StoreError> {
        sqlx::query_scalar(D::sql(
            "SELECT COUNT(*) FROM observation_logs \
             WHERE trial_name = ? AND time = ? AND metric_name = ? AND value = ?",
        ))
        .bind(trial)
        .bind(o.timestamp_us)
        .bind(&o.metric)
        .bind(&o.value)
        .fetch_one(&self.pool)
        .await
        .map_err(self.fail("read observations of trial", trial))
    }

    /// The logs and the merge of their reduction, in one transaction. SQLite takes one row per
    /// statement (it runs in process, and its statement cache then holds one statement rather
    /// than one per batch size); servers take many, as every statement is a round trip. The
    /// reduction of a trial is final once the trial and its experiment have ended (the
    /// experiment ends only when no trial runs, so a stopped trial's last lines are in), as
    /// Katib's trial controller reads a trial's observation once, when it ends: later logs are
    /// kept but change neither its metrics nor which trial is best.
    async fn try_report_observations(
        &self,
        trial: &str,
        logs: &[Observation],
        summaries: &[BatchSummary],
    ) -> Result<(), sqlx::Error> {
        let mut tx = self.begin_write().await?;
        let ended: i64 = sqlx::query_scalar(D::sql(
            "SELECT COUNT(*) FROM trials t JOIN experiments e ON e.name = t.experiment \
             WHERE t.name = ? AND t.completed_us IS NOT NULL AND e.completed_us IS NOT NULL",
        ))
        .bind(trial)
        .fetch_one(&mut *tx)
        .await?;
        let summaries = if ended > 0 { &[][..] } else { summaries };
        for chunk in insert_chunks(logs, D::ROWS_PER_INSERT) {
            let mut q = QueryBuilder::<D>::new(
                "INSERT INTO observation_logs (trial_name, time, metric_name, value) ",
            );
            q.push_values(chunk, |mut row, o| {
                row.push_bind(trial)
                    .push_bind(o.timestamp_us)
                    .push_bind(&o.metric)
                    .push_bind(&o.value);
            });
            q.build().execute(&mut *tx).await?;
        }
        for chunk in summaries.chunks(D::ROWS_PER_INSERT) {
            let mut q = QueryBuilder::<D>::new(
                "INSERT INTO observation_summaries (trial_name, metric_name, min_value, \
                 max_value, latest_value, latest_time, numeric_count) ",
            );
            q.push_values(chunk, |mut row, m| {
                row.push_bind(trial)
                    .push_bind(&m.metric)
                    .push_bind(m.min)
                    .push_bind(m.max)
                    .push_bind(&m.latest)
                    .push_bind(m.latest_time)
                    .push_bind(m.numeric_count);
            });
            q.push(D::MERGE_SUMMARY);
            q.build().execute(&mut *tx).await?;
        }
        tx.commit().await
    }

    pub(crate) async fn observations(
        &self,
        trial: &str,
        metric: Option<&str>,
        start_us: Option<i64>,
        end_us: Option<i64>,
    ) -> Result<Vec<Observation>, StoreError> {
        // Open bounds become the extreme i64 values rather than `? IS NULL OR ...`, so the
        // (trial_name, time) index serves every variant; two fixed texts keep the cache warm.
        let sql = match metric {
            Some(_) => {
                "SELECT metric_name, time, value FROM observation_logs \
                 WHERE trial_name = ? AND time >= ? AND time <= ? AND metric_name = ? \
                 ORDER BY time, id"
            }
            None => {
                "SELECT metric_name, time, value FROM observation_logs \
                 WHERE trial_name = ? AND time >= ? AND time <= ? ORDER BY time, id"
            }
        };
        let mut q = sqlx::query_as::<_, (String, i64, String)>(D::sql(sql))
            .bind(trial)
            .bind(start_us.unwrap_or(i64::MIN))
            .bind(end_us.unwrap_or(i64::MAX));
        if let Some(m) = metric {
            q = q.bind(m);
        }
        let rows = q
            .fetch_all(&self.pool)
            .await
            .map_err(self.fail("read observations of trial", trial))?;
        Ok(rows
            .into_iter()
            .map(|(metric, timestamp_us, value)| Observation {
                metric,
                timestamp_us,
                value,
            })
            .collect())
    }

    pub(crate) async fn for_each_experiment_observation(
        &self,
        experiment: &str,
        f: &mut (dyn FnMut(&str, i64, &str, &str) + Send),
    ) -> Result<(), StoreError> {
        // Trials by (experiment, seq), then each trial's logs by (trial_name, time, id): both
        // orders come straight from the indexes, so the database streams rows unsorted.
        let mut rows = sqlx::query(D::sql(
            "SELECT o.trial_name, o.time, o.metric_name, o.value \
             FROM trials t JOIN observation_logs o ON o.trial_name = t.name \
             WHERE t.experiment = ? ORDER BY t.seq, o.time, o.id",
        ))
        .bind(experiment)
        .fetch(&self.pool);
        let fail = self.fail("read observations of experiment", experiment);
        while let Some(row) = rows.try_next().await.map_err(&fail)? {
            let trial: &str = row.try_get(0).map_err(&fail)?;
            let time: i64 = row.try_get(1).map_err(&fail)?;
            let metric: &str = row.try_get(2).map_err(&fail)?;
            let value: &str = row.try_get(3).map_err(&fail)?;
            f(trial, time, metric, value);
        }
        Ok(())
    }

    pub(crate) async fn delete_observations(&self, trial: &str) -> Result<u64, StoreError> {
        let _writer = self.writer().await;
        let err = self.fail("delete observations of trial", trial);
        let mut tx = self.begin_write().await.map_err(&err)?;
        let done = sqlx::query(D::sql("DELETE FROM observation_logs WHERE trial_name = ?"))
            .bind(trial)
            .execute(&mut *tx)
            .await
            .map_err(&err)?;
        for sql in [
            "DELETE FROM observation_summaries WHERE trial_name = ?",
            "DELETE FROM observation_summaries_pending WHERE trial_name = ?",
        ] {
            sqlx::query(D::sql(sql))
                .bind(trial)
                .execute(&mut *tx)
                .await
                .map_err(&err)?;
        }
        tx.commit().await.map_err(&err)?;
        Ok(D::rows_affected(&done))
    }

    pub(crate) async fn experiment_summaries(
        &self,
        experiment: &str,
    ) -> Result<ExperimentSummaries, StoreError> {
        let err = self.fail("read observation summaries of experiment", experiment);
        let metrics: Vec<SummaryRecord> = sqlx::query_as(D::sql(concat!(
            "SELECT ",
            summary_columns!(),
            " FROM trials t JOIN observation_summaries s ON s.trial_name = t.name \
             WHERE t.experiment = ? ORDER BY t.seq, s.metric_name"
        )))
        .bind(experiment)
        .fetch_all(&self.pool)
        .await
        .map_err(&err)?;
        let unreduced: Vec<(String,)> = sqlx::query_as(D::sql(
            "SELECT p.trial_name FROM trials t \
             JOIN observation_summaries_pending p ON p.trial_name = t.name \
             WHERE t.experiment = ? ORDER BY t.seq",
        ))
        .bind(experiment)
        .fetch_all(&self.pool)
        .await
        .map_err(&err)?;
        Ok(ExperimentSummaries {
            metrics: metrics.into_iter().map(StoredMetric::from).collect(),
            unreduced: unreduced.into_iter().map(|(t,)| t).collect(),
        })
    }

    pub(crate) async fn trial_summary(
        &self,
        trial: &str,
    ) -> Result<(Vec<StoredMetric>, bool), StoreError> {
        let err = self.fail("read observation summary of trial", trial);
        let metrics: Vec<SummaryRecord> = sqlx::query_as(D::sql(concat!(
            "SELECT ",
            summary_columns!(),
            " FROM observation_summaries s WHERE s.trial_name = ? ORDER BY s.metric_name"
        )))
        .bind(trial)
        .fetch_all(&self.pool)
        .await
        .map_err(&err)?;
        let pending: Option<(String,)> = sqlx::query_as(D::sql(
            "SELECT trial_name FROM observation_summaries_pending WHERE trial_name = ?",
        ))
        .bind(trial)
        .fetch_optional(&self.pool)
        .await
        .map_err(&err)?;
        Ok((
            metrics.into_iter().map(StoredMetric::from).collect(),
            pending.is_none(),
        ))
    }
}

/// An UPDATE that touched no row names what was not there.
fn found<D: Dialect>(
    done: &D::QueryResult,
    kind: &'static str,
    name: &str,
) -> Result<(), StoreError> {
    match D::rows_affected(done) {
        0 => Err(StoreError::not_found(kind, name)),
        _ => Ok(()),
    }
}

/// Most bytes of names and values sent in one INSERT: MySQL's and MariaDB's default
/// `max_allowed_packet` is 16 MiB, and 1000 values of up to 65,535 bytes each made a batch
/// over it that SQLite and PostgreSQL stored.
const BYTES_PER_INSERT: usize = 4 << 20;

/// `logs` in runs of at most `max_rows` rows and [`BYTES_PER_INSERT`] bytes (a single larger
/// row goes alone).
fn insert_chunks(logs: &[Observation], max_rows: usize) -> Vec<&[Observation]> {
    let mut chunks = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, o) in logs.iter().enumerate() {
        let size = o.metric.len() + o.value.len();
        if i > start && (i - start == max_rows || bytes + size > BYTES_PER_INSERT) {
            chunks.push(&logs[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += size;
    }
    if start < logs.len() {
        chunks.push(&logs[start..]);
    }
    chunks
}

fn deadlocked<D: Dialect>(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if D::is_deadlock(db.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(value_bytes: usize) -> Observation {
        Observation {
            metric: "m".into(),
            timestamp_us: 0,
            value: "x".repeat(value_bytes),
        }
    }

    /// Chunks keep every row once, in order, within the row and byte limits.
    #[test]
    fn insert_chunks_hold_every_row_within_both_limits() {
        let cases: Vec<(Vec<Observation>, usize, Vec<usize>)> = vec![
            (Vec::new(), 1000, vec![]),
            (
                (0..2500).map(|_| obs(3)).collect(),
                1000,
                vec![1000, 1000, 500],
            ),
            (
                (0..300).map(|_| obs(65_535)).collect(),
                1000,
                vec![64, 64, 64, 64, 44],
            ),
            (vec![obs(5 << 20), obs(1)], 1000, vec![1, 1]),
            ((0..3).map(|_| obs(1)).collect(), 1, vec![1, 1, 1]),
        ];
        for (logs, rows, want) in cases {
            let got: Vec<usize> = insert_chunks(&logs, rows).iter().map(|c| c.len()).collect();
            assert_eq!(got, want);
        }
    }

    /// A reader does not wait for another session's lock at close to run a checkpoint it
    /// cannot run.
    #[tokio::test]
    async fn only_a_pool_that_writes_runs_the_closing_statement() {
        let pool = sqlx::sqlite::SqlitePoolOptions::new()
            .connect_lazy("sqlite::memory:")
            .expect("a lazy pool");
        let backend = SqlBackend::<sqlx::Sqlite>::new(pool, "m".into(), Duration::from_secs(1));
        assert_eq!(backend.on_close(), Some("PRAGMA wal_checkpoint(TRUNCATE)"));
        assert_eq!(backend.reading_only().on_close(), None);
    }
}
