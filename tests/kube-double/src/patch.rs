//! PATCH bodies: JSON merge patch (RFC 7386), strategic merge patch, JSON patch (RFC 6902)
//! and server-side apply, turned into the full object the write pipeline stores. Merge and
//! JSON patch are the `json-patch` crate's. Strategic merge is applied as a merge patch after
//! dropping its `$`-directives: exact for custom resources (the API server itself does this
//! for CRDs) and for maps in built-ins, but lists in built-in kinds are replaced instead of
//! merged by key.

use crate::apply;
use crate::status::ApiStatus;
use serde_json::Value;

/// The patch flavours, from the request's `Content-Type`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchKind {
    /// `application/merge-patch+json`.
    Merge,
    /// `application/strategic-merge-patch+json`.
    StrategicMerge,
    /// `application/json-patch+json`.
    Json,
    /// `application/apply-patch+yaml` with its `fieldManager` and `force` parameters.
    Apply {
        /// Required `fieldManager` query parameter.
        field_manager: String,
        /// `force=true`: take fields over from other managers instead of failing.
        force: bool,
    },
}

impl PatchKind {
    /// Pick the flavour from the content type and query parameters.
    pub fn from_request(
        content_type: &str,
        field_manager: Option<&str>,
        force: bool,
    ) -> Result<Self, ApiStatus> {
        let media = content_type.split(';').next().unwrap_or_default().trim();
        match media {
            "application/merge-patch+json" => Ok(PatchKind::Merge),
            "application/strategic-merge-patch+json" => Ok(PatchKind::StrategicMerge),
            "application/json-patch+json" => Ok(PatchKind::Json),
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => {
                let field_manager = field_manager.filter(|m| !m.is_empty()).ok_or_else(|| {
                    ApiStatus::bad_request(
                        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
                    )
                })?;
                Ok(PatchKind::Apply {
                    field_manager: field_manager.to_owned(),
                    force,
                })
            }
            other => Err(ApiStatus::unsupported_media_type(other)),
        }
    }
}

/// Parse a patch body: JSON, or YAML for apply (a superset of JSON).
pub fn parse_body(kind: &PatchKind, body: &[u8]) -> Result<Value, ApiStatus> {
    let parsed = match kind {
        PatchKind::Apply { .. } => yaml_serde::from_slice::<Value>(body).map_err(|e| e.to_string()),
        _ => serde_json::from_slice::<Value>(body).map_err(|e| e.to_string()),
    };
    parsed.map_err(|why| ApiStatus::bad_request(format!("error decoding patch: {why}")))
}

/// The object after applying a merge, strategic or JSON patch to `current`.
pub fn apply_patch(current: &Value, kind: &PatchKind, patch: &Value) -> Result<Value, ApiStatus> {
    let mut next = current.clone();
    match kind {
        PatchKind::Merge => json_patch::merge(&mut next, patch),
        PatchKind::StrategicMerge => json_patch::merge(&mut next, &without_directives(patch)),
        PatchKind::Json => {
            let operations: json_patch::Patch = serde_json::from_value(patch.clone())
                .map_err(|e| ApiStatus::bad_request(format!("error decoding JSON patch: {e}")))?;
            for operation in operations.0 {
                // The API server's JSON patch library treats a missing path as null in
                // `test`; kube-rs' finalizer helper relies on that ("test finalizers is
                // null, then add").
                if let json_patch::PatchOperation::Test(test) = &operation
                    && test.value.is_null()
                    && next.pointer(test.path.as_str()).is_none()
                {
                    continue;
                }
                json_patch::patch(&mut next, &[operation]).map_err(|e| ApiStatus {
                    code: 422,
                    reason: "Invalid",
                    message: format!(
                        "the server rejected our request due to an error in our request: {e}"
                    ),
                    details: serde_json::json!({}),
                })?;
            }
        }
        PatchKind::Apply { .. } => {
            return Err(ApiStatus::internal("apply patches go through apply::apply"));
        }
    }
    Ok(next)
}

/// Strategic-merge directives (`$patch`, `$setElementOrder/...`, `$retainKeys`,
/// `$deleteFromPrimitiveList/...`) have no meaning in a plain merge patch.
fn without_directives(patch: &Value) -> Value {
    match patch {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k.clone(), without_directives(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_directives).collect()),
        other => other.clone(),
    }
}

pub use apply::apply;
