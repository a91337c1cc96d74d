//! A point of the search space that renders a trial command without running anything: what
//! `validate` and the image-path warning render the template with.

use vernier_core::{Domain, SearchSpace};

/// Each parameter's first value (its minimum, or first list entry): enough to render a trial.
pub(crate) fn first_point(space: &SearchSpace) -> Vec<(String, String)> {
    space
        .parameters()
        .iter()
        .map(|p| {
            let v = match &p.domain {
                Domain::Double { min, .. } => min.to_string(),
                _ => p.value_at(0).map(|v| v.to_string()).unwrap_or_default(),
            };
            (p.name.clone(), v)
        })
        .collect()
}
