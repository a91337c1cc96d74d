//! SQLite-only store tests: in-memory databases, file-system errors, WAL mode, lock waits
//! between processes, upgrading a database written before observation summaries existed, and
//! the open modes (only `Create` makes a file; `ReadOnly` never writes).
//! What every backend must do is in `conformance.rs`.

mod support;

use std::path::Path;
use std::time::Duration;
use support::fixtures::{experiment, obs, trial};
use vernier_core::MetricSummary;
use vernier_store::{OpenMode, SqlStore, StoreError, StoreOptions};

fn url(dir: &Path) -> String {
    format!("sqlite://{}", dir.join("vernier.db").display())
}

#[tokio::test]
async fn memory_database_is_shared_by_pooled_connections_but_private_per_store() {
    let a = SqlStore::connect("sqlite::memory:").await.unwrap();
    let b = SqlStore::connect(":memory:").await.unwrap();
    a.create_experiment(&experiment("e", 1)).await.unwrap();
    // Several concurrent reads force several pooled connections; all see the row.
    let reads = (0..8).map(|_| {
        let a = a.clone();
        tokio::spawn(async move { a.get_experiment("e").await })
    });
    for r in reads {
        assert!(r.await.unwrap().unwrap().is_some());
    }
    assert!(b.get_experiment("e").await.unwrap().is_none());
}

#[tokio::test]
async fn missing_directory_is_named_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir");
    let path = missing.join("v.db");
    let err = SqlStore::connect(&format!("sqlite:{}", path.display()))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::MissingDirectory { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(
        text.contains(&format!(
            "hint: create it with `mkdir -p {}`",
            missing.display()
        )),
        "{text}"
    );
    assert!(!missing.exists(), "connect must not create directories");

    let err = SqlStore::connect(&dir.path().display().to_string())
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::IsADirectory { .. }), "{err}");
}

#[tokio::test]
async fn garbage_file_is_reported_as_not_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.db");
    std::fs::write(
        &path,
        b"this is not a sqlite file, just some text\n".repeat(200),
    )
    .unwrap();
    let err = SqlStore::connect(&path.display().to_string())
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::NotADatabase { .. }), "{err:?}");
    let text = err.to_string();
    assert_eq!(
        text,
        format!(
            "`{}` is not a SQLite database (or it is corrupt or encrypted)\n\
             hint: pass the path of a Vernier database, or a new file name to create one",
            path.display()
        )
    );
}

#[tokio::test]
async fn unsupported_urls_fail_before_touching_anything() {
    let err = SqlStore::connect("postgres://katib:pw@db:5432")
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidUrl { .. }), "{err}");
    assert!(!err.to_string().contains("pw"), "{err}");
    let err = SqlStore::connect("http://example/db").await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "unsupported database url `http://example/db`\n\
         hint: use `sqlite://PATH` (or a plain file path), `postgres://USER@HOST:PORT/DATABASE` or `mysql://USER@HOST:PORT/DATABASE`"
    );
}

#[tokio::test]
async fn file_database_runs_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqlStore::connect(&url(dir.path())).await.unwrap();
    store.ping().await.unwrap();
    assert_eq!(store.backend_name(), "sqlite");
    assert!(
        dir.path().join("vernier.db-wal").exists(),
        "the database runs in WAL mode"
    );
}

/// Another process holding the write lock longer than the lock timeout gives a `Locked` error
/// naming the database; the rows written before are kept and the write succeeds once the lock
/// is released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_lock_held_elsewhere_is_reported_and_loses_nothing() {
    use sqlx::{Connection, Executor};
    let dir = tempfile::tempdir().unwrap();
    let u = url(dir.path());
    let store = SqlStore::connect_with(
        &u,
        StoreOptions {
            lock_timeout: Duration::from_millis(300),
            ..StoreOptions::default()
        },
    )
    .await
    .unwrap();
    store.create_experiment(&experiment("e", 1)).await.unwrap();
    store.insert_trial(&trial("e", "e-1", 1)).await.unwrap();
    store
        .report_observations("e-1", &[obs("loss", 1, "0.5")])
        .await
        .unwrap();

    let mut other = sqlx::SqliteConnection::connect(&u).await.unwrap();
    other.execute("BEGIN IMMEDIATE").await.unwrap();
    let err = store
        .report_observations("e-1", &[obs("loss", 2, "0.4"), obs("loss", 3, "0.3")])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Locked { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("record observations of trial `e-1`"),
        "{text}"
    );
    assert!(text.contains(&u), "{text}");
    assert!(
        text.contains("stayed locked by another session for more than 300ms; nothing of this call was recorded"),
        "{text}"
    );
    assert!(text.contains("\nhint: "), "{text}");
    other.execute("ROLLBACK").await.unwrap();
    let _ = other.close().await;

    store
        .report_observations("e-1", &[obs("loss", 2, "0.4"), obs("loss", 3, "0.3")])
        .await
        .unwrap();
    let logs = store.observations("e-1", None, None, None).await.unwrap();
    assert_eq!(logs.len(), 3);
    let (summary, complete) = store.trial_summary("e-1").await.unwrap();
    assert!(complete);
    assert_eq!(
        summary[0].summary,
        MetricSummary::reduce("loss", &logs).unwrap()
    );
}

