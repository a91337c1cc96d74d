//! The PostgreSQL backend: opening a pool on a `postgres://` URL and every statement the store
//! runs against it.
//!
//! Unlike SQLite, PostgreSQL serialises concurrent writers itself with row locks, so there is
//! no process-wide write queue; each session waits at most `lock_timeout` for a lock held by
//! another session, then fails with a "locked" error instead of hanging. Batches of logs go in
//! as multi-row INSERTs because every statement is a network round trip.

use crate::codec;
use crate::error::{Dialect, ErrorContext, StoreError};
use crate::lease::{self, LeaseClaim, LeaseRow, LeaseWrite};
use crate::model::{
    ExperimentRow, ExperimentStatusRow, ExperimentSummaries, StoredMetric, TrialRow, TrialUpdate,
};
use crate::records::{
    ExperimentRecord, LeaseRecord, SummaryRecord, TrialRecord, lease_row, select_experiment,
    select_lease, select_trial, summary_columns,
};
use crate::summary::reduce_batch;
use sqlx::error::ErrorKind;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, Postgres, QueryBuilder};
use std::str::FromStr;
use std::time::Duration;
use vernier_core::Observation;

/// Enough for several trials' collectors writing at once and a report reading beside them.
const MAX_CONNECTIONS: u32 = 8;
/// Rows per INSERT: 4 parameters each, well under PostgreSQL's 65,535 bind parameters.
const ROWS_PER_INSERT: usize = 1000;
/// A deadlock between two writers aborts one of them; it is retried this many times.
const DEADLOCK_RETRIES: usize = 3;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

#[derive(Debug, Clone)]
pub(crate) struct PostgresBackend {
    pool: PgPool,
    errors: ErrorContext,
}

fn is_deadlock(e: &sqlx::Error) -> bool {
    // deadlock_detected, serialization_failure
    matches!(e, sqlx::Error::Database(db) if matches!(db.code().as_deref(), Some("40P01" | "40001")))
}

impl PostgresBackend {
    pub(crate) async fn connect(url: &str, lock_timeout: Duration) -> Result<Self, StoreError> {
        let errors = ErrorContext {
            url: crate::url::redact(url),
            lock_timeout,
            dialect: Dialect::Postgres,
        };
        let options = PgConnectOptions::from_str(url).map_err(|e| StoreError::InvalidUrl {
            url: errors.url.clone(),
            reason: e.to_string(),
        })?;
        let database = options.get_database().unwrap_or_default().to_owned();
        let options = options.options([(
            "lock_timeout",
            format!("{}ms", lock_timeout.as_millis().max(1)),
        )]);
        // One direct connection first: the pool would retry a refused connection until its
        // acquire timeout and then report only that it timed out.
        let probe = options
            .connect()
            .await
            .map_err(|e| errors.connect(&database, e))?;
        let _ = probe.close().await;
        let pool = PgPoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .connect_with(options)
            .await
            .map_err(|e| errors.connect(&database, e))?;
        // The migrator holds an advisory lock, so stores opening a new database at once
        // apply the schema once.
        if let Err(error) = MIGRATOR.run(&pool).await {
            pool.close().await;
            return Err(StoreError::Migrate {
                url: errors.url.clone(),
                error,
            });
        }
        Ok(PostgresBackend { pool, errors })
    }

