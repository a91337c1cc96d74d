//! The crate's one error type, plus the list of them that parsing and validation return so a
//! user sees every problem in one go.

use std::fmt;
use thiserror::Error;

/// One problem with an experiment spec (or with rendering its trial template).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SpecError {
    /// The text is not well-formed YAML or JSON. The message already names the location.
    #[error("{message}")]
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    /// The spec file could not be read; `path` is the file's path.
    #[error("{path}: {message}")]
    Read { path: String, message: String },
    /// A field is unknown, has the wrong type, or holds a value Vernier rejects. `path` looks like
    /// `spec.parameters[1].feasibleSpace.min`.
    #[error("{path}: {message}")]
    Field { path: String, message: String },
}

impl SpecError {
    /// A field error: `path` like `spec.parameters[1].name`, `message` lowercase, naming the
    /// offending value, with a `hint:` where the user can fix it.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        SpecError::Field {
            path: path.into(),
            message: message.into(),
        }
    }

    /// Where the problem is: a field path, a file path, or `line L, column C`.
    pub fn path(&self) -> String {
        match self {
            SpecError::Syntax { line, column, .. } => format!("line {line}, column {column}"),
            SpecError::Read { path, .. } | SpecError::Field { path, .. } => path.clone(),
        }
    }

    /// What is wrong, including any `hint:`.
    pub fn message(&self) -> &str {
        match self {
            SpecError::Syntax { message, .. }
            | SpecError::Read { message, .. }
            | SpecError::Field { message, .. } => message,
        }
    }
}

/// Every problem found in a spec, in the order found. Never empty when returned as an error.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SpecErrors(pub Vec<SpecError>);

impl SpecErrors {
    pub fn errors(&self) -> &[SpecError] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn push(&mut self, error: SpecError) {
        self.0.push(error);
    }

    /// `Ok(value)` when nothing was collected, so collectors can end with `errors.into_result(x)`.
    pub(crate) fn into_result<T>(self, value: T) -> Result<T, SpecErrors> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(self)
        }
    }
}

impl From<SpecError> for SpecErrors {
    fn from(error: SpecError) -> Self {
        SpecErrors(vec![error])
    }
}

impl fmt::Display for SpecErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SpecErrors {}

impl IntoIterator for SpecErrors {
    type Item = SpecError;
    type IntoIter = std::vec::IntoIter<SpecError>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}
