//! Which resources the double serves: the built-in kinds an operator touches plus every
//! CustomResourceDefinition created through it. Discovery documents and URL routing both read
//! this table, so a resource exists for clients exactly when the registry knows it.

use serde_json::Value;
use std::collections::BTreeMap;

/// `group` + plural `resource`: how the storage and the API server's messages name a resource
/// (`jobs.batch`, `pods`), independent of the version it was read or written through.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupResource {
    /// API group, empty for the core group.
    pub group: String,
    /// Plural resource name as it appears in URLs.
    pub resource: String,
}

impl GroupResource {
    /// `pods` for the core group, `jobs.batch` otherwise — the form the API server's error
    /// messages use.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }
}

/// One served group/version/resource and what the double needs to know to serve it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceType {
    /// API group, empty for the core group.
    pub group: String,
    /// Version in URLs (`v1`, `v1beta1`).
    pub version: String,
    /// Plural resource name (`trials`).
    pub plural: String,
    /// Singular name (`trial`).
    pub singular: String,
    /// Kind (`Trial`).
    pub kind: String,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Has a `/status` subresource: the main endpoint then ignores `.status` changes.
    pub status_subresource: bool,
    /// Serves `/log` (pods only).
    pub log_subresource: bool,
    /// Short names offered in discovery (`kubectl get tfj`).
    pub short_names: Vec<String>,
    /// Categories offered in discovery (`kubectl get all`).
    pub categories: Vec<String>,
    /// A DELETE without a propagation policy orphans dependents (batch/v1 Jobs do, for
    /// backwards compatibility) instead of deleting them in the background.
    pub orphans_by_default: bool,
    /// Field-selector labels besides `metadata.name` and `metadata.namespace`.
    pub selectable_fields: Vec<String>,
    /// PUT without `metadata.resourceVersion` is accepted (built-ins); custom resources
    /// require it, as the API server's custom-resource strategy does.
    pub unconditional_update: bool,
}

impl ResourceType {
    /// A namespaced or cluster-scoped resource with no subresources; adjust the public fields
    /// for anything else.
    pub fn new(group: &str, version: &str, plural: &str, kind: &str, namespaced: bool) -> Self {
        ResourceType {
            group: group.to_owned(),
            version: version.to_owned(),
            plural: plural.to_owned(),
            singular: kind.to_lowercase(),
            kind: kind.to_owned(),
            namespaced,
            status_subresource: false,
            log_subresource: false,
            short_names: Vec::new(),
            categories: Vec::new(),
            orphans_by_default: false,
            selectable_fields: Vec::new(),
            unconditional_update: true,
        }
    }

    /// The same resource with a `/status` subresource.
    pub fn with_status(mut self) -> Self {
        self.status_subresource = true;
        self
    }

    fn with_short_names(mut self, names: &[&str]) -> Self {
        self.short_names = names.iter().map(|n| (*n).to_owned()).collect();
        self
    }

    fn with_fields(mut self, fields: &[&str]) -> Self {
        self.selectable_fields = fields.iter().map(|n| (*n).to_owned()).collect();
        self
    }

    /// `v1` for the core group, `group/version` otherwise.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The storage identity shared by every version of the resource.
    pub fn group_resource(&self) -> GroupResource {
        GroupResource {
            group: self.group.clone(),
            resource: self.plural.clone(),
        }
    }
}

/// The served resources, keyed by group, version and plural.
#[derive(Debug, Default, Clone)]
pub struct Registry {
    types: BTreeMap<(String, String, String), ResourceType>,
}

impl Registry {
    /// The built-in kinds an operator and `kubectl` commonly touch.
    pub fn with_builtins() -> Self {
        let mut registry = Registry::default();
        for rt in builtin_types() {
            registry.register(rt);
        }
        registry
    }

    /// Serve `rt` (replacing an earlier registration of the same group/version/plural).
    pub fn register(&mut self, rt: ResourceType) {
        self.types.insert(
            (rt.group.clone(), rt.version.clone(), rt.plural.clone()),
            rt,
        );
    }

    /// Stop serving every version of `group_resource`.
    pub fn unregister(&mut self, group_resource: &GroupResource) {
        self.types
            .retain(|(g, _, r), _| !(g == &group_resource.group && r == &group_resource.resource));
    }

    /// The resource served at `group/version/plural`.
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceType> {
        self.types
            .get(&(group.to_owned(), version.to_owned(), plural.to_owned()))
    }

    /// Every served resource of one group/version, in plural order.
    pub fn resources_of(&self, group: &str, version: &str) -> Vec<&ResourceType> {
        self.types
            .values()
            .filter(|rt| rt.group == group && rt.version == version)
            .collect()
    }

    /// Served groups with their versions (sorted, newest-looking first is not attempted:
    /// the first registered version wins as preferred).
    pub fn groups(&self) -> BTreeMap<String, Vec<String>> {
        let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for rt in self.types.values() {
            let versions = groups.entry(rt.group.clone()).or_default();
            if !versions.contains(&rt.version) {
                versions.push(rt.version.clone());
            }
        }
        groups
    }
}

