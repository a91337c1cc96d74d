//! How the server backends (PostgreSQL, MySQL/MariaDB) fail: a server that refuses the
//! connection, a database that does not exist, a refused login, and connections killed
//! mid-run. Every message names the URL with its password redacted and says what to do, and
//! no recorded row is lost. Skipped loudly where the servers are not configured.

#![allow(clippy::unwrap_used)] // test bodies are plain async fns run by `per_server!`

mod support;

use sqlx::{Connection, Executor};
use std::sync::Arc;
use support::fixtures::{experiment, obs, trial};
use support::{Backend, TestDb};
use vernier_store::{SqlStore, StoreError};

macro_rules! per_server {
    ($($test:ident),* $(,)?) => {
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    $crate::support::run($crate::support::Backend::Postgres, stringify!($test), super::$test).await;
                }
            )*
        }
        mod mysql {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    $crate::support::run($crate::support::Backend::MySql, stringify!($test), super::$test).await;
                }
            )*
        }
    };
}

per_server!(
    a_server_that_refuses_connections_is_named_with_a_hint,
    a_missing_database_is_named_with_how_to_create_it,
    a_refused_login_is_named_without_the_password,
    killed_connections_are_replaced_and_lose_nothing,
    a_url_that_asks_for_tls_gets_it_or_says_the_server_has_none,
    katibs_own_database_is_refused_and_left_as_it_was,
    tables_dropped_under_a_store_are_named_as_gone,
    a_user_without_privileges_on_the_tables_is_told_so,
);

/// `url` with user, password, host and port replaced.
fn with_login(url: &str, user: &str, password: Option<&str>, port: Option<u16>) -> String {
    let mut u = url::Url::parse(url).unwrap();
    u.set_username(user).unwrap();
    u.set_password(password).unwrap();
    if port.is_some() {
        u.set_port(port).unwrap();
    }
    u.to_string()
}

fn user_of(url: &str) -> String {
    url::Url::parse(url).unwrap().username().to_owned()
}

