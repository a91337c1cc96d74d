//! Integration tests of `SqlStore` against real SQLite files: round trips, cascades, filters,
//! error messages, and concurrent writers in one and in two stores (as two processes would be).

use std::collections::BTreeMap;
use std::path::Path;
use vernier_core::{Observation, TrialState};
use vernier_store::{
    ExperimentRow, ExperimentStatusRow, SqlStore, StoreError, TrialRow, TrialUpdate,
};

fn url(dir: &Path) -> String {
    format!("sqlite://{}", dir.join("vernier.db").display())
}

fn status(phase: &str) -> ExperimentStatusRow {
    ExperimentStatusRow {
        phase: phase.to_owned(),
        reason: format!("Experiment{phase}"),
        message: format!("Experiment is {}", phase.to_lowercase()),
        started_us: Some(1_000),
        completed_us: None,
        algorithm_state: None,
        conditions_json: "[]".to_owned(),
    }
}

fn experiment(name: &str, created_us: i64) -> ExperimentRow {
    ExperimentRow {
        name: name.to_owned(),
        spec_json: format!(r#"{{"metadata":{{"name":"{name}"}},"spec":{{"maxTrialCount":12}}}}"#),
        seed: 42,
        created_us,
        work_dir: "/experiments".to_owned(),
        log_dir: format!("/experiments/logs/{name}"),
        status: status("Created"),
    }
}

fn trial(experiment: &str, name: &str, seq: i64) -> TrialRow {
    TrialRow {
        experiment: experiment.to_owned(),
        name: name.to_owned(),
        seq,
        assignment: vec![
            ("lr".to_owned(), "0.01".to_owned()),
            ("optimizer".to_owned(), "adam".to_owned()),
        ],
        labels: BTreeMap::from([("bracket".to_owned(), "2".to_owned())]),
        state: TrialState::Created,
        reason: "TrialCreated".to_owned(),
        message: "Trial is created".to_owned(),
        created_us: 10 + seq,
        started_us: None,
        completed_us: None,
        attempt: 0,
    }
}

fn obs(metric: &str, timestamp_us: i64, value: &str) -> Observation {
    Observation {
        metric: metric.to_owned(),
        timestamp_us,
        value: value.to_owned(),
    }
}

#[tokio::test]
async fn experiments_round_trip_and_list_in_creation_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqlStore::connect(&url(dir.path())).await.unwrap();
    store.ping().await.unwrap();
    assert!(
        dir.path().join("vernier.db-wal").exists(),
        "the database runs in WAL mode"
    );

    let b = experiment("b-second", 200);
    let a = experiment("a-first", 100);
    store.create_experiment(&b).await.unwrap();
    store.create_experiment(&a).await.unwrap();
    assert_eq!(
        store.get_experiment("a-first").await.unwrap(),
        Some(a.clone())
    );
    assert_eq!(store.get_experiment("missing").await.unwrap(), None);
    assert_eq!(store.list_experiments().await.unwrap(), vec![a.clone(), b]);

    let mut done = status("Succeeded");
    done.completed_us = Some(9_000);
    done.algorithm_state = Some(r#"{"rung":3}"#.to_owned());
    done.conditions_json = r#"[{"type":"Succeeded","status":"True"}]"#.to_owned();
    store
        .update_experiment_status("a-first", &done)
        .await
        .unwrap();
    let got = store.get_experiment("a-first").await.unwrap().unwrap();
    assert_eq!(got.status, done);
    assert_eq!(got.spec_json, a.spec_json);

    let err = store
        .update_experiment_status("nope", &done)
        .await
        .unwrap_err();
    assert!(matches!(&err, StoreError::NotFound { kind: "experiment", name } if name == "nope"));
    assert_eq!(err.to_string(), "experiment `nope` not found");

    // Reopening the same file sees the data (and skips the already-applied schema).
    store.close().await;
    let reopened = SqlStore::connect(&url(dir.path())).await.unwrap();
    assert_eq!(reopened.list_experiments().await.unwrap().len(), 2);
}

#[tokio::test]
async fn trials_round_trip_update_and_order_by_seq() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqlStore::connect(&url(dir.path())).await.unwrap();
    store
        .create_experiment(&experiment("exp", 1))
        .await
        .unwrap();

    let t2 = trial("exp", "exp-zzz", 2);
    let t1 = trial("exp", "exp-aaa", 1);
    let mut t3 = trial("exp", "exp-mmm", 3);
    t3.assignment.clear();
    t3.labels.clear();
    for t in [&t2, &t1, &t3] {
        store.insert_trial(t).await.unwrap();
    }
    assert_eq!(store.get_trial("exp-aaa").await.unwrap(), Some(t1.clone()));
    assert_eq!(store.get_trial("none").await.unwrap(), None);
    assert_eq!(
        store.list_trials("exp").await.unwrap(),
        vec![t1.clone(), t2.clone(), t3.clone()]
    );
    assert!(store.list_trials("other").await.unwrap().is_empty());

    let running = TrialUpdate {
        state: TrialState::Running,
        reason: "TrialRunning".to_owned(),
        message: "Trial is running".to_owned(),
        started_us: Some(500),
        completed_us: None,
        attempt: None,
    };
    store.update_trial("exp-aaa", &running).await.unwrap();
    let succeeded = TrialUpdate {
        state: TrialState::Succeeded,
        reason: "TrialSucceeded".to_owned(),
        message: "Trial has succeeded".to_owned(),
        started_us: None,
        completed_us: Some(900),
        attempt: Some(2),
    };
    store.update_trial("exp-aaa", &succeeded).await.unwrap();
    let got = store.get_trial("exp-aaa").await.unwrap().unwrap();
    assert_eq!(
        got,
        TrialRow {
            state: TrialState::Succeeded,
            reason: "TrialSucceeded".to_owned(),
            message: "Trial has succeeded".to_owned(),
            started_us: Some(500), // kept: the second update said None
            completed_us: Some(900),
            attempt: 2,
            ..t1.clone()
        }
    );
}

