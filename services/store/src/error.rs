//! The one error type of the store, worded for the person who has to fix the problem, and the
//! classification of driver errors into "unreachable", "locked" and "missing database" so
//! every backend reports them the same way.

use crate::dialect::{Dialect, Refusal};
use std::time::Duration;

/// A driver error as a user reads it: PostgreSQL's message without the "at line N" sqlx adds
/// (a line of the server's own source code, which means nothing here).
fn said(error: &sqlx::Error) -> String {
    match error {
        sqlx::Error::Database(db) => format!("error returned from database: {}", db.message()),
        other => other.to_string(),
    }
}

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
        "database `{path}` does not exist\nhint: check the path (only `vernier run`, and `vernier serve --create-db`, create a database)"
    )]
    DatabaseFileMissing { path: String },

    #[error(
        "database `{path}` was {what} while vernier had it open: anything written since then went to the old file and is lost\nhint: keep the database file in place while vernier uses it; a run stops its trials when this happens (`vernier resume` continues it on the file now at that path), `vernier serve` refuses its DBManager requests until restarted"
    )]
    DatabaseFileGone { path: String, what: &'static str },

    #[error(
        "cannot open database `{path}`: it is a directory\nhint: pass a file path, e.g. `{path}/vernier.db`"
    )]
    IsADirectory { path: String },

    #[error(
        "`{path}` is not a SQLite database (or it is corrupt or encrypted)\nhint: pass the path of a Vernier database, or a new file name to create one"
    )]
    NotADatabase { path: String },

    #[error(
        "database `{path}` holds no vernier experiments: {}; nothing was changed in it\nhint: pass --db the database file vernier run wrote (vernier.db in the directory it ran in, by default){}",
        if .tables.is_empty() { "it is empty".to_string() } else { format!("it holds other tables ({}) and no vernier schema", .tables.join(", ")) },
        if .tables.is_empty() { "; a copy of a database in use needs its -wal file beside it (copy both, or copy with `sqlite3 SOURCE '.backup COPY'`)" } else { "" }
    )]
    NotVernier { path: String, tables: Vec<String> },

    #[error(
        "database `{path}` was written by an older vernier and cannot be read until its schema is upgraded, which needs write access (SQLite: attempt to write a readonly database)\nhint: make the file and its directory writable once (any vernier command upgrades it), or copy it somewhere writable and pass --db"
    )]
    SchemaBehindReadOnly { path: String },

    #[error(
        "database `{url}` was written by a newer vernier: its schema has migration {version}, which this vernier does not know (it knows 1 to {known})\nhint: use that vernier or a newer one with this database, or pass --db a new file"
    )]
    NewerSchema {
        url: String,
        version: i64,
        known: i64,
    },

    #[error(
        "database `{path}` cannot be written here (SQLite: attempt to write a readonly database: the file's or its directory's permissions, or a read-only mount)\nhint: `vernier list`, `report` and `compare` read it as it is; to run or change experiments, make the file and its directory writable (SQLite keeps `-wal` and `-shm` files beside it) or copy it somewhere writable and pass --db"
    )]
    ReadOnlyFile { path: String },

    #[error(
        "database `{path}` is damaged (SQLite: the database disk image is malformed)\nhint: restore it from a copy; `sqlite3 FILE .recover` saves what is still readable into a new database"
    )]
    DamagedFile { path: String },

    #[error(
        "cannot reach database `{url}`: {}\nhint: check that the database server is running and accepts connections at the host and port in the url",
        said(.error)
    )]
    Unreachable { url: String, error: sqlx::Error },

    #[error(
        "cannot open a TLS connection to database `{url}`: {}\nhint: the url asks for TLS (`sslmode`, `ssl-mode`); check that the server offers it and that its certificate is trusted by this machine, or drop the setting from the url for a server without TLS",
        said(.error)
    )]
    TlsFailed { url: String, error: sqlx::Error },

    #[error(
        "the server of `{url}` refused the login: {}\nhint: check the user name and password in the url, and that this user may connect from this machine",
        said(.error)
    )]
    LoginRefused { url: String, error: sqlx::Error },

    #[error(
        "database `{database}` does not exist on the server of `{url}`\nhint: create it first (PostgreSQL: `createdb {database}`; MySQL/MariaDB: `CREATE DATABASE {database}`), or fix the database name in the url"
    )]
    DatabaseMissing { url: String, database: String },

    #[error(
        "database `{url}` did not answer within {} s {doing}\nhint: check that the database server is running and reachable; a server that accepts connections but does not answer is overloaded, paused or cut off by the network",
        .waited.as_secs_f64()
    )]
    NoAnswer {
        url: String,
        /// What was going on, after "within N s".
        doing: &'static str,
        waited: Duration,
    },

    #[error("cannot open database `{url}`: {}", said(.error))]
    Connect { url: String, error: sqlx::Error },

    #[error(
        "database `{url}` already holds tables vernier did not create: {} (Katib's own database, or another application's); nothing was changed in it\nhint: give vernier a database of its own (e.g. `CREATE DATABASE vernier;`) and name it in the url", .tables.join(", ")
    )]
    ForeignTables { url: String, tables: Vec<String> },

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
        "experiment `{experiment}` is held by another vernier (a run or resume driving it, or a delete or enqueue changing it): pid {pid} on host {host}, since {since}, last heartbeat {heartbeat_age_s} s ago\nhint: wait for it to finish (a delete or enqueue takes a moment), or stop a run (Ctrl-C, or `kill -INT {pid}` on {host}) and run this command again; if that process is gone, its lease lapses {ttl_s} s after its last heartbeat and the command goes through"
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
        "experiment `{experiment}` is driven by the Kubernetes operator (pod {host}, since {since}), which shares this database\nhint: give the local experiment another name, or its own database (--db or VERNIER_DB)"
    )]
    LeaseHeldByOperator {
        experiment: String,
        host: String,
        since: String,
    },

    #[error(
        "lost the lease on experiment `{experiment}`: another vernier took it over (this one's heartbeat lapsed, e.g. while the machine slept or the database was unreachable)\nhint: `vernier report {experiment}` shows what the other driver does; nothing more is recorded by this one"
    )]
    LeaseLost { experiment: String },

    #[error("{kind} `{name}` not found")]
    NotFound { kind: &'static str, name: String },

    #[error(
        "stored {kind} `{name}` cannot be read: {detail}\nhint: a row written by a newer vernier, or edited by hand; read the database with the vernier that wrote it"
    )]
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
        "cannot {action} `{name}`: lost the connection to database `{url}`: {}; nothing of this call was recorded, earlier records are kept\nhint: check that the database server is running and reachable, then retry (`vernier resume` continues an interrupted experiment)",
        said(.error)
    )]
    ConnectionLost {
        action: &'static str,
        name: String,
        url: String,
        error: sqlx::Error,
    },

    #[error(
        "cannot {action} `{name}`: database `{url}` is read-only (file or directory permissions, a read-only mount, or a read-only server); nothing of this call was recorded\nhint: `vernier list`, `report` and `compare` read it as it is; to run or change experiments, make it writable or copy it somewhere writable and pass --db"
    )]
    ReadOnly {
        action: &'static str,
        name: String,
        url: String,
    },

    #[error(
        "cannot {action} `{name}`: the disk holding database `{url}` is full\nhint: free space on that disk (or move the database with --db), then `vernier resume` the experiment; what was recorded before stays"
    )]
    DiskFull {
        action: &'static str,
        name: String,
        url: String,
    },

    #[error(
        "cannot {action} `{name}`: database `{url}` is damaged ({})\nhint: restore it from a copy; `sqlite3 FILE .recover` saves what is still readable into a new database",
        said(.error)
    )]
    Damaged {
        action: &'static str,
        name: String,
        url: String,
        error: sqlx::Error,
    },

    #[error(
        "cannot {action} `{name}`: database `{url}`, or Vernier's tables in it, no longer exist ({}): it was dropped while vernier had it open, and what was recorded in it went with it\nhint: restore the database from a backup to keep what was recorded, or create it again (PostgreSQL: `createdb`; MySQL/MariaDB: `CREATE DATABASE`) and run the experiment again",
        said(.error)
    )]
    Vanished {
        action: &'static str,
        name: String,
        url: String,
        error: sqlx::Error,
    },

    #[error(
        "database `{url}` refused its user a privilege vernier needs to {doing} ({}): the tables belong to another user, or this one was granted too little\nhint: connect as the user that created Vernier's tables, or grant this one access (PostgreSQL: `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO <user>` and `GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO <user>`; MySQL/MariaDB: `GRANT SELECT, INSERT, UPDATE, DELETE ON <database>.* TO <user>`); SELECT alone serves `list`, `report` and the dashboard",
        said(.error)
    )]
    Denied {
        doing: String,
        url: String,
        error: sqlx::Error,
    },

    #[error("cannot {action} `{name}`: {}", said(.error))]
    Query {
        action: &'static str,
        name: String,
        error: sqlx::Error,
    },
}

