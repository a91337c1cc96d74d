//! A suggestion Deployment per Experiment, as Katib's suggestion controller composes one from a
//! katib-config entry's image: a Deployment and a Service named `<experiment>-<algorithm>` in
//! the experiment's namespace (owned by the Experiment), the service's gRPC API on port 6789,
//! Katib's labels, default resources and gRPC probes; for a `FromVolume` experiment also the
//! claim `<experiment>-<algorithm>` mounted at the entry's `volumeMountPath`, where the
//! service keeps its state across restarts. The operator creates them, asks the
//! service only once the Deployment is `Available` (as Katib's suggestion controller waits for
//! it), and deletes them when the experiment ends unless its `resumePolicy` is `LongRunning`
//! (as Katib keeps its suggestion running then). Rendering and reading are pure; `ensure`,
//! `availability` and `retire` are the thin shells that talk to the API.

use crate::checkpoints::{STORAGE, VOLUME_NAME};
use crate::error::Result;
use crate::objects::{create_unless_present, owner_reference};
use crate::suggestion_services::ImageVolume;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Service};
use kube::api::{Api, DeleteParams, DynamicObject};
use serde_json::{Map, Value, json};
use vernier_spec::types::API_VERSION;

/// Katib's suggestion port, and the name of that port.
pub const PORT: u16 = 6789;
const PORT_NAME: &str = "suggestion-api";
/// The gRPC service name Katib's probes ask a suggestion pod for.
const PROBE_SERVICE: &str = "manager.v1beta1.Suggestion";

/// Katib's `<experiment>-<algorithm>` name of the Deployment and Service.
pub fn name(experiment: &str, algorithm: &str) -> String {
    format!("{experiment}-{algorithm}")
}

/// Where the service answers inside the cluster: its Service's DNS name and port.
pub fn address(experiment: &str, algorithm: &str, namespace: &str) -> String {
    format!("{}.{namespace}:{PORT}", name(experiment, algorithm))
}

fn labels(name: &str, experiment: &str) -> Value {
    json!({
        "katib.kubeflow.org/deployment": name,
        "katib.kubeflow.org/experiment": experiment,
        "katib.kubeflow.org/suggestion": experiment,
    })
}

/// The katib-config entry's container (`image` and any container field) completed as Katib's
/// composer completes it: named `suggestion`, the port, `IfNotPresent`, default resources and,
/// unless the entry has its own, gRPC readiness and liveness probes.
pub fn container(entry: &Map<String, Value>) -> Value {
    let mut c = entry.clone();
    c.insert("name".into(), json!("suggestion"));
    // Katib's composer puts its default in place of any value Kubernetes would refuse.
    let policy = c.get("imagePullPolicy").and_then(Value::as_str);
    if !matches!(policy, Some("Always" | "IfNotPresent" | "Never")) {
        c.insert("imagePullPolicy".into(), json!("IfNotPresent"));
    }
    c.insert(
        "ports".into(),
        json!([{"name": PORT_NAME, "containerPort": PORT}]),
    );
    let resources = resources(c.get("resources"));
    c.insert("resources".into(), resources);
    let grpc = json!({"port": PORT, "service": PROBE_SERVICE});
    c.entry("readinessProbe")
        .or_insert(json!({"grpc": grpc, "initialDelaySeconds": 10, "periodSeconds": 10}));
    c.entry("livenessProbe").or_insert(json!({
        "grpc": grpc, "initialDelaySeconds": 10, "periodSeconds": 120, "failureThreshold": 12,
    }));
    Value::Object(c)
}

/// Katib's defaults per resource: [request, limit].
const DEFAULT_RESOURCES: [(&str, [&str; 2]); 3] = [
    ("cpu", ["50m", "500m"]),
    ("memory", ["10Mi", "100Mi"]),
    ("ephemeral-storage", ["500Mi", "5Gi"]),
];

