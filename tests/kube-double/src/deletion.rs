//! DELETE and everything it sets off: preconditions, propagation policies (Foreground,
//! Background, Orphan), finalizers (`deletionTimestamp` set, object kept until they are gone),
//! and the garbage collector (dependents whose every owner is gone are deleted; a
//! foreground-deleted owner goes once its dependents are gone). A real cluster does the
//! collection asynchronously in kube-controller-manager; here it happens inside the request
//! that removed the owner, which clients cannot tell apart except by timing.

use crate::meta::{self, meta_str};
use crate::registry::{GroupResource, ResourceType, types_from_crd};
use crate::status::ApiStatus;
use crate::store::{ChangeType, State, present};
use serde_json::{Value, json};

/// `propagationPolicy` of DeleteOptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// Delete dependents first, then the owner.
    Foreground,
    /// Delete the owner now, the dependents after it.
    Background,
    /// Keep the dependents, dropping their owner reference.
    Orphan,
}

impl Propagation {
    /// Parse the API's spelling; the error names the field and value.
    pub fn parse(text: &str) -> Result<Self, ApiStatus> {
        match text {
            "Foreground" => Ok(Propagation::Foreground),
            "Background" => Ok(Propagation::Background),
            "Orphan" => Ok(Propagation::Orphan),
            other => Err(ApiStatus::bad_request(format!(
                "propagationPolicy: Unsupported value: {other:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""
            ))),
        }
    }
}

/// DeleteOptions as far as the double honours them.
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    /// Propagation policy; `None` means the resource's default.
    pub propagation: Option<Propagation>,
    /// `preconditions.uid`.
    pub uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub resource_version: Option<String>,
    /// `dryRun=All`.
    pub dry_run: bool,
}

/// What a DELETE did.
#[derive(Debug)]
pub enum Deletion {
    /// The object is gone (HTTP 200 with its last state).
    Removed(Value),
    /// The object waits on finalizers or dependents (HTTP 202 with its current state).
    Pending(Value),
}

const FOREGROUND: &str = "foregroundDeletion";

