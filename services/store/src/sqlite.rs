//! The SQLite backend: opening and configuring the database file, and SQLite's [`Dialect`] for
//! the shared statements.
//!
//! Writers from several pooled connections and from other processes share one file. WAL lets
//! readers run beside the single writer; `busy_timeout` makes a writer wait for the lock
//! instead of failing; and every multi-statement write transaction starts with
//! `BEGIN IMMEDIATE`, because a deferred transaction that reads before it writes can fail with
//! `SQLITE_BUSY` at once, without the busy handler being consulted.

use crate::dialect::Dialect;
use crate::error::StoreError;
use crate::options::OpenMode;
use crate::queries::SqlBackend;
use crate::records::select_lease;
use crate::sqlite_schema::{SchemaState, read_settled_state, read_state};
use crate::url::SqliteTarget;
use sqlx::Sqlite;
use sqlx::error::DatabaseError;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteQueryResult,
    SqliteSynchronous,
};
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

/// Writers are serialised by SQLite's file lock, so more connections only add readers.
const MAX_CONNECTIONS: u32 = 4;
/// SQLite's extended result code for "file is not a database".
const SQLITE_NOTADB: &str = "26";

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

pub(crate) type SqliteBackend = SqlBackend<Sqlite>;

/// Every write queues in this process and then takes SQLite's file lock at `BEGIN`; so no
/// row locks, and one row per INSERT.
impl Dialect for Sqlite {
    const ROWS_PER_INSERT: usize = 1;
    // Every right-hand side reads the row as it was before this statement.
    const MERGE_SUMMARY: &'static str = " ON CONFLICT (trial_name, metric_name) DO UPDATE SET \
         min_value = CASE WHEN min_value IS NULL OR excluded.min_value < min_value \
             THEN COALESCE(excluded.min_value, min_value) ELSE min_value END, \
         max_value = CASE WHEN max_value IS NULL OR excluded.max_value > max_value \
             THEN COALESCE(excluded.max_value, max_value) ELSE max_value END, \
         latest_value = CASE WHEN excluded.latest_time >= latest_time \
             THEN excluded.latest_value ELSE latest_value END, \
         latest_time = MAX(latest_time, excluded.latest_time), \
         numeric_count = numeric_count + excluded.numeric_count";
    const SELECT_LEASE_LOCKED: &'static str = concat!(select_lease!(), " WHERE experiment = ?");
    const BEGIN_WRITE: Option<&'static str> = Some("BEGIN IMMEDIATE");
    const QUEUE_WRITERS: bool = true;
    /// The last connection to close folds the `-wal` file into the database file, but a reader
    /// still open (a dashboard outliving the run, itself unable to fold as it reads only)
    /// leaves it there: a copy of `vernier.db` alone would then hold an older state. A writer
    /// folds it in itself; a pool opened to read only does not try.
    const ON_CLOSE: Option<&'static str> = Some("PRAGMA wal_checkpoint(TRUNCATE)");

    fn rows_affected(done: &SqliteQueryResult) -> u64 {
        done.rows_affected()
    }

    /// SQLITE_BUSY and SQLITE_LOCKED, with their extended codes (low byte is the primary).
    fn is_lock_timeout(db: &dyn DatabaseError) -> bool {
        primary_code(db).is_some_and(|c| matches!(c, 5 | 6))
    }

    /// SQLite names the columns of the violated index in the message.
    fn is_seq_key(db: &dyn DatabaseError) -> bool {
        db.message().contains("trials.seq")
    }

    /// SQLITE_READONLY with its extended codes.
    fn is_read_only(db: &dyn DatabaseError) -> bool {
        primary_code(db) == Some(8)
    }

    /// SQLITE_CORRUPT with its extended codes.
    fn is_damaged(db: &dyn DatabaseError) -> bool {
        primary_code(db) == Some(11)
    }

    /// SQLITE_FULL.
    fn is_disk_full(db: &dyn DatabaseError) -> bool {
        primary_code(db) == Some(13)
    }
}

fn primary_code(db: &dyn DatabaseError) -> Option<u32> {
    db.code()
        .and_then(|c| c.parse::<u32>().ok())
        .map(|c| c & 0xff)
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
    matches!(e, sqlx::Error::Database(db) if matches!(primary_code(db.as_ref()), Some(8 | 14)))
}

/// How often opening a new database is tried while other processes create it at once.
const OPEN_ATTEMPTS: u32 = 10;

