//! The one error type of the core crate.

use thiserror::Error;

/// Errors raised while building or reading core values.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum CoreError {
    #[error("parameter {name}: value {value:?} is not valid: {reason}")]
    InvalidValue {
        name: String,
        value: String,
        reason: String,
    },
    #[error("parameter {0:?} is not in the search space")]
    UnknownParameter(String),
    #[error("assignment is missing parameter {0:?}")]
    MissingParameter(String),
    #[error("algorithm {algorithm}: {message}")]
    Algorithm { algorithm: String, message: String },
    #[error("invalid search space: {0}")]
    InvalidSpace(String),
    /// The caller cancelled the call (its client left or its deadline passed).
    #[error("algorithm {0}: stopped because the caller cancelled the request")]
    Cancelled(String),
}