    pub(crate) async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1")
            .execute(&self.pool)
            .await
            .map_err(|e| self.errors.query("reach database", "ping", e))?;
        Ok(())
    }

    pub(crate) async fn close(&self) {
        self.pool.close().await;
    }

    pub(crate) async fn create_experiment(&self, e: &ExperimentRow) -> Result<(), StoreError> {
        let s = &e.status;
        sqlx::query(
            "INSERT INTO experiments (name, spec_json, seed, created_us, phase, reason, message, \
             started_us, completed_us, algorithm_state, conditions_json, work_dir, log_dir) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        )
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
        .map_err(|err| match &err {
            sqlx::Error::Database(db) if db.kind() == ErrorKind::UniqueViolation => {
                StoreError::ExperimentExists(e.name.clone())
            }
            _ => self.errors.query("create experiment", &e.name, err),
        })?;
        Ok(())
    }

    pub(crate) async fn get_experiment(
        &self,
        name: &str,
    ) -> Result<Option<ExperimentRow>, StoreError> {
        let row: Option<ExperimentRecord> =
            sqlx::query_as(concat!(select_experiment!(), " WHERE name = $1"))
                .bind(name)
                .fetch_optional(&self.pool)
                .await
                .map_err(|e| self.errors.query("read experiment", name, e))?;
        Ok(row.map(ExperimentRow::from))
    }

    pub(crate) async fn list_experiments(&self) -> Result<Vec<ExperimentRow>, StoreError> {
        let rows: Vec<ExperimentRecord> =
            sqlx::query_as(concat!(select_experiment!(), " ORDER BY created_us, name"))
                .fetch_all(&self.pool)
                .await
                .map_err(|e| self.errors.query("list experiments in", "database", e))?;
        Ok(rows.into_iter().map(ExperimentRow::from).collect())
    }

    pub(crate) async fn update_experiment_status(
        &self,
        name: &str,
        s: &ExperimentStatusRow,
    ) -> Result<(), StoreError> {
        let done = sqlx::query(
            "UPDATE experiments SET phase = $1, reason = $2, message = $3, started_us = $4, \
             completed_us = $5, algorithm_state = $6, conditions_json = $7 WHERE name = $8",
        )
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
        .map_err(|e| self.errors.query("update status of experiment", name, e))?;
        if done.rows_affected() == 0 {
            return Err(StoreError::not_found("experiment", name));
        }
        Ok(())
    }

    pub(crate) async fn update_experiment_spec(
        &self,
        name: &str,
        spec_json: &str,
    ) -> Result<(), StoreError> {
        let done = sqlx::query("UPDATE experiments SET spec_json = $1 WHERE name = $2")
            .bind(spec_json)
            .bind(name)
            .execute(&self.pool)
            .await
            .map_err(|e| self.errors.query("update spec of experiment", name, e))?;
        if done.rows_affected() == 0 {
            return Err(StoreError::not_found("experiment", name));
        }
        Ok(())
    }

    pub(crate) async fn get_lease(&self, experiment: &str) -> Result<Option<LeaseRow>, StoreError> {
        let row: Option<LeaseRecord> =
            sqlx::query_as(concat!(select_lease!(), " WHERE experiment = $1"))
                .bind(experiment)
                .fetch_optional(&self.pool)
                .await
                .map_err(|e| self.errors.query("read lease of experiment", experiment, e))?;
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
        let err = |e| self.errors.query("take lease of experiment", experiment, e);
        let mut tx = self.pool.begin().await.map_err(err)?;
        let current: Option<LeaseRecord> = sqlx::query_as(concat!(
            select_lease!(),
            " WHERE experiment = $1 FOR UPDATE"
        ))
        .bind(experiment)
        .fetch_optional(&mut *tx)
        .await
        .map_err(err)?;
        let current = current.map(lease_row);
        let gone = current.as_ref().is_some_and(holder_gone);
        let write = lease::settle(current, experiment, claim, now_us, ttl, gone)?;
        let replaced = match write {
            LeaseWrite::Renew => {
                sqlx::query("UPDATE experiment_leases SET heartbeat_us = $1 WHERE experiment = $2")
                    .bind(now_us)
                    .bind(experiment)
                    .execute(&mut *tx)
                    .await
                    .map_err(err)?;
                None
            }
            LeaseWrite::Take { replacing } => {
                // Only the row decided on: a row another claimant committed meanwhile must
                // make this insert fail, not be deleted unseen.
                if let Some(stale) = &replacing {
                    sqlx::query(
                        "DELETE FROM experiment_leases WHERE experiment = $1 AND owner = $2",
                    )
                    .bind(experiment)
                    .bind(&stale.owner)
                    .execute(&mut *tx)
                    .await
                    .map_err(err)?;
                }
                sqlx::query(
                    "INSERT INTO experiment_leases (experiment, owner, host, pid, acquired_us, \
                     heartbeat_us) VALUES ($1, $2, $3, $4, $5, $6)",
                )
                .bind(experiment)
                .bind(&claim.owner)
                .bind(&claim.host)
                .bind(claim.pid)
                .bind(now_us)
                .bind(now_us)
                .execute(&mut *tx)
                .await
                .map_err(err)?;
                replacing
            }
        };
        tx.commit().await.map_err(err)?;
        Ok(replaced)
    }

    pub(crate) async fn renew_lease(
        &self,
        experiment: &str,
        owner: &str,
        now_us: i64,
    ) -> Result<(), StoreError> {
        let done = sqlx::query(
            "UPDATE experiment_leases SET heartbeat_us = $1 WHERE experiment = $2 AND owner = $3",
        )
        .bind(now_us)
        .bind(experiment)
        .bind(owner)
        .execute(&self.pool)
        .await
        .map_err(|e| {
            self.errors
                .query("renew lease of experiment", experiment, e)
        })?;
        if done.rows_affected() == 0 {
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
        let done =
            sqlx::query("DELETE FROM experiment_leases WHERE experiment = $1 AND owner = $2")
                .bind(experiment)
                .bind(owner)
                .execute(&self.pool)
                .await
                .map_err(|e| {
                    self.errors
                        .query("release lease of experiment", experiment, e)
                })?;
        Ok(done.rows_affected() > 0)
    }

    pub(crate) async fn delete_experiment(&self, name: &str) -> Result<bool, StoreError> {
        let err = |e| self.errors.query("delete experiment", name, e);
        let mut tx = self.pool.begin().await.map_err(err)?;
        // Logs and summaries have no foreign key (Katib's table has none), so they go first,
        // while the trial names are still there to find them by.
        for sql in [
            "DELETE FROM observation_logs WHERE trial_name IN \
             (SELECT name FROM trials WHERE experiment = $1)",
            "DELETE FROM observation_summaries WHERE trial_name IN \
             (SELECT name FROM trials WHERE experiment = $1)",
            "DELETE FROM observation_summaries_pending WHERE trial_name IN \
             (SELECT name FROM trials WHERE experiment = $1)",
            "DELETE FROM experiment_leases WHERE experiment = $1",
        ] {
            sqlx::query(sql)
                .bind(name)
                .execute(&mut *tx)
                .await
                .map_err(err)?;
        }
        let done = sqlx::query("DELETE FROM experiments WHERE name = $1")
            .bind(name)
            .execute(&mut *tx)
            .await
            .map_err(err)?;
        tx.commit().await.map_err(err)?;
        Ok(done.rows_affected() > 0)
    }

    pub(crate) async fn insert_trial(&self, t: &TrialRow) -> Result<(), StoreError> {
        let assignment = codec::encode_assignment(&t.name, &t.assignment)?;
        let labels = codec::encode_labels(&t.name, &t.labels)?;
        sqlx::query(
            "INSERT INTO trials (experiment, name, seq, assignment_json, labels_json, state, \
             reason, message, created_us, started_us, completed_us, attempt) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        )
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
        .execute(&self.pool)
        .await
        .map_err(|err| match &err {
            sqlx::Error::Database(db) => match db.kind() {
                ErrorKind::UniqueViolation if db.constraint() == Some("trials_experiment_seq") => {
                    StoreError::TrialSeqTaken {
                        experiment: t.experiment.clone(),
                        seq: t.seq,
                    }
                }
                ErrorKind::UniqueViolation => StoreError::TrialExists(t.name.clone()),
                ErrorKind::ForeignKeyViolation => {
                    StoreError::not_found("experiment", &t.experiment)
                }
                _ => self.errors.query("insert trial", &t.name, err),
            },
            _ => self.errors.query("insert trial", &t.name, err),
        })?;
        Ok(())
    }

    pub(crate) async fn update_trial(&self, name: &str, u: &TrialUpdate) -> Result<(), StoreError> {
        let done = sqlx::query(
            "UPDATE trials SET state = $1, reason = $2, message = $3, \
             started_us = COALESCE($4, started_us), completed_us = COALESCE($5, completed_us), \
             attempt = COALESCE($6, attempt) WHERE name = $7",
        )
        .bind(u.state.as_str())
        .bind(&u.reason)
        .bind(&u.message)
        .bind(u.started_us)
        .bind(u.completed_us)
        .bind(u.attempt)
        .bind(name)
        .execute(&self.pool)
        .await
        .map_err(|e| self.errors.query("update trial", name, e))?;
        if done.rows_affected() == 0 {
            return Err(StoreError::not_found("trial", name));
        }
        Ok(())
    }

    pub(crate) async fn get_trial(&self, name: &str) -> Result<Option<TrialRow>, StoreError> {
        let row: Option<TrialRecord> = sqlx::query_as(concat!(select_trial!(), " WHERE name = $1"))
            .bind(name)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.errors.query("read trial", name, e))?;
        row.map(TrialRow::try_from).transpose()
    }

    pub(crate) async fn list_trials(&self, experiment: &str) -> Result<Vec<TrialRow>, StoreError> {
        let rows: Vec<TrialRecord> = sqlx::query_as(concat!(
            select_trial!(),
            " WHERE experiment = $1 ORDER BY seq"
        ))
        .bind(experiment)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| {
            self.errors
                .query("list trials of experiment", experiment, e)
        })?;
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
        let mut attempt = 0;
        loop {
            match self.try_report_observations(trial, logs).await {
                Err(e) if is_deadlock(&e) && attempt < DEADLOCK_RETRIES => attempt += 1,
                r => {
                    return r
                        .map_err(|e| self.errors.query("record observations of trial", trial, e));
                }
            }
        }
    }

    async fn try_report_observations(
        &self,
        trial: &str,
        logs: &[Observation],
    ) -> Result<(), sqlx::Error> {
        let summaries = reduce_batch(logs);
        let mut tx = self.pool.begin().await?;
        for chunk in logs.chunks(ROWS_PER_INSERT) {
            let mut q = QueryBuilder::<Postgres>::new(
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
        let mut q = QueryBuilder::<Postgres>::new(
            "INSERT INTO observation_summaries AS s (trial_name, metric_name, min_value, \
             max_value, latest_value, latest_time, numeric_count) ",
        );
        q.push_values(&summaries, |mut row, m| {
            row.push_bind(trial)
                .push_bind(&m.metric)
                .push_bind(m.min)
                .push_bind(m.max)
                .push_bind(&m.latest)
                .push_bind(m.latest_time)
                .push_bind(m.numeric_count);
        });
        // LEAST and GREATEST skip NULLs, which is the merge rule for min and max.
        q.push(
            " ON CONFLICT (trial_name, metric_name) DO UPDATE SET \
             min_value = LEAST(s.min_value, EXCLUDED.min_value), \
             max_value = GREATEST(s.max_value, EXCLUDED.max_value), \
             latest_value = CASE WHEN EXCLUDED.latest_time >= s.latest_time \
                 THEN EXCLUDED.latest_value ELSE s.latest_value END, \
             latest_time = GREATEST(s.latest_time, EXCLUDED.latest_time), \
             numeric_count = s.numeric_count + EXCLUDED.numeric_count",
        );
        q.build().execute(&mut *tx).await?;
        tx.commit().await
    }

    pub(crate) async fn observations(
        &self,
        trial: &str,
        metric: Option<&str>,
        start_us: Option<i64>,
        end_us: Option<i64>,
    ) -> Result<Vec<Observation>, StoreError> {
        let sql = match metric {
            Some(_) => {
                "SELECT metric_name, time, value FROM observation_logs \
                 WHERE trial_name = $1 AND time >= $2 AND time <= $3 AND metric_name = $4 \
                 ORDER BY time, id"
            }
            None => {
                "SELECT metric_name, time, value FROM observation_logs \
                 WHERE trial_name = $1 AND time >= $2 AND time <= $3 ORDER BY time, id"
            }
        };
        let mut q = sqlx::query_as::<_, (String, i64, String)>(sql)
            .bind(trial)
            .bind(start_us.unwrap_or(i64::MIN))
            .bind(end_us.unwrap_or(i64::MAX));
        if let Some(m) = metric {
            q = q.bind(m);
        }
        let rows = q
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.errors.query("read observations of trial", trial, e))?;
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
        use futures_util::TryStreamExt;
        use sqlx::Row;
        let mut rows = sqlx::query(
            "SELECT o.trial_name, o.time, o.metric_name, o.value \
             FROM trials t JOIN observation_logs o ON o.trial_name = t.name \
             WHERE t.experiment = $1 ORDER BY t.seq, o.time, o.id",
        )
        .bind(experiment)
        .fetch(&self.pool);
        let fail = |e| {
            self.errors
                .query("read observations of experiment", experiment, e)
        };
        while let Some(row) = rows.try_next().await.map_err(fail)? {
            let trial: &str = row.try_get(0).map_err(fail)?;
            let time: i64 = row.try_get(1).map_err(fail)?;
            let metric: &str = row.try_get(2).map_err(fail)?;
            let value: &str = row.try_get(3).map_err(fail)?;
            f(trial, time, metric, value);
        }
        Ok(())
    }

    pub(crate) async fn delete_observations(&self, trial: &str) -> Result<u64, StoreError> {
        let err = |e| self.errors.query("delete observations of trial", trial, e);
        let mut tx = self.pool.begin().await.map_err(err)?;
        let done = sqlx::query("DELETE FROM observation_logs WHERE trial_name = $1")
            .bind(trial)
            .execute(&mut *tx)
            .await
            .map_err(err)?;
        for sql in [
            "DELETE FROM observation_summaries WHERE trial_name = $1",
            "DELETE FROM observation_summaries_pending WHERE trial_name = $1",
        ] {
            sqlx::query(sql)
                .bind(trial)
                .execute(&mut *tx)
                .await
                .map_err(err)?;
        }
        tx.commit().await.map_err(err)?;
        Ok(done.rows_affected())
    }

    pub(crate) async fn experiment_summaries(
        &self,
        experiment: &str,
    ) -> Result<ExperimentSummaries, StoreError> {
        let err = |e| {
            self.errors
                .query("read observation summaries of experiment", experiment, e)
        };
        let metrics: Vec<SummaryRecord> = sqlx::query_as(concat!(
            "SELECT ",
            summary_columns!(),
            " FROM trials t JOIN observation_summaries s ON s.trial_name = t.name \
             WHERE t.experiment = $1 ORDER BY t.seq, s.metric_name"
        ))
        .bind(experiment)
        .fetch_all(&self.pool)
        .await
        .map_err(err)?;
        let unreduced: Vec<(String,)> = sqlx::query_as(
            "SELECT p.trial_name FROM trials t \
             JOIN observation_summaries_pending p ON p.trial_name = t.name \
             WHERE t.experiment = $1 ORDER BY t.seq",
        )
        .bind(experiment)
        .fetch_all(&self.pool)
        .await
        .map_err(err)?;
        Ok(ExperimentSummaries {
            metrics: metrics.into_iter().map(StoredMetric::from).collect(),
            unreduced: unreduced.into_iter().map(|(t,)| t).collect(),
        })
    }

    pub(crate) async fn trial_summary(
        &self,
        trial: &str,
    ) -> Result<(Vec<StoredMetric>, bool), StoreError> {
        let err = |e| {
            self.errors
                .query("read observation summary of trial", trial, e)
        };
        let metrics: Vec<SummaryRecord> = sqlx::query_as(concat!(
            "SELECT ",
            summary_columns!(),
            " FROM observation_summaries s WHERE s.trial_name = $1 ORDER BY s.metric_name"
        ))
        .bind(trial)
        .fetch_all(&self.pool)
        .await
        .map_err(err)?;
        let pending: Option<(String,)> = sqlx::query_as(
            "SELECT trial_name FROM observation_summaries_pending WHERE trial_name = $1",
        )
        .bind(trial)
        .fetch_optional(&self.pool)
        .await
        .map_err(err)?;
        Ok((
            metrics.into_iter().map(StoredMetric::from).collect(),
            pending.is_none(),
        ))
    }
}
