//! The store conformance suite: every test here runs once per backend (SQLite file, and
//! PostgreSQL and MySQL/MariaDB where `VERNIER_TEST_POSTGRES_URL` / `VERNIER_TEST_MYSQL_URL`
//! are set), each on a fresh database of its own, so all backends are held to the same
//! behaviour: round trips, ordering, conflicts and their errors, cascades, filters, reduced
//! observations, lock waits, and concurrent writers losing nothing.

#![allow(clippy::unwrap_used)] // test bodies are plain async fns run by `per_backend!`

mod support;

use std::sync::Arc;
use std::time::Duration;
use support::fixtures::{experiment, obs, status, succeeded_at, trial};
use support::{Backend, TestDb};
use vernier_core::{MetricSummary, Observation, TrialState};
use vernier_store::{LeaseClaim, SqlStore, StoreError, StoreOptions, TrialRow, TrialUpdate};

per_backend!(
    experiments_round_trip_and_list_in_creation_order,
    trials_round_trip_update_and_order_by_seq,
    trial_conflicts_and_unknown_names_are_named,
    duplicate_experiment_says_how_to_proceed,
    an_insert_sent_again_after_a_lost_answer_finds_its_own_row,
    the_spec_can_be_replaced_and_nothing_else_changes,
    delete_experiment_cascades_to_trials_and_observation_logs,
    observation_logs_filter_by_metric_and_inclusive_time_range,
    observations_for_experiment_groups_by_trial_in_seq_order,
    concurrent_writers_in_one_and_two_stores_lose_nothing,
    stores_opening_a_new_database_at_once_agree_on_one_schema,
    summaries_equal_the_reduction_of_the_raw_logs,
    an_ended_experiments_trial_observations_are_final,
    concurrent_writers_to_one_trial_keep_its_summary_exact,
    a_lock_held_by_another_session_is_reported_and_loses_nothing,
    text_values_are_kept_exactly_and_are_only_latest,
    texts_longer_than_a_mysql_text_column_are_kept,
    a_name_with_trailing_spaces_matches_nothing,
    a_batch_larger_than_a_mysql_packet_is_stored_whole,
    a_lease_is_granted_renewed_refused_taken_over_and_released,
    a_fenced_store_writes_nothing_once_its_lease_was_taken_over,
    claimants_racing_for_a_free_lease_get_exactly_one,
);

async fn experiments_round_trip_and_list_in_creation_order(db: Arc<TestDb>) {
    let store = SqlStore::connect(&db.url).await.unwrap();
    store.ping().await.unwrap();

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
    let reopened = SqlStore::connect(&db.url).await.unwrap();
    assert_eq!(reopened.list_experiments().await.unwrap().len(), 2);
}

async fn trials_round_trip_update_and_order_by_seq(db: Arc<TestDb>) {
    let store = SqlStore::connect(&db.url).await.unwrap();
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
        stop_step: None,
    };
    store.update_trial("exp-aaa", &running).await.unwrap();
    let succeeded = TrialUpdate {
        state: TrialState::Succeeded,
        reason: "TrialSucceeded".to_owned(),
        message: "Trial has succeeded".to_owned(),
        started_us: None,
        completed_us: Some(900),
        attempt: Some(2),
        stop_step: None,
    };
    store.update_trial("exp-aaa", &succeeded).await.unwrap();
    let rules = r#"[{"name":"acc","value":"0.7","comparison":"less","startStep":2}]"#;
    store
        .set_trial_early_stopping_rules("exp-aaa", rules)
        .await
        .unwrap();
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
            early_stopping_rules: Some(rules.to_owned()),
            stop_step: None,
            ..t1.clone()
        }
    );
    let err = store
        .set_trial_early_stopping_rules("no-such-trial", rules)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::NotFound { kind: "trial", .. }),
        "{err}"
    );
    // The step a rule stopped a trial at is written with its EarlyStopped state and kept by
    // an update that does not name one.
    let stopped = TrialUpdate {
        state: TrialState::EarlyStopped,
        reason: "TrialEarlyStopped".to_owned(),
        message: "Trial is early stopped".to_owned(),
        stop_step: Some(3),
        ..succeeded.clone()
    };
    store.update_trial("exp-zzz", &stopped).await.unwrap();
    let again = TrialUpdate {
        stop_step: None,
        ..stopped
    };
    store.update_trial("exp-zzz", &again).await.unwrap();
    let got = store.get_trial("exp-zzz").await.unwrap().unwrap();
    assert_eq!(
        (got.state, got.stop_step),
        (TrialState::EarlyStopped, Some(3))
    );
    let listed = store.list_trials("exp").await.unwrap();
    let steps: Vec<Option<i64>> = listed.iter().map(|t| t.stop_step).collect();
    assert_eq!(steps, [None, Some(3), None]);
}