/// A database whose logs predate observation summaries (simulated: raw rows written behind the
/// store's back and the trial listed as pending, as migration 0002 does) reports those trials
/// as unreduced, so readers fall back to the raw logs.
#[tokio::test]
async fn trials_logged_before_summaries_are_listed_as_unreduced() {
    use sqlx::{Connection, Executor};
    let dir = tempfile::tempdir().unwrap();
    let u = url(dir.path());
    let store = SqlStore::connect(&u).await.unwrap();
    store.create_experiment(&experiment("e", 1)).await.unwrap();
    store.insert_trial(&trial("e", "e-old", 1)).await.unwrap();
    store.insert_trial(&trial("e", "e-new", 2)).await.unwrap();
    let mut raw = sqlx::SqliteConnection::connect(&u).await.unwrap();
    raw.execute(
        "INSERT INTO observation_logs (trial_name, time, metric_name, value) \
         VALUES ('e-old', 1, 'loss', '0.7'); \
         INSERT INTO observation_summaries_pending (trial_name) VALUES ('e-old');",
    )
    .await
    .unwrap();
    let _ = raw.close().await;
    store
        .report_observations("e-new", &[obs("loss", 1, "0.2")])
        .await
        .unwrap();
    let s = store.experiment_summaries("e").await.unwrap();
    assert_eq!(s.unreduced, vec!["e-old".to_owned()]);
    assert_eq!(s.metrics.len(), 1);
    assert_eq!(s.metrics[0].trial, "e-new");
    assert!(!store.trial_summary("e-old").await.unwrap().1);
    // Deleting the logs clears the marker too.
    store.delete_observations("e-old").await.unwrap();
    assert!(
        store
            .experiment_summaries("e")
            .await
            .unwrap()
            .unreduced
            .is_empty()
    );
}

#[tokio::test]
async fn only_create_mode_makes_a_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    for mode in [OpenMode::Existing, OpenMode::ReadOnly] {
        let path = dir.path().join("typo.db");
        let err = SqlStore::open(&path.display().to_string(), mode)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, StoreError::DatabaseFileMissing { path: p } if p == &path.display().to_string()),
            "{mode:?}: {err}"
        );
        assert!(err.to_string().contains("hint:"), "{err}");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "{mode:?} created {left:?}");
    }
    SqlStore::open(&url(dir.path()), OpenMode::Create)
        .await
        .unwrap();
    assert!(dir.path().join("vernier.db").exists());
}

#[tokio::test]
async fn read_only_mode_reads_and_never_writes() {
    let dir = tempfile::tempdir().unwrap();
    let writer = SqlStore::connect(&url(dir.path())).await.unwrap();
    writer.create_experiment(&experiment("e", 1)).await.unwrap();
    writer.close().await;

    let reader = SqlStore::open(&url(dir.path()), OpenMode::ReadOnly)
        .await
        .unwrap();
    assert_eq!(reader.list_experiments().await.unwrap().len(), 1);
    // SQLite enforces the read-only open for every user, root included.
    let err = reader
        .create_experiment(&experiment("f", 2))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::ReadOnly { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("is read-only") && text.contains("vernier.db"),
        "{text}"
    );
    assert!(text.contains("\nhint: "), "{text}");
}

