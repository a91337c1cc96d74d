//! The one error type of the store, worded for the person who has to fix the problem, and the
//! classification of driver errors into "unreachable", "locked" and "missing database" so
//! every backend reports them the same way.

use std::time::Duration;

/// Everything the store can fail with. Messages are lowercase, name the offending value and end
/// with a `hint:` line where the user can act. Database URLs in messages have their password
/// replaced by `***`. The underlying driver error, where there is one, is part of the message
/// and also kept in the variant for callers that inspect it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "unsupported database url `{url}`\nhint: use `sqlite://PATH` (or a plain file path), `postgres://USER@HOST:PORT/DATABASE` or `mysql://USER@HOST:PORT/DATABASE`"
    )]
    UnsupportedUrl { url: String },

    #[error(
        "invalid database url `{url}`: {reason}\nhint: write it as `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE` or `mysql://USER[:PASSWORD]@HOST[:PORT]/DATABASE`"
    )]
    InvalidUrl { url: String, reason: String },

    #[error(
        "cannot open database `{path}`: directory `{dir}` does not exist\nhint: create it with `mkdir -p {dir}` or choose a path in an existing directory"
    )]
    MissingDirectory { path: String, dir: String },

    #[error(
        "database `{path}` does not exist\nhint: check the path (only `vernier run` creates a database)"
    )]
    DatabaseFileMissing { path: String },

    #[error(
        "cannot open database `{path}`: it is a directory\nhint: pass a file path, e.g. `{path}/vernier.db`"
    )]
    IsADirectory { path: String },

    #[error(
        "`{path}` is not a SQLite database (or it is corrupt or encrypted)\nhint: pass the path of a Vernier database, or a new file name to create one"
    )]
    NotADatabase { path: String },

    #[error(
        "cannot reach database `{url}`: {error}\nhint: check that the database server is running and accepts connections at the host and port in the url"
    )]
    Unreachable { url: String, error: sqlx::Error },

    #[error(
        "the server of `{url}` refused the login: {error}\nhint: check the user name and password in the url, and that this user may connect from this machine"
    )]
    LoginRefused { url: String, error: sqlx::Error },

    #[error(
        "database `{database}` does not exist on the server of `{url}`\nhint: create it first (PostgreSQL: `createdb {database}`; MySQL/MariaDB: `CREATE DATABASE {database}`), or fix the database name in the url"
    )]
    DatabaseMissing { url: String, database: String },

    #[error("cannot open database `{url}`: {error}")]
    Connect { url: String, error: sqlx::Error },

    #[error(
        "cannot set up the schema of database `{url}`: {error}\nhint: if another version of vernier wrote this database, use that version or a new database"
    )]
    Migrate {
        url: String,
        error: sqlx::migrate::MigrateError,
    },

    #[error(
        "experiment `{0}` already exists\nhint: use `vernier resume {0}`, `vernier delete {0}`, or rename the experiment"
    )]
    ExperimentExists(String),

    #[error(
        "trial `{0}` already exists\nhint: trial names are unique across all experiments in one database; give the trial another name"
    )]
    TrialExists(String),

    #[error("experiment `{experiment}` already has a trial with sequence number {seq}")]
    TrialSeqTaken { experiment: String, seq: i64 },

    #[error(
        "experiment `{experiment}` is being driven by another vernier: pid {pid} on host {host}, since {since}, last heartbeat {heartbeat_age_s} s ago\nhint: wait for it to finish, or stop it (Ctrl-C, or `kill -INT {pid}` on {host}) and then `vernier resume {experiment}`; if that process is gone, its lease lapses {ttl_s} s after its last heartbeat and `vernier resume {experiment}` takes over"
    )]
    LeaseHeld {
        experiment: String,
        host: String,
        pid: i64,
        since: String,
        heartbeat_age_s: i64,
        ttl_s: u64,
    },

    #[error(
        "lost the lease on experiment `{experiment}`: another vernier took it over (this one's heartbeat lapsed, e.g. while the machine slept or the database was unreachable)\nhint: `vernier report {experiment}` shows what the other driver does; nothing more is recorded by this one"
    )]
    LeaseLost { experiment: String },

    #[error("{kind} `{name}` not found")]
    NotFound { kind: &'static str, name: String },

    #[error("stored {kind} `{name}` cannot be read: {detail}")]
    Corrupt {
        kind: &'static str,
        name: String,
        detail: String,
    },

    #[error(
        "cannot {action} `{name}`: database `{url}` stayed locked by another session for more than {waited:?}; nothing of this call was recorded\nhint: find and end the session holding the lock (another vernier, a migration, an open transaction in a SQL shell), then retry"
    )]
    Locked {
        action: &'static str,
        name: String,
        url: String,
        waited: Duration,
    },

    #[error(
        "cannot {action} `{name}`: lost the connection to database `{url}`: {error}; nothing of this call was recorded, earlier records are kept\nhint: check that the database server is running and reachable, then retry (`vernier resume` continues an interrupted experiment)"
    )]
    ConnectionLost {
        action: &'static str,
        name: String,
        url: String,
        error: sqlx::Error,
    },

    #[error("cannot {action} `{name}`: {error}")]
    Query {
        action: &'static str,
        name: String,
        error: sqlx::Error,
    },
}

