//! Placeholder until the algorithm lands: building it reports that it is not implemented.

use crate::error::AlgorithmError;
use vernier_core::{Objective, SearchSpace, Suggester};

pub(crate) fn build(
    name: &str,
    settings: &[(String, String)],
    space: &SearchSpace,
    objective: &Objective,
) -> Result<Box<dyn Suggester>, AlgorithmError> {
    let _ = (settings, space, objective);
    Err(AlgorithmError::NotImplemented {
        algorithm: name.to_string(),
    })
}