async fn a_server_that_refuses_connections_is_named_with_a_hint(db: Arc<TestDb>) {
    // Port 1 on the loopback interface: nothing listens there, so the kernel refuses at once.
    let url = with_login(&db.url, &user_of(&db.url), Some("hunter2"), Some(1));
    let err = SqlStore::connect(&url).await.unwrap_err();
    assert!(matches!(err, StoreError::Unreachable { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains(&vernier_store::redact_url(&url)), "{text}");
    assert!(text.contains(":***@"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
    assert!(
        text.contains("hint: check that the database server is running"),
        "{text}"
    );
}

/// The tables in the test's database, sorted.
async fn tables_of(db: &TestDb) -> Vec<String> {
    let mut tables: Vec<String> = match db.backend {
        Backend::Postgres => {
            let mut c = sqlx::PgConnection::connect(&db.url).await.unwrap();
            sqlx::query_scalar(
                "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema()",
            )
            .fetch_all(&mut c)
            .await
            .unwrap()
        }
        _ => {
            let mut c = sqlx::MySqlConnection::connect(&db.url).await.unwrap();
            sqlx::query_scalar(
                "SELECT CAST(table_name AS CHAR) FROM information_schema.tables \
                 WHERE table_schema = DATABASE()",
            )
            .fetch_all(&mut c)
            .await
            .unwrap()
        }
    };
    tables.sort();
    tables
}

/// A table dropped while a store has the database open (the database dropped, a user's `DROP
/// TABLE`) is told as gone, naming the url, with no hint to resume what cannot be resumed.
async fn tables_dropped_under_a_store_are_named_as_gone(db: Arc<TestDb>) {
    let store = SqlStore::connect(&db.url).await.unwrap();
    store.create_experiment(&experiment("g", 1)).await.unwrap();
    store.insert_trial(&trial("g", "g-0", 0)).await.unwrap();
    let drop = "DROP TABLE trials";
    match db.backend {
        Backend::Postgres => {
            let mut c = sqlx::PgConnection::connect(&db.url).await.unwrap();
            c.execute(drop).await.unwrap();
        }
        _ => {
            let mut c = sqlx::MySqlConnection::connect(&db.url).await.unwrap();
            c.execute(drop).await.unwrap();
        }
    }
    let err = store.get_trial("g-0").await.unwrap_err();
    assert!(matches!(err, StoreError::Vanished { .. }), "{err:?}");
    let text = err.to_string();
    let url = vernier_store::redact_url(&db.url);
    assert!(text.contains(&format!("database `{url}`")), "{text}");
    assert!(
        text.contains("no longer exist") && !text.contains("resume"),
        "{text}"
    );
}

/// Runs each statement on the test's database as its admin user.
async fn as_admin(db: &TestDb, statements: &[String]) {
    match db.backend {
        Backend::Postgres => {
            let mut c = sqlx::PgConnection::connect(&db.url).await.unwrap();
            for s in statements {
                c.execute(sqlx::AssertSqlSafe(s.clone())).await.unwrap();
            }
        }
        _ => {
            let mut c = sqlx::MySqlConnection::connect(&db.url).await.unwrap();
            for s in statements {
                c.execute(sqlx::AssertSqlSafe(s.clone())).await.unwrap();
            }
        }
    }
}

/// A second user of a shared server whose grants fall short (the tables belong to the user
/// that created them) is told it lacks a privilege and how to grant it, not that another
/// version of vernier wrote the database; reading with SELECT alone works.
async fn a_user_without_privileges_on_the_tables_is_told_so(db: Arc<TestDb>) {
    let owner = SqlStore::connect(&db.url).await.unwrap();
    owner.create_experiment(&experiment("d", 1)).await.unwrap();
    let user = format!("{}_ro", db.name());
    let (create, grant, cleanup) = match db.backend {
        Backend::Postgres => (
            format!("CREATE ROLE {user} LOGIN"),
            format!("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {user}"),
            vec![
                format!("REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {user}"),
                format!("DROP ROLE {user}"),
            ],
        ),
        _ => (
            format!("CREATE USER '{user}'@'%'"),
            format!("GRANT SELECT ON `{}`.* TO '{user}'@'%'", db.name()),
            vec![format!("DROP USER '{user}'@'%'")],
        ),
    };
    as_admin(&db, &[create]).await;
    let url = with_login(&db.url, &user, None, None);
    let unprivileged = SqlStore::connect(&url).await;
    as_admin(&db, &[grant]).await;
    let reader = SqlStore::connect(&url).await;
    let written = match &reader {
        Ok(store) => Some(store.create_experiment(&experiment("e", 1)).await),
        Err(_) => None,
    };
    let read = match &reader {
        Ok(store) => Some(store.get_experiment("d").await),
        Err(_) => None,
    };
    drop(reader);
    as_admin(&db, &cleanup).await;

    let mut denied = Vec::new();
    match (db.backend, unprivileged) {
        // MySQL refuses a user without grants on the database at login.
        (Backend::MySql, Err(e)) => assert!(matches!(e, StoreError::LoginRefused { .. }), "{e:?}"),
        (_, Err(e)) => denied.push(e),
        (_, Ok(_)) => panic!("a user without privileges opened the store"),
    }
    match written {
        Some(Err(e)) => denied.push(e),
        Some(Ok(())) => panic!("a user with SELECT alone wrote an experiment"),
        None => {}
    }
    assert!(!denied.is_empty());
    for e in denied {
        assert!(matches!(e, StoreError::Denied { .. }), "{e:?}");
        let text = e.to_string();
        assert!(
            text.contains("refused its user a privilege")
                && text.contains("hint: connect as the user that created Vernier's tables")
                && !text.contains("another version"),
            "{text}"
        );
    }
    // SELECT alone serves reading: the migrator, which asks for more, is not run on a
    // database whose schema is current.
    assert!(read.unwrap().unwrap().is_some());
}

async fn katibs_own_database_is_refused_and_left_as_it_was(db: Arc<TestDb>) {
    // Katib's DB manager's table (pkg/db/v1beta1/mysql/init.go), with one row of its data.
    let create = "CREATE TABLE observation_logs (trial_name VARCHAR(255) NOT NULL, \
                  id INT NOT NULL, time VARCHAR(32), metric_name VARCHAR(255) NOT NULL, \
                  value TEXT NOT NULL, PRIMARY KEY (id))";
    let insert = "INSERT INTO observation_logs VALUES ('t1', 1, '2026-01-01', 'loss', '0.5')";
    match db.backend {
        Backend::Postgres => {
            let mut c = sqlx::PgConnection::connect(&db.url).await.unwrap();
            c.execute(create).await.unwrap();
            c.execute(insert).await.unwrap();
        }
        _ => {
            let mut c = sqlx::MySqlConnection::connect(&db.url).await.unwrap();
            c.execute(create).await.unwrap();
            c.execute(insert).await.unwrap();
        }
    }
    let err = SqlStore::connect(&db.url).await.unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(&err, StoreError::ForeignTables { tables, .. } if tables == &["observation_logs"]),
        "{err:?}"
    );
    assert!(
        text.contains(&format!("database `{}` already holds tables", db.url))
            && text.contains("observation_logs")
            && text.contains("hint: give vernier a database of its own"),
        "{text}"
    );
    assert_eq!(
        tables_of(&db).await,
        ["observation_logs"],
        "nothing created"
    );
}

async fn a_missing_database_is_named_with_how_to_create_it(db: Arc<TestDb>) {
    let missing = format!("{}_missing", db.name());
    let url = db.url_for_database(&missing);
    let err = SqlStore::connect(&url).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::DatabaseMissing { database, .. } if *database == missing),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains(&format!("database `{missing}` does not exist")),
        "{text}"
    );
    assert!(text.contains(&url), "{text}");
    assert!(text.contains("hint: create it first"), "{text}");
}

async fn a_refused_login_is_named_without_the_password(db: Arc<TestDb>) {
    // PostgreSQL here trusts every existing role, so refuse by naming one that does not
    // exist; MariaDB checks the password.
    let url = match db.backend {
        Backend::Postgres => with_login(&db.url, "vernier_no_such_role", Some("hunter2"), None),
        _ => with_login(&db.url, &user_of(&db.url), Some("hunter2"), None),
    };
    let err = SqlStore::connect(&url).await.unwrap_err();
    assert!(matches!(err, StoreError::LoginRefused { .. }), "{err:?}");
    let text = err.to_string();
    assert!(!text.contains("hunter2"), "{text}");
    assert!(text.contains(":***@"), "{text}");
    // Not the line of the server's source that sqlx appends to PostgreSQL's message.
    assert!(!text.contains(" at line "), "{text}");
    assert!(
        text.contains("hint: check the user name and password"),
        "{text}"
    );
}

/// Ends every session on the test database from an admin connection, as a server restart or
/// a proxy timeout would.
async fn kill_sessions(db: &TestDb) -> u64 {
    use sqlx::Row;
    match db.backend {
        Backend::Postgres => {
            let mut admin = sqlx::PgConnection::connect(db.admin_url()).await.unwrap();
            let rows = sqlx::query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE datname = $1 AND pid <> pg_backend_pid()",
            )
            .bind(db.name())
            .fetch_all(&mut admin)
            .await
            .unwrap();
            rows.len() as u64
        }
        _ => {
            let mut admin = sqlx::MySqlConnection::connect(db.admin_url())
                .await
                .unwrap();
            let ids = sqlx::query(
                "SELECT id FROM information_schema.processlist WHERE db = ? AND id <> CONNECTION_ID()",
            )
            .bind(db.name())
            .fetch_all(&mut admin)
            .await
            .unwrap();
            for row in &ids {
                let id: i64 = row.try_get(0).unwrap();
                let _ = sqlx::query(sqlx::AssertSqlSafe(format!("KILL {id}")))
                    .execute(&mut admin)
                    .await;
            }
            ids.len() as u64
        }
    }
}

