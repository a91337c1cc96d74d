//! How the operator behaves (`vernier operator`'s flags), apart from the clients and caches
//! of a running operator, so that renderers such as the collector sidecar need only this.

use crate::jobs::TrialKind;
use std::time::Duration;

/// The image with the `vernier` binary, as `deploy/` builds and tags it.
pub const DEFAULT_COLLECTOR_IMAGE: &str = "vernier:latest";

/// The operator's DBManager Service (`deploy/base/service.yaml`) in its namespace.
pub const DEFAULT_DB_MANAGER_ADDRESS: &str = "vernier-db-manager.vernier-system:6789";

/// How the operator behaves.
#[derive(Debug, Clone)]
pub struct OperatorConfig {
    /// Reconciles run at once per controller.
    pub concurrency: u16,
    /// Job kinds trials may create.
    pub trial_kinds: Vec<TrialKind>,
    /// Watch this namespace only (for the namespaced RBAC variant); all when `None`.
    pub namespace: Option<String>,
    /// A running trial's observation is written to its status at most this often: its log
    /// follower wakes the trial's reconcile after recording new lines, no sooner than this
    /// after the last wake-up. Trials with pushed metrics are re-read at this interval.
    pub observation_interval: Duration,
    /// This replica's name in events and in the leader Lease.
    pub identity: String,
    /// Image of the File/TensorFlowEvent metrics-collector sidecar (`vernier collect`).
    pub collector_image: String,
    /// Where that sidecar reports metrics: this operator's DBManager, HOST:PORT.
    pub db_manager_address: String,
    /// ConfigMaps are not watched: an experiment found invalid whose trial template lives in
    /// one is validated again this often, so it runs once the ConfigMap appears or is fixed.
    pub config_map_recheck: Duration,
}

impl Default for OperatorConfig {
    fn default() -> Self {
        OperatorConfig {
            concurrency: 8,
            trial_kinds: crate::jobs::parse_trial_kinds(crate::jobs::DEFAULT_TRIAL_RESOURCES)
                .unwrap_or_default(),
            namespace: None,
            observation_interval: Duration::from_secs(5),
            identity: "vernier-operator".into(),
            collector_image: DEFAULT_COLLECTOR_IMAGE.into(),
            db_manager_address: DEFAULT_DB_MANAGER_ADDRESS.into(),
            config_map_recheck: Duration::from_secs(15),
        }
    }
}
