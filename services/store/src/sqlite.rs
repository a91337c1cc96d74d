//! The SQLite backend: opening and configuring the database file, and every statement the store
//! runs against it.
//!
//! Writers from several pooled connections and from other processes share one file. WAL lets
//! readers run beside the single writer; `busy_timeout` makes a writer wait for the lock
//! instead of failing; and every multi-statement write transaction starts with
//! `BEGIN IMMEDIATE`, because a deferred transaction that reads before it writes can fail with
//! `SQLITE_BUSY` at once, without the busy handler being consulted.

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
use crate::store::OpenMode;
use crate::summary::reduce_batch;
use crate::url::SqliteTarget;
use sqlx::error::ErrorKind;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;
use vernier_core::Observation;

/// Writers are serialised by SQLite's file lock, so more connections only add readers.
const MAX_CONNECTIONS: u32 = 4;
/// SQLite's extended result code for "file is not a database".
const SQLITE_NOTADB: &str = "26";

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

#[derive(Debug, Clone)]
pub(crate) struct SqliteBackend {
    pool: SqlitePool,
    /// Queues this process's writers in FIFO order. Without it they would meet at SQLite's
    /// file lock, whose busy handler polls with sleeps of up to 100 ms; with it only writers
    /// from other processes ever wait there.
    write_lock: Arc<Mutex<()>>,
    errors: ErrorContext,
}

fn kind_of(e: &sqlx::Error) -> Option<ErrorKind> {
    match e {
        sqlx::Error::Database(db) => Some(db.kind()),
        _ => None,
    }
}

fn is_not_a_database(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => db.code().as_deref() == Some(SQLITE_NOTADB),
        _ => false,
    }
}

/// Why a read-only open failed: `Refused` where SQLite could not set up WAL shared memory
/// (a read-only directory without the `-shm` file), which an immutable open avoids.
enum ReadOnlyOpen {
    Refused(StoreError),
    Failed(StoreError),
}

/// SQLITE_READONLY and SQLITE_CANTOPEN with their extended codes.
fn is_read_only_refusal(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => db
            .code()
            .and_then(|c| c.parse::<u32>().ok())
            .is_some_and(|c| matches!(c & 0xff, 8 | 14)),
        _ => false,
    }
}

/// How often opening a new database is tried while other processes create it at once.
const OPEN_ATTEMPTS: u32 = 10;

fn is_busy(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => matches!(db.code().as_deref(), Some("5" | "6")),
        _ => false,
    }
}

fn migrate_not_a_database(e: &sqlx::migrate::MigrateError) -> bool {
    match e {
        sqlx::migrate::MigrateError::Execute(inner)
        | sqlx::migrate::MigrateError::ExecuteMigration(inner, _) => is_not_a_database(inner),
        _ => false,
    }
}

/// Checks what SQLite would report obscurely ("unable to open database file") before opening.
fn check_path(path: &Path, mode: OpenMode) -> Result<(), StoreError> {
    let shown = path.display().to_string();
    if path.is_dir() {
        return Err(StoreError::IsADirectory { path: shown });
    }
    if mode != OpenMode::Create && !path.exists() {
        return Err(StoreError::DatabaseFileMissing { path: shown });
    }
    if let Some(dir) = path.parent()
        && !dir.as_os_str().is_empty()
        && !dir.is_dir()
    {
        return Err(StoreError::MissingDirectory {
            path: shown,
            dir: dir.display().to_string(),
        });
    }
    Ok(())
}

impl SqliteBackend {
    pub(crate) async fn connect(
        url: &str,
        target: &SqliteTarget,
        lock_timeout: Duration,
        mode: OpenMode,
    ) -> Result<Self, StoreError> {
        if mode == OpenMode::ReadOnly
            && let SqliteTarget::File(path) = target
        {
            check_path(path, mode)?;
            // A WAL database in a directory nobody may write, without its `-shm` file, can
            // only be read as immutable (SQLite then takes no locks: a snapshot for a report).
            for immutable in [false, true] {
                match Self::connect_read_only(url, path, lock_timeout, immutable).await {
                    Ok(Some(store)) => return Ok(store),
                    Ok(None) => break,
                    Err(ReadOnlyOpen::Refused(_)) if !immutable => {}
                    Err(ReadOnlyOpen::Refused(e) | ReadOnlyOpen::Failed(e)) => return Err(e),
                }
            }
        }
        Self::connect_writable(url, target, lock_timeout, mode).await
    }