/// How long a read-only open waits for a file that reads as being set up by another vernier
/// (`sqlite_schema::read_settled_state`); an empty file that stays so is refused after it.
const SETTLE: Duration = Duration::from_secs(2);

fn is_busy(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => matches!(db.code().as_deref(), Some("5" | "6")),
        _ => false,
    }
}

/// Whether a connection handed back to the pool may be used again. One still inside a
/// transaction (its COMMIT failed, e.g. on a full disk, and sqlx kept its depth) would refuse
/// every later `BEGIN` with "non-zero transaction depth"; closing it rolls the transaction
/// back, and the pool opens a fresh one when needed.
async fn leaves_no_transaction(conn: &mut sqlx::SqliteConnection) -> Result<bool, sqlx::Error> {
    use sqlx::Connection;
    Ok(!conn.is_in_transaction())
}

/// SQLITE_CORRUPT while the schema was read or brought up to date.
/// The driver's error inside a failed migration, if it is one.
fn migrate_inner(e: &sqlx::migrate::MigrateError) -> Option<&sqlx::Error> {
    match e {
        sqlx::migrate::MigrateError::Execute(inner)
        | sqlx::migrate::MigrateError::ExecuteMigration(inner, _) => Some(inner),
        _ => None,
    }
}

/// What is wrong with the file itself when opening it for writing fails: not a database, a
/// damaged one, or one this process may not write (its own or its directory's permissions,
/// a read-only mount); the error is made from the path shown.
fn file_problem(e: &sqlx::Error) -> Option<fn(String) -> StoreError> {
    if is_not_a_database(e) {
        return Some(|path| StoreError::NotADatabase { path });
    }
    match e {
        sqlx::Error::Database(db) if Sqlite::is_damaged(db.as_ref()) => {
            Some(|path| StoreError::DamagedFile { path })
        }
        _ if is_read_only_refusal(e) => Some(|path| StoreError::ReadOnlyFile { path }),
        _ => None,
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
    /// Opens (or creates) the database file; see [`OpenMode`].
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
            tracing::warn!(
                "database `{}` was written by an older vernier: upgrading its schema",
                path.display()
            );
            let upgraded = Self::connect_writable(url, target, lock_timeout, mode).await;
            return upgraded.map_err(|e| match e {
                StoreError::ReadOnlyFile { path } => StoreError::SchemaBehindReadOnly { path },
                e => e,
            });
        }
        Self::connect_writable(url, target, lock_timeout, mode).await
    }

    /// Opens an existing file read-only: no journal mode change, no migration. `None` when
    /// the file's schema is behind this version's (it must be migrated, read-write, first); a
    /// file without vernier's schema is refused, and one from a newer vernier read with a
    /// warning.
    async fn connect_read_only(
        url: &str,
        path: &Path,
        lock_timeout: Duration,
        immutable: bool,
    ) -> Result<Option<Self>, ReadOnlyOpen> {
        let url = crate::url::redact(url);
        let failed = |error: sqlx::Error| {
            let refused = is_read_only_refusal(&error);
            if !refused && let Some(problem) = file_problem(&error) {
                return ReadOnlyOpen::Failed(problem(path.display().to_string()));
            }
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
        let state = read_settled_state(&pool, &MIGRATOR, SETTLE).await;
        if !matches!(state, Ok(SchemaState::Current { .. })) {
            pool.close().await;
        }
        match state.map_err(failed)? {
            SchemaState::Current { newer } => {
                if let Some(version) = newer {
                    tracing::warn!(
                        "database `{}` was written by a newer vernier (its schema has migration \
                         {version}); what that version added is not read",
                        path.display()
                    );
                }
                Ok(Some(
                    SqlBackend::new(pool, url, lock_timeout).reading_only(),
                ))
            }
            SchemaState::Behind => Ok(None),
            SchemaState::NotVernier { tables } => {
                Err(ReadOnlyOpen::Failed(StoreError::NotVernier {
                    path: path.display().to_string(),
                    tables,
                }))
            }
        }
    }

    async fn connect_writable(
        url: &str,
        target: &SqliteTarget,
        lock_timeout: Duration,
        mode: OpenMode,
    ) -> Result<Self, StoreError> {
        let url = crate::url::redact(url);
        if let SqliteTarget::File(path) = target
            && path.metadata().is_ok_and(|m| m.len() > 0)
        {
            refuse_foreign(path, lock_timeout).await?;
        }
        let (options, pool_options, shown) = pool_for(target, mode, &url)?;
        let options = options
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(lock_timeout);
        let pool = open_migrated(&url, options, pool_options, shown).await?;
        Ok(SqlBackend::new(pool, url, lock_timeout))
    }
}

