//! Suggestion services beside the built-in algorithms: Katib's suggestion images, or any
//! `api.v1.beta1.Suggestion` server, plugged in by the composition root, which speaks gRPC
//! (this crate does not). A service answers at a fixed address, or is an image the operator
//! deploys per experiment as Katib does ([`crate::suggestion_deployment`]). An experiment
//! whose algorithm a service serves has its settings checked by that service and its proposals
//! asked of it, as Katib's controller asks its suggestion Deployment; a built-in algorithm of
//! the same name gives way to it.

use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use vernier_core::Suggestions;
use vernier_engine::{ExternalRequest, ResolvedExperiment, SourceError};

/// Where the service for an algorithm runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Endpoint {
    /// At a fixed address (`--suggestion-plugin NAME=ADDR`, or an entry's `address`).
    Address(String),
    /// A katib-config entry without an address: the operator runs its container (the image
    /// and any container field) in a Deployment per experiment.
    Image {
        container: Map<String, Value>,
        service_account: Option<String>,
        /// Where a `FromVolume` experiment's service keeps its state.
        volume: ImageVolume,
    },
}

/// katib-config's volume fields of an entry: the claim a `FromVolume` experiment's service
/// gets, and where its container mounts it; Katib's defaults where they are `None`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ImageVolume {
    /// `volumeMountPath` (Katib's default `/opt/katib/data`).
    pub mount_path: Option<String>,
    /// `persistentVolumeClaimSpec` (Katib's default: `ReadWriteOnce`, 1Gi).
    pub claim_spec: Option<Map<String, Value>>,
}

/// The services an operator was started with, by algorithm name.
#[async_trait::async_trait]
pub trait SuggestionServices: Send + Sync + std::fmt::Debug {
    /// Where the service for each algorithm served runs, by algorithm name.
    fn endpoints(&self) -> BTreeMap<String, Endpoint>;
    /// Katib's `ValidateAlgorithmSettings`, asked of the service at `address`.
    async fn validate(
        &self,
        address: &str,
        experiment: &ResolvedExperiment,
    ) -> Result<(), SourceError>;
    /// Katib's `GetSuggestions`, asked of the service at `address`.
    async fn suggest(
        &self,
        address: &str,
        request: ExternalRequest<'_>,
    ) -> Result<Suggestions, SourceError>;
}

/// What this replica already did for each experiment (by namespace, name and UID): the
/// algorithm spec its service accepted, so the settings are checked once per experiment and
/// edit as Katib checks them once per Suggestion, or the spec it refused; and what it did
/// with or saw of the experiment's suggestion Deployment, so nothing is asked of the API
/// twice.
#[derive(Debug, Default)]
pub struct Checked {
    accepted: Mutex<HashMap<String, String>>,
    /// The spec (its JSON) the service refused, and the message it was refused with.
    refused: Mutex<HashMap<String, (String, String)>>,
    deployed: Mutex<HashMap<String, Deployed>>,
}

/// What a replica last did with or saw of an experiment's suggestion Deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deployed {
    /// Created (or found), not yet seen available.
    Made,
    /// Seen with its `Available` condition: the service may be asked.
    Available,
    /// Deleted when the experiment ended.
    Deleted,
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

    /// Why the service refused `spec` (the experiment spec's JSON) for the experiment `key`,
    /// if it did: a spec is not sent again until it changes, as Katib's failed Suggestion is
    /// not asked again.
    pub fn refusal(&self, key: &str, spec: &str) -> Option<String> {
        let refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        let (what, why) = refused.get(key)?;
        (what == spec).then(|| why.clone())
    }

    pub fn refuse(&self, key: &str, spec: String, message: String) {
        let mut refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        refused.insert(key.to_string(), (spec, message));
    }

    /// What this replica last did with or saw of the experiment's suggestion Deployment;
    /// `None` when nothing.
    pub fn deployed(&self, key: &str) -> Option<Deployed> {
        let deployed = self.deployed.lock().unwrap_or_else(|p| p.into_inner());
        deployed.get(key).copied()
    }

    pub fn set_deployed(&self, key: &str, state: Deployed) {
        let mut deployed = self.deployed.lock().unwrap_or_else(|p| p.into_inner());
        deployed.insert(key.to_string(), state);
    }

    /// Forgets a deleted experiment.
    pub fn forget(&self, key: &str) {
        let mut accepted = self.accepted.lock().unwrap_or_else(|p| p.into_inner());
        accepted.remove(key);
        let mut refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        refused.remove(key);
        let mut deployed = self.deployed.lock().unwrap_or_else(|p| p.into_inner());
        deployed.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_was_done_is_kept_per_experiment_until_it_is_forgotten() {
        let c = Checked::default();
        c.accept("ns/a/u1", "{\"algorithmName\":\"tpe\"}".into());
        assert!(c.holds("ns/a/u1", "{\"algorithmName\":\"tpe\"}"));
        assert!(!c.holds("ns/a/u1", "{\"algorithmName\":\"random\"}"));
        assert!(!c.holds("ns/a/u2", "{\"algorithmName\":\"tpe\"}"));
        assert_eq!(c.deployed("ns/a/u1"), None);
        c.refuse("ns/a/u1", "{\"v\":1}".into(), "bad".into());
        assert_eq!(c.refusal("ns/a/u1", "{\"v\":1}").as_deref(), Some("bad"));
        assert_eq!(c.refusal("ns/a/u1", "{\"v\":2}"), None);
        c.set_deployed("ns/a/u1", Deployed::Made);
        assert_eq!(c.deployed("ns/a/u1"), Some(Deployed::Made));
        c.set_deployed("ns/a/u1", Deployed::Deleted);
        assert_eq!(c.deployed("ns/a/u1"), Some(Deployed::Deleted));
        c.forget("ns/a/u1");
        assert_eq!(c.deployed("ns/a/u1"), None);
        assert!(!c.holds("ns/a/u1", "{\"algorithmName\":\"tpe\"}"));
        assert_eq!(c.refusal("ns/a/u1", "{\"v\":1}"), None);
    }
}
