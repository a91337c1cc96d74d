//! Kubernetes' downward API for a container's env (`valueFrom.fieldRef` and
//! `valueFrom.resourceFieldRef`): which pod fields and resources a variable may take, and
//! their values for a trial run here as a process, so a template that reads its pod's name or
//! CPU limit runs locally as it runs on a cluster. Pure: the runner passes what it knows of
//! the pod and of this machine ([`PodFacts`]).

use crate::error::SpecError;
use crate::quantity::Quantity;
use serde_json::Value;
use std::collections::BTreeMap;

/// The `fieldPath`s the API server accepts in an env variable's `fieldRef`
/// (`validEnvDownwardAPIFieldPathExpressions`), besides subscripted labels and annotations.
const FIELD_PATHS: [&str; 9] = [
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

/// The resources a `resourceFieldRef` may name (`validContainerResourceFieldPathExpressions`).
const RESOURCES: [&str; 6] = [
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
];

/// The divisors the API server accepts for CPU, and for memory and storage.
const CPU_DIVISORS: [&str; 2] = ["1m", "1"];
const BYTE_DIVISORS: [&str; 13] = [
    "1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei",
];

/// Where an env variable of the pod takes its value from.
#[derive(Debug, Clone, PartialEq)]
pub enum PodValue {
    /// A `fieldRef`: one of [`FIELD_PATHS`], or a label or annotation by key.
    Field(PodField),
    /// A `resourceFieldRef`: a container's request or limit, divided by `divisor`.
    Resource {
        container: Option<String>,
        resource: String,
        divisor: Quantity,
    },
    /// An `optional` key of a Secret or ConfigMap (`secretKeyRef`, `configMapKeyRef`): there
    /// is none here, and the kubelet leaves an optional variable out when its object is
    /// missing.
    Unset,
}

/// A pod field an env variable reads.
#[derive(Debug, Clone, PartialEq)]
pub enum PodField {
    Path(&'static str),
    Label(String),
    Annotation(String),
}

/// What the downward API reads of one pod run here.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PodFacts {
    pub name: String,
    pub namespace: String,
    pub uid: String,
    pub service_account: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    /// Each container's `resources` by name, for a `resourceFieldRef` naming another.
    pub resources: BTreeMap<String, Value>,
    /// The pod spec's `volumes`, which its containers' mounts name.
    pub volumes: Value,
    pub node: NodeFacts,
}

/// What the downward API reads of the machine: the node a cluster would schedule on.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NodeFacts {
    pub name: String,
    /// Every IP the pod and the node have here: the loopback address the replicas share.
    pub ip: String,
    /// The allocatable CPUs, memory and ephemeral storage, in cores and bytes: the kubelet
    /// gives them for a limit the container does not set.
    pub cpus: u64,
    pub memory_bytes: u64,
    pub storage_bytes: u64,
}

impl PodFacts {
    /// The facts of a pod named `name` in `namespace` made from its template (`metadata` and
    /// `spec`), with the labels its controller adds (`controller_labels`) and this machine's
    /// `node`. `uid` is the pod's unique id, made by the caller.
    pub fn from_template(
        template: &Value,
        name: &str,
        namespace: &str,
        uid: &str,
        controller_labels: BTreeMap<String, String>,
        node: NodeFacts,
    ) -> PodFacts {
        let strings = |key: &str| -> BTreeMap<String, String> {
            let map = template.pointer(&format!("/metadata/{key}"));
            map.and_then(Value::as_object)
                .into_iter()
                .flatten()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        };
        let mut labels = strings("labels");
        labels.extend(controller_labels);
        let spec = template.get("spec");
        let account = ["serviceAccountName", "serviceAccount"]
            .iter()
            .find_map(|k| spec?.get(k)?.as_str().filter(|s| !s.is_empty()))
            .unwrap_or("default");
        let containers = spec
            .and_then(|s| s.get("containers"))
            .and_then(Value::as_array);
        let resources = containers
            .into_iter()
            .flatten()
            .filter_map(|c| {
                let name = c.get("name")?.as_str()?.to_string();
                Some((name, c.get("resources").cloned().unwrap_or(Value::Null)))
            })
            .collect();
        PodFacts {
            name: name.to_string(),
            namespace: namespace.to_string(),
            uid: uid.to_string(),
            service_account: account.to_string(),
            labels,
            annotations: strings("annotations"),
            resources,
            volumes: spec
                .and_then(|s| s.get("volumes"))
                .cloned()
                .unwrap_or(Value::Null),
            node,
        }
    }
}

