//! Rows the store tests write: an experiment, its trials and observation logs.

#![allow(dead_code, clippy::unwrap_used)]

use std::collections::BTreeMap;
use vernier_core::{Observation, TrialState};
use vernier_store::{ExperimentRow, ExperimentStatusRow, TrialRow, TrialUpdate};

pub fn status(phase: &str) -> ExperimentStatusRow {
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

pub fn experiment(name: &str, created_us: i64) -> ExperimentRow {
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

pub fn trial(experiment: &str, name: &str, seq: i64) -> TrialRow {
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
        early_stopping_rules: None,
        stop_step: None,
    }
}

/// The update that ends a trial Succeeded at `completed_us` (started at 1).
pub fn succeeded_at(completed_us: i64) -> TrialUpdate {
    TrialUpdate {
        state: TrialState::Succeeded,
        reason: "TrialSucceeded".into(),
        message: String::new(),
        started_us: Some(1),
        completed_us: Some(completed_us),
        attempt: None,
        stop_step: None,
    }
}

pub fn obs(metric: &str, timestamp_us: i64, value: &str) -> Observation {
    Observation {
        metric: metric.to_owned(),
        timestamp_us,
        value: value.to_owned(),
    }
}
