//! The crate's error type: what can go wrong starting the double or the simulated operator,
//! as opposed to [`crate::ApiStatus`], which is an answer the fake API server gives clients.

/// Failures of the double's own Rust API.
#[derive(Debug, thiserror::Error)]
pub enum DoubleError {
    /// The listening socket could not be bound.
    #[error("cannot bind the kube double to 127.0.0.1:0: {0}")]
    Bind(#[source] std::io::Error),
    /// The server URL is not a valid URI.
    #[error("kube double url {url:?} is not a valid URI: {source}")]
    Url {
        /// The double's base URL.
        url: String,
        /// What the URI parser reported.
        #[source]
        source: axum::http::uri::InvalidUri,
    },
    /// The server URL could not be turned into a kube client configuration.
    #[error("cannot build a kube client for {url}: {source}")]
    Client {
        /// The double's base URL.
        url: String,
        /// What kube-rs reported.
        #[source]
        source: kube::Error,
    },
    /// A call the simulated operator makes against the double failed.
    #[error("simulated training operator: {action} failed: {source}")]
    Operator {
        /// What the operator was doing, e.g. `install CRD tfjobs.kubeflow.org`.
        action: String,
        /// What kube-rs reported.
        #[source]
        source: kube::Error,
    },
    /// A resource registered through the Rust API is inconsistent.
    #[error("resource {field} is {value:?}; hint: {hint}")]
    InvalidResource {
        /// The offending field of [`crate::ResourceType`].
        field: &'static str,
        /// Its value.
        value: String,
        /// How to fix it.
        hint: &'static str,
    },
}
