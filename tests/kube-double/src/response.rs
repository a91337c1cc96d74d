//! How the double answers: JSON bodies, chunked streams (watches, followed logs) and the
//! object presentation a client's `Accept` header asks for.

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// A JSON response with the API server's content type.
pub fn json_response(code: StatusCode, body: &Value) -> Response {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    (code, [(header::CONTENT_TYPE, "application/json")], bytes).into_response()
}

/// Full objects, or `PartialObjectMetadata` when the client's `Accept` asks for it (kube-rs
/// `Api::get_metadata`, `metadata_watcher`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presentation {
    /// The object as stored.
    Full,
    /// Only `metadata`, as `meta.k8s.io/v1` `PartialObjectMetadata`.
    PartialMetadata,
}

impl Presentation {
    pub(crate) fn from_headers(headers: &HeaderMap) -> Self {
        let accept = headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        if accept.contains("as=PartialObjectMetadata") {
            Presentation::PartialMetadata
        } else {
            Presentation::Full
        }
    }

    /// Render one object.
    pub fn render(self, object: Value) -> Value {
        match self {
            Presentation::Full => object,
            Presentation::PartialMetadata => json!({
                "apiVersion": "meta.k8s.io/v1",
                "kind": "PartialObjectMetadata",
                "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
            }),
        }
    }
}

/// A chunked response fed by a channel (watches and followed logs).
pub fn stream_response(
    content_type: &'static str,
    chunks: tokio::sync::mpsc::Receiver<Bytes>,
) -> Response {
    let stream = futures_util::stream::unfold(chunks, |mut rx| async move {
        rx.recv()
            .await
            .map(|chunk| (Ok::<_, std::convert::Infallible>(chunk), rx))
    });
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, content_type)],
        Body::from_stream(stream),
    )
        .into_response()
}