/// A writer that closes while a reader still has the file open (a dashboard outliving the
/// run) folds the `-wal` file in all the same: a copy of `vernier.db` alone holds everything.
#[tokio::test]
async fn a_writer_closing_beside_a_reader_leaves_the_database_file_whole() {
    let dir = tempfile::tempdir().unwrap();
    let writer = SqlStore::connect(&url(dir.path())).await.unwrap();
    let reader = SqlStore::open(&url(dir.path()), OpenMode::ReadOnly)
        .await
        .unwrap();
    writer.create_experiment(&experiment("e", 1)).await.unwrap();
    assert_eq!(reader.list_experiments().await.unwrap().len(), 1);
    writer.close().await;
    let copy = dir.path().join("copy");
    std::fs::create_dir(&copy).unwrap();
    std::fs::copy(dir.path().join("vernier.db"), copy.join("vernier.db")).unwrap();
    let copied = SqlStore::open(&url(&copy), OpenMode::ReadOnly)
        .await
        .unwrap();
    assert_eq!(copied.list_experiments().await.unwrap().len(), 1);
    reader.close().await;
}

#[tokio::test]
async fn read_only_mode_opens_a_database_nobody_may_write() {
    use std::os::unix::fs::PermissionsExt;
    if nix_is_root() {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED read_only_mode_opens_a_database_nobody_may_write: running as root, which file permissions do not stop (read_only_mode_reads_and_never_writes checks the open mode)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let writer = SqlStore::connect(&url(dir.path())).await.unwrap();
    writer.create_experiment(&experiment("e", 1)).await.unwrap();
    writer.close().await;
    let db = dir.path().join("vernier.db");
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
    let read = SqlStore::open(&url(dir.path()), OpenMode::ReadOnly).await;
    let listed = match &read {
        Ok(store) => store.list_experiments().await.map(|l| l.len()),
        Err(_) => Ok(0),
    };
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(read.is_ok(), "{:?}", read.err().map(|e| e.to_string()));
    assert_eq!(listed.unwrap(), 1);
}

fn nix_is_root() -> bool {
    // The owner of a file this process creates is its effective user.
    use std::os::unix::fs::MetadataExt;
    let f = tempfile::NamedTempFile::new().expect("temp file");
    f.as_file().metadata().expect("temp file metadata").uid() == 0
}

/// A damaged file says it is damaged, naming it, instead of passing SQLite's words along.
#[tokio::test]
async fn a_damaged_database_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let u = url(dir.path());
    let store = SqlStore::connect(&u).await.unwrap();
    store.create_experiment(&experiment("e", 1)).await.unwrap();
    store.close().await;

    // Overwrite every page after the first (the header) with junk.
    let path = dir.path().join("vernier.db");
    let mut bytes = std::fs::read(&path).unwrap();
    for b in bytes.iter_mut().skip(4096) {
        *b = 0x5a;
    }
    std::fs::write(&path, &bytes).unwrap();
    let damaged = SqlStore::open(&u, OpenMode::ReadOnly).await;
    let err = match damaged {
        Ok(store) => store.list_experiments().await.unwrap_err(),
        Err(e) => e,
    };
    let text = err.to_string();
    assert!(text.contains("is damaged"), "{text}");
    assert!(text.contains("\nhint: restore it from a copy"), "{text}");
    assert!(text.contains("vernier.db"), "{text}");
}

/// A file cut short (a copy that stopped half way) opened to run or change experiments is
/// named as damaged with what to do, as a read finds it.
#[tokio::test]
async fn a_truncated_database_opened_for_writing_is_named_as_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let u = url(dir.path());
    let store = SqlStore::connect(&u).await.unwrap();
    for i in 0..40 {
        store
            .create_experiment(&experiment(&format!("e{i}"), 1))
            .await
            .unwrap();
    }
    store.close().await;
    let path = dir.path().join("vernier.db");
    let bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() > 3 * 4096, "{} bytes", bytes.len());
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let err = match SqlStore::open(&u, OpenMode::Existing).await {
        Ok(store) => store.list_experiments().await.unwrap_err(),
        Err(e) => e,
    };
    assert!(matches!(err, StoreError::DamagedFile { .. }), "{err:?}");
    assert!(
        err.to_string().contains("\nhint: restore it from a copy"),
        "{err}"
    );
}

