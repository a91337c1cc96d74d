//! What every request handler shares: the object store, the container logs, the address and
//! the shutdown signal.

use crate::logs::PodLogs;
use crate::store::Store;
use std::sync::Arc;

/// What every request handler shares.
#[derive(Debug)]
pub struct Shared {
    /// Objects and their history.
    pub store: Arc<Store>,
    /// Container logs.
    pub logs: PodLogs,
    /// `host:port` the server listens on.
    pub address: String,
    /// Flips to `true` when the double shuts down, ending open watches.
    pub shutdown: tokio::sync::watch::Receiver<bool>,
}