async fn trial_conflicts_and_unknown_names_are_named(db: Arc<TestDb>) {
    let store = SqlStore::connect(&db.url).await.unwrap();
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
        stop_step: None,
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

async fn duplicate_experiment_says_how_to_proceed(db: Arc<TestDb>) {
    let store = SqlStore::connect(&db.url).await.unwrap();
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

/// A riding store re-sends an insert whose answer was lost though the server may have
/// committed it: meeting exactly its own row is success; any other row is still a conflict,
/// and a store that does not ride reports every conflict as before.
async fn an_insert_sent_again_after_a_lost_answer_finds_its_own_row(db: Arc<TestDb>) {
    let store = SqlStore::connect(&db.url).await.unwrap();
    let (_keep, give_up) = tokio::sync::watch::channel(false);
    let riding = store.riding_outages(give_up);
    let exp = experiment("exp", 1);
    let t1 = trial("exp", "exp-t1", 1);
    riding.create_experiment(&exp).await.unwrap();
    riding.insert_trial(&t1).await.unwrap();

    riding.create_experiment(&exp).await.unwrap();
    riding.insert_trial(&t1).await.unwrap();
    assert_eq!(store.list_trials("exp").await.unwrap(), vec![t1.clone()]);

    let other_experiment = experiment("exp", 2);
    let other_params = TrialRow {
        assignment: vec![("lr".into(), "0.5".into())],
        ..t1.clone()
    };
    let same_seq = trial("exp", "exp-t2", 1);
    for s in [&store, &riding] {
        let err = s.create_experiment(&other_experiment).await.unwrap_err();
        assert!(matches!(err, StoreError::ExperimentExists(_)), "{err}");
        // Which of the two unique constraints a backend checks first differs.
        let err = s.insert_trial(&other_params).await.unwrap_err();
        let taken = matches!(
            err,
            StoreError::TrialExists(_) | StoreError::TrialSeqTaken { .. }
        );
        assert!(taken, "{err}");
        let err = s.insert_trial(&same_seq).await.unwrap_err();
        assert!(matches!(err, StoreError::TrialSeqTaken { .. }), "{err}");
    }
    let err = store.insert_trial(&t1).await.unwrap_err();
    let taken = matches!(
        err,
        StoreError::TrialExists(_) | StoreError::TrialSeqTaken { .. }
    );
    assert!(taken, "{err}");
}

async fn the_spec_can_be_replaced_and_nothing_else_changes(db: Arc<TestDb>) {
    let store = SqlStore::connect(&db.url).await.unwrap();
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

async fn delete_experiment_cascades_to_trials_and_observation_logs(db: Arc<TestDb>) {
    let store = SqlStore::connect(&db.url).await.unwrap();
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

async fn observation_logs_filter_by_metric_and_inclusive_time_range(db: Arc<TestDb>) {
    let store = SqlStore::connect(&db.url).await.unwrap();
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

async fn observations_for_experiment_groups_by_trial_in_seq_order(db: Arc<TestDb>) {
    let store = SqlStore::connect(&db.url).await.unwrap();
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

async fn concurrent_writers_in_one_and_two_stores_lose_nothing(db: Arc<TestDb>) {
    let first = SqlStore::connect(&db.url).await.unwrap();
    // A second pool on the same file stands in for a second process.
    let second = SqlStore::connect(&db.url).await.unwrap();
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

async fn stores_opening_a_new_database_at_once_agree_on_one_schema(db: Arc<TestDb>) {
    let u = db.url.clone();
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
                stop_step: None,
            };
            store.update_trial(&name, &running).await?;
        }
    }
    Ok(())
}

/// The summaries the store keeps must equal Katib's reduction of the raw logs, through
/// batches, later batches with earlier or equal times, non-numeric values, observations that
/// arrive after the trial finished, and deletion.
async fn summaries_equal_the_reduction_of_the_raw_logs(db: Arc<TestDb>) {
    let store = SqlStore::connect(&db.url).await.unwrap();
    store.create_experiment(&experiment("e", 1)).await.unwrap();
    for i in 0..3 {
        store
            .insert_trial(&trial("e", &format!("e-{i}"), i))
            .await
            .unwrap();
    }
    let batches: Vec<(&str, Vec<Observation>)> = vec![
        ("e-0", vec![obs("loss", 10, "0.5"), obs("acc", 10, "0.1")]),
        ("e-0", vec![obs("loss", 5, "0.2"), obs("loss", 20, "0.9")]),
        // Equal time: the later log wins `latest`, also across batches.
        ("e-0", vec![obs("loss", 20, "0.8")]),
        ("e-0", vec![obs("acc", 30, "unavailable")]),
        ("e-1", vec![obs("loss", 1, "unavailable")]),
        ("e-1", vec![obs("loss", 0, "3"), obs("loss", 0, " 4 ")]),
        ("e-2", vec![obs("loss", 7, "nan"), obs("loss", 8, "inf")]),
    ];
    for (t, b) in &batches {
        store.report_observations(t, b).await.unwrap();
    }
    // A finished trial that gets more observations keeps an exact summary.
    store.update_trial("e-0", &succeeded_at(40)).await.unwrap();
    store
        .report_observations("e-0", &[obs("loss", 50, "0.05"), obs("acc", 25, "0.7")])
        .await
        .unwrap();

    let check = |summaries: &vernier_store::ExperimentSummaries, raw: &[(String, Observation)]| {
        assert!(summaries.unreduced.is_empty());
        let mut expected = Vec::new();
        for t in ["e-0", "e-1", "e-2"] {
            let logs: Vec<Observation> = raw
                .iter()
                .filter(|(n, _)| n == t)
                .map(|(_, o)| o.clone())
                .collect();
            let mut names: Vec<&str> = logs.iter().map(|o| o.metric.as_str()).collect();
            names.sort();
            names.dedup();
            for m in names {
                let numeric = logs
                    .iter()
                    .filter(|o| {
                        o.metric == m && o.value.trim().parse::<f64>().is_ok_and(f64::is_finite)
                    })
                    .count() as i64;
                expected.push((
                    t.to_owned(),
                    MetricSummary::reduce(m, &logs).unwrap(),
                    numeric,
                ));
            }
        }
        let got: Vec<(String, MetricSummary, i64)> = summaries
            .metrics
            .iter()
            .map(|m| (m.trial.clone(), m.summary.clone(), m.numeric_count))
            .collect();
        assert_eq!(got, expected);
    };
    let raw = store.observations_for_experiment("e").await.unwrap();
    let summaries = store.experiment_summaries("e").await.unwrap();
    check(&summaries, &raw);
    let loss0 = &summaries.metrics[1].summary;
    assert_eq!(
        (
            loss0.name.as_str(),
            loss0.min,
            loss0.max,
            loss0.latest.as_str()
        ),
        ("loss", Some(0.05), Some(0.9), "0.05")
    );
    let (one, complete) = store.trial_summary("e-1").await.unwrap();
    assert!(complete);
    // " 4 " counts as a number; `unavailable` at the latest time is the latest value.
    assert_eq!(
        (one[0].summary.min, one[0].summary.max),
        (Some(3.0), Some(4.0))
    );
    assert_eq!(one[0].summary.latest, "unavailable");
    // Values before the marker are reports; the marker alone is not.
    let names = store.reported_metric_names("e-1").await.unwrap();
    assert_eq!(names, [one[0].summary.name.clone()]);

    assert_eq!(store.delete_observations("e-1").await.unwrap(), 3);
    assert!(store.trial_summary("e-1").await.unwrap().0.is_empty());
    let raw = store.observations_for_experiment("e").await.unwrap();
    check(&store.experiment_summaries("e").await.unwrap(), &raw);
}

/// Once an experiment has ended, a log reported for one of its trials (a DBManager client
/// writing late) is kept but changes neither that trial's metrics nor which trial is best, as
/// Katib reads a trial's observation once; an experiment continued again merges as before.
async fn an_ended_experiments_trial_observations_are_final(db: Arc<TestDb>) {
    let store = SqlStore::connect(&db.url).await.unwrap();
    store.create_experiment(&experiment("e", 1)).await.unwrap();
    store.insert_trial(&trial("e", "e-0", 0)).await.unwrap();
    store
        .report_observations("e-0", &[obs("acc", 10, "0.8")])
        .await
        .unwrap();
    store.update_trial("e-0", &succeeded_at(40)).await.unwrap();
    let mut ended = status("Succeeded");
    ended.completed_us = Some(50);
    store.update_experiment_status("e", &ended).await.unwrap();

    store
        .report_observations("e-0", &[obs("acc", 60, "0.99")])
        .await
        .unwrap();
    let acc = |summaries: &vernier_store::ExperimentSummaries| {
        let s = &summaries.metrics[0].summary;
        (s.max, s.latest.clone())
    };
    let summaries = store.experiment_summaries("e").await.unwrap();
    assert_eq!(acc(&summaries), (Some(0.8), "0.8".to_owned()));
    let kept = store.observations("e-0", None, None, None).await.unwrap();
    assert_eq!(kept.len(), 2, "the late log is kept: {kept:?}");

    // Continued (`vernier resume`): the experiment runs again and its logs count again.
    store
        .update_experiment_status("e", &status("Running"))
        .await
        .unwrap();
    store
        .report_observations("e-0", &[obs("acc", 70, "0.9")])
        .await
        .unwrap();
    let summaries = store.experiment_summaries("e").await.unwrap();
    assert_eq!(acc(&summaries), (Some(0.9), "0.9".to_owned()));
}

/// Eight writers reporting to the same trial at once: every row lands and the summary counts
/// every value, with the right min, max and latest.
async fn concurrent_writers_to_one_trial_keep_its_summary_exact(db: Arc<TestDb>) {
    let store = SqlStore::connect(&db.url).await.unwrap();
    store.create_experiment(&experiment("e", 1)).await.unwrap();
    store.insert_trial(&trial("e", "e-0", 0)).await.unwrap();
    let mut tasks = Vec::new();
    for w in 0..8i64 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            for b in 0..10i64 {
                let logs: Vec<Observation> = (0..5)
                    .flat_map(|k| {
                        let t = w * 1000 + b * 10 + k;
                        [
                            obs("loss", t, &t.to_string()),
                            obs("acc", t, &(-t).to_string()),
                        ]
                    })
                    .collect();
                store.report_observations("e-0", &logs).await?;
            }
            Ok::<(), StoreError>(())
        }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    assert_eq!(
        store
            .observations("e-0", None, None, None)
            .await
            .unwrap()
            .len(),
        8 * 10 * 5 * 2
    );
    let (s, _) = store.trial_summary("e-0").await.unwrap();
    assert_eq!(s.len(), 2);
    let (acc, loss) = (&s[0], &s[1]);
    assert_eq!(loss.numeric_count, 400);
    assert_eq!(acc.numeric_count, 400);
    assert_eq!(
        (loss.summary.min, loss.summary.max),
        (Some(0.0), Some(7094.0))
    );
    assert_eq!(loss.summary.latest, "7094");
    assert_eq!(
        (acc.summary.min, acc.summary.max),
        (Some(-7094.0), Some(0.0))
    );
}

/// Holds a lock on `observation_logs` from another session until dropped or released.
enum LockHolder {
    Sqlite(sqlx::SqliteConnection),
    Postgres(sqlx::PgConnection),
    MySql(sqlx::MySqlConnection),
}

impl LockHolder {
    async fn take(db: &TestDb) -> LockHolder {
        use sqlx::{Connection, Executor};
        match db.backend {
            Backend::Sqlite => {
                let mut c = sqlx::SqliteConnection::connect(&db.url).await.unwrap();
                c.execute("BEGIN IMMEDIATE").await.unwrap();
                LockHolder::Sqlite(c)
            }
            Backend::Postgres => {
                let mut c = sqlx::PgConnection::connect(&db.url).await.unwrap();
                c.execute("BEGIN; LOCK TABLE observation_logs IN ACCESS EXCLUSIVE MODE")
                    .await
                    .unwrap();
                LockHolder::Postgres(c)
            }
            Backend::MySql => {
                let mut c = sqlx::MySqlConnection::connect(&db.url).await.unwrap();
                c.execute("LOCK TABLES observation_logs WRITE")
                    .await
                    .unwrap();
                LockHolder::MySql(c)
            }
        }
    }

    async fn release(self) {
        use sqlx::{Connection, Executor};
        match self {
            LockHolder::Sqlite(mut c) => {
                c.execute("ROLLBACK").await.unwrap();
                let _ = c.close().await;
            }
            LockHolder::Postgres(mut c) => {
                c.execute("ROLLBACK").await.unwrap();
                let _ = c.close().await;
            }
            LockHolder::MySql(mut c) => {
                c.execute("UNLOCK TABLES").await.unwrap();
                let _ = c.close().await;
            }
        }
    }
}

/// A lock another session holds past the store's lock timeout gives a `Locked` error that
/// names the database (password redacted) with a hint; nothing of the failed call is
/// recorded, nothing recorded before is lost, and the same call succeeds once the lock is gone.
async fn a_lock_held_by_another_session_is_reported_and_loses_nothing(db: Arc<TestDb>) {
    let store = SqlStore::connect_with(
        &db.url,
        StoreOptions {
            lock_timeout: Duration::from_secs(1),
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

    let holder = LockHolder::take(&db).await;
    let batch = [obs("loss", 2, "0.4"), obs("loss", 3, "0.3")];
    let err = store.report_observations("e-1", &batch).await.unwrap_err();
    assert!(matches!(err, StoreError::Locked { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("record observations of trial `e-1`"),
        "{text}"
    );
    assert!(text.contains(&vernier_store::redact_url(&db.url)), "{text}");
    assert!(text.contains("\nhint: "), "{text}");
    holder.release().await;

    assert_eq!(
        store.observations("e-1", None, None, None).await.unwrap(),
        vec![obs("loss", 1, "0.5")],
        "the failed batch left nothing behind"
    );
    store.report_observations("e-1", &batch).await.unwrap();
    let logs = store.observations("e-1", None, None, None).await.unwrap();
    assert_eq!(logs.len(), 3);
    assert_eq!(
        store.trial_summary("e-1").await.unwrap().0[0].summary,
        MetricSummary::reduce("loss", &logs).unwrap()
    );
}

/// DARTS reports its objective as text (`Best-Genotype=Genotype(...)`): every backend keeps
/// such a value byte for byte, as the raw log and as the summary's `latest`, never min or max.
async fn text_values_are_kept_exactly_and_are_only_latest(db: Arc<TestDb>) {
    let store = SqlStore::connect(&db.url).await.unwrap();
    store.create_experiment(&experiment("d", 1)).await.unwrap();
    store.insert_trial(&trial("d", "d-0", 0)).await.unwrap();
    let cells = "('sep_conv_3x3', 0), ('skip_connect', 1)], ".repeat(40);
    let genotype = format!("Genotype(normal=[[{cells}]], normal_concat=range(2, 6), note=\"é ✓\")");
    store
        .report_observations(
            "d-0",
            &[
                obs("Best-Genotype", 1, "0.5"),
                obs("Best-Genotype", 2, &genotype),
            ],
        )
        .await
        .unwrap();
    let raw = store.observations_for_experiment("d").await.unwrap();
    assert_eq!(raw[1].1.value, genotype);
    let (summary, complete) = store.trial_summary("d-0").await.unwrap();
    assert!(complete);
    let s = &summary[0];
    assert_eq!((s.summary.min, s.summary.max), (Some(0.5), Some(0.5)));
    assert_eq!(s.summary.latest, genotype);
    assert_eq!(s.numeric_count, 1);
}

/// A trial's message of 200 KB is kept whole on every backend (MySQL's `TEXT` held 64 KB, so
/// a message SQLite stored could not be written there).
async fn texts_longer_than_a_mysql_text_column_are_kept(db: Arc<TestDb>) {
    let store = SqlStore::connect(&db.url).await.unwrap();
    store.create_experiment(&experiment("l", 1)).await.unwrap();
    store.insert_trial(&trial("l", "l-0", 0)).await.unwrap();
    let long = "é".repeat(100_000);
    let ended = TrialUpdate {
        state: TrialState::MetricsUnavailable,
        reason: "MetricsUnavailable".to_owned(),
        message: long.clone(),
        started_us: Some(1),
        completed_us: Some(2),
        attempt: None,
        stop_step: None,
    };
    store.update_trial("l-0", &ended).await.unwrap();
    let got = store.get_trial("l-0").await.unwrap().unwrap();
    assert_eq!(got.message, long);
}

/// MySQL's and MariaDB's collations pad with spaces (`'q6  ' = 'q6'`): a name typed with
/// trailing spaces must not find, or delete, the experiment without them on any backend.
async fn a_name_with_trailing_spaces_matches_nothing(db: Arc<TestDb>) {
    let store = SqlStore::connect(&db.url).await.unwrap();
    store.create_experiment(&experiment("q6", 1)).await.unwrap();
    store.insert_trial(&trial("q6", "q6-0", 0)).await.unwrap();
    assert_eq!(store.get_experiment("q6  ").await.unwrap(), None);
    assert_eq!(store.get_trial("q6-0 ").await.unwrap(), None);
    assert!(store.list_trials("q6 ").await.unwrap().is_empty());
    assert!(!store.delete_experiment("q6  ").await.unwrap());
    assert!(store.get_experiment("q6").await.unwrap().is_some());
    assert_eq!(store.list_trials("q6").await.unwrap().len(), 1);
}

/// 300 values of 65,535 bytes (19 MiB, over MySQL's default 16 MiB packet) in one report are
/// stored whole on every backend.
async fn a_batch_larger_than_a_mysql_packet_is_stored_whole(db: Arc<TestDb>) {
    let store = SqlStore::connect(&db.url).await.unwrap();
    store
        .create_experiment(&experiment("big", 1))
        .await
        .unwrap();
    store.insert_trial(&trial("big", "big-0", 0)).await.unwrap();
    let value = "g".repeat(65_535);
    let logs: Vec<Observation> = (0..300).map(|i| obs("genotype", i, &value)).collect();
    store.report_observations("big-0", &logs).await.unwrap();
    let raw = store.observations_for_experiment("big").await.unwrap();
    assert_eq!(raw.len(), 300);
    assert!(raw.iter().all(|(_, o)| o.value == value));
}

fn claim(owner: &str, pid: i64) -> LeaseClaim {
    LeaseClaim {
        owner: owner.to_owned(),
        host: "host-a".to_owned(),
        pid,
    }
}

const LEASE_TTL: Duration = Duration::from_secs(30);
const SEC: i64 = 1_000_000;

async fn a_lease_is_granted_renewed_refused_taken_over_and_released(db: Arc<TestDb>) {
    let store = SqlStore::connect(&db.url).await.unwrap();
    let alive = |_: &vernier_store::LeaseRow| false;
    let (first, second) = (claim("first", 11), claim("second", 22));
    assert_eq!(store.get_lease("exp").await.unwrap(), None);
    let taken = store
        .acquire_lease("exp", &first, 100 * SEC, LEASE_TTL, &alive)
        .await
        .unwrap();
    assert_eq!(taken, None);
    store.renew_lease("exp", "first", 110 * SEC).await.unwrap();
    let row = store.get_lease("exp").await.unwrap().unwrap();
    assert_eq!(
        (
            row.owner.as_str(),
            row.host.as_str(),
            row.pid,
            row.acquired_us,
            row.heartbeat_us
        ),
        ("first", "host-a", 11, 100 * SEC, 110 * SEC)
    );

    // Within the heartbeat's lifetime another claimant is refused, naming the holder.
    let err = store
        .acquire_lease("exp", &second, 139 * SEC, LEASE_TTL, &alive)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::LeaseHeld { experiment, host, pid: 11, .. }
            if experiment == "exp" && host == "host-a"),
        "{err}"
    );
    assert!(err.to_string().contains("last heartbeat 29 s ago"), "{err}");
    // A lease on another experiment is independent.
    store
        .acquire_lease("other", &second, 139 * SEC, LEASE_TTL, &alive)
        .await
        .unwrap();

    // A holder known to be gone is taken over at once; a lapsed one after the ttl.
    let gone = |l: &vernier_store::LeaseRow| l.pid == 11;
    let replaced = store
        .acquire_lease("exp", &second, 140 * SEC, LEASE_TTL, &gone)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(replaced.owner, "first");
    let err = store
        .renew_lease("exp", "first", 141 * SEC)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::LeaseLost { experiment } if experiment == "exp"),
        "{err}"
    );
    assert!(!store.release_lease("exp", "first").await.unwrap());
    let replaced = store
        .acquire_lease("exp", &first, 171 * SEC, LEASE_TTL, &alive)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(replaced.owner, "second");

    // Re-acquiring one's own lease renews it; releasing frees it for anyone.
    store
        .acquire_lease("exp", &first, 172 * SEC, LEASE_TTL, &alive)
        .await
        .unwrap();
    assert!(store.release_lease("exp", "first").await.unwrap());
    assert_eq!(store.get_lease("exp").await.unwrap(), None);
    store
        .acquire_lease("exp", &second, 173 * SEC, LEASE_TTL, &alive)
        .await
        .unwrap();

    // Deleting an experiment drops its lease with it.
    store
        .create_experiment(&experiment("other", 1))
        .await
        .unwrap();
    assert!(store.delete_experiment("other").await.unwrap());
    assert_eq!(store.get_lease("other").await.unwrap(), None);
}

/// A driver suspended past its lease's ttl and replaced by a resume: when it runs again its
/// fenced store refuses its writes (the proof of the lease is a second old), naming the loss.
async fn a_fenced_store_writes_nothing_once_its_lease_was_taken_over(db: Arc<TestDb>) {
    let store = SqlStore::connect(&db.url).await.unwrap();
    store
        .create_experiment(&experiment("exp", 1))
        .await
        .unwrap();
    let alive = |_: &vernier_store::LeaseRow| false;
    store
        .acquire_lease("exp", &claim("first", 11), 100 * SEC, LEASE_TTL, &alive)
        .await
        .unwrap();
    let fenced = store.fenced_by("exp", "first");
    fenced
        .insert_trial(&trial("exp", "exp-1", 1))
        .await
        .unwrap();
    fenced
        .report_observations("exp-1", &[obs("loss", 1, "0.5")])
        .await
        .unwrap();

    let gone = |l: &vernier_store::LeaseRow| l.owner == "first";
    store
        .acquire_lease("exp", &claim("second", 22), 200 * SEC, LEASE_TTL, &gone)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let err = fenced
        .report_observations("exp-1", &[obs("loss", 2, "0.1")])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::LeaseLost { experiment } if experiment == "exp"),
        "{err}"
    );
    let err = fenced
        .insert_trial(&trial("exp", "exp-2", 2))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::LeaseLost { .. }), "{err}");
    assert_eq!(
        store
            .observations("exp-1", None, None, None)
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(store.list_trials("exp").await.unwrap().len(), 1);
    // The new holder's fenced store writes.
    let new = store.fenced_by("exp", "second");
    new.insert_trial(&trial("exp", "exp-2", 2)).await.unwrap();
}

async fn claimants_racing_for_a_free_lease_get_exactly_one(db: Arc<TestDb>) {
    let a = SqlStore::connect(&db.url).await.unwrap();
    let b = SqlStore::connect(&db.url).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..8i64 {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
        tasks.push(tokio::spawn(async move {
            let alive = |_: &vernier_store::LeaseRow| false;
            store
                .acquire_lease(
                    "exp",
                    &claim(&format!("c{i}"), i),
                    100 * SEC,
                    LEASE_TTL,
                    &alive,
                )
                .await
        }));
    }
    let mut granted = Vec::new();
    for (i, t) in tasks.into_iter().enumerate() {
        match t.await.unwrap() {
            Ok(_) => granted.push(format!("c{i}")),
            Err(StoreError::LeaseHeld { .. }) => {}
            Err(e) => panic!("claimant c{i}: {e}"),
        }
    }
    assert_eq!(granted.len(), 1, "{granted:?}");
    let holder = a.get_lease("exp").await.unwrap().unwrap();
    assert_eq!(holder.owner, granted[0]);
}
