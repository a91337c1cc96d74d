//! `GET /api/v1/namespaces/{ns}/pods/{name}/log`: container selection and its errors worded
//! as the kubelet's, `tailLines`, `limitBytes`, `timestamps=true` and `follow=true` streaming.

use crate::registry::GroupResource;
use crate::response::stream_response;
use crate::shared::Shared;
use crate::status::ApiStatus;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use std::collections::HashMap;

/// Serve one container's log.
pub async fn pod_log(
    shared: &Shared,
    namespace: &str,
    pod: &str,
    query: &HashMap<String, String>,
) -> Result<Response, ApiStatus> {
    let pods = GroupResource {
        group: String::new(),
        resource: "pods".to_owned(),
    };
    let object = shared
        .store
        .lock()
        .stored(&pods, namespace, pod)
        .cloned()
        .ok_or_else(|| ApiStatus::not_found(&pods, pod))?;
    let containers: Vec<String> = object
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    // Init containers (native sidecars among them) have logs too, but only a named one is
    // served, as the API server's default is chosen among the regular containers.
    let init_containers: Vec<String> = object
        .pointer("/spec/initContainers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect();
    let container = match query.get("container").filter(|c| !c.is_empty()) {
        Some(c) if containers.contains(c) || init_containers.contains(c) => c.clone(),
        Some(c) => {
            return Err(ApiStatus::bad_request(format!(
                "container {c} is not valid for pod {pod}"
            )));
        }
        None if containers.len() == 1 => containers[0].clone(),
        None => {
            return Err(ApiStatus::bad_request(format!(
                "a container name must be specified for pod {pod}, choose one of: [{}]",
                containers.join(" ")
            )));
        }
    };
    let waiting = || {
        ApiStatus::bad_request(format!(
            "container \"{container}\" in pod \"{pod}\" is waiting to start: ContainerCreating"
        ))
    };
    let timestamps = crate::query_flag::flag(query, "timestamps");
    if crate::query_flag::flag(query, "follow") {
        let chunks = shared
            .logs
            .follow(namespace, pod, &container, timestamps)
            .ok_or_else(waiting)?;
        return Ok(stream_response("text/plain", chunks));
    }
    let mut text = shared
        .logs
        .read(namespace, pod, &container, timestamps)
        .ok_or_else(waiting)?;
    if let Some(tail) = query.get("tailLines").and_then(|t| t.parse::<usize>().ok()) {
        text = tail_lines(&text, tail);
    }
    if let Some(limit) = query
        .get("limitBytes")
        .and_then(|t| t.parse::<usize>().ok())
    {
        text.truncate(limit);
    }
    Ok((StatusCode::OK, [(header::CONTENT_TYPE, "text/plain")], text).into_response())
}

fn tail_lines(text: &[u8], count: usize) -> Vec<u8> {
    let body = text.strip_suffix(b"\n").unwrap_or(text);
    let starts: Vec<usize> = std::iter::once(0)
        .chain(
            body.iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(i, _)| i + 1),
        )
        .collect();
    if count == 0 {
        return Vec::new();
    }
    let from = starts.len().saturating_sub(count);
    text[starts[from]..].to_vec()
}
