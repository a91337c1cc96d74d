//! One driver per experiment, the operator's side: the operator holds the store's lease of
//! every experiment it drives, as `vernier run` does, so a local driver sharing its database
//! cannot drive an experiment of the same name (their trial names and observation logs would
//! mix), and the operator does not drive one a local driver holds. One task renews them all.

use crate::objects::now_us;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use vernier_store::{
    HEARTBEAT_EVERY, LEASE_TTL, LeaseClaim, OPERATOR_LEASE_OWNER, SqlStore, StoreError,
};

/// The experiment leases this operator holds. A lease is keyed by the experiment's name alone
/// (local experiments have no namespace), so same-named experiments of several namespaces
/// share it: it is released when the last of them ends.
#[derive(Debug)]
pub struct ExperimentLeases {
    claim: LeaseClaim,
    /// Experiment name → the namespaces in which this operator drives it.
    held: Mutex<BTreeMap<String, BTreeSet<String>>>,
}

impl ExperimentLeases {
    /// Leases held in the name of the operator; `host` is the pod (its identity).
    pub fn new(host: &str) -> Self {
        ExperimentLeases {
            claim: LeaseClaim {
                owner: OPERATOR_LEASE_OWNER.to_owned(),
                host: host.to_owned(),
                pid: i64::from(std::process::id()),
            },
            held: Mutex::default(),
        }
    }

    /// Takes (or keeps) the lease of `name` for the experiment in `ns`; fails with
    /// [`StoreError::LeaseHeld`] while a live local driver holds it.
    pub async fn hold(&self, store: &SqlStore, ns: &str, name: &str) -> Result<(), StoreError> {
        if self.add_if_held(ns, name) {
            return Ok(());
        }
        // The operator's pid says nothing about a holder on another host: only the heartbeat.
        let never_gone = |_: &vernier_store::LeaseRow| false;
        store
            .acquire_lease(name, &self.claim, now_us(), LEASE_TTL, &never_gone)
            .await?;
        self.lock()
            .entry(name.to_owned())
            .or_default()
            .insert(ns.to_owned());
        Ok(())
    }

    /// The experiment in `ns` is no longer driven; the lease goes when no namespace needs it.
    pub async fn release(&self, store: &SqlStore, ns: &str, name: &str) -> Result<(), StoreError> {
        let last = {
            let mut held = self.lock();
            match held.get_mut(name) {
                Some(spaces) => {
                    spaces.remove(ns);
                    let empty = spaces.is_empty();
                    if empty {
                        held.remove(name);
                    }
                    empty
                }
                // Not held here: nothing to write. (A lease a dead predecessor left lapses
                // on its own, since no one renews it.)
                None => false,
            }
        };
        if last {
            store.release_lease(name, &self.claim.owner).await?;
        }
        Ok(())
    }

    /// Renews every held lease each [`HEARTBEAT_EVERY`] until `stop`, then releases them all so
    /// a local driver need not wait for them to lapse. A lease found taken over is dropped:
    /// the experiment's next reconcile asks for it again and is refused. A lease of an
    /// experiment `exists(namespace, name)` no longer finds is released: a deleted experiment
    /// has no finalizer, so no reconcile sees it go.
    pub async fn keep(
        &self,
        store: &SqlStore,
        exists: impl Fn(&str, &str) -> bool,
        stop: impl Future<Output = ()>,
    ) {
        let renew = async {
            let mut tick = tokio::time::interval(HEARTBEAT_EVERY);
            loop {
                tick.tick().await;
                let gone = forget_missing(&mut self.lock(), &exists);
                for name in gone {
                    tracing::info!("experiment {name}: deleted; releasing its lease");
                    if let Err(e) = store.release_lease(&name, &self.claim.owner).await {
                        tracing::warn!("experiment {name}: releasing its lease: {e}");
                    }
                }
                for name in self.names() {
                    match store.renew_lease(&name, &self.claim.owner, now_us()).await {
                        Ok(()) => {}
                        Err(StoreError::LeaseLost { .. }) => {
                            tracing::warn!("experiment {name}: another driver took its lease");
                            self.lock().remove(&name);
                        }
                        Err(e) => tracing::warn!("experiment {name}: renewing its lease: {e}"),
                    }
                }
            }
        };
        tokio::select! {
            _ = renew => {}
            _ = stop => {}
        }
        let held = std::mem::take(&mut *self.lock());
        for name in held.into_keys() {
            if let Err(e) = store.release_lease(&name, &self.claim.owner).await {
                tracing::warn!("experiment {name}: releasing its lease: {e}");
            }
        }
    }

    fn add_if_held(&self, ns: &str, name: &str) -> bool {
        match self.lock().get_mut(name) {
            Some(spaces) => {
                spaces.insert(ns.to_owned());
                true
            }
            None => false,
        }
    }

    fn names(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, BTreeSet<String>>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Drops from `held` the namespaces whose experiment `exists(namespace, name)` no longer
/// finds; returns the names no namespace holds any more, whose leases are to be released.
fn forget_missing(
    held: &mut BTreeMap<String, BTreeSet<String>>,
    exists: impl Fn(&str, &str) -> bool,
) -> Vec<String> {
    let mut gone = Vec::new();
    held.retain(|name, spaces| {
        spaces.retain(|ns| exists(ns, name));
        if spaces.is_empty() {
            gone.push(name.clone());
        }
        !spaces.is_empty()
    });
    gone
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_goes_when_no_namespace_still_has_its_experiment() {
        let held = |pairs: &[(&str, &[&str])]| -> BTreeMap<String, BTreeSet<String>> {
            pairs
                .iter()
                .map(|(n, spaces)| {
                    (
                        n.to_string(),
                        spaces.iter().map(|s| s.to_string()).collect(),
                    )
                })
                .collect()
        };
        // (held, the experiments that exist as namespace/name, held after, released)
        let table: [(_, &[&str], _, &[&str]); 4] = [
            (
                held(&[("a", &["x"])]),
                &["x/a"],
                held(&[("a", &["x"])]),
                &[],
            ),
            (held(&[("a", &["x"])]), &[], held(&[]), &["a"]),
            (
                held(&[("a", &["x", "y"]), ("b", &["x"])]),
                &["y/a"],
                held(&[("a", &["y"])]),
                &["b"],
            ),
            (held(&[]), &["x/a"], held(&[]), &[]),
        ];
        for (mut before, existing, after, released) in table {
            let exists = |ns: &str, name: &str| existing.contains(&format!("{ns}/{name}").as_str());
            let gone = forget_missing(&mut before, exists);
            assert_eq!(before, after);
            assert_eq!(gone, released);
        }
    }
}