/// The resource types a CustomResourceDefinition object declares, one per served version.
/// Returns an error text naming the missing field when the definition is incomplete.
pub fn types_from_crd(crd: &Value) -> Result<Vec<ResourceType>, String> {
    let spec = crd
        .get("spec")
        .ok_or_else(|| "spec: Required value".to_owned())?;
    let text = |path: &[&str]| -> Option<String> {
        let mut node = spec;
        for key in path {
            node = node.get(key)?;
        }
        node.as_str().map(str::to_owned)
    };
    let group = text(&["group"]).ok_or("spec.group: Required value")?;
    let plural = text(&["names", "plural"]).ok_or("spec.names.plural: Required value")?;
    let kind = text(&["names", "kind"]).ok_or("spec.names.kind: Required value")?;
    let singular = text(&["names", "singular"]).unwrap_or_else(|| kind.to_lowercase());
    let namespaced = match text(&["scope"]).as_deref() {
        Some("Namespaced") => true,
        Some("Cluster") => false,
        other => {
            return Err(format!(
                "spec.scope: Unsupported value: {other:?}: supported values: \"Cluster\", \"Namespaced\""
            ));
        }
    };
    let strings = |path: &[&str]| -> Vec<String> {
        let mut node = spec;
        for key in path {
            match node.get(key) {
                Some(next) => node = next,
                None => return Vec::new(),
            }
        }
        node.as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .filter(|v| !v.is_empty())
        .ok_or("spec.versions: Required value")?;
    let mut types = Vec::new();
    for version in versions {
        let name = version
            .get("name")
            .and_then(Value::as_str)
            .ok_or("spec.versions[].name: Required value")?;
        if version.get("served").and_then(Value::as_bool) == Some(false) {
            continue;
        }
        let status = version
            .pointer("/subresources/status")
            .is_some_and(|s| !s.is_null());
        types.push(ResourceType {
            group: group.clone(),
            version: name.to_owned(),
            plural: plural.clone(),
            singular: singular.clone(),
            kind: kind.clone(),
            namespaced,
            status_subresource: status,
            log_subresource: false,
            short_names: strings(&["names", "shortNames"]),
            categories: strings(&["names", "categories"]),
            orphans_by_default: false,
            selectable_fields: Vec::new(),
            unconditional_update: false,
        });
    }
    Ok(types)
}

fn builtin_types() -> Vec<ResourceType> {
    let ns = true;
    let cluster = false;
    let pod_fields = [
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    ];
    let core_event_fields = [
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ];
    let new_event_fields = [
        "regarding.kind",
        "regarding.namespace",
        "regarding.name",
        "regarding.uid",
        "regarding.apiVersion",
        "reason",
        "reportingController",
        "type",
    ];
    let mut pods = ResourceType::new("", "v1", "pods", "Pod", ns)
        .with_status()
        .with_short_names(&["po"])
        .with_fields(&pod_fields);
    pods.log_subresource = true;
    pods.categories = vec!["all".to_owned()];
    let mut jobs = ResourceType::new("batch", "v1", "jobs", "Job", ns)
        .with_status()
        .with_fields(&["status.successful"]);
    jobs.orphans_by_default = true;
    jobs.categories = vec!["all".to_owned()];
    let mut crds = ResourceType::new(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        cluster,
    )
    .with_status()
    .with_short_names(&["crd", "crds"]);
    crds.singular = "customresourcedefinition".to_owned();
    vec![
        pods,
        jobs,
        crds,
        ResourceType::new("", "v1", "namespaces", "Namespace", cluster)
            .with_status()
            .with_short_names(&["ns"])
            .with_fields(&["status.phase"]),
        ResourceType::new("", "v1", "configmaps", "ConfigMap", ns).with_short_names(&["cm"]),
        ResourceType::new("", "v1", "secrets", "Secret", ns).with_fields(&["type"]),
        ResourceType::new("", "v1", "services", "Service", ns)
            .with_status()
            .with_short_names(&["svc"]),
        ResourceType::new("", "v1", "serviceaccounts", "ServiceAccount", ns)
            .with_short_names(&["sa"]),
        ResourceType::new("", "v1", "endpoints", "Endpoints", ns).with_short_names(&["ep"]),
        ResourceType::new(
            "",
            "v1",
            "persistentvolumeclaims",
            "PersistentVolumeClaim",
            ns,
        )
        .with_status()
        .with_short_names(&["pvc"]),
        ResourceType::new("", "v1", "nodes", "Node", cluster)
            .with_status()
            .with_short_names(&["no"]),
        ResourceType::new("", "v1", "events", "Event", ns)
            .with_short_names(&["ev"])
            .with_fields(&core_event_fields),
        ResourceType::new("events.k8s.io", "v1", "events", "Event", ns)
            .with_short_names(&["ev"])
            .with_fields(&new_event_fields),
        ResourceType::new("coordination.k8s.io", "v1", "leases", "Lease", ns),
        ResourceType::new("apps", "v1", "deployments", "Deployment", ns)
            .with_status()
            .with_short_names(&["deploy"]),
        ResourceType::new("apps", "v1", "statefulsets", "StatefulSet", ns)
            .with_status()
            .with_short_names(&["sts"]),
        ResourceType::new("apps", "v1", "replicasets", "ReplicaSet", ns)
            .with_status()
            .with_short_names(&["rs"]),
        ResourceType::new("apps", "v1", "daemonsets", "DaemonSet", ns)
            .with_status()
            .with_short_names(&["ds"]),
        ResourceType::new("batch", "v1", "cronjobs", "CronJob", ns)
            .with_status()
            .with_short_names(&["cj"]),
        ResourceType::new("rbac.authorization.k8s.io", "v1", "roles", "Role", ns),
        ResourceType::new(
            "rbac.authorization.k8s.io",
            "v1",
            "rolebindings",
            "RoleBinding",
            ns,
        ),
        ResourceType::new(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterroles",
            "ClusterRole",
            cluster,
        ),
        ResourceType::new(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterrolebindings",
            "ClusterRoleBinding",
            cluster,
        ),
    ]
}
