//! The one error type of the engine crate.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum EngineError {
    /// The spec does not resolve (search space, objective, collector settings).
    #[error("{0}")]
    Spec(#[from] vernier_spec::SpecErrors),
    /// The algorithm refused its name or settings; `path` is the field, down to the setting.
    /// The refusal is part of the message, not a separate source: a chained report (`{:#}`)
    /// would otherwise say it, and its hint, twice.
    #[error("{path}: {refusal}")]
    Algorithm {
        path: String,
        refusal: Box<vernier_algorithms::AlgorithmError>,
    },
    /// The early-stopping rule refused its name or settings.
    #[error("{path}: {refusal}")]
    EarlyStopping {
        path: String,
        refusal: Box<vernier_algorithms::AlgorithmError>,
    },
    /// An entry of `spec.enqueuedTrials` does not fit the search space.
    #[error("spec.enqueuedTrials[{index}]: {message}")]
    Enqueued { index: usize, message: String },
    /// The algorithm failed while proposing.
    #[error("{0}")]
    Suggest(#[from] vernier_core::CoreError),
}