#[tokio::test]
async fn trial_conflicts_and_unknown_names_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqlStore::connect(&url(dir.path())).await.unwrap();
    store
        .create_experiment(&experiment("exp", 1))
        .await
        .unwrap();
    store.insert_trial(&trial("exp", "t1", 1)).await.unwrap();

    let err = store
        .insert_trial(&trial("exp", "t1", 2))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::TrialExists(n) if n == "t1"),
        "{err}"
    );
    assert!(
        err.to_string()
            .starts_with("trial `t1` already exists\nhint: ")
    );

    let err = store
        .insert_trial(&trial("exp", "t2", 1))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::TrialSeqTaken { experiment, seq: 1 } if experiment == "exp"),
        "{err}"
    );

    let err = store
        .insert_trial(&trial("no-such-exp", "t3", 1))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::NotFound { kind: "experiment", name } if name == "no-such-exp"),
        "{err}"
    );

    let update = TrialUpdate {
        state: TrialState::Failed,
        reason: "TrialFailed".to_owned(),
        message: String::new(),
        started_us: None,
        completed_us: None,
        attempt: None,
    };
    let err = store
        .update_trial("ghost-trial", &update)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::NotFound { kind: "trial", name } if name == "ghost-trial"),
        "{err}"
    );
    assert_eq!(err.to_string(), "trial `ghost-trial` not found");
}

#[tokio::test]
async fn the_spec_can_be_replaced_and_nothing_else_changes() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqlStore::connect(&url(dir.path())).await.unwrap();
    let a = experiment("a-first", 100);
    store.create_experiment(&a).await.unwrap();
    let spec = r#"{"metadata":{"name":"a-first"},"spec":{"enqueuedTrials":[]}}"#;
    store.update_experiment_spec("a-first", spec).await.unwrap();
    let got = store.get_experiment("a-first").await.unwrap().unwrap();
    assert_eq!(got.spec_json, spec);
    assert_eq!(got.status, a.status);
    assert_eq!((got.seed, got.created_us), (a.seed, a.created_us));
    let err = store
        .update_experiment_spec("nope", spec)
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "experiment `nope` not found");
}