/// The entry's resources with Katib's default for each of cpu, memory and ephemeral storage
/// it leaves out (or sets to zero), and without those it sets negative (Katib's way to ask
/// for none, e.g. no ephemeral storage for autoscalers that cannot scale pods that ask).
fn resources(entry: Option<&Value>) -> Value {
    let mut resources = entry
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for (side, name) in ["requests", "limits"].into_iter().enumerate() {
        let given = resources.get(name).and_then(Value::as_object);
        let mut map = given.cloned().unwrap_or_default();
        for (resource, defaults) in DEFAULT_RESOURCES {
            match map.get(resource).map(quantity_sign) {
                Some(Sign::Negative) => {
                    map.remove(resource);
                }
                Some(Sign::Positive) => {}
                Some(Sign::Zero) | None => {
                    map.insert(resource.into(), json!(defaults[side]));
                }
            }
        }
        resources.insert(name.into(), Value::Object(map));
    }
    Value::Object(resources)
}

enum Sign {
    Negative,
    Zero,
    Positive,
}

/// The sign of a Kubernetes quantity (`-1`, `0`, `0.5`, `100Mi`, `1e3`, or a number): its
/// number part decides it, whatever its suffix.
fn quantity_sign(q: &Value) -> Sign {
    let text = match q {
        Value::String(s) => s.trim().to_string(),
        other => other.to_string(),
    };
    if text.starts_with('-') {
        return Sign::Negative;
    }
    let number = text.trim_start_matches('+').chars();
    let mut digits = number.take_while(|c| c.is_ascii_digit() || *c == '.');
    match digits.any(|c| matches!(c, '1'..='9')) {
        true => Sign::Positive,
        false => Sign::Zero,
    }
}

/// Where a `FromVolume` experiment's service keeps its state: the claim (named as the
/// Deployment, Katib's `<experiment>-<algorithm>`) and the container's mount path.
#[derive(Debug, Clone, PartialEq)]
pub struct Mount<'a> {
    pub mount_path: &'a str,
    /// The entry's `persistentVolumeClaimSpec`, if it has one.
    pub claim_spec: Option<&'a Map<String, Value>>,
}

/// Katib's default mount path of the suggestion volume in the service's container.
pub const DEFAULT_MOUNT_PATH: &str = "/opt/katib/data";

impl<'a> Mount<'a> {
    /// The mount of an experiment with resume policy `policy`: only `FromVolume` has one.
    pub fn of(policy: vernier_engine::ResumePolicy, volume: &'a ImageVolume) -> Option<Self> {
        (policy == vernier_engine::ResumePolicy::FromVolume).then(|| Mount {
            mount_path: volume.mount_path.as_deref().unwrap_or(DEFAULT_MOUNT_PATH),
            claim_spec: volume.claim_spec.as_ref(),
        })
    }
}

/// The Deployment running `container` for the experiment's algorithm, with the suggestion
/// volume mounted when the experiment keeps its service's state on one.
pub fn deployment(
    meta: &Placement<'_>,
    mut container: Value,
    service_account: Option<&str>,
    mount: Option<&Mount<'_>>,
) -> Value {
    let labels = labels(&meta.name, meta.experiment);
    let mut pod_labels = labels.clone();
    pod_labels["sidecar.istio.io/inject"] = json!("false");
    if let Some(m) = mount {
        container["volumeMounts"] = json!([{"name": VOLUME_NAME, "mountPath": m.mount_path}]);
    }
    let mut pod = json!({"containers": [container]});
    if let Some(account) = service_account {
        pod["serviceAccountName"] = json!(account);
    }
    if mount.is_some() {
        let claim = json!({"claimName": meta.name});
        pod["volumes"] = json!([{"name": VOLUME_NAME, "persistentVolumeClaim": claim}]);
    }
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta.metadata(&labels),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": pod_labels}, "spec": pod},
        },
    })
}

/// The claim of a `FromVolume` experiment's service: the entry's `persistentVolumeClaimSpec`
/// with Katib's defaults for an empty access mode list (`ReadWriteOnce`) and no storage
/// requests (1Gi).
pub fn claim(meta: &Placement<'_>, mount: &Mount<'_>) -> Value {
    let mut spec = mount.claim_spec.cloned().unwrap_or_default();
    let empty = |v: Option<&Value>| v.and_then(Value::as_array).is_none_or(Vec::is_empty);
    if empty(spec.get("accessModes")) {
        spec.insert("accessModes".into(), json!(["ReadWriteOnce"]));
    }
    let resources = spec.get("resources").and_then(Value::as_object);
    let requests = resources
        .and_then(|r| r.get("requests"))
        .and_then(Value::as_object);
    if requests.is_none_or(|r| r.is_empty()) {
        let mut resources = resources.cloned().unwrap_or_default();
        resources.insert("requests".into(), json!({"storage": STORAGE}));
        spec.insert("resources".into(), Value::Object(resources));
    }
    json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta.metadata(&labels(&meta.name, meta.experiment)),
        "spec": spec,
    })
}

