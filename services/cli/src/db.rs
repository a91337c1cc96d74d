//! Opening the database for a command: which commands may create one (only `run` and the
//! operator), and the error for a missing file naming where its path came from.

use std::sync::OnceLock;
use vernier_store::{OpenMode, SqlStore, StoreError};

/// Where `--db`'s value came from, set once by `main` from clap's matches. A process-wide
/// value because every command reads it and none may change it.
static SOURCE: OnceLock<&'static str> = OnceLock::new();

/// Records where the database path came from: `--db`, `VERNIER_DB` or the default.
pub fn set_source(source: &'static str) {
    let _ = SOURCE.set(source);
}

/// Opens `db` in `mode`; a missing SQLite file (outside `Create`) names its path and source.
pub async fn open(db: &str, mode: OpenMode) -> anyhow::Result<SqlStore> {
    match SqlStore::open(db, mode).await {
        Err(StoreError::DatabaseFileMissing { path }) => {
            let source = SOURCE.get().copied().unwrap_or("--db");
            anyhow::bail!(
                "database `{path}` does not exist (path from {source})\nhint: check the path; only `vernier run` creates a database"
            )
        }
        other => Ok(other?),
    }
}

/// How clap's value source reads in the message.
pub fn describe(source: Option<clap::parser::ValueSource>) -> &'static str {
    match source {
        Some(clap::parser::ValueSource::EnvVariable) => "VERNIER_DB",
        Some(clap::parser::ValueSource::CommandLine) => "--db",
        _ => "the default, vernier.db in the current directory",
    }
}
