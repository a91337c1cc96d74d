//! What the binary's PostgreSQL tests share: the server in `VERNIER_TEST_POSTGRES_URL` (a loud
//! skip without it, a failure under `VERNIER_TEST_REQUIRE=1`) and a database of their own on it.

use sqlx::{Connection, Executor};
use std::io::Write;

/// A fresh database on the test server: its URL, and the connection that drops it again.
pub struct PgDatabase {
    pub url: url::Url,
    name: String,
    admin: sqlx::PgConnection,
}

impl PgDatabase {
    /// A database named `<prefix>_<pid>`, or `None` (with a SKIPPED line) when no server is set.
    pub async fn create(test: &str, prefix: &str) -> Option<PgDatabase> {
        let Ok(admin_url) = std::env::var("VERNIER_TEST_POSTGRES_URL") else {
            if std::env::var("VERNIER_TEST_REQUIRE").as_deref() == Ok("1") {
                panic!(
                    "VERNIER_TEST_POSTGRES_URL is unset but VERNIER_TEST_REQUIRE=1 forbids skipping"
                );
            }
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: VERNIER_TEST_POSTGRES_URL is unset"
            );
            return None;
        };
        let mut db = PgDatabase {
            url: url::Url::parse(&admin_url).expect("VERNIER_TEST_POSTGRES_URL is a URL"),
            name: format!("{prefix}_{}", std::process::id()),
            admin: sqlx::PgConnection::connect(&admin_url)
                .await
                .expect("connect to VERNIER_TEST_POSTGRES_URL"),
        };
        db.drop_it().await;
        let create = format!("CREATE DATABASE \"{}\"", db.name);
        db.admin
            .execute(sqlx::AssertSqlSafe(create))
            .await
            .expect("create the test database");
        let name = db.name.clone();
        db.url.set_path(&name);
        Some(db)
    }

    /// Drops the database, whoever is still connected to it.
    pub async fn drop_it(&mut self) {
        let drop = format!("DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)", self.name);
        self.admin
            .execute(sqlx::AssertSqlSafe(drop))
            .await
            .expect("drop the test database");
    }
}
