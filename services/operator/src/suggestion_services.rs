//! Suggestion services beside the built-in algorithms: Katib's suggestion images, or any
//! `api.v1.beta1.Suggestion` server, reached at an address the composition root knows (it
//! speaks gRPC; this crate does not). An experiment whose algorithm a service serves has its
//! settings checked by that service and its proposals asked of it, as Katib's controller asks
//! its suggestion Deployment; a built-in algorithm of the same name gives way to it.

use std::collections::HashMap;
use std::sync::Mutex;
use vernier_core::Suggestions;
use vernier_engine::{ExternalRequest, ResolvedExperiment, SourceError};

/// The services an operator was started with, by algorithm name.
#[async_trait::async_trait]
pub trait SuggestionServices: Send + Sync + std::fmt::Debug {
    /// The algorithm names served.
    fn algorithms(&self) -> Vec<String>;
    /// Names the service serving `algorithm` in messages (e.g. `suggestion plugin random at
    /// 10.0.0.5:6789`); `None` when no service serves it.
    fn describe(&self, algorithm: &str) -> Option<String>;
    /// Katib's `ValidateAlgorithmSettings` with the service serving the experiment's algorithm.
    async fn validate(&self, experiment: &ResolvedExperiment) -> Result<(), SourceError>;
    /// Katib's `GetSuggestions` with the service serving the experiment's algorithm.
    async fn suggest(&self, request: ExternalRequest<'_>) -> Result<Suggestions, SourceError>;
}

/// The algorithm spec (name and settings) each experiment's service last accepted, so the
/// service is asked to check the settings once per experiment and edit, as Katib asks once per
/// Suggestion, not on every reconcile.
#[derive(Debug, Default)]
pub struct Checked {
    accepted: Mutex<HashMap<String, String>>,
}

impl Checked {
    /// Whether the service accepted `algorithm` (the spec's JSON) for the experiment `key`.
    pub fn holds(&self, key: &str, algorithm: &str) -> bool {
        let accepted = self.accepted.lock().unwrap_or_else(|p| p.into_inner());
        accepted.get(key).is_some_and(|a| a == algorithm)
    }

    pub fn accept(&self, key: &str, algorithm: String) {
        let mut accepted = self.accepted.lock().unwrap_or_else(|p| p.into_inner());
        accepted.insert(key.to_string(), algorithm);
    }
}