/// The Service in front of the Deployment.
pub fn service(meta: &Placement<'_>) -> Value {
    let labels = labels(&meta.name, meta.experiment);
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta.metadata(&labels),
        "spec": {
            "selector": labels,
            "ports": [{"name": PORT_NAME, "port": PORT, "targetPort": PORT}],
        },
    })
}

/// Where the objects go and who owns them.
#[derive(Debug, Clone)]
pub struct Placement<'a> {
    pub name: String,
    pub namespace: &'a str,
    pub experiment: &'a str,
    pub owner: Option<Value>,
}

impl<'a> Placement<'a> {
    pub fn of(experiment: &'a DynamicObject, namespace: &'a str, algorithm: &str) -> Self {
        let owner = owner_reference(experiment, API_VERSION, "Experiment")
            .and_then(|o| serde_json::to_value(o).ok());
        let experiment_name = experiment.metadata.name.as_deref().unwrap_or_default();
        Placement {
            name: name(experiment_name, algorithm),
            namespace,
            experiment: experiment_name,
            owner,
        }
    }

    fn metadata(&self, labels: &Value) -> Value {
        json!({
            "name": self.name,
            "namespace": self.namespace,
            "labels": labels,
            "ownerReferences": self.owner.iter().collect::<Vec<_>>(),
        })
    }
}

/// What an image entry deploys for one experiment.
#[derive(Debug, Clone)]
pub struct Image<'a> {
    pub container: &'a Map<String, Value>,
    pub service_account: Option<&'a str>,
    /// The suggestion volume, for a `FromVolume` experiment.
    pub mount: Option<Mount<'a>>,
}

/// Creates the claim (with a mount), the Deployment and the Service, unless they exist
/// (existing ones are kept as they are).
pub async fn ensure(client: &kube::Client, at: &Placement<'_>, image: &Image<'_>) -> Result<()> {
    let ns = at.namespace;
    if let Some(mount) = &image.mount {
        create_unless_present::<PersistentVolumeClaim>(client, ns, claim(at, mount)).await?;
    }
    let container = container(image.container);
    let d = deployment(at, container, image.service_account, image.mount.as_ref());
    create_unless_present::<Deployment>(client, ns, d).await?;
    create_unless_present::<Service>(client, ns, service(at)).await
}

/// Whether the Deployment is available (`None`: it is not there).
pub async fn availability(client: &kube::Client, at: &Placement<'_>) -> Result<Option<bool>> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), at.namespace);
    Ok(deployments.get_opt(&at.name).await?.as_ref().map(available))
}

/// Whether the Deployment's controller calls it `Available` (its minimum of ready pods up):
/// the readiness probe has seen the service answer.
pub fn available(deployment: &Deployment) -> bool {
    let conditions = deployment
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref());
    conditions.is_some_and(|c| {
        c.iter()
            .any(|c| c.type_ == "Available" && c.status == "True")
    })
}

/// Deletes the Deployment and Service of an ended experiment (gone already is fine); a
/// `FromVolume` experiment's claim stays, as Katib keeps it, until the experiment is deleted.
pub async fn retire(client: &kube::Client, at: &Placement<'_>) -> Result<()> {
    let params = DeleteParams::background();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), at.namespace);
    deleted(deployments.delete(&at.name, &params).await)?;
    let services: Api<Service> = Api::namespaced(client.clone(), at.namespace);
    deleted(services.delete(&at.name, &params).await)
}

