//! The object store behind the fake API server: objects of every resource as JSON, one global
//! `resourceVersion` counter, and the change history that watches replay. Writes go through
//! one pipeline ([`State::write`]) so optimistic concurrency, the status subresource rule,
//! `generation`, finalizers and the watch events behave the same for PUT, every patch type and
//! the server's own bookkeeping.

use crate::meta::{self, meta_str};
use crate::registry::{GroupResource, Registry, ResourceType, types_from_crd};
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::ApiStatus;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::broadcast;

/// What happened to an object, as watch events name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeType {
    /// Created.
    Added,
    /// Updated (including getting a `deletionTimestamp`).
    Modified,
    /// Removed from storage.
    Deleted,
}

/// One committed change, kept in the history and broadcast to live watches.
#[derive(Debug, Clone)]
pub struct ChangeEvent {
    /// The `resourceVersion` the change produced.
    pub resource_version: u64,
    /// What happened.
    pub change: ChangeType,
    /// Which resource.
    pub resource: GroupResource,
    /// Namespace, empty for cluster-scoped objects.
    pub namespace: String,
    /// The object after the change (the last state for deletions).
    pub object: Value,
    /// The object before the change, for updates: a watch with a selector needs it to turn
    /// "stopped matching" into DELETED and "started matching" into ADDED.
    pub previous: Option<Value>,
}

/// Which endpoint a write came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// The object itself: `.status` changes are ignored when a status subresource exists.
    Main,
    /// `/status`: only `.status` changes are taken.
    Status,
}

type Objects = BTreeMap<(String, String), Value>;

/// Everything behind the store's lock.
#[derive(Debug)]
pub struct State {
    /// Served resource types (built-ins plus CRDs).
    pub registry: Registry,
    objects: BTreeMap<GroupResource, Objects>,
    uids: HashMap<String, (GroupResource, String, String)>,
    /// Owner uid → dependents, so garbage collection does not scan every object.
    dependents: HashMap<String, BTreeSet<(GroupResource, String, String)>>,
    resource_version: u64,
    history: VecDeque<Arc<ChangeEvent>>,
    history_limit: usize,
    compacted_through: u64,
    events: broadcast::Sender<Arc<ChangeEvent>>,
}

/// The store shared by every request handler.
#[derive(Debug)]
pub struct Store {
    state: Mutex<State>,
    events: broadcast::Sender<Arc<ChangeEvent>>,
}

impl Store {
    /// An empty store serving the built-in kinds, with the `default`, `kube-system` and
    /// `kube-public` namespaces, keeping the last `history_limit` changes for watches.
    pub fn new(history_limit: usize) -> Self {
        // Room for bursts (a benchmark creating thousands of objects) before a slow watch lags
        // and has to relist after its 410.
        let (events, _) = broadcast::channel(65_536);
        let mut state = State {
            registry: Registry::with_builtins(),
            objects: BTreeMap::new(),
            uids: HashMap::new(),
            dependents: HashMap::new(),
            resource_version: 0,
            history: VecDeque::new(),
            history_limit: history_limit.max(1),
            compacted_through: 0,
            events: events.clone(),
        };
        for ns in ["default", "kube-system", "kube-public"] {
            let rt = state
                .registry
                .lookup("", "v1", "namespaces")
                .cloned()
                .expect("namespaces are built in");
            let body = json!({"metadata": {"name": ns}, "spec": {"finalizers": ["kubernetes"]}});
            state
                .create(&rt, None, body, false)
                .expect("built-in namespaces are valid");
        }
        Store {
            state: Mutex::new(state),
            events,
        }
    }

    /// Lock the state (a poisoned lock is recovered: every mutation leaves it consistent
    /// before anything can panic).
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A receiver of every change committed from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<ChangeEvent>> {
        self.events.subscribe()
    }
}

/// The object as served through `rt`: `apiVersion` and `kind` of the requested version
/// (versions of one CRD share storage without conversion).
pub fn present(rt: &ResourceType, mut object: Value) -> Value {
    if let Some(map) = object.as_object_mut() {
        map.insert("apiVersion".to_owned(), json!(rt.api_version()));
        map.insert("kind".to_owned(), json!(rt.kind));
    }
    object
}

