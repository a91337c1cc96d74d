//! The one error type of the store, worded for the person who has to fix the problem.

/// Everything the store can fail with. Messages are lowercase, name the offending value and end
/// with a `hint:` line where the user can act. The underlying database error, where there is
/// one, is part of the message and also kept in the variant for callers that inspect it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "unsupported database url `{url}`\nhint: use `sqlite://PATH`, `sqlite:PATH` or a plain file path"
    )]
    UnsupportedUrl { url: String },

    #[error(
        "database url `{url}` needs the {backend} backend, which this build does not include yet\nhint: use a SQLite database, e.g. `sqlite://vernier.db`"
    )]
    UnsupportedBackend { url: String, backend: &'static str },

    #[error(
        "cannot open database `{path}`: directory `{dir}` does not exist\nhint: create it with `mkdir -p {dir}` or choose a path in an existing directory"
    )]
    MissingDirectory { path: String, dir: String },

    #[error(
        "cannot open database `{path}`: it is a directory\nhint: pass a file path, e.g. `{path}/vernier.db`"
    )]
    IsADirectory { path: String },

    #[error(
        "`{path}` is not a SQLite database (or it is corrupt or encrypted)\nhint: pass the path of a Vernier database, or a new file name to create one"
    )]
    NotADatabase { path: String },

    #[error("cannot open database `{url}`: {error}")]
    Connect { url: String, error: sqlx::Error },

    #[error(
        "cannot set up the schema of database `{url}`: {error}\nhint: if another version of vernier wrote this database, use that version or a new database file"
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

    #[error("{kind} `{name}` not found")]
    NotFound { kind: &'static str, name: String },

    #[error("stored {kind} `{name}` cannot be read: {detail}")]
    Corrupt {
        kind: &'static str,
        name: String,
        detail: String,
    },

    #[error("cannot {action} `{name}`: {error}")]
    Query {
        action: &'static str,
        name: String,
        error: sqlx::Error,
    },
}

impl StoreError {
    pub(crate) fn query(action: &'static str, name: &str, error: sqlx::Error) -> StoreError {
        StoreError::Query {
            action,
            name: name.to_owned(),
            error,
        }
    }

    pub(crate) fn not_found(kind: &'static str, name: &str) -> StoreError {
        StoreError::NotFound {
            kind,
            name: name.to_owned(),
        }
    }
}