/// The source of env entry `entry`'s value when it has a `valueFrom` local mode can resolve
/// (`None` without `valueFrom`); otherwise why not, at `path` (the entry's field path).
pub fn pod_value(entry: &Value, path: &str) -> Result<Option<PodValue>, SpecError> {
    let Some(from) = entry.get("valueFrom").filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let name = entry.get("name").and_then(Value::as_str).unwrap_or("");
    let path = format!("{path}.valueFrom");
    if let Some(field) = from.get("fieldRef").filter(|v| !v.is_null()) {
        return field_ref(field, &format!("{path}.fieldRef")).map(|f| Some(PodValue::Field(f)));
    }
    if let Some(resource) = from.get("resourceFieldRef").filter(|v| !v.is_null()) {
        return resource_field_ref(resource, &format!("{path}.resourceFieldRef")).map(Some);
    }
    let source = from
        .as_object()
        .and_then(|m| m.keys().next().cloned())
        .unwrap_or_default();
    if is_optional(from.get(&source)) {
        return Ok(Some(PodValue::Unset));
    }
    Err(SpecError::new(
        path,
        format!(
            "env var {name:?} takes its value from {source:?}, a Kubernetes object local mode \
             cannot read; hint: give it a literal value to run locally (fieldRef and \
             resourceFieldRef are resolved locally)"
        ),
    ))
}

/// Why the API server refuses env entry `entry`'s downward-API source (a `fieldPath`,
/// `resource` or `divisor` it does not take), if it does: the pod is never created.
pub fn api_server_refusal(entry: &Value, path: &str) -> Option<SpecError> {
    let from = entry.get("valueFrom")?;
    let path = format!("{path}.valueFrom");
    if let Some(field) = from.get("fieldRef").filter(|v| !v.is_null()) {
        return field_ref(field, &format!("{path}.fieldRef")).err();
    }
    let resource = from.get("resourceFieldRef").filter(|v| !v.is_null())?;
    resource_field_ref(resource, &format!("{path}.resourceFieldRef")).err()
}

/// Whether a reference to a Secret or ConfigMap (a `valueFrom` source, an `envFrom` entry's
/// `secretRef`/`configMapRef`) is marked `optional: true`.
pub fn is_optional(reference: Option<&Value>) -> bool {
    let optional = reference.and_then(|r| r.get("optional"));
    optional.and_then(Value::as_bool) == Some(true)
}

fn field_ref(field: &Value, path: &str) -> Result<PodField, SpecError> {
    if let Some(version) = field.get("apiVersion").and_then(Value::as_str)
        && !version.is_empty()
        && version != "v1"
    {
        return Err(SpecError::new(
            format!("{path}.apiVersion"),
            format!("value {version:?} is not supported; hint: the API server accepts \"v1\""),
        ));
    }
    let text = field.get("fieldPath").and_then(Value::as_str).unwrap_or("");
    if let Some(known) = FIELD_PATHS.iter().find(|p| **p == text) {
        return Ok(PodField::Path(known));
    }
    let key = |prefix: &str| {
        let inner = text.strip_prefix(prefix)?.strip_suffix("']")?;
        inner.strip_prefix("['").filter(|k| !k.is_empty())
    };
    if let Some(k) = key("metadata.labels") {
        return Ok(PodField::Label(k.to_string()));
    }
    if let Some(k) = key("metadata.annotations") {
        return Ok(PodField::Annotation(k.to_string()));
    }
    Err(SpecError::new(
        format!("{path}.fieldPath"),
        format!(
            "value {text:?} is not a field the API server lets an env variable read; hint: \
             use one of {}, metadata.labels['KEY'] or metadata.annotations['KEY']",
            FIELD_PATHS.join(", ")
        ),
    ))
}