/// How to connect to the target: its options, the pool's, and how to name it in errors.
fn pool_for(
    target: &SqliteTarget,
    mode: OpenMode,
    url: &str,
) -> Result<(SqliteConnectOptions, SqlitePoolOptions, String), StoreError> {
    match target {
        SqliteTarget::File(path) => check_path(path, mode).map(|()| {
            let options = SqliteConnectOptions::new()
                .filename(path)
                .create_if_missing(mode == OpenMode::Create);
            let pool = SqlitePoolOptions::new()
                .max_connections(MAX_CONNECTIONS)
                .after_release(|conn, _| Box::pin(leaves_no_transaction(conn)));
            (options, pool, path.display().to_string())
        }),
        SqliteTarget::Memory => {
            // sqlx gives each `:memory:` options value a unique shared-cache name, so the
            // pooled connections see one database; it lives while one connection does.
            let options = SqliteConnectOptions::from_str("sqlite::memory:").map_err(|error| {
                StoreError::Connect {
                    url: url.to_owned(),
                    error,
                }
            })?;
            let pool = SqlitePoolOptions::new()
                .max_connections(MAX_CONNECTIONS)
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None);
            Ok((options, pool, ":memory:".to_owned()))
        }
    }
}

/// A pool on the database with every migration applied.
///
/// Processes opening a new file at once race: one may find the file locked while another
/// switches it to WAL, and each sees no schema, so the loser's CREATE TABLE fails (every
/// migration runs in its own transaction, so a failed one leaves nothing behind). Trying
/// again, a little later each time, sees the winner's work.
async fn open_migrated(
    url: &str,
    options: SqliteConnectOptions,
    pool_options: SqlitePoolOptions,
    shown: String,
) -> Result<sqlx::SqlitePool, StoreError> {
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        let pool = match pool_options.clone().connect_with(options.clone()).await {
            Ok(pool) => pool,
            Err(error) => {
                if let Some(problem) = file_problem(&error) {
                    return Err(problem(shown));
                }
                if attempt < OPEN_ATTEMPTS && is_busy(&error) {
                    tokio::time::sleep(Duration::from_millis(20 * u64::from(attempt))).await;
                    continue;
                }
                return Err(StoreError::Connect {
                    url: url.to_owned(),
                    error,
                });
            }
        };
        let error = match MIGRATOR.run(&pool).await {
            Ok(()) => {
                // Connections opened later must not create a file deleted meanwhile: an
                // empty database at the same path would hide that everything is gone.
                pool.set_connect_options(options.clone().create_if_missing(false));
                return Ok(pool);
            }
            Err(error) => error,
        };
        pool.close().await;
        if let Some(problem) = migrate_inner(&error).and_then(file_problem) {
            return Err(problem(shown));
        }
        let newer = matches!(error, sqlx::migrate::MigrateError::VersionMissing(_));
        if newer || attempt >= OPEN_ATTEMPTS {
            return Err(crate::error::migrate_error(url, error, &MIGRATOR));
        }
        tokio::time::sleep(Duration::from_millis(20 * u64::from(attempt))).await;
    }
}

/// Refuses an existing file that holds tables or views of the names the schema creates (or a
/// migration record) that vernier did not make: another program's database (Optuna's has
/// `trials`). Read before the writable open, which would switch the file to WAL, and before
/// the migrator, which would write its record and fail half way. A file that cannot be read
/// here is left to the writable open to name.
async fn refuse_foreign(path: &Path, lock_timeout: Duration) -> Result<(), StoreError> {
    let options = SqliteConnectOptions::new()
        .filename(path)
        .read_only(true)
        .busy_timeout(lock_timeout);
    let Ok(pool) = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(options)
        .await
    else {
        return Ok(());
    };
    let state = read_state(&pool, &MIGRATOR).await;
    pool.close().await;
    let Ok(SchemaState::NotVernier { tables }) = state else {
        return Ok(());
    };
    let named = crate::foreign_tables::named_as_vernier(&tables);
    match named.is_empty() {
        true => Ok(()),
        false => Err(StoreError::NotVernier {
            path: path.display().to_string(),
            tables: named,
        }),
    }
}