impl State {
    /// DELETE one object.
    pub fn delete(
        &mut self,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        options: &DeleteOptions,
    ) -> Result<Deletion, ApiStatus> {
        let gr = rt.group_resource();
        let ns = if rt.namespaced { namespace } else { "" };
        let old = self
            .stored(&gr, ns, name)
            .cloned()
            .ok_or_else(|| ApiStatus::not_found(&gr, name))?;
        if let Some(uid) = &options.uid {
            let actual = meta_str(&old, "uid");
            if uid != actual {
                return Err(ApiStatus::conflict(
                    &gr,
                    name,
                    &format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}"
                    ),
                ));
            }
        }
        if let Some(rv) = &options.resource_version {
            let actual = meta_str(&old, "resourceVersion");
            if rv != actual {
                return Err(ApiStatus::conflict(
                    &gr,
                    name,
                    &format!(
                        "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {actual}"
                    ),
                ));
            }
        }
        if meta::is_terminating(&old) {
            return Ok(Deletion::Pending(present(rt, old)));
        }
        let policy = options.propagation.unwrap_or(if rt.orphans_by_default {
            Propagation::Orphan
        } else {
            Propagation::Background
        });
        if options.dry_run {
            let waits = !meta::finalizers(&old).is_empty() || policy == Propagation::Foreground;
            return Ok(if waits {
                Deletion::Pending(present(rt, old))
            } else {
                Deletion::Removed(present(rt, old))
            });
        }
        let uid = meta_str(&old, "uid").to_owned();
        if policy == Propagation::Orphan {
            self.orphan_dependents(&uid);
        }
        if policy == Propagation::Foreground {
            let mut marked = old.clone();
            mark_terminating(&mut marked);
            let mut finalizers = meta::finalizers(&marked);
            finalizers.push(FOREGROUND.to_owned());
            meta::set_finalizers(&mut marked, &finalizers);
            self.commit(ChangeType::Modified, &gr, marked, Some(old));
            for (dep_gr, dep_ns, dep_name) in self.dependents_of(&uid) {
                self.delete_internally(&dep_gr, &dep_ns, &dep_name);
            }
            self.finish_foreground(&uid);
            return Ok(match self.stored(&gr, ns, name) {
                Some(current) => Deletion::Pending(present(rt, current.clone())),
                None => Deletion::Removed(present(rt, self.last_committed())),
            });
        }
        if meta::finalizers(&old).is_empty() {
            self.remove(&gr, old, None);
            Ok(Deletion::Removed(present(rt, self.last_committed())))
        } else {
            let mut marked = old.clone();
            mark_terminating(&mut marked);
            let kept = self.commit(ChangeType::Modified, &gr, marked, Some(old));
            Ok(Deletion::Pending(present(rt, kept)))
        }
    }

    /// Background deletion on the server's own behalf (garbage collection, namespace
    /// cleanup): finalizers are honoured, nothing is reported back.
    fn delete_internally(&mut self, gr: &GroupResource, namespace: &str, name: &str) {
        let Some(old) = self.stored(gr, namespace, name).cloned() else {
            return;
        };
        if meta::is_terminating(&old) {
            return;
        }
        if meta::finalizers(&old).is_empty() {
            self.remove(gr, old, None);
        } else {
            let mut marked = old.clone();
            mark_terminating(&mut marked);
            self.commit(ChangeType::Modified, gr, marked, Some(old));
        }
    }

    /// Take an object out of storage and run what its disappearance sets off.
    pub(crate) fn remove(&mut self, gr: &GroupResource, object: Value, previous: Option<Value>) {
        let uid = meta_str(&object, "uid").to_owned();
        let owners = meta::owner_uids(&object);
        let namespace_name = meta_str(&object, "name").to_owned();
        let crd_types =
            if gr.group == "apiextensions.k8s.io" && gr.resource == "customresourcedefinitions" {
                types_from_crd(&object).ok()
            } else {
                None
            };
        self.commit(ChangeType::Deleted, gr, object, previous);
        if let Some(types) = crd_types
            && let Some(first) = types.first()
        {
            let custom = first.group_resource();
            for (ns, name) in self.names_of(&custom, None) {
                if let Some(obj) = self.stored(&custom, &ns, &name).cloned() {
                    self.remove(&custom, obj, None);
                }
            }
            self.registry.unregister(&custom);
        }
        if gr.group.is_empty() && gr.resource == "namespaces" {
            for resource in self.resources() {
                for (ns, name) in self.names_of(&resource, Some(&namespace_name)) {
                    self.delete_internally(&resource, &ns, &name);
                }
            }
        }
        self.collect_dependents_of(&uid);
        for owner in owners {
            self.finish_foreground(&owner);
        }
    }

    /// Delete every dependent of `uid` whose owners are now all gone.
    fn collect_dependents_of(&mut self, uid: &str) {
        for (gr, ns, name) in self.dependents_of(uid) {
            self.collect_garbage_of(&gr, &ns, &name);
        }
    }

    /// Delete one object if every owner it names is gone.
    pub(crate) fn collect_garbage_of(&mut self, gr: &GroupResource, namespace: &str, name: &str) {
        let Some(object) = self.stored(gr, namespace, name) else {
            return;
        };
        let owners = meta::owner_uids(object);
        if !owners.is_empty() && owners.iter().all(|u| !self.uid_exists(u)) {
            self.delete_internally(gr, namespace, name);
        }
    }

    /// Complete a foreground deletion of `uid` once none of its dependents is left.
    fn finish_foreground(&mut self, uid: &str) {
        let Some((gr, ns, name)) = self.locate(uid) else {
            return;
        };
        let Some(owner) = self.stored(&gr, &ns, &name).cloned() else {
            return;
        };
        let finalizers = meta::finalizers(&owner);
        if !finalizers.iter().any(|f| f == FOREGROUND) || !self.dependents_of(uid).is_empty() {
            return;
        }
        let remaining: Vec<String> = finalizers.into_iter().filter(|f| f != FOREGROUND).collect();
        let mut next = owner.clone();
        meta::set_finalizers(&mut next, &remaining);
        if remaining.is_empty() {
            self.remove(&gr, next, Some(owner));
        } else {
            self.commit(ChangeType::Modified, &gr, next, Some(owner));
        }
    }

    /// Drop owner references to `uid` from its dependents (what the `orphan` finalizer does).
    fn orphan_dependents(&mut self, uid: &str) {
        for (gr, ns, name) in self.dependents_of(uid) {
            let Some(old) = self.stored(&gr, &ns, &name).cloned() else {
                continue;
            };
            let mut next = old.clone();
            if let Some(refs) = next
                .pointer_mut("/metadata/ownerReferences")
                .and_then(Value::as_array_mut)
            {
                refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid));
                if refs.is_empty() {
                    meta::metadata_mut(&mut next).remove("ownerReferences");
                }
            }
            self.commit(ChangeType::Modified, &gr, next, Some(old));
        }
    }
}

fn mark_terminating(object: &mut Value) {
    let meta = meta::metadata_mut(object);
    meta.insert("deletionTimestamp".to_owned(), json!(meta::now()));
    meta.insert("deletionGracePeriodSeconds".to_owned(), json!(0));
}