fn deleted<T>(result: std::result::Result<T, kube::Error>) -> Result<()> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Whether an experiment that ended keeps its suggestion running (Katib: `LongRunning`).
pub fn kept_after_end(policy: vernier_engine::ResumePolicy) -> bool {
    policy == vernier_engine::ResumePolicy::LongRunning
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placement() -> Placement<'static> {
        Placement {
            name: name("tune", "hyperopt"),
            namespace: "team",
            experiment: "tune",
            owner: Some(json!({"kind": "Experiment", "name": "tune", "uid": "u1"})),
        }
    }

    #[test]
    fn the_deployment_is_composed_as_katibs_composer_does() {
        let entry = json!({"image": "docker.io/kubeflowkatib/suggestion-hyperopt:v0.19.0",
                           "resources": {"limits": {"memory": "200Mi"}}});
        let entry = entry.as_object().unwrap();
        let d = deployment(&placement(), container(entry), Some("suggester"), None);
        assert_eq!(d["metadata"]["name"], "tune-hyperopt");
        assert_eq!(d["metadata"]["namespace"], "team");
        assert_eq!(d["metadata"]["ownerReferences"][0]["uid"], "u1");
        let labels = &d["spec"]["template"]["metadata"]["labels"];
        assert_eq!(labels["katib.kubeflow.org/deployment"], "tune-hyperopt");
        assert_eq!(labels["katib.kubeflow.org/suggestion"], "tune");
        assert_eq!(labels["sidecar.istio.io/inject"], "false");
        assert_eq!(
            d["spec"]["selector"]["matchLabels"]["katib.kubeflow.org/experiment"],
            "tune"
        );
        let pod = &d["spec"]["template"]["spec"];
        assert_eq!(pod["serviceAccountName"], "suggester");
        let c = &pod["containers"][0];
        assert_eq!(c["name"], "suggestion");
        assert_eq!(c["imagePullPolicy"], "IfNotPresent");
        assert_eq!(
            c["ports"][0],
            json!({"name": "suggestion-api", "containerPort": 6789})
        );
        // The entry's own resources are kept, Katib's defaults fill the rest.
        assert_eq!(c["resources"]["limits"]["memory"], "200Mi");
        assert_eq!(c["resources"]["requests"]["memory"], "10Mi");
        assert_eq!(pod.get("volumes"), None);
        assert_eq!(c.get("volumeMounts"), None);
        assert_eq!(
            c["readinessProbe"]["grpc"]["service"],
            "manager.v1beta1.Suggestion"
        );
        assert_eq!(c["livenessProbe"]["failureThreshold"], 12);
        serde_json::from_value::<Deployment>(d).expect("a valid Deployment");
    }

    #[test]
    fn defaults_fill_only_what_the_entry_leaves_out() {
        let entry = json!({"image": "i", "imagePullPolicy": "Always",
                           "readinessProbe": {"tcpSocket": {"port": 6789}}});
        let c = container(entry.as_object().unwrap());
        assert_eq!(c["imagePullPolicy"], "Always");
        assert_eq!(c["readinessProbe"], json!({"tcpSocket": {"port": 6789}}));
        assert_eq!(c["resources"]["requests"]["cpu"], "50m");
        assert_eq!(c["resources"]["limits"]["ephemeral-storage"], "5Gi");
        let entry = json!({"image": "i", "imagePullPolicy": "always"});
        let c = container(entry.as_object().unwrap());
        assert_eq!(c["imagePullPolicy"], "IfNotPresent");
    }

    #[test]
    fn each_resource_left_out_or_zero_gets_katibs_default_and_a_negative_one_goes() {
        let cases = [
            (
                json!(null),
                json!({"requests": {"cpu": "50m", "memory": "10Mi", "ephemeral-storage": "500Mi"},
                       "limits": {"cpu": "500m", "memory": "100Mi", "ephemeral-storage": "5Gi"}}),
            ),
            (
                json!({"limits": {"memory": "200Mi", "nvidia.com/gpu": 1}, "requests": {"cpu": 0}}),
                json!({"requests": {"cpu": "50m", "memory": "10Mi", "ephemeral-storage": "500Mi"},
                       "limits": {"cpu": "500m", "memory": "200Mi", "ephemeral-storage": "5Gi",
                                  "nvidia.com/gpu": 1}}),
            ),
            (
                json!({"limits": {"ephemeral-storage": "-1", "cpu": "0.5"},
                       "requests": {"ephemeral-storage": -1, "cpu": "0m"}}),
                json!({"requests": {"cpu": "50m", "memory": "10Mi"},
                       "limits": {"cpu": "0.5", "memory": "100Mi"}}),
            ),
        ];
        for (entry, want) in cases {
            let got = resources(Some(&entry).filter(|e| !e.is_null()));
            assert_eq!(got, want, "{entry}");
        }
    }

    #[test]
    fn a_from_volume_experiments_service_mounts_its_claim_with_katibs_defaults() {
        let volume = ImageVolume::default();
        assert_eq!(
            Mount::of(vernier_engine::ResumePolicy::Never, &volume),
            None
        );
        assert_eq!(
            Mount::of(vernier_engine::ResumePolicy::LongRunning, &volume),
            None
        );
        let mount = Mount::of(vernier_engine::ResumePolicy::FromVolume, &volume).expect("a mount");
        let d = deployment(&placement(), container(&Map::new()), None, Some(&mount));
        let pod = &d["spec"]["template"]["spec"];
        assert_eq!(
            pod["volumes"],
            json!([{"name": "suggestion-volume",
                    "persistentVolumeClaim": {"claimName": "tune-hyperopt"}}])
        );
        assert_eq!(
            pod["containers"][0]["volumeMounts"],
            json!([{"name": "suggestion-volume", "mountPath": "/opt/katib/data"}])
        );
        let c = claim(&placement(), &mount);
        assert_eq!(c["metadata"]["name"], "tune-hyperopt");
        assert_eq!(c["metadata"]["ownerReferences"][0]["uid"], "u1");
        assert_eq!(
            c["spec"],
            json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}})
        );
        serde_json::from_value::<PersistentVolumeClaim>(c).expect("a valid claim");
        // The entry's own spec and mount path are kept.
        let spec = json!({"accessModes": ["ReadWriteMany"], "storageClassName": "nfs",
                          "resources": {"limits": {"storage": "5Gi"}}});
        let volume = ImageVolume {
            mount_path: Some("/data".into()),
            claim_spec: spec.as_object().cloned(),
        };
        let mount = Mount::of(vernier_engine::ResumePolicy::FromVolume, &volume).expect("a mount");
        assert_eq!(mount.mount_path, "/data");
        let c = claim(&placement(), &mount);
        assert_eq!(c["spec"]["accessModes"], json!(["ReadWriteMany"]));
        assert_eq!(c["spec"]["storageClassName"], "nfs");
        assert_eq!(
            c["spec"]["resources"],
            json!({"limits": {"storage": "5Gi"}, "requests": {"storage": "1Gi"}})
        );
    }

    #[test]
    fn only_an_available_condition_that_is_true_makes_the_deployment_available() {
        let with = |status: Value| -> Deployment {
            serde_json::from_value(json!({"metadata": {"name": "d"}, "status": status}))
                .expect("a Deployment")
        };
        let cases = [
            (json!({}), false),
            (json!({"replicas": 1, "readyReplicas": 1}), false),
            (
                json!({"conditions": [{"type": "Progressing", "status": "True"}]}),
                false,
            ),
            (
                json!({"conditions": [{"type": "Available", "status": "False"}]}),
                false,
            ),
            (
                json!({"conditions": [{"type": "Available", "status": "Unknown"}]}),
                false,
            ),
            (
                json!({"conditions": [{"type": "Progressing", "status": "True"},
                                      {"type": "Available", "status": "True"}]}),
                true,
            ),
        ];
        for (status, want) in cases {
            assert_eq!(available(&with(status.clone())), want, "{status}");
        }
    }

    #[test]
    fn the_service_selects_the_deployments_pods_on_katibs_port() {
        let s = service(&placement());
        assert_eq!(s["metadata"]["name"], "tune-hyperopt");
        assert_eq!(s["spec"]["ports"][0]["port"], 6789);
        assert_eq!(
            s["spec"]["selector"]["katib.kubeflow.org/deployment"],
            "tune-hyperopt"
        );
        serde_json::from_value::<Service>(s).expect("a valid Service");
        assert_eq!(
            address("tune", "hyperopt", "team"),
            "tune-hyperopt.team:6789"
        );
    }
}
