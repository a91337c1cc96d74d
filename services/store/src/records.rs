//! Row shapes as the databases return them, shared by every backend (sqlx's `FromRow` derive
//! is generic over the driver), and their conversion to the store's public rows.

use crate::codec;
use crate::error::StoreError;
use crate::model::{ExperimentRow, ExperimentStatusRow, StoredMetric, TrialRow};
use vernier_core::MetricSummary;

#[derive(sqlx::FromRow)]
pub(crate) struct ExperimentRecord {
    name: String,
    spec_json: String,
    seed: i64,
    created_us: i64,
    phase: String,
    reason: String,
    message: String,
    started_us: Option<i64>,
    completed_us: Option<i64>,
    algorithm_state: Option<String>,
    conditions_json: String,
    work_dir: String,
    log_dir: String,
}

impl From<ExperimentRecord> for ExperimentRow {
    fn from(r: ExperimentRecord) -> Self {
        ExperimentRow {
            name: r.name,
            spec_json: r.spec_json,
            seed: r.seed,
            created_us: r.created_us,
            work_dir: r.work_dir,
            log_dir: r.log_dir,
            status: ExperimentStatusRow {
                phase: r.phase,
                reason: r.reason,
                message: r.message,
                started_us: r.started_us,
                completed_us: r.completed_us,
                algorithm_state: r.algorithm_state,
                conditions_json: r.conditions_json,
            },
        }
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct TrialRecord {
    experiment: String,
    name: String,
    seq: i64,
    assignment_json: String,
    labels_json: String,
    state: String,
    reason: String,
    message: String,
    created_us: i64,
    started_us: Option<i64>,
    completed_us: Option<i64>,
    attempt: i64,
    early_stopping_rules_json: Option<String>,
    stop_step: Option<i64>,
}

impl TryFrom<TrialRecord> for TrialRow {
    type Error = StoreError;

    fn try_from(r: TrialRecord) -> Result<Self, StoreError> {
        Ok(TrialRow {
            assignment: codec::decode_assignment(&r.name, &r.assignment_json)?,
            labels: codec::decode_labels(&r.name, &r.labels_json)?,
            state: codec::decode_state(&r.name, &r.state)?,
            experiment: r.experiment,
            name: r.name,
            seq: r.seq,
            reason: r.reason,
            message: r.message,
            created_us: r.created_us,
            started_us: r.started_us,
            completed_us: r.completed_us,
            attempt: r.attempt,
            early_stopping_rules: r.early_stopping_rules_json,
            stop_step: r.stop_step,
        })
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct SummaryRecord {
    trial_name: String,
    metric_name: String,
    min_value: Option<f64>,
    max_value: Option<f64>,
    latest_value: String,
    numeric_count: i64,
}

impl From<SummaryRecord> for StoredMetric {
    fn from(r: SummaryRecord) -> Self {
        StoredMetric {
            trial: r.trial_name,
            summary: MetricSummary {
                name: r.metric_name,
                min: r.min_value,
                max: r.max_value,
                latest: r.latest_value,
            },
            numeric_count: r.numeric_count,
        }
    }
}

// Macros rather than consts so `concat!` yields `&'static str` statements.
macro_rules! select_experiment {
    () => {
        "SELECT name, spec_json, seed, created_us, phase, reason, message, started_us, \
         completed_us, algorithm_state, conditions_json, work_dir, log_dir FROM experiments"
    };
}

macro_rules! select_trial {
    () => {
        "SELECT experiment, name, seq, assignment_json, labels_json, state, reason, message, \
         created_us, started_us, completed_us, attempt, early_stopping_rules_json, stop_step \
         FROM trials"
    };
}

/// The columns of `observation_summaries` that [`SummaryRecord`] reads, from alias `s`.
macro_rules! summary_columns {
    () => {
        "s.trial_name, s.metric_name, s.min_value, s.max_value, s.latest_value, s.numeric_count"
    };
}

/// The lease columns in the order of [`LeaseRecord`].
macro_rules! select_lease {
    () => {
        "SELECT experiment, owner, host, pid, acquired_us, heartbeat_us FROM experiment_leases"
    };
}

pub(crate) use {select_experiment, select_lease, select_trial, summary_columns};

/// A lease row as every backend returns it.
pub(crate) type LeaseRecord = (String, String, String, i64, i64, i64);

pub(crate) fn lease_row(r: LeaseRecord) -> crate::lease::LeaseRow {
    crate::lease::LeaseRow {
        experiment: r.0,
        owner: r.1,
        host: r.2,
        pid: r.3,
        acquired_us: r.4,
        heartbeat_us: r.5,
    }
}