/// Once the file is deleted under an open store, a ping (what health checks answer from) and
/// a report of observations fail naming it, instead of writing into a file nobody can open.
#[tokio::test]
async fn a_deleted_file_fails_pings_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqlStore::connect(&url(dir.path())).await.unwrap();
    store.create_experiment(&experiment("e", 1)).await.unwrap();
    store.insert_trial(&trial("e", "e-1", 1)).await.unwrap();
    store.ping().await.unwrap();
    std::fs::remove_file(dir.path().join("vernier.db")).unwrap();
    for err in [
        store.ping().await.unwrap_err(),
        store
            .report_observations("e-1", &[obs("loss", 1, "0.5")])
            .await
            .unwrap_err(),
    ] {
        assert!(
            matches!(err, StoreError::DatabaseFileGone { .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("vernier.db"), "{err}");
    }
}

/// A server that accepts connections and never answers (paused, overloaded, cut off behind a
/// proxy) fails the opening after `connect_within`, naming the url without its password,
/// instead of holding `vernier list` or `run` forever. No server needed: a bare listener is
/// such a server.
#[tokio::test]
async fn a_server_that_accepts_but_never_answers_is_given_up_on_opening() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            open.push(socket);
        }
    });
    for scheme in ["postgres", "mysql"] {
        let url = format!("{scheme}://u:hunter2@127.0.0.1:{port}/db");
        let options = StoreOptions {
            connect_within: Duration::from_millis(300),
            ..StoreOptions::default()
        };
        let opening = SqlStore::connect_with(&url, options);
        let err = tokio::time::timeout(Duration::from_secs(10), opening)
            .await
            .unwrap_or_else(|_| panic!("{scheme}: still opening"))
            .unwrap_err();
        assert!(matches!(err, StoreError::NoAnswer { .. }), "{err:?}");
        let text = err.to_string();
        assert!(
            text.contains(&format!("{scheme}://u:***@127.0.0.1:{port}/db")),
            "{text}"
        );
        assert!(!text.contains("hunter2"), "{text}");
        assert!(
            text.contains("did not answer within 0.3 s while being opened"),
            "{text}"
        );
        assert!(
            text.contains("hint: check that the database server is running"),
            "{text}"
        );
    }
    held.abort();
}

/// How many experiments a read-only open of the database in `dir` lists.
async fn read_only_count(dir: &Path) -> usize {
    let reader = SqlStore::open(&url(dir), OpenMode::ReadOnly)
        .await
        .expect("read-only open");
    let n = reader.list_experiments().await.expect("list").len();
    reader.close().await;
    n
}

/// Runs `sql` on the SQLite file at `path` with a plain connection (no vernier schema work).
async fn raw_sql(path: &Path, sql: &str) {
    use sqlx::Connection;
    let url = format!("sqlite://{}?mode=rwc", path.display());
    let mut conn = sqlx::SqliteConnection::connect(&url).await.expect("open");
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(&mut conn)
        .await
        .expect("sql runs");
    conn.close().await.expect("close");
}

/// A reader started together with `vernier run` on a new file (a dashboard, `report --watch`)
/// finds the file empty or half set up: it waits for the schema instead of refusing the file.
#[tokio::test]
async fn a_reader_waits_for_a_file_another_vernier_is_setting_up() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db").display().to_string();
    std::fs::write(&path, b"").unwrap();
    let writer = {
        let path = path.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            SqlStore::open(&path, OpenMode::Existing).await.unwrap()
        })
    };
    let reader = SqlStore::open(&path, OpenMode::ReadOnly).await;
    assert!(reader.is_ok(), "{:?}", reader.err());
    reader.unwrap().list_experiments().await.unwrap();
    writer.await.unwrap();
}