/// What a backend needs to turn driver errors into [`StoreError`]s: its redacted URL and how
/// long it waits for locks; its [`Dialect`] reads the error codes.
#[derive(Debug, Clone)]
pub(crate) struct ErrorContext {
    pub(crate) url: String,
    pub(crate) lock_timeout: Duration,
}

impl ErrorContext {
    /// Classifies an error of a statement run on behalf of `name`.
    pub(crate) fn query<D: Dialect>(
        &self,
        action: &'static str,
        name: &str,
        error: sqlx::Error,
    ) -> StoreError {
        if matches!(&error, sqlx::Error::Database(db) if D::is_lock_timeout(db.as_ref())) {
            return StoreError::Locked {
                action,
                name: name.to_owned(),
                url: self.url.clone(),
                waited: self.lock_timeout,
            };
        }
        if matches!(&error, sqlx::Error::Database(db) if D::is_read_only(db.as_ref())) {
            return StoreError::ReadOnly {
                action,
                name: name.to_owned(),
                url: self.url.clone(),
            };
        }
        if matches!(&error, sqlx::Error::Database(db) if D::is_disk_full(db.as_ref())) {
            return StoreError::DiskFull {
                action,
                name: name.to_owned(),
                url: self.url.clone(),
            };
        }
        if matches!(&error, sqlx::Error::Database(db) if D::is_damaged(db.as_ref())) {
            return StoreError::Damaged {
                action,
                name: name.to_owned(),
                url: self.url.clone(),
                error,
            };
        }
        if matches!(&error, sqlx::Error::Database(db) if D::is_gone(db.as_ref())) {
            return StoreError::Vanished {
                action,
                name: name.to_owned(),
                url: self.url.clone(),
                error,
            };
        }
        if matches!(&error, sqlx::Error::Database(db) if D::is_denied(db.as_ref())) {
            return StoreError::Denied {
                doing: format!("{action} `{name}`"),
                url: self.url.clone(),
                error,
            };
        }
        if is_connection_loss::<D>(&error) {
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

    /// Classifies an error of applying the schema: a privilege the user lacks is named as
    /// such, anything else is put down to the schema (another version's database).
    pub(crate) fn migrate<D: Dialect>(
        &self,
        error: sqlx::migrate::MigrateError,
        migrator: &sqlx::migrate::Migrator,
    ) -> StoreError {
        use sqlx::migrate::MigrateError;
        match error {
            MigrateError::Execute(sqlx::Error::Database(db))
            | MigrateError::ExecuteMigration(sqlx::Error::Database(db), _)
                if D::is_denied(db.as_ref()) =>
            {
                StoreError::Denied {
                    doing: "set up or read its schema".to_string(),
                    url: self.url.clone(),
                    error: sqlx::Error::Database(db),
                }
            }
            error => migrate_error(&self.url, error, migrator),
        }
    }

    /// Classifies an error of opening a connection to a database server.
    pub(crate) fn connect<D: Dialect>(&self, database: &str, error: sqlx::Error) -> StoreError {
        let url = self.url.clone();
        let refusal = match &error {
            sqlx::Error::Database(db) => D::refusal(db.as_ref()),
            _ => None,
        };
        match refusal {
            Some(Refusal::DatabaseMissing) => StoreError::DatabaseMissing {
                url,
                database: database.to_owned(),
            },
            Some(Refusal::LoginRefused) => StoreError::LoginRefused { url, error },
            None if is_tls_failure(&error) => StoreError::TlsFailed { url, error },
            None if is_connection_loss::<D>(&error) => StoreError::Unreachable { url, error },
            None => StoreError::Connect { url, error },
        }
    }
}

/// A TLS handshake that failed: MySQL's driver says so with its own variant, PostgreSQL's
/// passes rustls' verdict on the certificate through as an I/O error.
fn is_tls_failure(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Tls(_) => true,
        sqlx::Error::Io(io) => {
            let text = io.to_string();
            text.contains("certificate") || text.contains("InvalidCertificate")
        }
        _ => false,
    }
}

/// Errors after which the statement certainly did not commit: the server is gone or the
/// connection broke (the pool then opens a new one on the next call).
fn is_connection_loss<D: Dialect>(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => D::is_server_gone(db.as_ref()),
        // A PostgreSQL connection closed while sqlx waits for the answer to its TLS request:
        // it ignores the byte count of that read, so an end of stream reads as byte 0x00.
        sqlx::Error::Protocol(m) => m.starts_with("unexpected response from SSLRequest: 0x00"),
        _ => false,
    }
}