#[tokio::test]
async fn duplicate_experiment_says_how_to_proceed() {
    let store = SqlStore::connect(":memory:").await.unwrap();
    store
        .create_experiment(&experiment("mnist", 1))
        .await
        .unwrap();
    let err = store
        .create_experiment(&experiment("mnist", 2))
        .await
        .unwrap_err();
    assert!(matches!(&err, StoreError::ExperimentExists(n) if n == "mnist"));
    assert_eq!(
        err.to_string(),
        "experiment `mnist` already exists\n\
         hint: use `vernier resume mnist`, `vernier delete mnist`, or rename the experiment"
    );
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
async fn delete_experiment_cascades_to_trials_and_observation_logs() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqlStore::connect(&url(dir.path())).await.unwrap();
    for e in ["gone", "kept"] {
        store.create_experiment(&experiment(e, 1)).await.unwrap();
        for i in 0..3 {
            let name = format!("{e}-{i}");
            store.insert_trial(&trial(e, &name, i)).await.unwrap();
            store
                .report_observations(&name, &[obs("loss", 1, "0.5"), obs("acc", 1, "0.9")])
                .await
                .unwrap();
        }
    }
    assert!(store.delete_experiment("gone").await.unwrap());
    assert!(!store.delete_experiment("gone").await.unwrap());
    assert_eq!(store.get_experiment("gone").await.unwrap(), None);
    assert!(store.list_trials("gone").await.unwrap().is_empty());
    assert_eq!(store.get_trial("gone-1").await.unwrap(), None);
    assert!(
        store
            .observations("gone-1", None, None, None)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.list_trials("kept").await.unwrap().len(), 3);
    assert_eq!(
        store
            .observations_for_experiment("kept")
            .await
            .unwrap()
            .len(),
        6
    );
}

#[tokio::test]
async fn observation_logs_filter_by_metric_and_inclusive_time_range() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqlStore::connect(&url(dir.path())).await.unwrap();
    // Katib keys logs by trial name only; a trial row is not required.
    let logs = [
        obs("loss", 300, "0.3"),
        obs("loss", 100, "0.9"),
        obs("accuracy", 100, "0.1"),
        obs("loss", 200, "0.5"),
        obs("loss", 200, "0.4"), // same time: insertion order decides
        obs("accuracy", 400, "unavailable"),
    ];
    store.report_observations("t", &logs).await.unwrap();
    store.report_observations("t", &[]).await.unwrap();
    store
        .report_observations("other", &[obs("loss", 200, "7")])
        .await
        .unwrap();

    let all = store.observations("t", None, None, None).await.unwrap();
    assert_eq!(
        all,
        vec![
            obs("loss", 100, "0.9"),
            obs("accuracy", 100, "0.1"),
            obs("loss", 200, "0.5"),
            obs("loss", 200, "0.4"),
            obs("loss", 300, "0.3"),
            obs("accuracy", 400, "unavailable"),
        ]
    );
    let loss_window = store
        .observations("t", Some("loss"), Some(200), Some(300))
        .await
        .unwrap();
    assert_eq!(
        loss_window,
        vec![
            obs("loss", 200, "0.5"),
            obs("loss", 200, "0.4"),
            obs("loss", 300, "0.3")
        ]
    );
    let from_300 = store
        .observations("t", None, Some(300), None)
        .await
        .unwrap();
    assert_eq!(
        from_300,
        vec![obs("loss", 300, "0.3"), obs("accuracy", 400, "unavailable")]
    );
    let until_100 = store
        .observations("t", Some("accuracy"), None, Some(100))
        .await
        .unwrap();
    assert_eq!(until_100, vec![obs("accuracy", 100, "0.1")]);
    assert!(
        store
            .observations("t", Some("f1"), None, None)
            .await
            .unwrap()
            .is_empty()
    );
    // Katib's zero time (year 1) is a valid timestamp, not a missing one.
    let zero = -62_135_596_800_000_000;
    store
        .report_observations("z", &[obs("loss", zero, "1")])
        .await
        .unwrap();
    assert_eq!(
        store
            .observations("z", None, Some(zero), Some(zero))
            .await
            .unwrap(),
        vec![obs("loss", zero, "1")]
    );

    assert_eq!(store.delete_observations("t").await.unwrap(), 6);
    assert_eq!(store.delete_observations("t").await.unwrap(), 0);
    assert_eq!(
        store.observations("other", None, None, None).await.unwrap(),
        vec![obs("loss", 200, "7")]
    );
}