    /// Opens an existing file read-only: no journal mode change, no migration. `None` when
    /// the file's schema is behind this version's (it must be migrated, read-write, first).
    async fn connect_read_only(
        url: &str,
        path: &Path,
        lock_timeout: Duration,
        immutable: bool,
    ) -> Result<Option<Self>, ReadOnlyOpen> {
        let url = crate::url::redact(url);
        let failed = |error: sqlx::Error| {
            if is_not_a_database(&error) {
                return ReadOnlyOpen::Failed(StoreError::NotADatabase {
                    path: path.display().to_string(),
                });
            }
            let refused = is_read_only_refusal(&error);
            let e = StoreError::Connect {
                url: url.clone(),
                error,
            };
            if refused {
                ReadOnlyOpen::Refused(e)
            } else {
                ReadOnlyOpen::Failed(e)
            }
        };
        let options = SqliteConnectOptions::new()
            .filename(path)
            .read_only(true)
            .immutable(immutable)
            .busy_timeout(lock_timeout);
        let pool = SqlitePoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .connect_with(options)
            .await
            .map_err(failed)?;
        let applied: Result<i64, _> =
            sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations WHERE success")
                .fetch_one(&pool)
                .await;
        match applied {
            Ok(n) if n >= MIGRATOR.iter().count() as i64 => Ok(Some(SqliteBackend {
                pool,
                write_lock: Arc::new(Mutex::new(())),
                errors: ErrorContext {
                    url,
                    lock_timeout,
                    dialect: Dialect::Sqlite,
                },
            })),
            Ok(_) => {
                pool.close().await;
                Ok(None)
            }
            Err(error) if is_not_a_database(&error) || is_read_only_refusal(&error) => {
                pool.close().await;
                Err(failed(error))
            }
            // No migrations table: not a Vernier database (or an empty file).
            Err(_) => {
                pool.close().await;
                Ok(None)
            }
        }
    }

