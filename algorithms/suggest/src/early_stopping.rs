//! The early-stopping registry: builds a rule by its `spec.earlyStopping.algorithmName`,
//! validating its settings, for the local driver, the operator and the gRPC service.

use crate::asha::AshaPruner;
use crate::error::AlgorithmError;
use crate::medianstop::MedianStop;
use vernier_core::{EARLY_STOPPING_NAMES, EarlyStopper};

/// Every early-stopping algorithm name Vernier accepts: core's one list, which spec
/// validation reads too.
pub use vernier_core::EARLY_STOPPING_NAMES as KNOWN_EARLY_STOPPERS;

/// Builds the named early-stopping rule, validating its settings.
pub fn build_early_stopper(
    name: &str,
    settings: &[(String, String)],
) -> Result<Box<dyn EarlyStopper>, AlgorithmError> {
    match name {
        crate::medianstop::NAME => Ok(Box::new(MedianStop::from_settings(settings)?)),
        "asha" => Ok(Box::new(AshaPruner::from_settings(settings)?)),
        _ => Err(AlgorithmError::UnknownAlgorithm {
            name: name.to_string(),
            known: EARLY_STOPPING_NAMES.join(", "),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_name_builds_and_others_are_refused() {
        for name in EARLY_STOPPING_NAMES {
            assert_eq!(build_early_stopper(name, &[]).unwrap().name(), *name);
        }
        let e = build_early_stopper("asha-ish", &[])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("unknown algorithm name \"asha-ish\""), "{e}");
        assert!(e.contains("medianstop, asha"), "{e}");
    }
}
