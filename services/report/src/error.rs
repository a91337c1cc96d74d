//! The one error type of the report crate: what can go wrong while reading an experiment for
//! a report.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum ReportError {
    #[error(transparent)]
    Store(#[from] vernier_store::StoreError),
    #[error("{0}")]
    Spec(#[from] vernier_spec::SpecErrors),
    #[error(
        "experiment {0:?} does not exist in the store\nhint: `vernier list` shows the experiments there"
    )]
    ExperimentNotFound(String),
    #[error("cannot write the report: {0}")]
    Write(#[source] std::io::Error),
    #[error("stored experiment {name:?} is unreadable: {reason}")]
    CorruptExperiment { name: String, reason: String },
}
