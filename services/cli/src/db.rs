//! Opening the database for a command: which commands may create one (only `run` and the
//! operator), the error for a missing file naming where its path came from, and closing every
//! store a command opened before the process exits.

use std::sync::{Mutex, OnceLock};
use std::time::Duration;
use vernier_store::{OpenMode, SqlStore, StoreError, StoreOptions};

/// Where `--db`'s value came from, set once by `main` from clap's matches. A process-wide
/// value because every command reads it and none may change it.
static SOURCE: OnceLock<&'static str> = OnceLock::new();

/// Records where the database path came from: `--db`, `VERNIER_DB` or the default.
pub fn set_source(source: &'static str) {
    let _ = SOURCE.set(source);
}

/// How long a write waits for a lock another session holds (`--lock-timeout`), set once by
/// `main`; the store's default when unset.
static LOCK_TIMEOUT: OnceLock<Duration> = OnceLock::new();

/// Records `--lock-timeout`.
pub fn set_lock_timeout(wait: Duration) {
    let _ = LOCK_TIMEOUT.set(wait);
}

/// The store options of every command: `mode`, and the lock timeout given.
fn options(mode: OpenMode) -> StoreOptions {
    let defaults = StoreOptions::default();
    StoreOptions {
        mode,
        lock_timeout: LOCK_TIMEOUT.get().copied().unwrap_or(defaults.lock_timeout),
        ..defaults
    }
}

/// Every store opened by this process, closed by [`close_all`] at exit.
static OPENED: Mutex<Vec<SqlStore>> = Mutex::new(Vec::new());

/// How long closing waits for connections still in use (a task the command left running).
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// Opens `db` in `mode`; a missing SQLite file (outside `Create`) names its path and source.
pub async fn open(db: &str, mode: OpenMode) -> anyhow::Result<SqlStore> {
    refuse_empty(db)?;
    match SqlStore::connect_with(db, options(mode)).await {
        Err(StoreError::DatabaseFileMissing { path }) => {
            let source = SOURCE.get().copied().unwrap_or("--db");
            anyhow::bail!(
                "database `{path}` does not exist (path from {source})\nhint: check the path; only `vernier run` (and `vernier serve --create-db`) creates a database"
            )
        }
        Ok(store) => {
            remember(&store);
            Ok(store)
        }
        Err(e) => Err(e.into()),
    }
}

/// ` --db URL` (password redacted) for a command a message suggests, empty for the default
/// database, so the suggested command reaches the same database; quoted for the shell where
/// it needs to be (`"my dir/x.db"`), so the command can be pasted as it is.
pub fn db_flag(db: &str) -> String {
    if db == "vernier.db" {
        return String::new();
    }
    flag(&vernier_store::redact_url(db))
}

/// ` --db SHOWN`, quoted for the shell where it needs to be.
fn flag(shown: &str) -> String {
    match shlex::try_quote(shown) {
        Ok(quoted) => format!(" --db {quoted}"),
        // Only a NUL byte cannot be quoted, and no path holds one.
        Err(_) => format!(" --db {shown}"),
    }
}

/// [`db_flag`] for text recorded in the database and pasted later from any directory: a
/// SQLite file's path made absolute, named even when it is the default.
pub fn db_flag_anywhere(db: &str) -> String {
    let (scheme, path) = match db.strip_prefix("sqlite://") {
        Some(path) => ("sqlite://", path),
        None if db.contains("://") || db.contains(":memory:") => return db_flag(db),
        None => ("", db),
    };
    match std::path::absolute(path) {
        Ok(abs) => flag(&format!("{scheme}{}", abs.display())),
        Err(_) => db_flag(db),
    }
}

/// Opens or creates `db` ([`SqlStore::connect`]), to be closed by [`close_all`].
pub async fn connect(db: &str) -> anyhow::Result<SqlStore> {
    refuse_empty(db)?;
    let store = SqlStore::connect_with(db, options(OpenMode::Create)).await?;
    remember(&store);
    Ok(store)
}

/// An empty url (`VERNIER_DB=` left set to nothing) names where it came from, which the
/// store's "unsupported database url ``" cannot.
fn refuse_empty(db: &str) -> anyhow::Result<()> {
    if !db.trim().is_empty() {
        return Ok(());
    }
    let source = SOURCE.get().copied().unwrap_or("--db");
    anyhow::bail!(
        "the database url from {source} is empty\nhint: give a file path or a database url, or unset VERNIER_DB to use vernier.db in the current directory"
    )
}

fn remember(store: &SqlStore) {
    OPENED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(store.clone());
}

/// Closes every store opened by [`open`] or [`connect`]. A SQLite file in WAL mode keeps what was written in
/// `NAME-wal` until its last connection closes cleanly and folds it in; without this a copy of
/// `vernier.db` alone, made after a command ended, would hold none of it.
pub async fn close_all() {
    let stores = std::mem::take(&mut *OPENED.lock().unwrap_or_else(|e| e.into_inner()));
    for store in stores {
        if tokio::time::timeout(CLOSE_WAIT, store.close())
            .await
            .is_err()
        {
            tracing::warn!("a database connection was still in use at exit");
        }
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

/// Why a running experiment in `store` has no live driver, if so: its lease lapsed, or its
/// holder's process no longer runs on this host (known at once, without the lease's lapse).
pub async fn unattended(
    store: &SqlStore,
    row: &vernier_store::ExperimentRow,
) -> anyhow::Result<Option<vernier_store::Unattended>> {
    Ok(vernier_report::unattended(store, row, vernier_runner::lease::holder_gone_here).await?)
}

#[cfg(test)]
mod db_flag_tests {
    use super::{db_flag, db_flag_anywhere};

    #[test]
    fn suggested_commands_name_a_database_other_than_the_default() {
        assert_eq!(db_flag("vernier.db"), "");
        assert_eq!(db_flag("runs.db"), " --db runs.db");
        // The redacted password's `*` would be a glob to the shell: quoted.
        assert_eq!(
            db_flag("postgres://me:secret@db:5432/hp"),
            " --db 'postgres://me:***@db:5432/hp'"
        );
    }

    /// A suggested command can be pasted as it is: a path the shell would split is quoted.
    #[test]
    fn the_db_flag_is_quoted_for_the_shell_where_needed() {
        assert_eq!(db_flag("runs/x.db"), " --db runs/x.db");
        let spaced = db_flag("my dir/x.db");
        assert!(spaced.starts_with(" --db "), "{spaced}");
        let words = shlex::split(spaced.trim()).expect("splits");
        assert_eq!(words, ["--db", "my dir/x.db"]);
    }

    #[test]
    fn a_recorded_db_flag_reaches_the_file_from_anywhere() {
        let cwd = std::env::current_dir().unwrap().display().to_string();
        let cases = [
            ("vernier.db", format!(" --db {cwd}/vernier.db")),
            ("runs/a.db", format!(" --db {cwd}/runs/a.db")),
            ("sqlite://a.db", format!(" --db sqlite://{cwd}/a.db")),
            ("/abs/a.db", " --db /abs/a.db".to_string()),
            ("postgres://u@h/d", " --db postgres://u@h/d".to_string()),
        ];
        for (db, flag) in cases {
            assert_eq!(db_flag_anywhere(db), flag, "{db}");
        }
    }
}
