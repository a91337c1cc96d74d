//! How a store is opened: whether it may create a database or write, and how long it waits
//! for locks. Its own module, so the store and its backends both read it without importing
//! each other.

use std::time::Duration;

/// Whether opening may create a database and whether the store may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OpenMode {
    /// Create a missing SQLite file, bring the schema up to date (what `vernier run` does).
    #[default]
    Create,
    /// A missing SQLite file is [`StoreError::DatabaseFileMissing`]; the schema is brought up
    /// to date (commands that change an existing experiment).
    Existing,
    /// As `Existing`, and SQLite is opened read-only, so a database on a read-only filesystem
    /// or in a directory the user may not write can be read (a file behind the current schema
    /// is migrated first, which needs write access). Server databases open as `Existing`.
    ReadOnly,
}

/// How a store waits for other sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreOptions {
    /// How long one statement waits for a lock another session or process holds before
    /// failing with [`StoreError::Locked`] (SQLite's busy timeout, PostgreSQL's
    /// `lock_timeout`, MySQL's `innodb_lock_wait_timeout` and `lock_wait_timeout`; whole
    /// seconds on MySQL).
    pub lock_timeout: Duration,
    pub mode: OpenMode,
    /// How long opening a server database (connecting, checking and updating its schema) may
    /// take before failing with [`StoreError::NoAnswer`]: a server that accepts connections
    /// but never answers would otherwise hold a command forever.
    pub connect_within: Duration,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            lock_timeout: Duration::from_secs(30),
            mode: OpenMode::Create,
            connect_within: Duration::from_secs(20),
        }
    }
}