impl State {
    /// The newest `resourceVersion` handed out.
    pub fn resource_version(&self) -> u64 {
        self.resource_version
    }

    /// Drop the whole change history, so a watch from any earlier `resourceVersion` gets 410
    /// Gone — what etcd compaction does to a real cluster.
    pub fn compact(&mut self) {
        self.history.clear();
        self.compacted_through = self.resource_version;
    }

    /// Changes after `since` of one resource, or 410 Gone when they were compacted away.
    pub fn changes_since(
        &self,
        resource: &GroupResource,
        since: u64,
    ) -> Result<Vec<Arc<ChangeEvent>>, ApiStatus> {
        if since < self.compacted_through {
            let oldest = self
                .history
                .front()
                .map_or(self.resource_version, |e| e.resource_version);
            return Err(ApiStatus::expired(since, oldest));
        }
        Ok(self
            .history
            .iter()
            .filter(|e| e.resource_version > since && &e.resource == resource)
            .cloned()
            .collect())
    }

    fn key_of(rt: &ResourceType, namespace: &str, name: &str) -> (String, String) {
        let ns = if rt.namespaced { namespace } else { "" };
        (ns.to_owned(), name.to_owned())
    }

    /// The stored object, unpresented (with the apiVersion it was written through).
    pub fn stored(&self, gr: &GroupResource, namespace: &str, name: &str) -> Option<&Value> {
        self.objects
            .get(gr)?
            .get(&(namespace.to_owned(), name.to_owned()))
    }

    /// GET one object.
    pub fn get(&self, rt: &ResourceType, namespace: &str, name: &str) -> Result<Value, ApiStatus> {
        let gr = rt.group_resource();
        let (ns, name) = Self::key_of(rt, namespace, name);
        self.stored(&gr, &ns, &name)
            .cloned()
            .map(|o| present(rt, o))
            .ok_or_else(|| ApiStatus::not_found(&gr, &name))
    }

    /// Objects of `rt` in `namespace` (all namespaces when `None`) matching both selectors.
    pub fn list(
        &self,
        rt: &ResourceType,
        namespace: Option<&str>,
        labels: &LabelSelector,
        fields: &FieldSelector,
    ) -> Vec<Value> {
        let Some(objects) = self.objects.get(&rt.group_resource()) else {
            return Vec::new();
        };
        objects
            .iter()
            .filter(|((ns, _), _)| namespace.is_none_or(|want| !rt.namespaced || ns == want))
            .filter(|(_, o)| labels.matches(o) && fields.matches(o))
            .map(|(_, o)| present(rt, o.clone()))
            .collect()
    }

