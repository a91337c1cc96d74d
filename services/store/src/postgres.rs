//! The PostgreSQL backend: opening a pool on a `postgres://` URL, and PostgreSQL's [`Dialect`]
//! for the shared statements.
//!
//! Unlike SQLite, PostgreSQL serialises concurrent writers itself with row locks, so there is
//! no process-wide write queue; each session waits at most `lock_timeout` for a lock held by
//! another session, then fails with a "locked" error instead of hanging. Batches of logs go in
//! as multi-row INSERTs because every statement is a network round trip.

use crate::dialect::{Dialect, Refusal};
use crate::error::{ErrorContext, StoreError};
use crate::queries::SqlBackend;
use crate::records::select_lease;
use sqlx::error::DatabaseError;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgQueryResult};
use sqlx::{AssertSqlSafe, ConnectOptions, Connection, Postgres, SqlSafeStr, SqlStr};
use std::str::FromStr;
use std::time::Duration;

/// Enough for several trials' collectors writing at once and a report reading beside them.
const MAX_CONNECTIONS: u32 = 8;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

pub(crate) type PostgresBackend = SqlBackend<Postgres>;

impl Dialect for Postgres {
    /// 7 parameters a summary row, well under PostgreSQL's 65,535 bind parameters.
    const ROWS_PER_INSERT: usize = 1000;
    // LEAST and GREATEST skip NULLs, which is the merge rule for min and max.
    const MERGE_SUMMARY: &'static str = " ON CONFLICT (trial_name, metric_name) DO UPDATE SET \
         min_value = LEAST(observation_summaries.min_value, EXCLUDED.min_value), \
         max_value = GREATEST(observation_summaries.max_value, EXCLUDED.max_value), \
         latest_value = CASE WHEN EXCLUDED.latest_time >= observation_summaries.latest_time \
             THEN EXCLUDED.latest_value ELSE observation_summaries.latest_value END, \
         latest_time = GREATEST(observation_summaries.latest_time, EXCLUDED.latest_time), \
         numeric_count = observation_summaries.numeric_count + EXCLUDED.numeric_count";
    const SELECT_LEASE_LOCKED: &'static str =
        concat!(select_lease!(), " WHERE experiment = ? FOR UPDATE");

    fn sql(text: &'static str) -> SqlStr {
        AssertSqlSafe(numbered(text)).into_sql_str()
    }

    fn rows_affected(done: &PgQueryResult) -> u64 {
        done.rows_affected()
    }

    /// lock_not_available (lock_timeout expired)
    fn is_lock_timeout(db: &dyn DatabaseError) -> bool {
        db.code().as_deref() == Some("55P03")
    }

    /// read_only_sql_transaction (a standby, or `default_transaction_read_only`)
    fn is_read_only(db: &dyn DatabaseError) -> bool {
        db.code().as_deref() == Some("25006")
    }

    /// disk_full
    fn is_disk_full(db: &dyn DatabaseError) -> bool {
        db.code().as_deref() == Some("53100")
    }

    /// deadlock_detected, serialization_failure
    fn is_deadlock(db: &dyn DatabaseError) -> bool {
        matches!(db.code().as_deref(), Some("40P01" | "40001"))
    }

    /// invalid_catalog_name (asked on a connection opened after the drop), undefined_table
    fn is_gone(db: &dyn DatabaseError) -> bool {
        matches!(db.code().as_deref(), Some("3D000" | "42P01"))
    }

    /// insufficient_privilege
    fn is_denied(db: &dyn DatabaseError) -> bool {
        db.code().as_deref() == Some("42501")
    }

    /// admin_shutdown, crash_shutdown, cannot_connect_now
    fn is_server_gone(db: &dyn DatabaseError) -> bool {
        matches!(db.code().as_deref(), Some("57P01" | "57P02" | "57P03"))
    }

    fn is_seq_key(db: &dyn DatabaseError) -> bool {
        db.constraint() == Some("trials_experiment_seq")
    }

    /// invalid_catalog_name; invalid_authorization_specification, invalid_password
    fn refusal(db: &dyn DatabaseError) -> Option<Refusal> {
        match db.code().as_deref() {
            Some("3D000") => Some(Refusal::DatabaseMissing),
            Some("28000" | "28P01") => Some(Refusal::LoginRefused),
            _ => None,
        }
    }
}

/// `?` placeholders as PostgreSQL's `$1`, `$2`, …; the shared statements have no `?` inside
/// string literals or as an operator.
fn numbered(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut n = 0;
    for c in text.chars() {
        if c == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(c);
        }
    }
    out
}

impl PostgresBackend {
    pub(crate) async fn connect(url: &str, lock_timeout: Duration) -> Result<Self, StoreError> {
        let errors = ErrorContext {
            url: crate::url::redact(url),
            lock_timeout,
        };
        let options = PgConnectOptions::from_str(url).map_err(|e| StoreError::InvalidUrl {
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
        let options = options.options([(
            "lock_timeout",
            format!("{}ms", lock_timeout.as_millis().max(1)),
        )]);
        // One direct connection first: the pool would retry a refused connection until its
        // acquire timeout and then report only that it timed out.
        let probe = options
            .connect()
            .await
            .map_err(|e| errors.connect::<Postgres>(&database, e))?;
        let _ = probe.close().await;
        let pool = PgPoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .acquire_timeout(crate::outage::ACQUIRE_WITHIN)
            .connect_with(options)
            .await
            .map_err(|e| errors.connect::<Postgres>(&database, e))?;
        let existing: Vec<String> = sqlx::query_scalar(
            "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema()",
        )
        .fetch_all(&pool)
        .await
        .map_err(|e| errors.connect::<Postgres>(&database, e))?;
        if let Err(e) = crate::foreign_tables::refuse_colliding(&errors.url, &existing) {
            pool.close().await;
            return Err(e);
        }
        // The migrator holds an advisory lock, so stores opening a new database at once
        // apply the schema once.
        let applied: Vec<(i64, Vec<u8>)> = sqlx::query_as(crate::schema_version::APPLIED)
            .fetch_all(&pool)
            .await
            .unwrap_or_default();
        let current = crate::schema_version::is_current(&MIGRATOR, &applied);
        if !current && let Err(error) = MIGRATOR.run(&pool).await {
            pool.close().await;
            return Err(errors.migrate::<Postgres>(error, &MIGRATOR));
        }
        Ok(SqlBackend::new(pool, errors.url, lock_timeout))
    }
}

#[cfg(test)]
mod tests {
    use super::numbered;

    #[test]
    fn placeholders_are_numbered_in_order() {
        assert_eq!(
            numbered("UPDATE t SET a = ?, b = COALESCE(?, b) WHERE c = ?"),
            "UPDATE t SET a = $1, b = COALESCE($2, b) WHERE c = $3"
        );
        assert_eq!(numbered("SELECT 1"), "SELECT 1");
    }
}
