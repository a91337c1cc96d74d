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
use std::collections::HashSet;
use std::sync::RwLock;
use tokio::sync::mpsc::UnboundedSender;

/// How long a reconcile waits for the trial cache's first listing before reading the API.
const READY_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Set by `run::run_controllers` for as long as the controllers run; empty otherwise.
#[derive(Debug, Default)]
pub struct Shared {
    running: RwLock<Option<Running>>,
    /// Trial kinds (`Kind.group`) the API server did not serve when the controllers started, so
    /// their jobs are not watched: a CRD installed since serves them, and their trials are
    /// looked at every observation interval instead of waiting for a job event.
    unwatched: RwLock<HashSet<String>>,
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

    /// Records that jobs of `kind` in `group` are not watched.
    pub(crate) fn not_watched(&self, kind: &str, group: &str) {
        let mut set = self.unwatched.write().unwrap_or_else(|e| e.into_inner());
        set.insert(format!("{kind}.{group}"));
    }

    /// Whether a change of the job `run_spec` describes reaches its trial as an event.
    pub fn watches(&self, run_spec: Option<&serde_json::Value>) -> bool {
        let field = |f: &str| {
            run_spec
                .and_then(|r| r.get(f))
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
        };
        let group = field("apiVersion").rsplit_once('/').map_or("", |(g, _)| g);
        let key = format!("{}.{group}", field("kind"));
        let set = self.unwatched.read().unwrap_or_else(|e| e.into_inner());
        !set.contains(&key)
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn jobs_of_an_unserved_kind_are_not_watched() {
        let shared = Shared::default();
        shared.not_watched("Workflow", "argoproj.io");
        shared.not_watched("Pod", "");
        let job = |api: &str, kind: &str| json!({"apiVersion": api, "kind": kind});
        let cases = [
            (job("argoproj.io/v1alpha1", "Workflow"), false),
            (job("v1", "Pod"), false),
            (job("batch/v1", "Job"), true),
            (job("example.com/v1", "Workflow"), true),
        ];
        for (run_spec, want) in cases {
            assert_eq!(shared.watches(Some(&run_spec)), want, "{run_spec}");
        }
    }
}