    /// Names of the stored objects of `gr`, in `namespace` when given.
    pub fn names_of(&self, gr: &GroupResource, namespace: Option<&str>) -> Vec<(String, String)> {
        self.objects
            .get(gr)
            .map(|objects| {
                objects
                    .keys()
                    .filter(|(ns, _)| namespace.is_none_or(|want| ns == want))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Every resource that has (or had) stored objects.
    pub fn resources(&self) -> Vec<GroupResource> {
        self.objects.keys().cloned().collect()
    }

    /// Where the object with this `uid` lives.
    pub fn locate(&self, uid: &str) -> Option<(GroupResource, String, String)> {
        self.uids.get(uid).cloned()
    }

    /// Does an object with this `uid` exist?
    pub fn uid_exists(&self, uid: &str) -> bool {
        self.uids.contains_key(uid)
    }

    /// Objects whose `ownerReferences` name `uid`, as (resource, namespace, name).
    pub fn dependents_of(&self, uid: &str) -> Vec<(GroupResource, String, String)> {
        self.dependents
            .get(uid)
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn index_owners(&mut self, object: &Value, key: &(GroupResource, String, String), add: bool) {
        for owner in meta::owner_uids(object) {
            let set = self.dependents.entry(owner.clone()).or_default();
            if add {
                set.insert(key.clone());
            } else {
                set.remove(key);
                if set.is_empty() {
                    self.dependents.remove(&owner);
                }
            }
        }
    }

    /// A registered type of `gr` to present objects through (any served version).
    pub fn type_of(&self, gr: &GroupResource) -> Option<ResourceType> {
        let groups = self.registry.groups();
        let versions = groups.get(&gr.group)?;
        versions
            .iter()
            .find_map(|v| self.registry.lookup(&gr.group, v, &gr.resource))
            .cloned()
    }

    /// Record a change: bump the global resourceVersion, stamp it on the object, update the
    /// maps and the history, and wake the watches.
    pub(crate) fn commit(
        &mut self,
        change: ChangeType,
        gr: &GroupResource,
        mut object: Value,
        previous: Option<Value>,
    ) -> Value {
        self.resource_version += 1;
        let rv = self.resource_version;
        meta::metadata_mut(&mut object).insert("resourceVersion".to_owned(), json!(rv.to_string()));
        let namespace = meta_str(&object, "namespace").to_owned();
        let name = meta_str(&object, "name").to_owned();
        let uid = meta_str(&object, "uid").to_owned();
        let objects = self.objects.entry(gr.clone()).or_default();
        let key = (gr.clone(), namespace.clone(), name.clone());
        let replaced = match change {
            ChangeType::Added | ChangeType::Modified => {
                let old = objects.insert((namespace.clone(), name.clone()), object.clone());
                self.uids.insert(uid, key.clone());
                old
            }
            ChangeType::Deleted => {
                let old = objects.remove(&(namespace.clone(), name));
                self.uids.remove(&uid);
                old
            }
        };
        if let Some(old) = replaced {
            self.index_owners(&old, &key, false);
        }
        if change != ChangeType::Deleted {
            self.index_owners(&object, &key, true);
        }
        let event = Arc::new(ChangeEvent {
            resource_version: rv,
            change,
            resource: gr.clone(),
            namespace,
            object: object.clone(),
            previous,
        });
        self.history.push_back(event.clone());
        while self.history.len() > self.history_limit {
            if let Some(dropped) = self.history.pop_front() {
                self.compacted_through = dropped.resource_version;
            }
        }
        // Nobody listening is fine: watches subscribe before reading the history.
        let _ = self.events.send(event);
        object
    }

    /// POST: create an object in `namespace` (ignored for cluster-scoped types).
    pub fn create(
        &mut self,
        rt: &ResourceType,
        namespace: Option<&str>,
        mut body: Value,
        dry_run: bool,
    ) -> Result<Value, ApiStatus> {
        let gr = rt.group_resource();
        check_type(rt, &body)?;
        let url_ns = namespace.unwrap_or_default();
        let body_ns = meta_str(&body, "namespace").to_owned();
        if rt.namespaced && !body_ns.is_empty() && body_ns != url_ns {
            return Err(ApiStatus::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        let mut name = meta_str(&body, "name").to_owned();
        let generate = meta_str(&body, "generateName").to_owned();
        if name.is_empty() {
            if generate.is_empty() {
                return Err(ApiStatus::invalid(
                    &gr,
                    &rt.kind,
                    "",
                    "metadata.name: Required value: name or generateName is required",
                ));
            }
            name = loop {
                let candidate = format!("{generate}{}", meta::name_suffix());
                if self.stored(&gr, url_ns, &candidate).is_none() {
                    break candidate;
                }
            };
        }
        if let Some(why) = meta::invalid_name(&name).or_else(|| meta::invalid_label_value(&body)) {
            return Err(ApiStatus::invalid(&gr, &rt.kind, &name, &why));
        }
        let (ns, _) = Self::key_of(rt, url_ns, &name);
        if self.stored(&gr, &ns, &name).is_some() {
            return Err(ApiStatus::already_exists(&gr, &name));
        }
        let crd_types = if is_crd(rt) {
            Some(
                types_from_crd(&body)
                    .map_err(|why| ApiStatus::invalid(&gr, &rt.kind, &name, &why))?,
            )
        } else {
            None
        };
        if rt.status_subresource
            && let Some(map) = body.as_object_mut()
        {
            map.remove("status");
        }
        let meta = meta::metadata_mut(&mut body);
        meta.insert("name".to_owned(), json!(name));
        if rt.namespaced {
            meta.insert("namespace".to_owned(), json!(ns));
        } else {
            meta.remove("namespace");
        }
        for system in [
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "resourceVersion",
            "selfLink",
        ] {
            meta.remove(system);
        }
        meta.insert("uid".to_owned(), json!(meta::new_uid()));
        meta.insert("creationTimestamp".to_owned(), json!(meta::now()));
        meta.insert("generation".to_owned(), json!(1));
        if let Some(types) = &crd_types {
            body["status"] = crd_status(&body, types);
        }
        crate::defaults::apply_create_defaults(rt, &mut body);
        let body = present(rt, body);
        if dry_run {
            return Ok(body);
        }
        if let Some(types) = crd_types {
            for t in types {
                self.registry.register(t);
            }
        }
        let owners = meta::owner_uids(&body);
        let created = self.commit(ChangeType::Added, &gr, body, None);
        if !owners.is_empty() && owners.iter().all(|u| !self.uid_exists(u)) {
            // The garbage collector removes dependents created after their owners are gone.
            self.collect_garbage_of(&gr, &ns, &name);
        }
        Ok(present(rt, created))
    }

    /// The single write path for PUT, patches and the server's own updates: `candidate` is
    /// the full new object as the client wants it, `endpoint` says which part of it counts.
    pub fn write(
        &mut self,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        mut candidate: Value,
        endpoint: Endpoint,
        dry_run: bool,
    ) -> Result<Value, ApiStatus> {
        let gr = rt.group_resource();
        let (ns, name) = Self::key_of(rt, namespace, name);
        let old = self
            .stored(&gr, &ns, &name)
            .cloned()
            .ok_or_else(|| ApiStatus::not_found(&gr, &name))?;
        check_type(rt, &candidate)?;
        let sent_rv = meta_str(&candidate, "resourceVersion").to_owned();
        if !sent_rv.is_empty() && sent_rv != meta_str(&old, "resourceVersion") {
            return Err(ApiStatus::stale(&gr, &name));
        }
        let sent_name = meta_str(&candidate, "name");
        if !sent_name.is_empty() && sent_name != name {
            return Err(ApiStatus::bad_request(format!(
                "the name of the object ({sent_name}) does not match the name on the URL ({name})"
            )));
        }
        let sent_ns = meta_str(&candidate, "namespace");
        if rt.namespaced && !sent_ns.is_empty() && sent_ns != ns {
            return Err(ApiStatus::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        let mut next = match endpoint {
            Endpoint::Status => {
                let mut next = old.clone();
                match candidate.get("status") {
                    Some(status) => next["status"] = status.clone(),
                    None => {
                        if let Some(map) = next.as_object_mut() {
                            map.remove("status");
                        }
                    }
                }
                next
            }
            Endpoint::Main => {
                if rt.status_subresource {
                    match old.get("status") {
                        Some(status) => candidate["status"] = status.clone(),
                        None => {
                            if let Some(map) = candidate.as_object_mut() {
                                map.remove("status");
                            }
                        }
                    }
                }
                candidate
            }
        };
        // System metadata is the server's, whatever the client sent.
        let old_meta = old.get("metadata").cloned().unwrap_or_else(|| json!({}));
        {
            let meta = meta::metadata_mut(&mut next);
            for system in [
                "name",
                "namespace",
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
                "resourceVersion",
            ] {
                match old_meta.get(system) {
                    Some(v) => meta.insert(system.to_owned(), v.clone()),
                    None => meta.remove(system),
                };
            }
            if endpoint == Endpoint::Status {
                // The status endpoint may not change anything in metadata but its own
                // bookkeeping; the real server keeps labels, annotations, finalizers too.
                let managed = meta.remove("managedFields");
                *meta = old_meta.as_object().cloned().unwrap_or_default();
                if let Some(managed) = managed {
                    meta.insert("managedFields".to_owned(), managed);
                }
            }
        }
        if meta::is_terminating(&old) {
            let before = meta::finalizers(&old);
            if let Some(added) = meta::finalizers(&next).iter().find(|f| !before.contains(f)) {
                return Err(ApiStatus::invalid(
                    &gr,
                    &rt.kind,
                    &name,
                    &format!(
                        "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{{added:?}}}"
                    ),
                ));
            }
        }
        let next = present(rt, next);
        let old_presented = present(rt, old.clone());
        if next == old_presented {
            // A no-op write changes nothing, not even the resourceVersion.
            return Ok(old_presented);
        }
        let mut next = next;
        if spec_of(rt, &next) != spec_of(rt, &old_presented) {
            let generation = old_meta
                .get("generation")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            meta::metadata_mut(&mut next).insert("generation".to_owned(), json!(generation + 1));
        }
        let crd_types = if is_crd(rt) {
            Some(
                types_from_crd(&next)
                    .map_err(|why| ApiStatus::invalid(&gr, &rt.kind, &name, &why))?,
            )
        } else {
            None
        };
        if dry_run {
            return Ok(next);
        }
        if let Some(types) = crd_types {
            for t in types {
                self.registry.register(t);
            }
        }
        if meta::is_terminating(&next) && meta::finalizers(&next).is_empty() {
            self.remove(&gr, next, Some(old));
            return Ok(present(rt, self.last_committed()));
        }
        let written = self.commit(ChangeType::Modified, &gr, next, Some(old));
        Ok(present(rt, written))
    }

    /// The object of the newest history entry (what a removal just committed).
    pub(crate) fn last_committed(&self) -> Value {
        self.history
            .back()
            .map(|e| e.object.clone())
            .unwrap_or_else(|| json!({}))
    }
}

fn is_crd(rt: &ResourceType) -> bool {
    rt.group == "apiextensions.k8s.io" && rt.plural == "customresourcedefinitions"
}

/// The status the API server gives an accepted CRD: names accepted and established.
fn crd_status(crd: &Value, types: &[ResourceType]) -> Value {
    let now = meta::now();
    let condition = |kind: &str, reason: &str, message: &str| {
        json!({"type": kind, "status": "True", "reason": reason, "message": message,
               "lastTransitionTime": now})
    };
    json!({
        "acceptedNames": crd.pointer("/spec/names").cloned().unwrap_or_else(|| json!({})),
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found for CRD names"),
            condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "storedVersions": types.iter().take(1).map(|t| t.version.clone()).collect::<Vec<_>>(),
    })
}

/// What `generation` tracks: everything but metadata (and status, when it has its own
/// endpoint).
fn spec_of(rt: &ResourceType, object: &Value) -> Value {
    let mut spec = object.clone();
    if let Some(map) = spec.as_object_mut() {
        map.remove("metadata");
        if rt.status_subresource {
            map.remove("status");
        }
    }
    spec
}

/// Reject bodies that are not objects or declare another kind or version.
fn check_type(rt: &ResourceType, body: &Value) -> Result<(), ApiStatus> {
    if !body.is_object() {
        return Err(ApiStatus::bad_request(format!(
            "the body of the request must be a JSON object describing a {}",
            rt.kind
        )));
    }
    if let Some(kind) = body.get("kind").and_then(Value::as_str)
        && !kind.is_empty()
        && kind != rt.kind
    {
        return Err(ApiStatus::bad_request(format!(
            "the kind in the data ({kind}) does not match the expected kind ({})",
            rt.kind
        )));
    }
    if let Some(api_version) = body.get("apiVersion").and_then(Value::as_str)
        && !api_version.is_empty()
        && api_version != rt.api_version()
    {
        return Err(ApiStatus::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({})",
            rt.api_version()
        )));
    }
    Ok(())
}