#[tokio::test]
async fn observations_for_experiment_groups_by_trial_in_seq_order() {
    let store = SqlStore::connect(":memory:").await.unwrap();
    store.create_experiment(&experiment("e", 1)).await.unwrap();
    store.create_experiment(&experiment("f", 1)).await.unwrap();
    store.insert_trial(&trial("e", "e-b", 2)).await.unwrap();
    store.insert_trial(&trial("e", "e-a", 1)).await.unwrap();
    store.insert_trial(&trial("f", "f-a", 1)).await.unwrap();
    store
        .report_observations("e-b", &[obs("loss", 5, "2"), obs("loss", 1, "3")])
        .await
        .unwrap();
    store
        .report_observations("e-a", &[obs("loss", 9, "1")])
        .await
        .unwrap();
    store
        .report_observations("f-a", &[obs("loss", 1, "0")])
        .await
        .unwrap();
    let got = store.observations_for_experiment("e").await.unwrap();
    assert_eq!(
        got,
        vec![
            ("e-a".to_owned(), obs("loss", 9, "1")),
            ("e-b".to_owned(), obs("loss", 1, "3")),
            ("e-b".to_owned(), obs("loss", 5, "2")),
        ]
    );
    assert!(
        store
            .observations_for_experiment("none")
            .await
            .unwrap()
            .is_empty()
    );
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
    let err = SqlStore::connect("postgres://katib:pw@db:5432/katib")
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::UnsupportedBackend { .. }),
        "{err}"
    );
    let err = SqlStore::connect("http://example/db").await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "unsupported database url `http://example/db`\n\
         hint: use `sqlite://PATH`, `sqlite:PATH` or a plain file path"
    );
}

/// Writes one trial and 200 observation rows in batches of 10, as a collector would.
async fn write_trial(store: SqlStore, experiment: &'static str, i: i64) -> Result<(), StoreError> {
    let name = format!("{experiment}-{i}");
    store.insert_trial(&trial(experiment, &name, i)).await?;
    for batch in 0..20 {
        let logs: Vec<Observation> = (0..10)
            .map(|k| {
                obs(
                    "loss",
                    batch * 10 + k,
                    &format!("{}", i * 1000 + batch * 10 + k),
                )
            })
            .collect();
        store.report_observations(&name, &logs).await?;
        if batch == 10 {
            let running = TrialUpdate {
                state: TrialState::Running,
                reason: "TrialRunning".to_owned(),
                message: String::new(),
                started_us: Some(batch),
                completed_us: None,
                attempt: None,
            };
            store.update_trial(&name, &running).await?;
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_in_one_and_two_stores_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let first = SqlStore::connect(&url(dir.path())).await.unwrap();
    // A second pool on the same file stands in for a second process.
    let second = SqlStore::connect(&url(dir.path())).await.unwrap();
    first
        .create_experiment(&experiment("one", 1))
        .await
        .unwrap();
    second
        .create_experiment(&experiment("two", 2))
        .await
        .unwrap();

    let mut tasks = Vec::new();
    for i in 0..32 {
        tasks.push(tokio::spawn(write_trial(first.clone(), "one", i)));
        if i < 16 {
            tasks.push(tokio::spawn(write_trial(second.clone(), "two", i)));
        }
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }

    for (exp, trials) in [("one", 32), ("two", 16)] {
        // Read through the other store than most writes went through.
        let listed = second.list_trials(exp).await.unwrap();
        assert_eq!(listed.len(), trials);
        assert!(listed.iter().all(|t| t.state == TrialState::Running));
        let rows = first.observations_for_experiment(exp).await.unwrap();
        assert_eq!(rows.len(), trials * 200);
        for t in &listed {
            let own = first.observations(&t.name, None, None, None).await.unwrap();
            assert_eq!(own.len(), 200, "{}", t.name);
            assert!(
                own.windows(2)
                    .all(|w| w[0].timestamp_us < w[1].timestamp_us)
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stores_opening_a_new_file_at_once_agree_on_one_schema() {
    let dir = tempfile::tempdir().unwrap();
    let u = url(dir.path());
    let opens: Vec<_> = (0..4)
        .map(|_| {
            let u = u.clone();
            tokio::spawn(async move { SqlStore::connect(&u).await })
        })
        .collect();
    let mut stores = Vec::new();
    for o in opens {
        stores.push(o.await.unwrap().unwrap());
    }
    stores[0]
        .create_experiment(&experiment("e", 1))
        .await
        .unwrap();
    for s in &stores {
        assert!(s.get_experiment("e").await.unwrap().is_some());
    }
}
