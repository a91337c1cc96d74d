//! The one error type of the proto crate: a wire message that cannot become a core value.

use thiserror::Error;

/// A field of a wire message holds something Vernier cannot use. `field` is the path inside
/// the request (e.g. `experiment.spec.parameter_specs.parameters[0].feasible_space.min`).
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ProtoError {
    #[error("{field} is missing\nhint: {hint}")]
    Missing { field: String, hint: String },
    #[error("{field}: value {value:?} {reason}")]
    Invalid {
        field: String,
        value: String,
        reason: String,
    },
    #[error("{field}: {reason}")]
    Core { field: String, reason: String },
}

impl ProtoError {
    pub(crate) fn missing(field: impl Into<String>, hint: impl Into<String>) -> Self {
        ProtoError::Missing {
            field: field.into(),
            hint: hint.into(),
        }
    }

    pub(crate) fn invalid(
        field: impl Into<String>,
        value: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        ProtoError::Invalid {
            field: field.into(),
            value: value.into(),
            reason: reason.into(),
        }
    }
}
