//! The Kubernetes client: from `--kube-url` (plain HTTP, no credentials, for the test double
//! and `kubectl proxy`), else from the kubeconfig or the in-cluster service account.

use crate::error::OperatorError;
/// Re-exported so callers (the cli) need no kube dependency of their own.
pub use kube::Client;
use kube::Config;

pub async fn connect(kube_url: Option<&str>) -> Result<Client, OperatorError> {
    let config = match kube_url {
        Some(url) => {
            let uri: http::Uri =
                url.parse()
                    .map_err(|e: http::uri::InvalidUri| OperatorError::KubeUrl {
                        url: url.into(),
                        message: format!("{e}; hint: write it like http://127.0.0.1:8001"),
                    })?;
            Config::new(uri)
        }
        None => Config::infer()
            .await
            .map_err(|e| OperatorError::KubeConfig(e.to_string()))?,
    };
    Client::try_from(config).map_err(|e| OperatorError::KubeConfig(e.to_string()))
}
