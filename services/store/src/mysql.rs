//! The MySQL / MariaDB backend (Katib's default database): opening a pool on a `mysql://` URL,
//! and MySQL's [`Dialect`] for the shared statements.
//!
//! As with PostgreSQL the server serialises writers, so there is no process-wide write queue.
//! Each session runs at READ COMMITTED, so inserts of different trials take no gap locks on
//! each other, and waits at most the store's lock timeout for row locks
//! (`innodb_lock_wait_timeout`) and table locks (`lock_wait_timeout`, a year by default).

use crate::dialect::{Dialect, Refusal};
use crate::error::{ErrorContext, StoreError};
use crate::queries::SqlBackend;
use crate::records::select_lease;
use sqlx::error::DatabaseError;
use sqlx::mysql::{
    MySqlConnectOptions, MySqlDatabaseError, MySqlPool, MySqlPoolOptions, MySqlQueryResult,
};
use sqlx::{ConnectOptions, Connection, Executor, MySql};
use std::str::FromStr;
use std::time::Duration;

/// Enough for several trials' collectors writing at once and a report reading beside them.
const MAX_CONNECTIONS: u32 = 8;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/mysql");

pub(crate) type MySqlBackend = SqlBackend<MySql>;

impl Dialect for MySql {
    /// 7 parameters a summary row, well under the protocol's 65,535 bind parameters. Prepared
    /// statements stay cached per batch size: with `persistent(false)` every call took 100 ms
    /// on MariaDB 10.11 (measured with benches/write.rs).
    const ROWS_PER_INSERT: usize = 1000;
    // Assignments run left to right and see earlier ones, so `latest_value` is assigned
    // before `latest_time`; LEAST and GREATEST return NULL if either side is NULL, hence the
    // COALESCEs.
    const MERGE_SUMMARY: &'static str = " ON DUPLICATE KEY UPDATE \
         min_value = LEAST(COALESCE(min_value, VALUES(min_value)), \
             COALESCE(VALUES(min_value), min_value)), \
         max_value = GREATEST(COALESCE(max_value, VALUES(max_value)), \
             COALESCE(VALUES(max_value), max_value)), \
         latest_value = IF(VALUES(latest_time) >= latest_time, \
             VALUES(latest_value), latest_value), \
         latest_time = GREATEST(latest_time, VALUES(latest_time)), \
         numeric_count = numeric_count + VALUES(numeric_count)";
    const SELECT_LEASE_LOCKED: &'static str =
        concat!(select_lease!(), " WHERE experiment = ? FOR UPDATE");

    fn rows_affected(done: &MySqlQueryResult) -> u64 {
        done.rows_affected()
    }

    /// ER_LOCK_WAIT_TIMEOUT (row locks and, via lock_wait_timeout, table locks)
    fn is_lock_timeout(db: &dyn DatabaseError) -> bool {
        number(db) == Some(1205)
    }

    /// ER_OPTION_PREVENTS_STATEMENT (`--read-only`), ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
    fn is_read_only(db: &dyn DatabaseError) -> bool {
        matches!(number(db), Some(1290 | 1792))
    }

    /// ER_LOCK_DEADLOCK
    fn is_deadlock(db: &dyn DatabaseError) -> bool {
        number(db) == Some(1213)
    }

    /// ER_BAD_DB_ERROR, ER_NO_SUCH_TABLE
    fn is_gone(db: &dyn DatabaseError) -> bool {
        matches!(number(db), Some(1049 | 1146))
    }

    /// ER_TABLEACCESS_DENIED_ERROR, ER_COLUMNACCESS_DENIED_ERROR
    fn is_denied(db: &dyn DatabaseError) -> bool {
        matches!(number(db), Some(1142 | 1143))
    }

    /// Server shutdown and connection killed.
    fn is_server_gone(db: &dyn DatabaseError) -> bool {
        matches!(number(db), Some(1053 | 1927 | 2006 | 2013))
    }

    /// The server names the violated key only in the message.
    fn is_seq_key(db: &dyn DatabaseError) -> bool {
        db.message().contains("trials_experiment_seq")
    }