/// A command that only reads refuses a file without vernier's schema, an empty one or
/// another program's, and leaves it byte for byte as it was; one that writes refuses a file
/// whose tables would collide with the schema before writing anything into it.
#[tokio::test]
async fn a_file_without_vernier_schema_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let foreign = dir.path().join("optuna.db");
    raw_sql(
        &foreign,
        "CREATE TABLE studies (id INTEGER); CREATE TABLE trials (id INTEGER);",
    )
    .await;
    for (path, tables) in [(&empty, vec![]), (&foreign, vec!["studies", "trials"])] {
        let before = std::fs::read(path).unwrap();
        let shown = path.display().to_string();
        let err = SqlStore::open(&shown, OpenMode::ReadOnly)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, StoreError::NotVernier { path: p, tables: t } if p == &shown && t == &tables),
            "{err:?}"
        );
        assert!(
            err.to_string()
                .contains("nothing was changed in it\nhint: "),
            "{err}"
        );
        assert_eq!(std::fs::read(path).unwrap(), before, "{shown} was written");
    }
    let before = std::fs::read(&foreign).unwrap();
    let err = SqlStore::open(&foreign.display().to_string(), OpenMode::Existing)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::NotVernier { tables, .. } if tables == &["trials"]),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("it holds other tables (trials) and no vernier schema"),
        "{text}"
    );
    assert_eq!(
        std::fs::read(&foreign).unwrap(),
        before,
        "the refused file was written"
    );
    // Another program whose migrations sqlx recorded, and a view of one of vernier's names.
    let sqlx_app = dir.path().join("app.db");
    raw_sql(
        &sqlx_app,
        "CREATE TABLE _sqlx_migrations (version BIGINT PRIMARY KEY, description TEXT, \
         installed_on TIMESTAMP, success BOOLEAN, checksum BLOB, execution_time BIGINT); \
         INSERT INTO _sqlx_migrations VALUES (20230101000000, 'init', 0, 1, x'00', 1); \
         CREATE TABLE t (a); CREATE VIEW experiments AS SELECT * FROM t;",
    )
    .await;
    let before = std::fs::read(&sqlx_app).unwrap();
    for mode in [OpenMode::ReadOnly, OpenMode::Existing] {
        let err = SqlStore::open(&sqlx_app.display().to_string(), mode)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, StoreError::NotVernier { .. }),
            "{mode:?}: {err:?}"
        );
        assert_eq!(std::fs::read(&sqlx_app).unwrap(), before, "{mode:?} wrote");
    }
    // An empty file given to a command that writes becomes a vernier database.
    let store = SqlStore::open(&empty.display().to_string(), OpenMode::Existing).await;
    store.unwrap().list_experiments().await.unwrap();
}

/// A file written before the last migration is upgraded by a reader (which then reads it);
/// one with a migration this build does not know is read with a warning and refused, named
/// as a newer vernier's, by a command that writes.
#[tokio::test]
async fn older_schemas_are_upgraded_and_newer_ones_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vernier.db");
    let writer = SqlStore::connect(&url(dir.path())).await.unwrap();
    writer.create_experiment(&experiment("e", 1)).await.unwrap();
    writer.close().await;
    let last = "(SELECT MAX(version) FROM _sqlx_migrations)";
    raw_sql(
        &path,
        &format!(
            "DELETE FROM _sqlx_migrations WHERE version = {last}; \
             ALTER TABLE trials DROP COLUMN stop_step;"
        ),
    )
    .await;
    assert_eq!(read_only_count(dir.path()).await, 1);

    raw_sql(
        &path,
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (999, 'from the future', 1, x'00', 1)",
    )
    .await;
    assert_eq!(read_only_count(dir.path()).await, 1);
    let err = SqlStore::open(&url(dir.path()), OpenMode::Existing)
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::NewerSchema { version: 999, .. }),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("was written by a newer vernier: its schema has migration 999"),
        "{text}"
    );
    assert!(text.contains("\nhint: use that vernier"), "{text}");
}

/// A trial row this vernier cannot read (edited by hand, or written by a newer vernier) is
/// named with the column at fault, and the other rows stay readable one by one.
#[tokio::test]
async fn an_unreadable_trial_row_is_named_with_its_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vernier.db");
    let store = SqlStore::connect(&url(dir.path())).await.unwrap();
    store.create_experiment(&experiment("e", 1)).await.unwrap();
    store.insert_trial(&trial("e", "e-1", 1)).await.unwrap();
    store.insert_trial(&trial("e", "e-2", 2)).await.unwrap();
    store.close().await;
    raw_sql(
        &path,
        "UPDATE trials SET state = 'Paused' WHERE name = 'e-1'",
    )
    .await;
    raw_sql(
        &path,
        "UPDATE trials SET labels_json = '{' WHERE name = 'e-2'",
    )
    .await;
    let store = SqlStore::connect(&url(dir.path())).await.unwrap();
    let text = store.list_trials("e").await.unwrap_err().to_string();
    assert!(
        text.starts_with("stored trial `e-1` cannot be read: unknown state `Paused`"),
        "{text}"
    );
    assert!(text.contains("\nhint: "), "{text}");
    let text = store.get_trial("e-2").await.unwrap_err().to_string();
    assert!(
        text.starts_with("stored trial `e-2` cannot be read: labels:"),
        "{text}"
    );
}
