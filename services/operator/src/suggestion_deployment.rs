//! A suggestion Deployment per Experiment, as Katib's suggestion controller composes one from a
//! katib-config entry's image: a Deployment and a Service named `<experiment>-<algorithm>` in
//! the experiment's namespace (owned by the Experiment), the service's gRPC API on port 6789,
//! Katib's labels, default resources and gRPC probes. The operator creates them before it first
//! asks the service, and deletes them when the experiment ends unless its `resumePolicy` is
//! `LongRunning` (as Katib keeps its suggestion running then). Rendering is pure; `ensure` and
//! `retire` are the thin shells that write.

use crate::error::{OperatorError, Result};
use crate::objects::owner_reference;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
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
    c.entry("imagePullPolicy").or_insert(json!("IfNotPresent"));
    c.insert(
        "ports".into(),
        json!([{"name": PORT_NAME, "containerPort": PORT}]),
    );
    c.entry("resources").or_insert(json!({
        "requests": {"cpu": "50m", "memory": "10Mi", "ephemeral-storage": "500Mi"},
        "limits": {"cpu": "500m", "memory": "100Mi", "ephemeral-storage": "5Gi"},
    }));
    let grpc = json!({"port": PORT, "service": PROBE_SERVICE});
    c.entry("readinessProbe")
        .or_insert(json!({"grpc": grpc, "initialDelaySeconds": 10, "periodSeconds": 10}));
    c.entry("livenessProbe").or_insert(json!({
        "grpc": grpc, "initialDelaySeconds": 10, "periodSeconds": 120, "failureThreshold": 12,
    }));
    Value::Object(c)
}

/// The Deployment running `container` for the experiment's algorithm.
pub fn deployment(meta: &Placement<'_>, container: Value, service_account: Option<&str>) -> Value {
    let labels = labels(&meta.name, meta.experiment);
    let mut pod_labels = labels.clone();
    pod_labels["sidecar.istio.io/inject"] = json!("false");
    let mut pod = json!({"containers": [container]});
    if let Some(account) = service_account {
        pod["serviceAccountName"] = json!(account);
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

/// Creates the Deployment and Service unless they exist (existing ones are kept as they are).
pub async fn ensure(
    client: &kube::Client,
    at: &Placement<'_>,
    entry: &Map<String, Value>,
    service_account: Option<&str>,
) -> Result<()> {
    let malformed = |kind: &str, e: serde_json::Error| OperatorError::Malformed {
        object: format!("{kind} {}/{}", at.namespace, at.name),
        message: e.to_string(),
    };
    let d = deployment(at, container(entry), service_account);
    let d: Deployment = serde_json::from_value(d).map_err(|e| malformed("deployment", e))?;
    let s: Service = serde_json::from_value(service(at)).map_err(|e| malformed("service", e))?;
    let params = PostParams::default();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), at.namespace);
    created(deployments.create(&params, &d).await)?;
    let services: Api<Service> = Api::namespaced(client.clone(), at.namespace);
    created(services.create(&params, &s).await)
}

fn created<T>(result: std::result::Result<T, kube::Error>) -> Result<()> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Deletes the Deployment and Service of an ended experiment (gone already is fine).
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
        let d = deployment(&placement(), container(entry), Some("suggester"));
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
        // The entry's own resources are kept whole; the probes are Katib's.
        assert_eq!(c["resources"], json!({"limits": {"memory": "200Mi"}}));
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
