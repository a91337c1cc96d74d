//! What the two controllers share while this replica leads: the cache of Trial objects that the
//! experiment reconciler lists from, and the channel through which a trial's log follower asks
//! for the trial to be reconciled when it has recorded new observations.
//!
//! Listing an experiment's trials from the API server on every reconcile made an experiment of
//! N trials cost O(N) per trial change, O(N²) in all; and refreshing every running trial's
//! observation on a timer made a thousand running trials two hundred reconciles a second even
//! when their logs were silent. Both now come from events instead.

use kube::api::DynamicObject;
use kube::runtime::reflector::{ObjectRef, Store};
use std::sync::RwLock;
use tokio::sync::mpsc::UnboundedSender;

/// How long a reconcile waits for the trial cache's first listing before reading the API.
const READY_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Set by `run::run_controllers` for as long as the controllers run; empty otherwise.
#[derive(Debug, Default)]
pub struct Shared {
    running: RwLock<Option<Running>>,
}

#[derive(Debug, Clone)]
struct Running {
    trials: Store<DynamicObject>,
    wake: UnboundedSender<ObjectRef<DynamicObject>>,
}

impl Shared {
    pub(crate) fn start(
        &self,
        trials: Store<DynamicObject>,
        wake: UnboundedSender<ObjectRef<DynamicObject>>,
    ) {
        *self.running.write().unwrap_or_else(|e| e.into_inner()) = Some(Running { trials, wake });
    }

    pub(crate) fn stop(&self) {
        *self.running.write().unwrap_or_else(|e| e.into_inner()) = None;
    }

    fn get(&self) -> Option<Running> {
        self.running
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether the controllers run (and log followers' wake-ups reach them).
    pub fn is_running(&self) -> bool {
        self.get().is_some()
    }

    /// The trial cache, once its first listing is complete; `None` when the controllers are not
    /// running (callers then read the API server).
    pub async fn trials(&self) -> Option<Store<DynamicObject>> {
        let store = self.get()?.trials;
        // A cache still filling would show an experiment fewer trials than it has. One that
        // cannot fill (the watch refused, say) must not hold reconciles: they read the API.
        tokio::time::timeout(READY_WAIT, store.wait_until_ready())
            .await
            .ok()?
            .ok()?;
        Some(store)
    }

    /// Asks for the trial `namespace/name` to be reconciled soon; several requests before it
    /// runs are merged into one reconcile.
    pub fn wake_trial(&self, namespace: &str, name: &str) {
        if let Some(r) = self.get() {
            let _ = r.wake.send(
                ObjectRef::new_with(name, crate::objects::trial_resource()).within(namespace),
            );
        }
    }
}