impl StoreError {
    /// Whether what was recorded before this error is gone or unreadable with the database:
    /// a SQLite file deleted or replaced, a database dropped, a damaged file.
    pub fn lost_what_was_recorded(&self) -> bool {
        matches!(
            self,
            StoreError::DatabaseFileGone { .. }
                | StoreError::Vanished { .. }
                | StoreError::Damaged { .. }
                | StoreError::DamagedFile { .. }
        )
    }

    pub(crate) fn not_found(kind: &'static str, name: &str) -> StoreError {
        StoreError::NotFound {
            kind,
            name: name.to_owned(),
        }
    }
}

/// An error of the migrator on the database at `url` (redacted): a migration the database has
/// and this build does not is a newer vernier's schema; anything else is put down to the schema.
pub(crate) fn migrate_error(
    url: &str,
    error: sqlx::migrate::MigrateError,
    migrator: &sqlx::migrate::Migrator,
) -> StoreError {
    match error {
        sqlx::migrate::MigrateError::VersionMissing(version) => StoreError::NewerSchema {
            url: url.to_owned(),
            version,
            known: migrator.iter().map(|m| m.version).max().unwrap_or(0),
        },
        error => StoreError::Migrate {
            url: url.to_owned(),
            error,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_closed_mid_handshake_is_a_connection_loss() {
        let protocol = |m: &str| sqlx::Error::Protocol(m.to_string());
        // (error, lost)
        let table = [
            (
                protocol(
                    "unexpected response from SSLRequest: 0x00 (sqlx_postgres::connection::tls:95)",
                ),
                true,
            ),
            (protocol("unexpected response from SSLRequest: 0x48"), false),
            (sqlx::Error::PoolTimedOut, true),
            (sqlx::Error::RowNotFound, false),
        ];
        for (error, lost) in table {
            let shown = error.to_string();
            assert_eq!(
                is_connection_loss::<sqlx::Postgres>(&error),
                lost,
                "{shown}"
            );
        }
    }

    /// A database error with only a code, as the drivers report it.
    #[derive(Debug)]
    struct Coded(&'static str);

    impl std::fmt::Display for Coded {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "error {}", self.0)
        }
    }

    impl std::error::Error for Coded {}

    impl sqlx::error::DatabaseError for Coded {
        fn message(&self) -> &str {
            "database or disk is full"
        }
        fn code(&self) -> Option<std::borrow::Cow<'_, str>> {
            Some(self.0.into())
        }
        fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
            self
        }
        fn kind(&self) -> sqlx::error::ErrorKind {
            sqlx::error::ErrorKind::Other
        }
    }

    #[test]
    fn a_full_disk_names_the_database_and_what_to_do() {
        let context = ErrorContext {
            url: "runs/v.db".into(),
            lock_timeout: Duration::from_secs(5),
        };
        let full = |code| sqlx::Error::Database(Box::new(Coded(code)));
        let sqlite = context.query::<sqlx::Sqlite>("renew lease of experiment", "e", full("13"));
        let postgres =
            context.query::<sqlx::Postgres>("renew lease of experiment", "e", full("53100"));
        for e in [sqlite, postgres] {
            assert!(matches!(e, StoreError::DiskFull { .. }), "{e:?}");
            let text = e.to_string();
            assert!(
                text.starts_with("cannot renew lease of experiment `e`: the disk holding database `runs/v.db` is full\nhint: free space"),
                "{text}"
            );
        }
        let other = context.query::<sqlx::Sqlite>("record", "t", full("1"));
        assert!(matches!(other, StoreError::Query { .. }), "{other:?}");
    }
}
