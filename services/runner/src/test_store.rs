//! Test fixture shared by the runner's unit tests: a store holding experiment `e` and its one
//! trial `e-0`, the least the store's foreign keys need before observations can be recorded.

use vernier_core::{Observation, TrialState};
use vernier_store::{ExperimentRow, ExperimentStatusRow, SqlStore, TrialRow};

/// Adds experiment `e` (Running) and its trial `e-0` in `state` to `store`.
pub(crate) async fn with_trial(store: &SqlStore, state: TrialState) {
    let status = ExperimentStatusRow {
        phase: "Running".into(),
        reason: String::new(),
        message: String::new(),
        started_us: None,
        completed_us: None,
        algorithm_state: None,
        conditions_json: "[]".into(),
    };
    let experiment = ExperimentRow {
        name: "e".into(),
        spec_json: "{}".into(),
        seed: 1,
        created_us: 0,
        work_dir: String::new(),
        log_dir: String::new(),
        status,
    };
    store.create_experiment(&experiment).await.unwrap();
    let trial = TrialRow {
        experiment: "e".into(),
        name: "e-0".into(),
        seq: 0,
        assignment: vec![],
        labels: Default::default(),
        state,
        reason: String::new(),
        message: String::new(),
        created_us: 0,
        started_us: None,
        completed_us: None,
        attempt: 0,
        early_stopping_rules: None,
        stop_step: None,
    };
    store.insert_trial(&trial).await.unwrap();
}

/// An observation of `metric` at `t` µs.
pub(crate) fn obs(metric: &str, t: i64, value: &str) -> Observation {
    Observation {
        metric: metric.into(),
        timestamp_us: t,
        value: value.into(),
    }
}
