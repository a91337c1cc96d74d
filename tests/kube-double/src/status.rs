//! Failure responses in the API server's own shape: a `Status` object with `reason`, `code`,
//! `message` and `details`, worded like the real server so clients (kube-rs `ErrorResponse`,
//! `kubectl`) classify them the same way.

use crate::registry::GroupResource;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// A non-success answer of the API: HTTP code plus the `Status` body the server sends.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiStatus {
    /// HTTP status code (also `.code` in the body).
    pub code: u16,
    /// Machine-readable `reason` (`NotFound`, `AlreadyExists`, `Conflict`, ...).
    pub reason: &'static str,
    /// Human-readable message.
    pub message: String,
    /// `details` object (`name`, `group`, `kind`), empty when there is none.
    pub details: Value,
}

impl ApiStatus {
    fn new(code: u16, reason: &'static str, message: String, details: Value) -> Self {
        ApiStatus {
            code,
            reason,
            message,
            details,
        }
    }

    fn details(gr: &GroupResource, name: &str) -> Value {
        let mut details = json!({"name": name, "kind": gr.resource});
        if !gr.group.is_empty() {
            details["group"] = json!(gr.group);
        }
        details
    }

    /// 404 for a named object that does not exist.
    pub fn not_found(gr: &GroupResource, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", gr.qualified()),
            Self::details(gr, name),
        )
    }

    /// 404 for a URL no served resource matches.
    pub fn no_route() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource".to_owned(),
            json!({}),
        )
    }

    /// 409 for a create of a name already taken.
    pub fn already_exists(gr: &GroupResource, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", gr.qualified()),
            Self::details(gr, name),
        )
    }

    /// 409 for a write based on a stale `resourceVersion` (or a failed precondition).
    pub fn conflict(gr: &GroupResource, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                gr.qualified()
            ),
            Self::details(gr, name),
        )
    }

    /// The standard optimistic-concurrency conflict text.
    pub fn stale(gr: &GroupResource, name: &str) -> Self {
        Self::conflict(
            gr,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 for an object that fails validation; `causes` are `field: problem` texts.
    pub fn invalid(gr: &GroupResource, kind: &str, name: &str, cause: &str) -> Self {
        let mut details = Self::details(gr, name);
        details["kind"] = json!(kind);
        Self::new(
            422,
            "Invalid",
            if gr.group.is_empty() {
                format!("{kind} \"{name}\" is invalid: {cause}")
            } else {
                format!("{kind}.{} \"{name}\" is invalid: {cause}", gr.group)
            },
            details,
        )
    }

    /// 400 for a request the server cannot interpret.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message.into(), json!({}))
    }

    /// 405 for a verb the URL does not support.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message.into(), json!({}))
    }

    /// 415 for a patch content type the server does not know.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json; got {content_type:?}"
            ),
            json!({}),
        )
    }

    /// 415 for a request body in a serialization the double does not decode.
    pub fn unsupported_body(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml; got {content_type:?}"
            ),
            json!({}),
        )
    }

    /// 410 for a watch or list from a `resourceVersion` older than the kept history.
    pub fn expired(requested: u64, oldest: u64) -> Self {
        Self::new(
            410,
            "Expired",
            format!("too old resource version: {requested} ({oldest})"),
            json!({}),
        )
    }

    /// 500 for a failure inside the double itself.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message.into(), json!({}))
    }

    /// The `Status` object as the API server serialises it.
    pub fn to_json(&self) -> Value {
        let mut body = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "details": self.details,
            "code": self.code,
        });
        if self.details.as_object().is_some_and(|d| d.is_empty())
            && let Some(obj) = body.as_object_mut()
        {
            obj.remove("details");
        }
        body
    }
}

impl IntoResponse for ApiStatus {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        crate::response::json_response(code, &self.to_json())
    }
}
