//! The Kubeflow training CRDs (TFJob, PyTorchJob, XGBoostJob, MPIJob in `kubeflow.org/v1`),
//! installed through the API as deploying the real training operator would, so clients see
//! them in discovery like on a cluster.

use super::kinds::JobKind;
use crate::error::DoubleError;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::json;

/// Create the CRD of every Kubeflow kind (an existing one is left alone).
pub async fn install(client: &kube::Client) -> Result<(), DoubleError> {
    let crd_resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        "customresourcedefinitions",
    );
    let crds: Api<DynamicObject> = Api::all_with(client.clone(), &crd_resource);
    for kind in JobKind::ALL.into_iter().filter(|k| *k != JobKind::BatchJob) {
        let name = format!("{}.kubeflow.org", kind.plural());
        let manifest = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {
                "group": "kubeflow.org",
                "scope": "Namespaced",
                "names": {
                    "plural": kind.plural(),
                    "singular": kind.kind().to_lowercase(),
                    "kind": kind.kind(),
                    "listKind": format!("{}List", kind.kind()),
                },
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                }],
            },
        });
        let object: DynamicObject =
            serde_json::from_value(manifest).map_err(|e| DoubleError::Operator {
                action: format!("build CRD {name}"),
                source: kube::Error::SerdeError(e),
            })?;
        match crds.create(&PostParams::default(), &object).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(source) => {
                return Err(DoubleError::Operator {
                    action: format!("install CRD {name}"),
                    source,
                });
            }
        }
    }
    Ok(())
}
