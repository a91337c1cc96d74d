//! An external suggestion source (a Katib suggestion service reached over gRPC) as both drivers
//! see it: how a call may fail, and a trial with the times Katib's controller sends. The
//! drivers call the source through their own hooks; the composition root speaks gRPC.

use crate::resolved::ResolvedExperiment;
use vernier_core::TrialRecord;

/// Why a source gave no proposals: an outcome the driver acts on (wait and retry, or stop),
/// not an error of the engine.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceError {
    /// Down, unreachable or too slow: worth waiting for.
    Unavailable(String),
    /// It answered, and the answer is an error (bad settings, bad request, bad reply).
    Rejected(String),
}

/// A trial as a source is told of it: its record and, as Katib's controller sends them, when
/// it started and ended (microseconds since the epoch; `None` while unset).
#[derive(Debug, Clone, Copy)]
pub struct TimedTrial<'a> {
    pub record: &'a TrialRecord,
    pub started_us: Option<i64>,
    pub completed_us: Option<i64>,
}

/// One request for proposals, with Katib's controller semantics: the experiment's own trials
/// (no warm-start results), how many are wanted now and how many in total so far.
#[derive(Debug, Clone)]
pub struct ExternalRequest<'a> {
    pub experiment: &'a ResolvedExperiment,
    pub trials: Vec<TimedTrial<'a>>,
    /// Katib `current_request_number`.
    pub count: usize,
    /// Katib `total_request_number`: trials so far plus `count`.
    pub total: usize,
    /// What the source returned last time (its settings), if anything.
    pub state: Option<&'a str>,
}

/// Why an experiment is refused when the service serving its algorithm refused its settings
/// (`service` as the driver names it): one sentence for both drivers.
pub fn settings_refused(service: &str, message: &str) -> String {
    format!("spec.algorithm: checking the settings with {service} failed: {message}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_settings_refusal_names_the_field_the_service_and_its_words() {
        assert_eq!(
            super::settings_refused("suggestion plugin tpe at h:1", "unknown setting x"),
            "spec.algorithm: checking the settings with suggestion plugin tpe at h:1 failed: \
             unknown setting x"
        );
    }
}