async fn killed_connections_are_replaced_and_lose_nothing(db: Arc<TestDb>) {
    let store = SqlStore::connect(&db.url).await.unwrap();
    store.create_experiment(&experiment("e", 1)).await.unwrap();
    store.insert_trial(&trial("e", "e-1", 1)).await.unwrap();
    store
        .report_observations("e-1", &[obs("loss", 1, "0.9"), obs("loss", 2, "0.8")])
        .await
        .unwrap();
    assert!(
        kill_sessions(&db).await >= 1,
        "the store had a session to kill"
    );
    // The pool checks a connection before handing it out, so the next calls get a new one.
    store
        .report_observations("e-1", &[obs("loss", 3, "0.7")])
        .await
        .unwrap();
    kill_sessions(&db).await;
    let logs = store.observations("e-1", None, None, None).await.unwrap();
    assert_eq!(
        logs,
        vec![
            obs("loss", 1, "0.9"),
            obs("loss", 2, "0.8"),
            obs("loss", 3, "0.7")
        ]
    );
    let (summary, _) = store.trial_summary("e-1").await.unwrap();
    assert_eq!(summary[0].summary.min, Some(0.7));
    assert_eq!(summary[0].numeric_count, 3);
}

/// A url that requires TLS (as managed databases do) is served over TLS: this machine's
/// PostgreSQL (Debian's, with its self-signed certificate) offers it and MariaDB does not,
/// which is said as such, with what to change.
async fn a_url_that_asks_for_tls_gets_it_or_says_the_server_has_none(db: Arc<TestDb>) {
    let (param, offered) = match db.backend {
        Backend::Postgres => ("sslmode=require", true),
        _ => ("ssl-mode=REQUIRED", false),
    };
    let sep = if db.url.contains('?') { '&' } else { '?' };
    let url = format!("{}{sep}{param}", db.url);
    match SqlStore::connect(&url).await {
        Ok(store) => {
            assert!(offered, "{url} connected over TLS");
            store.list_experiments().await.unwrap();
        }
        Err(err) => {
            assert!(!offered, "{url}: {err}");
            assert!(matches!(err, StoreError::TlsFailed { .. }), "{err:?}");
            assert!(
                err.to_string().contains("hint: the url asks for TLS"),
                "{err}"
            );
        }
    }
}
