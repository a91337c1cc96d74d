//! The one error type of the algorithms crate: bad algorithm names and settings.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum AlgorithmError {
    #[error("unknown algorithm name {name:?}\nhint: known algorithms are {known}")]
    UnknownAlgorithm { name: String, known: String },
    #[error(
        "unknown setting {setting:?} for algorithm {algorithm}\nhint: {algorithm} accepts {accepted}"
    )]
    UnknownSetting {
        algorithm: String,
        setting: String,
        accepted: String,
    },
    #[error("setting {setting} of algorithm {algorithm}: value {value:?} {reason}")]
    InvalidSetting {
        algorithm: String,
        setting: String,
        value: String,
        reason: String,
    },
    #[error("algorithm {algorithm}: {field} {reason}")]
    InvalidNasConfig {
        algorithm: String,
        field: String,
        reason: String,
    },
    /// The search space is one the algorithm cannot search (settings aside).
    #[error("algorithm {algorithm} cannot search this space: {reason}")]
    UnsuitableSpace { algorithm: String, reason: String },
}
