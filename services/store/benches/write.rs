//! Store write throughput: `report_observations` rows per second with 1 and 8 concurrent
//! writers, on SQLite (a file in a temp dir) and, where `VERNIER_TEST_POSTGRES_URL` /
//! `VERNIER_TEST_MYSQL_URL` are set, on a fresh PostgreSQL / MySQL database made for the run
//! and dropped after it. Each writer reports to a trial of its own in calls of 10 rows (two
//! metrics × five steps), as a collector flushing a trial's output does; every call is one
//! transaction that also merges the trial's observation summary.
//!
//!     cargo bench -p vernier-store --bench write

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use sqlx::{Connection, Executor};
use std::time::{Duration, Instant};
use vernier_core::Observation;
use vernier_store::SqlStore;

const ROWS_PER_CALL: usize = 10;

fn batch(client: usize, call: u64) -> Vec<Observation> {
    (0..ROWS_PER_CALL)
        .map(|k| Observation {
            metric: if k % 2 == 0 { "loss" } else { "accuracy" }.to_owned(),
            timestamp_us: (call * 10 + k as u64) as i64,
            value: format!("{}.{client}{k}", call % 97),
        })
        .collect()
}

/// A database for the run: `(store url, cleanup)`.
async fn database(backend: &str) -> Option<(String, Option<(String, String)>)> {
    let var = match backend {
        "sqlite" => return None,
        "postgres" => "VERNIER_TEST_POSTGRES_URL",
        _ => "VERNIER_TEST_MYSQL_URL",
    };
    let Ok(admin) = std::env::var(var) else {
        eprintln!("SKIPPED {backend}: {var} is unset");
        return None;
    };
    let name = format!("vernier_bench_{}", std::process::id());
    let create = format!("CREATE DATABASE {name}");
    if backend == "postgres" {
        let mut c = sqlx::PgConnection::connect(&admin).await.ok()?;
        c.execute(sqlx::AssertSqlSafe(create)).await.ok()?;
    } else {
        let mut c = sqlx::MySqlConnection::connect(&admin).await.ok()?;
        c.execute(sqlx::AssertSqlSafe(create)).await.ok()?;
    }
    let mut u = url::Url::parse(&admin).ok()?;
    u.set_path(&name);
    Some((u.to_string(), Some((admin, name))))
}

async fn drop_database(backend: &str, admin: &str, name: &str) {
    if backend == "postgres" {
        if let Ok(mut c) = sqlx::PgConnection::connect(admin).await {
            let _ = c
                .execute(sqlx::AssertSqlSafe(format!(
                    "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                )))
                .await;
        }
    } else if let Ok(mut c) = sqlx::MySqlConnection::connect(admin).await {
        let _ = c
            .execute(sqlx::AssertSqlSafe(format!(
                "DROP DATABASE IF EXISTS {name}"
            )))
            .await;
    }
}

fn write_throughput(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    for backend in ["sqlite", "postgres", "mysql"] {
        let (url, cleanup) = if backend == "sqlite" {
            (
                format!("sqlite://{}", dir.path().join("bench.db").display()),
                None,
            )
        } else {
            match rt.block_on(database(backend)) {
                Some(d) => d,
                None => continue,
            }
        };
        let store = rt.block_on(SqlStore::connect(&url)).expect("open store");
        let mut group = c.benchmark_group(format!("report_observations/{backend}"));
        group.sample_size(10);
        group.measurement_time(Duration::from_secs(8));
        for clients in [1usize, 8] {
            group.throughput(Throughput::Elements((clients * ROWS_PER_CALL) as u64));
            group.bench_function(format!("{clients} writers"), |b| {
                b.iter_custom(|iters| {
                    rt.block_on(async {
                        let start = Instant::now();
                        let tasks: Vec<_> = (0..clients)
                            .map(|client| {
                                let store = store.clone();
                                tokio::spawn(async move {
                                    let trial = format!("bench-{clients}-{client}");
                                    for call in 0..iters {
                                        store
                                            .report_observations(&trial, &batch(client, call))
                                            .await
                                            .expect("write");
                                    }
                                })
                            })
                            .collect();
                        for t in tasks {
                            t.await.expect("writer");
                        }
                        start.elapsed()
                    })
                })
            });
        }
        group.finish();
        rt.block_on(store.close());
        if let Some((admin, name)) = cleanup {
            rt.block_on(drop_database(backend, &admin, &name));
        }
    }
}

criterion_group!(benches, write_throughput);
criterion_main!(benches);
