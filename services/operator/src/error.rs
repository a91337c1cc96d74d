//! The operator crate's one error type.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum OperatorError {
    #[error("kubernetes api: {0}")]
    Kube(#[from] kube::Error),
    #[error("store: {0}")]
    Store(#[from] vernier_store::StoreError),
    #[error("algorithm: {0}")]
    Algorithm(String),
    /// A Trial or Experiment object that cannot be read; `object` names it.
    #[error("{object}: {message}")]
    Malformed { object: String, message: String },
    #[error(
        "--trial-resources value {value:?}: {message}; hint: write Kind.version.group, e.g. TFJob.v1.kubeflow.org or Job.v1.batch"
    )]
    TrialResource { value: String, message: String },
    /// The API server did not answer at all (as opposed to answering with an error status).
    #[error(
        "cannot reach the kubernetes api: {0}; hint: check --kube-url (or KUBECONFIG) and that the cluster or kubectl proxy is up"
    )]
    Unreachable(String),
    #[error("--kube-url value {url:?}: {message}")]
    KubeUrl { url: String, message: String },
    #[error(
        "kubernetes client configuration: {0}; hint: set KUBECONFIG, run in a cluster, or pass --kube-url"
    )]
    KubeConfig(String),
    #[error(
        "experiment {namespace}/{name}: not found; hint: check the name and --namespace (kubectl get experiments -n NAMESPACE)"
    )]
    ExperimentNotFound { namespace: String, name: String },
}

pub type Result<T, E = OperatorError> = std::result::Result<T, E>;
