//! Test harness shared by the store's integration tests: one fresh, private database per test
//! on each backend, and loud skips where a server backend is not configured.
//!
//! Server backends are read from `VERNIER_TEST_POSTGRES_URL` and `VERNIER_TEST_MYSQL_URL`
//! (an account that may create databases). Each test creates a uniquely named database next
//! to the one in the URL and drops it afterwards, even when the test fails, because
//! developers and CI share the servers. Without the variable a test prints a `SKIPPED` line
//! straight to the terminal (past the test harness's output capture) and passes; with
//! `VERNIER_TEST_REQUIRE=1` (set by CI) it fails instead.

#![allow(dead_code, clippy::unwrap_used)]

pub mod fixtures;

use sqlx::{Connection, Executor};
use std::future::Future;
use std::io::Write;
use std::sync::atomic::{AtomicU32, Ordering};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
    MySql,
}

impl Backend {
    pub fn env_var(self) -> Option<&'static str> {
        match self {
            Backend::Sqlite => None,
            Backend::Postgres => Some("VERNIER_TEST_POSTGRES_URL"),
            Backend::MySql => Some("VERNIER_TEST_MYSQL_URL"),
        }
    }

    /// The server URL from the environment, or `None` after announcing the skip.
    pub fn server_url(self, test: &str) -> Option<String> {
        let var = self.env_var()?;
        match std::env::var(var) {
            Ok(u) if !u.trim().is_empty() => Some(u),
            _ => {
                if std::env::var("VERNIER_TEST_REQUIRE").as_deref() == Ok("1") {
                    panic!("{var} is unset but VERNIER_TEST_REQUIRE=1 forbids skipping");
                }
                let _ = writeln!(
                    std::io::stderr(),
                    "SKIPPED {self:?}::{test}: {var} is unset (set it, e.g. as .ci/run does, to run this test)"
                );
                None
            }
        }
    }
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A database made for one test.
#[derive(Debug)]
pub struct TestDb {
    pub backend: Backend,
    /// What `SqlStore::connect` takes.
    pub url: String,
    /// The server URL it was created from (for admin work), or the temp dir for SQLite.
    admin_url: String,
    name: String,
    _dir: Option<tempfile::TempDir>,
}

/// `url` with its path replaced by `/database`.
pub fn with_database(url: &str, database: &str) -> String {
    let mut u = url::Url::parse(url).expect("test server url parses");
    u.set_path(&format!("/{database}"));
    u.to_string()
}

impl TestDb {
    /// A fresh database, or `None` when the backend is not configured (after a loud skip).
    pub async fn create(backend: Backend, test: &str) -> Option<TestDb> {
        let name = format!(
            "vernier_t{}_{}_{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0)
        );
        match backend {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().expect("temp dir");
                let url = format!("sqlite://{}", dir.path().join("vernier.db").display());
                Some(TestDb {
                    backend,
                    admin_url: dir.path().display().to_string(),
                    url,
                    name,
                    _dir: Some(dir),
                })
            }
            Backend::Postgres => {
                let admin = backend.server_url(test)?;
                let mut c = sqlx::PgConnection::connect(&admin)
                    .await
                    .expect("connect to VERNIER_TEST_POSTGRES_URL");
                c.execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
                    .await
                    .expect("create test database");
                let _ = c.close().await;
                Some(TestDb {
                    backend,
                    url: with_database(&admin, &name),
                    admin_url: admin,
                    name,
                    _dir: None,
                })
            }
            Backend::MySql => {
                let admin = backend.server_url(test)?;
                let mut c = sqlx::MySqlConnection::connect(&admin)
                    .await
                    .expect("connect to VERNIER_TEST_MYSQL_URL");
                c.execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE `{name}`")))
                    .await
                    .expect("create test database");
                let _ = c.close().await;
                Some(TestDb {
                    backend,
                    url: with_database(&admin, &name),
                    admin_url: admin,
                    name,
                    _dir: None,
                })
            }
        }
    }

    /// The database's name on its server.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server URL with another database name, e.g. one that does not exist.
    pub fn url_for_database(&self, database: &str) -> String {
        with_database(&self.admin_url, database)
    }

    pub fn admin_url(&self) -> &str {
        &self.admin_url
    }

    pub async fn drop_database(&self) {
        match self.backend {
            Backend::Sqlite => {}
            Backend::Postgres => {
                if let Ok(mut c) = sqlx::PgConnection::connect(&self.admin_url).await {
                    let _ = c
                        .execute(sqlx::AssertSqlSafe(format!(
                            "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
                            self.name
                        )))
                        .await;
                    let _ = c.close().await;
                }
            }
            Backend::MySql => {
                if let Ok(mut c) = sqlx::MySqlConnection::connect(&self.admin_url).await {
                    let _ = c
                        .execute(sqlx::AssertSqlSafe(format!(
                            "DROP DATABASE IF EXISTS `{}`",
                            self.name
                        )))
                        .await;
                    let _ = c.close().await;
                }
            }
        }
    }
}

/// Runs `body` against a fresh database of `backend`, then drops the database whether the
/// body passed or panicked (re-raising the panic).
pub async fn run<F, Fut>(backend: Backend, test: &str, body: F)
where
    F: FnOnce(std::sync::Arc<TestDb>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let Some(db) = TestDb::create(backend, test).await else {
        return;
    };
    let db = std::sync::Arc::new(db);
    let outcome = tokio::spawn(body(db.clone())).await;
    db.drop_database().await;
    if let Err(e) = outcome {
        std::panic::resume_unwind(e.into_panic());
    }
}

/// Declares each listed `async fn NAME(db: Arc<TestDb>)` as one test per backend, in modules
/// `sqlite`, `postgres` and `mysql`.
#[macro_export]
macro_rules! per_backend {
    ($($test:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $test() {
                    $crate::support::run($crate::support::Backend::Sqlite, stringify!($test), super::$test).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $test() {
                    $crate::support::run($crate::support::Backend::Postgres, stringify!($test), super::$test).await;
                }
            )*
        }
        mod mysql {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $test() {
                    $crate::support::run($crate::support::Backend::MySql, stringify!($test), super::$test).await;
                }
            )*
        }
    };
}
