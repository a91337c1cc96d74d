//! What truly differs between SQLite, PostgreSQL and MySQL for the statements the store shares
//! (`queries.rs`): placeholders, the summary upsert, how a write transaction starts and locks
//! the lease row, and which driver errors mean "locked", "deadlock" or "refused". Each backend
//! module implements [`Dialect`] for its sqlx database type.

use sqlx::error::DatabaseError;
use sqlx::{SqlSafeStr, SqlStr};

/// Why a database server turned a connection away, where the user can fix it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    DatabaseMissing,
    LoginRefused,
}

/// A database the store runs its shared statements on.
pub(crate) trait Dialect: sqlx::Database {
    /// Rows per multi-row INSERT of observation logs and summaries.
    const ROWS_PER_INSERT: usize;
    /// Appended to `INSERT INTO observation_summaries (…) VALUES …`: merges the batch's
    /// reduction into a stored row, with the rules of `summary.rs` (min and max skip NULLs,
    /// the later or equal `latest_time` wins, counts add up).
    const MERGE_SUMMARY: &'static str;
    /// Reads the lease row inside `acquire_lease`'s transaction, locking it where the
    /// database locks rows (`?` is the experiment).
    const SELECT_LEASE_LOCKED: &'static str;
    /// How a transaction that writes begins; `None` is the driver's plain `BEGIN`.
    const BEGIN_WRITE: Option<&'static str> = None;
    /// Whether this process queues its own writers before they reach the database.
    const QUEUE_WRITERS: bool = false;
    /// What to run before the pool closes, so the database's files hold everything.
    const ON_CLOSE: Option<&'static str> = None;

    /// A statement written with `?` placeholders, as this database takes it.
    fn sql(text: &'static str) -> SqlStr {
        text.into_sql_str()
    }

    /// How many rows a statement changed (each driver has it as an inherent method).
    fn rows_affected(done: &Self::QueryResult) -> u64;

    /// The statement waited `lock_timeout` for a lock another session holds.
    fn is_lock_timeout(db: &dyn DatabaseError) -> bool;

    /// The server aborted this transaction to break a deadlock; retrying it may succeed.
    fn is_deadlock(_db: &dyn DatabaseError) -> bool {
        false
    }

    /// The server shut down or killed this session: nothing of the statement committed.
    fn is_server_gone(_db: &dyn DatabaseError) -> bool {
        false
    }

    /// The database refuses writes: a read-only file or mount, or a read-only server.
    fn is_read_only(_db: &dyn DatabaseError) -> bool {
        false
    }

    /// The database file is damaged.
    fn is_damaged(_db: &dyn DatabaseError) -> bool {
        false
    }

    /// The disk holding the database is full.
    fn is_disk_full(_db: &dyn DatabaseError) -> bool {
        false
    }

    /// The server database, or one of Vernier's tables in it, no longer exists (dropped while
    /// a store had it open).
    fn is_gone(_db: &dyn DatabaseError) -> bool {
        false
    }

    /// The server refused this user a privilege on a table (or the schema) it needs.
    fn is_denied(_db: &dyn DatabaseError) -> bool {
        false
    }

    /// A unique violation on `trials` is the `(experiment, seq)` key, not the name.
    fn is_seq_key(db: &dyn DatabaseError) -> bool;

    /// Why the server refused a new connection, if the user can fix it.
    fn refusal(_db: &dyn DatabaseError) -> Option<Refusal> {
        None
    }
}