    async fn connect_writable(
        url: &str,
        target: &SqliteTarget,
        lock_timeout: Duration,
        mode: OpenMode,
    ) -> Result<Self, StoreError> {
        let url = &crate::url::redact(url);
        let connect_err = |error: sqlx::Error| StoreError::Connect {
            url: url.to_owned(),
            error,
        };
        let (options, pool_options, shown) = match target {
            SqliteTarget::File(path) => {
                check_path(path, mode)?;
                let options = SqliteConnectOptions::new()
                    .filename(path)
                    .create_if_missing(mode == OpenMode::Create);
                (
                    options,
                    SqlitePoolOptions::new().max_connections(MAX_CONNECTIONS),
                    path.display().to_string(),
                )
            }
            SqliteTarget::Memory => {
                // sqlx gives each `:memory:` options value a unique shared-cache name, so the
                // pooled connections see one database; it lives while one connection does.
                let options =
                    SqliteConnectOptions::from_str("sqlite::memory:").map_err(connect_err)?;
                (
                    options,
                    SqlitePoolOptions::new()
                        .max_connections(MAX_CONNECTIONS)
                        .min_connections(1)
                        .idle_timeout(None)
                        .max_lifetime(None),
                    ":memory:".to_owned(),
                )
            }
        };
        let options = options
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(lock_timeout);
        // Processes opening a new file at once race: one may find the file locked while
        // another switches it to WAL, and each sees no schema, so the loser's CREATE TABLE
        // fails (every migration runs in its own transaction, so a failed one leaves nothing
        // behind). Trying again, a little later each time, sees the winner's work.
        let mut attempt = 0u32;
        let pool = loop {
            attempt += 1;
            let pool = match pool_options.clone().connect_with(options.clone()).await {
                Ok(pool) => pool,
                Err(error) if is_not_a_database(&error) => {
                    return Err(StoreError::NotADatabase {
                        path: shown.clone(),
                    });
                }
                Err(error) if attempt < OPEN_ATTEMPTS && is_busy(&error) => {
                    tokio::time::sleep(Duration::from_millis(20 * u64::from(attempt))).await;
                    continue;
                }
                Err(error) => return Err(connect_err(error)),
            };
            match MIGRATOR.run(&pool).await {
                Ok(()) => break pool,
                Err(error) if migrate_not_a_database(&error) => {
                    pool.close().await;
                    return Err(StoreError::NotADatabase { path: shown });
                }
                Err(_) if attempt < OPEN_ATTEMPTS => {
                    pool.close().await;
                    tokio::time::sleep(Duration::from_millis(20 * u64::from(attempt))).await;
                }
                Err(error) => {
                    pool.close().await;
                    return Err(StoreError::Migrate {
                        url: url.to_owned(),
                        error,
                    });
                }
            }
        };
        Ok(SqliteBackend {
            pool,
            write_lock: Arc::new(Mutex::new(())),
            errors: ErrorContext {
                url: url.clone(),
                lock_timeout,
                dialect: Dialect::Sqlite,
            },
        })
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
        let _writer = self.write_lock.lock().await;
        let s = &e.status;
        sqlx::query(
            "INSERT INTO experiments (name, spec_json, seed, created_us, phase, reason, message, \
             started_us, completed_us, algorithm_state, conditions_json, work_dir, log_dir) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
        .map_err(|err| match kind_of(&err) {
            Some(ErrorKind::UniqueViolation) => StoreError::ExperimentExists(e.name.clone()),
            _ => self.errors.query("create experiment", &e.name, err),
        })?;
        Ok(())
    }

    pub(crate) async fn get_experiment(
        &self,
        name: &str,
    ) -> Result<Option<ExperimentRow>, StoreError> {
        let row: Option<ExperimentRecord> =
            sqlx::query_as(concat!(select_experiment!(), " WHERE name = ?"))
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
        let _writer = self.write_lock.lock().await;
        let done = sqlx::query(
            "UPDATE experiments SET phase = ?, reason = ?, message = ?, started_us = ?, \
             completed_us = ?, algorithm_state = ?, conditions_json = ? WHERE name = ?",
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
        let _writer = self.write_lock.lock().await;
        let done = sqlx::query("UPDATE experiments SET spec_json = ? WHERE name = ?")
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
            sqlx::query_as(concat!(select_lease!(), " WHERE experiment = ?"))
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
        let _writer = self.write_lock.lock().await;
        let err = |e| self.errors.query("take lease of experiment", experiment, e);
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(err)?;
        let current: Option<LeaseRecord> =
            sqlx::query_as(concat!(select_lease!(), " WHERE experiment = ?"))
                .bind(experiment)
                .fetch_optional(&mut *tx)
                .await
                .map_err(err)?;
        let current = current.map(lease_row);
        let gone = current.as_ref().is_some_and(holder_gone);
        let write = lease::settle(current, experiment, claim, now_us, ttl, gone)?;
        let replaced = match write {
            LeaseWrite::Renew => {
                sqlx::query("UPDATE experiment_leases SET heartbeat_us = ? WHERE experiment = ?")
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
                    sqlx::query("DELETE FROM experiment_leases WHERE experiment = ? AND owner = ?")
                        .bind(experiment)
                        .bind(&stale.owner)
                        .execute(&mut *tx)
                        .await
                        .map_err(err)?;
                }
                sqlx::query(
                    "INSERT INTO experiment_leases (experiment, owner, host, pid, acquired_us, \
                     heartbeat_us) VALUES (?, ?, ?, ?, ?, ?)",
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
        let _writer = self.write_lock.lock().await;
        let done = sqlx::query(
            "UPDATE experiment_leases SET heartbeat_us = ? WHERE experiment = ? AND owner = ?",
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
        let _writer = self.write_lock.lock().await;
        let done = sqlx::query("DELETE FROM experiment_leases WHERE experiment = ? AND owner = ?")
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
        let _writer = self.write_lock.lock().await;
        let err = |e| self.errors.query("delete experiment", name, e);
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(err)?;
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
            sqlx::query(sql)
                .bind(name)
                .execute(&mut *tx)
                .await
                .map_err(err)?;
        }
        let done = sqlx::query("DELETE FROM experiments WHERE name = ?")
            .bind(name)
            .execute(&mut *tx)
            .await
            .map_err(err)?;
        tx.commit().await.map_err(err)?;
        Ok(done.rows_affected() > 0)
    }

    pub(crate) async fn insert_trial(&self, t: &TrialRow) -> Result<(), StoreError> {
        let _writer = self.write_lock.lock().await;
        let assignment = codec::encode_assignment(&t.name, &t.assignment)?;
        let labels = codec::encode_labels(&t.name, &t.labels)?;
        sqlx::query(
            "INSERT INTO trials (experiment, name, seq, assignment_json, labels_json, state, \
             reason, message, created_us, started_us, completed_us, attempt) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                // SQLite names the columns of the violated index in the message.
                ErrorKind::UniqueViolation if db.message().contains("trials.seq") => {
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
        let _writer = self.write_lock.lock().await;
        let done = sqlx::query(
            "UPDATE trials SET state = ?, reason = ?, message = ?, \
             started_us = COALESCE(?, started_us), completed_us = COALESCE(?, completed_us), \
             attempt = COALESCE(?, attempt) WHERE name = ?",
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
        let row: Option<TrialRecord> = sqlx::query_as(concat!(select_trial!(), " WHERE name = ?"))
            .bind(name)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.errors.query("read trial", name, e))?;
        row.map(TrialRow::try_from).transpose()
    }

    pub(crate) async fn list_trials(&self, experiment: &str) -> Result<Vec<TrialRow>, StoreError> {
        let rows: Vec<TrialRecord> = sqlx::query_as(concat!(
            select_trial!(),
            " WHERE experiment = ? ORDER BY seq"
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
        const INSERT: &str = "INSERT INTO observation_logs (trial_name, time, metric_name, value) VALUES (?, ?, ?, ?)";
        // Merges a batch's reduction into the stored one; every right-hand side reads the row
        // as it was before this statement.
        const MERGE: &str = "INSERT INTO observation_summaries (trial_name, metric_name, \
             min_value, max_value, latest_value, latest_time, numeric_count) \
             VALUES (?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (trial_name, metric_name) DO UPDATE SET \
             min_value = CASE WHEN min_value IS NULL OR excluded.min_value < min_value \
                 THEN COALESCE(excluded.min_value, min_value) ELSE min_value END, \
             max_value = CASE WHEN max_value IS NULL OR excluded.max_value > max_value \
                 THEN COALESCE(excluded.max_value, max_value) ELSE max_value END, \
             latest_value = CASE WHEN excluded.latest_time >= latest_time \
                 THEN excluded.latest_value ELSE latest_value END, \
             latest_time = MAX(latest_time, excluded.latest_time), \
             numeric_count = numeric_count + excluded.numeric_count";
        let err = |e| self.errors.query("record observations of trial", trial, e);
        if logs.is_empty() {
            return Ok(());
        }
        let summaries = reduce_batch(logs);
        let _writer = self.write_lock.lock().await;
        // One single-row statement per log rather than a multi-row INSERT: SQLite runs in
        // process, so the loop costs little, and the statement cache holds one statement
        // instead of one per batch size.
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(err)?;
        for o in logs {
            sqlx::query(INSERT)
                .bind(trial)
                .bind(o.timestamp_us)
                .bind(&o.metric)
                .bind(&o.value)
                .execute(&mut *tx)
                .await
                .map_err(err)?;
        }
        for m in &summaries {
            sqlx::query(MERGE)
                .bind(trial)
                .bind(&m.metric)
                .bind(m.min)
                .bind(m.max)
                .bind(&m.latest)
                .bind(m.latest_time)
                .bind(m.numeric_count)
                .execute(&mut *tx)
                .await
                .map_err(err)?;
        }
        tx.commit().await.map_err(err)
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
        // Trials by (experiment, seq), then each trial's logs by (trial_name, time, rowid): both
        // orders come straight from the indexes, so SQLite streams rows without sorting them.
        let mut rows = sqlx::query(
            "SELECT o.trial_name, o.time, o.metric_name, o.value \
             FROM trials t JOIN observation_logs o ON o.trial_name = t.name \
             WHERE t.experiment = ? ORDER BY t.seq, o.time, o.id",
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
        let _writer = self.write_lock.lock().await;
        let err = |e| self.errors.query("delete observations of trial", trial, e);
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(err)?;
        let done = sqlx::query("DELETE FROM observation_logs WHERE trial_name = ?")
            .bind(trial)
            .execute(&mut *tx)
            .await
            .map_err(err)?;
        for sql in [
            "DELETE FROM observation_summaries WHERE trial_name = ?",
            "DELETE FROM observation_summaries_pending WHERE trial_name = ?",
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
             WHERE t.experiment = ? ORDER BY t.seq, s.metric_name"
        ))
        .bind(experiment)
        .fetch_all(&self.pool)
        .await
        .map_err(err)?;
        let unreduced: Vec<(String,)> = sqlx::query_as(
            "SELECT p.trial_name FROM trials t \
             JOIN observation_summaries_pending p ON p.trial_name = t.name \
             WHERE t.experiment = ? ORDER BY t.seq",
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
            " FROM observation_summaries s WHERE s.trial_name = ? ORDER BY s.metric_name"
        ))
        .bind(trial)
        .fetch_all(&self.pool)
        .await
        .map_err(err)?;
        let pending: Option<(String,)> = sqlx::query_as(
            "SELECT trial_name FROM observation_summaries_pending WHERE trial_name = ?",
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