    /// ER_BAD_DB_ERROR; access denied
    fn refusal(db: &dyn DatabaseError) -> Option<Refusal> {
        match number(db)? {
            1049 => Some(Refusal::DatabaseMissing),
            1044 | 1045 | 1130 => Some(Refusal::LoginRefused),
            _ => None,
        }
    }
}

fn number(db: &dyn DatabaseError) -> Option<u16> {
    db.try_downcast_ref::<MySqlDatabaseError>()
        .map(MySqlDatabaseError::number)
}

async fn migrate(
    pool: &MySqlPool,
    database: &str,
    wait: Duration,
) -> Result<(), sqlx::migrate::MigrateError> {
    let mut conn = pool.acquire().await?;
    // Lock names are at most 64 characters.
    let name: String = format!("vernier_migrate_{database}")
        .chars()
        .take(64)
        .collect();
    sqlx::query("SELECT GET_LOCK(?, ?)")
        .bind(&name)
        .bind(wait.as_secs().max(1) as i64)
        .execute(&mut *conn)
        .await?;
    // `run_direct` because `run(&mut *conn)` trips sqlx's "Acquire is not general enough"
    // in spawned futures; it is what `run` calls after acquiring.
    let result = MIGRATOR.run_direct(None, &mut *conn, false).await;
    let _ = sqlx::query("SELECT RELEASE_LOCK(?)")
        .bind(&name)
        .execute(&mut *conn)
        .await;
    result
}

impl MySqlBackend {
    pub(crate) async fn connect(url: &str, lock_timeout: Duration) -> Result<Self, StoreError> {
        let errors = ErrorContext {
            url: crate::url::redact(url),
            lock_timeout,
        };
        let options = MySqlConnectOptions::from_str(url).map_err(|e| StoreError::InvalidUrl {
            url: errors.url.clone(),
            reason: e.to_string(),
        })?;
        let options = match crate::url::resolvable_host(options.get_host()) {
            Some(host) => {
                let host = host.to_owned();
                options.host(&host)
            }
            None => options,
        };
        let database = options.get_database().unwrap_or_default().to_owned();
        // One direct connection first: the pool would retry a refused connection until its
        // acquire timeout and then report only that it timed out.
        let probe = options
            .connect()
            .await
            .map_err(|e| errors.connect::<MySql>(&database, e))?;
        let _ = probe.close().await;
        let secs = lock_timeout.as_secs().max(1);
        let pool = MySqlPoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .acquire_timeout(crate::outage::ACQUIRE_WITHIN)
            .after_connect(move |conn, _meta| {
                Box::pin(async move {
                    conn.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
                        .await?;
                    conn.execute(sqlx::AssertSqlSafe(format!(
                        "SET SESSION innodb_lock_wait_timeout = {secs}, \
                         SESSION lock_wait_timeout = {secs}"
                    )))
                    .await?;
                    Ok(())
                })
            })
            .connect_with(options)
            .await
            .map_err(|e| errors.connect::<MySql>(&database, e))?;
        // sqlx's migrator asks for its named lock with a negative timeout, which MariaDB
        // reads as "do not wait", and goes on without it; so stores opening a new database at
        // once would both apply the schema. Holding our own named lock on the connection the
        // migrator runs on serialises them (named locks are per session and re-entrant).
        let existing: Vec<String> = sqlx::query_scalar(
            "SELECT CAST(table_name AS CHAR) FROM information_schema.tables \
             WHERE table_schema = DATABASE()",
        )
        .fetch_all(&pool)
        .await
        .map_err(|e| errors.connect::<MySql>(&database, e))?;
        if let Err(e) = crate::foreign_tables::refuse_colliding(&errors.url, &existing) {
            pool.close().await;
            return Err(e);
        }
        let applied: Vec<(i64, Vec<u8>)> = sqlx::query_as(crate::schema_version::APPLIED)
            .fetch_all(&pool)
            .await
            .unwrap_or_default();
        let current = crate::schema_version::is_current(&MIGRATOR, &applied);
        if !current && let Err(error) = migrate(&pool, &database, lock_timeout).await {
            pool.close().await;
            return Err(errors.migrate::<MySql>(error, &MIGRATOR));
        }
        Ok(SqlBackend::new(pool, errors.url, lock_timeout))
    }
}