fn resource_field_ref(field: &Value, path: &str) -> Result<PodValue, SpecError> {
    let resource = field.get("resource").and_then(Value::as_str).unwrap_or("");
    let huge_pages = ["limits.hugepages-", "requests.hugepages-"]
        .iter()
        .any(|p| {
            resource
                .strip_prefix(p)
                .is_some_and(|size| !size.is_empty())
        });
    if !RESOURCES.contains(&resource) && !huge_pages {
        return Err(SpecError::new(
            format!("{path}.resource"),
            format!(
                "value {resource:?} is not a resource an env variable may read; hint: use one \
                 of {}, or limits.hugepages-SIZE, requests.hugepages-SIZE",
                RESOURCES.join(", ")
            ),
        ));
    }
    let divisor = match field.get("divisor") {
        None | Some(Value::Null) => "1".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    };
    let allowed: &[&str] = match resource.ends_with(".cpu") {
        true => &CPU_DIVISORS,
        false => &BYTE_DIVISORS,
    };
    // The API server checks the divisor's canonical form (`1000m` is `1`); zero is unset.
    let value = Quantity::parse(&divisor)
        .map(|q| match q.is_zero() {
            true => Quantity::from_units(1),
            false => q,
        })
        .filter(|q| q.canonical().is_some_and(|c| allowed.contains(&c.as_str())))
        .ok_or_else(|| {
            SpecError::new(
                format!("{path}.divisor"),
                format!(
                    "value {divisor:?} is not a divisor for {resource}; hint: use one of {}",
                    allowed.join(", ")
                ),
            )
        })?;
    let container = field
        .get("containerName")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .map(str::to_string);
    Ok(PodValue::Resource {
        container,
        resource: resource.to_string(),
        divisor: value,
    })
}

impl PodValue {
    /// The variable's value in pod `pod`, read by container `own` (whose `resources` a
    /// `resourceFieldRef` without `containerName` reads), as the kubelet writes it.
    pub fn resolve(&self, pod: &PodFacts, own: Option<&Value>) -> String {
        match self {
            PodValue::Field(PodField::Path(path)) => field_value(pod, path),
            PodValue::Field(PodField::Label(k)) => pod.labels.get(k).cloned().unwrap_or_default(),
            PodValue::Field(PodField::Annotation(k)) => {
                pod.annotations.get(k).cloned().unwrap_or_default()
            }
            PodValue::Resource {
                container,
                resource,
                divisor,
            } => {
                let resources = match container {
                    Some(name) => pod.resources.get(name),
                    None => own,
                };
                resource_value(resources, resource, divisor, &pod.node)
            }
            PodValue::Unset => String::new(),
        }
    }
}

fn field_value(pod: &PodFacts, path: &str) -> String {
    match path {
        "metadata.name" => pod.name.clone(),
        "metadata.namespace" => pod.namespace.clone(),
        "metadata.uid" => pod.uid.clone(),
        "spec.nodeName" => pod.node.name.clone(),
        "spec.serviceAccountName" => pod.service_account.clone(),
        _ => pod.node.ip.clone(),
    }
}

/// The kubelet's `ExtractContainerResourceValue`: a limit the container does not set is the
/// node's allocatable amount, a request it does not set is its limit when written (the API
/// server's defaulting) else zero; CPU is counted in millicores and bytes in whole bytes, each
/// rounded up, and the quotient is rounded up.
fn resource_value(
    resources: Option<&Value>,
    resource: &str,
    divisor: &Quantity,
    node: &NodeFacts,
) -> String {
    let (section, name) = resource.split_once('.').unwrap_or((resource, ""));
    let written = |section: &str| Quantity::of_field(resources?.get(section)?.get(name)?);
    // Huge pages have no node amount the kubelet puts in for an unset limit.
    let allocatable = Quantity::from_units(match name {
        "cpu" => node.cpus,
        "memory" => node.memory_bytes,
        "ephemeral-storage" => node.storage_bytes,
        _ => 0,
    });
    let amount = match section {
        "limits" => written("limits").unwrap_or(allocatable),
        _ => written("requests")
            .or_else(|| written("limits"))
            .unwrap_or(Quantity::from_units(0)),
    };
    let scale = if name == "cpu" { 1000 } else { 1 };
    let quotient = amount
        .ceil_times(scale)
        .zip(divisor.ceil_times(scale).filter(|d| *d != 0))
        .map(|(a, d)| a.div_euclid(d) + i128::from(a.rem_euclid(d) != 0));
    quotient.map(|q| q.to_string()).unwrap_or_default()
}

#[cfg(test)]
mod tests;