/// Driver error codes that mean "another session holds the lock", per backend.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
    MySql,
}

/// What a backend needs to turn driver errors into [`StoreError`]s: its redacted URL, how long
/// it waits for locks, and how to read its error codes.
#[derive(Debug, Clone)]
pub(crate) struct ErrorContext {
    pub(crate) url: String,
    pub(crate) lock_timeout: Duration,
    pub(crate) dialect: Dialect,
}

impl ErrorContext {
    /// Classifies an error of a statement run on behalf of `name`.
    pub(crate) fn query(&self, action: &'static str, name: &str, error: sqlx::Error) -> StoreError {
        if is_lock_timeout(self.dialect, &error) {
            return StoreError::Locked {
                action,
                name: name.to_owned(),
                url: self.url.clone(),
                waited: self.lock_timeout,
            };
        }
        if is_connection_loss(&error) {
            return StoreError::ConnectionLost {
                action,
                name: name.to_owned(),
                url: self.url.clone(),
                error,
            };
        }
        StoreError::Query {
            action,
            name: name.to_owned(),
            error,
        }
    }

    /// Classifies an error of opening a connection to a database server.
    pub(crate) fn connect(&self, database: &str, error: sqlx::Error) -> StoreError {
        let url = self.url.clone();
        if let sqlx::Error::Database(db) = &error {
            let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
            let number = mysql_number(&error);
            match self.dialect {
                // invalid_catalog_name; ER_BAD_DB_ERROR
                Dialect::Postgres if code == "3D000" => {
                    return StoreError::DatabaseMissing {
                        url,
                        database: database.to_owned(),
                    };
                }
                Dialect::MySql if number == Some(1049) => {
                    return StoreError::DatabaseMissing {
                        url,
                        database: database.to_owned(),
                    };
                }
                // invalid_authorization_specification, invalid_password; access denied
                Dialect::Postgres if code == "28000" || code == "28P01" => {
                    return StoreError::LoginRefused { url, error };
                }
                Dialect::MySql if matches!(number, Some(1044 | 1045 | 1130)) => {
                    return StoreError::LoginRefused { url, error };
                }
                _ => {}
            }
        }
        if is_connection_loss(&error) {
            return StoreError::Unreachable { url, error };
        }
        StoreError::Connect { url, error }
    }
}

fn mysql_number(error: &sqlx::Error) -> Option<u16> {
    match error {
        sqlx::Error::Database(db) => db
            .try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>()
            .map(|e| e.number()),
        _ => None,
    }
}

fn is_lock_timeout(dialect: Dialect, error: &sqlx::Error) -> bool {
    let sqlx::Error::Database(db) = error else {
        return false;
    };
    match dialect {
        // SQLITE_BUSY and SQLITE_LOCKED, with their extended codes (low byte is the primary).
        Dialect::Sqlite => db
            .code()
            .and_then(|c| c.parse::<u32>().ok())
            .is_some_and(|c| matches!(c & 0xff, 5 | 6)),
        // lock_not_available (lock_timeout expired)
        Dialect::Postgres => db.code().as_deref() == Some("55P03"),
        // ER_LOCK_WAIT_TIMEOUT (row locks and, via lock_wait_timeout, table locks)
        Dialect::MySql => mysql_number(error) == Some(1205),
    }
}

/// Errors after which the statement certainly did not commit: the server is gone or the
/// connection broke (the pool then opens a new one on the next call).
fn is_connection_loss(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        // admin_shutdown, crash_shutdown, cannot_connect_now (PostgreSQL); server shutdown
        // and connection killed (MySQL/MariaDB).
        sqlx::Error::Database(db) => {
            matches!(db.code().as_deref(), Some("57P01" | "57P02" | "57P03"))
                || matches!(mysql_number(error), Some(1053 | 1927 | 2006 | 2013))
        }
        _ => false,
    }
}

impl StoreError {
    pub(crate) fn not_found(kind: &'static str, name: &str) -> StoreError {
        StoreError::NotFound {
            kind,
            name: name.to_owned(),
        }
    }
}
