//! The HTTP face of the double: parses Kubernetes REST paths for any group, version and
//! resource (namespaced or cluster-scoped, with `/status` and `/log`), maps verbs to store
//! operations and writes JSON bodies the way the API server does. One catch-all handler
//! instead of axum routes, because the URL grammar depends on the registry at request time.

use crate::deletion::{DeleteOptions, Deletion, Propagation};
use crate::discovery;
use crate::patch::{self, PatchKind};
use crate::query_flag::flag;
use crate::registry::ResourceType;
use crate::response::{Presentation, json_response, stream_response};
use crate::selector::{FieldSelector, LabelSelector};
pub use crate::shared::Shared;
use crate::status::ApiStatus;
use crate::store::{Endpoint, present};
use crate::watch::{self, WatchRequest};
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// The router: everything goes to [`handle`].
pub fn router(shared: Arc<Shared>) -> axum::Router {
    axum::Router::new().fallback(handle).with_state(shared)
}

/// A parsed resource URL.
#[derive(Debug)]
struct Target {
    resource: ResourceType,
    namespace: Option<String>,
    name: Option<String>,
    subresource: Option<String>,
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let query: HashMap<String, String> = Query::try_from_uri(&uri)
        .map(|Query(q)| q)
        .unwrap_or_default();
    match route(&shared, &method, &uri, &headers, &query, body).await {
        Ok(response) => response,
        Err(status) => status.into_response(),
    }
}

async fn route(
    shared: &Arc<Shared>,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
    body: Bytes,
) -> Result<Response, ApiStatus> {
    let segments: Vec<&str> = uri
        .path()
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let ok = |body: Value| Ok(json_response(StatusCode::OK, &body));
    let (group, version, rest) = match segments.as_slice() {
        ["version"] => return ok(discovery::version()),
        ["healthz"] | ["readyz"] | ["livez"] => {
            return Ok((StatusCode::OK, "ok").into_response());
        }
        ["api"] => return ok(discovery::core_versions(&shared.address)),
        ["openapi", "v3"] => return ok(discovery::openapi_root(&shared.store.lock().registry)),
        ["openapi", "v3", "api", version] => {
            return discovery::openapi_group_version(&shared.store.lock().registry, "", version)
                .map(|b| json_response(StatusCode::OK, &b))
                .ok_or_else(ApiStatus::no_route);
        }
        ["openapi", "v3", "apis", group, version] => {
            return discovery::openapi_group_version(&shared.store.lock().registry, group, version)
                .map(|b| json_response(StatusCode::OK, &b))
                .ok_or_else(ApiStatus::no_route);
        }
        ["apis"] => return ok(discovery::group_list(&shared.store.lock().registry)),
        ["apis", group] => {
            return discovery::group(&shared.store.lock().registry, group)
                .map(|b| json_response(StatusCode::OK, &b))
                .ok_or_else(ApiStatus::no_route);
        }
        ["api", version] => ("", *version, &[][..]),
        ["apis", group, version] => (*group, *version, &[][..]),
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return Err(ApiStatus::no_route()),
    };
    if rest.is_empty() {
        return discovery::resource_list(&shared.store.lock().registry, group, version)
            .map(|b| json_response(StatusCode::OK, &b))
            .ok_or_else(ApiStatus::no_route);
    }
    let target = parse_target(shared, group, version, rest)?;
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if matches!(*method, Method::POST | Method::PUT) && !body.is_empty() {
        let media = content_type.split(';').next().unwrap_or_default().trim();
        if !(media.is_empty() || media == "application/json" || media == "application/yaml") {
            // Protobuf and CBOR bodies are not decoded here (that needs every built-in
            // type's protobuf schema). `kubectl create -f`/`apply` send JSON; only kubectl's
            // typed generators (`kubectl create configmap ...`) send protobuf and get this.
            return Err(ApiStatus::unsupported_body(media));
        }
    }
    let presentation = Presentation::from_headers(headers);
    let dry_run = query.get("dryRun").is_some_and(|v| v == "All");
    match (method.clone(), &target.name, target.subresource.as_deref()) {
        (Method::GET, None, None) => {
            if flag(query, "watch") {
                start_watch(shared, target, query, presentation)
            } else {
                list(shared, &target, query, presentation)
            }
        }
        (Method::GET, Some(name), None | Some("status")) => {
            let object = shared
                .store
                .lock()
                .get(&target.resource, namespace_of(&target), name)?;
            ok(presentation.render(object))
        }
        (Method::GET, Some(name), Some("log")) => {
            crate::logs_http::pod_log(shared, namespace_of(&target), name, query).await
        }
        (Method::POST, None, None) => {
            if target.resource.namespaced && target.namespace.is_none() {
                return Err(ApiStatus::method_not_allowed(format!(
                    "POST is not supported on {} without a namespace",
                    target.resource.plural
                )));
            }
            let body = parse_body(content_type, &body)?;
            let created = shared.store.lock().create(
                &target.resource,
                target.namespace.as_deref(),
                body,
                dry_run,
            )?;
            Ok(json_response(StatusCode::CREATED, &created))
        }
        (Method::PUT, Some(name), sub @ (None | Some("status"))) => {
            let body = parse_body(content_type, &body)?;
            if !target.resource.unconditional_update
                && crate::meta::meta_str(&body, "resourceVersion").is_empty()
            {
                return Err(ApiStatus::invalid(
                    &target.resource.group_resource(),
                    &target.resource.kind,
                    name,
                    "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update",
                ));
            }
            let endpoint = endpoint_of(sub);
            let written = shared.store.lock().write(
                &target.resource,
                namespace_of(&target),
                name,
                body,
                endpoint,
                dry_run,
            )?;
            ok(written)
        }
        (Method::PATCH, Some(name), sub @ (None | Some("status"))) => {
            let kind = PatchKind::from_request(
                content_type,
                query.get("fieldManager").map(String::as_str),
                flag(query, "force"),
            )?;
            let patch_body = patch::parse_body(&kind, &body)?;
            let (code, object) = patch_object(
                shared,
                &target,
                name,
                endpoint_of(sub),
                &kind,
                patch_body,
                dry_run,
            )?;
            Ok(json_response(code, &object))
        }
        (Method::DELETE, Some(name), None) => {
            let options = delete_options(query, &body, dry_run)?;
            let outcome = shared.store.lock().delete(
                &target.resource,
                namespace_of(&target),
                name,
                &options,
            )?;
            Ok(match outcome {
                Deletion::Removed(o) => json_response(StatusCode::OK, &o),
                Deletion::Pending(o) => json_response(StatusCode::ACCEPTED, &o),
            })
        }
        (Method::DELETE, None, None) => {
            let options = delete_options(query, &body, dry_run)?;
            let (labels, fields) = selectors(&target.resource, query)?;
            let mut state = shared.store.lock();
            let victims = state.list(
                &target.resource,
                target.namespace.as_deref(),
                &labels,
                &fields,
            );
            let mut items = Vec::new();
            for victim in victims {
                let ns = crate::meta::meta_str(&victim, "namespace").to_owned();
                let name = crate::meta::meta_str(&victim, "name").to_owned();
                match state.delete(&target.resource, &ns, &name, &options)? {
                    Deletion::Removed(o) | Deletion::Pending(o) => items.push(o),
                }
            }
            let rv = state.resource_version();
            ok(list_body(&target.resource, items, rv))
        }
        _ => Err(ApiStatus::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({method} {})",
            uri.path()
        ))),
    }
}

fn endpoint_of(subresource: Option<&str>) -> Endpoint {
    if subresource == Some("status") {
        Endpoint::Status
    } else {
        Endpoint::Main
    }
}

fn namespace_of(target: &Target) -> &str {
    target.namespace.as_deref().unwrap_or_default()
}

fn parse_target(
    shared: &Shared,
    group: &str,
    version: &str,
    rest: &[&str],
) -> Result<Target, ApiStatus> {
    let namespace_sub = rest.len() == 3 && matches!(rest[2], "status" | "finalize");
    let (namespace, rest) = if rest.len() >= 3 && rest[0] == "namespaces" && !namespace_sub {
        (Some(rest[1].to_owned()), &rest[2..])
    } else {
        (None, rest)
    };
    if rest.len() > 3 {
        return Err(ApiStatus::no_route());
    }
    let resource = shared
        .store
        .lock()
        .registry
        .lookup(group, version, rest[0])
        .cloned()
        .ok_or_else(ApiStatus::no_route)?;
    let name = rest.get(1).map(|s| (*s).to_owned());
    let subresource = rest.get(2).map(|s| (*s).to_owned());
    let scoped_right = if resource.namespaced {
        namespace.is_some() || name.is_none()
    } else {
        namespace.is_none()
    };
    let sub_known = match subresource.as_deref() {
        None => true,
        Some("status") => resource.status_subresource,
        Some("log") => resource.log_subresource,
        Some(_) => false,
    };
    if !scoped_right || !sub_known {
        return Err(ApiStatus::no_route());
    }
    Ok(Target {
        resource,
        namespace,
        name,
        subresource,
    })
}

fn parse_body(content_type: &str, body: &[u8]) -> Result<Value, ApiStatus> {
    if content_type.starts_with("application/yaml") {
        return yaml_serde::from_slice(body).map_err(|e| {
            ApiStatus::bad_request(format!(
                "the body of the request could not be decoded as YAML: {e}"
            ))
        });
    }
    parse_json(body)
}

fn parse_json(body: &[u8]) -> Result<Value, ApiStatus> {
    serde_json::from_slice(body).map_err(|e| {
        ApiStatus::bad_request(format!(
            "the body of the request could not be decoded as JSON: {e}"
        ))
    })
}

fn selectors(
    rt: &ResourceType,
    query: &HashMap<String, String>,
) -> Result<(LabelSelector, FieldSelector), ApiStatus> {
    let labels = LabelSelector::parse(query.get("labelSelector").map_or("", String::as_str))?;
    let fields = FieldSelector::parse(
        query.get("fieldSelector").map_or("", String::as_str),
        &rt.selectable_fields,
    )?;
    Ok((labels, fields))
}

fn list_body(rt: &ResourceType, items: Vec<Value>, resource_version: u64) -> Value {
    json!({
        "apiVersion": rt.api_version(),
        "kind": format!("{}List", rt.kind),
        "metadata": {"resourceVersion": resource_version.to_string()},
        "items": items,
    })
}

fn list(
    shared: &Shared,
    target: &Target,
    query: &HashMap<String, String>,
    presentation: Presentation,
) -> Result<Response, ApiStatus> {
    let (labels, fields) = selectors(&target.resource, query)?;
    let state = shared.store.lock();
    let items: Vec<Value> = state
        .list(
            &target.resource,
            target.namespace.as_deref(),
            &labels,
            &fields,
        )
        .into_iter()
        .map(|o| presentation.render(o))
        .collect();
    let mut body = list_body(&target.resource, items, state.resource_version());
    if presentation == Presentation::PartialMetadata {
        body["apiVersion"] = json!("meta.k8s.io/v1");
        body["kind"] = json!("PartialObjectMetadataList");
    }
    Ok(json_response(StatusCode::OK, &body))
}

fn start_watch(
    shared: &Arc<Shared>,
    target: Target,
    query: &HashMap<String, String>,
    presentation: Presentation,
) -> Result<Response, ApiStatus> {
    let (labels, fields) = selectors(&target.resource, query)?;
    let since = match query.get("resourceVersion").map(String::as_str) {
        None | Some("") | Some("0") => None,
        Some(rv) => Some(rv.parse::<u64>().map_err(|_| {
            ApiStatus::bad_request(format!(
                "resourceVersion: Invalid value: {rv:?}: must be a decimal resource version; hint: pass the metadata.resourceVersion of a list"
            ))
        })?),
    };
    let timeout = query
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map(Duration::from_secs);
    let request = WatchRequest {
        resource: target.resource,
        namespace: target.namespace,
        labels,
        fields,
        since,
        bookmarks: flag(query, "allowWatchBookmarks"),
        send_initial_events: flag(query, "sendInitialEvents"),
        timeout,
        presentation,
    };
    let lines = watch::start(shared.store.clone(), request, shared.shutdown.clone());
    Ok(stream_response("application/json", lines))
}

fn patch_object(
    shared: &Shared,
    target: &Target,
    name: &str,
    endpoint: Endpoint,
    kind: &PatchKind,
    patch_body: Value,
    dry_run: bool,
) -> Result<(StatusCode, Value), ApiStatus> {
    let rt = &target.resource;
    let gr = rt.group_resource();
    let ns = namespace_of(target);
    let mut state = shared.store.lock();
    let current = state.get(rt, ns, name).ok();
    let candidate = match (kind, current) {
        (
            PatchKind::Apply {
                field_manager,
                force,
            },
            current,
        ) => {
            let sent_name = crate::meta::meta_str(&patch_body, "name");
            if !sent_name.is_empty() && sent_name != name {
                return Err(ApiStatus::bad_request(format!(
                    "the name of the object ({sent_name}) does not match the name on the URL ({name})"
                )));
            }
            let applied = patch::apply(
                current.as_ref(),
                &patch_body,
                field_manager,
                *force,
                (&gr, name),
            )?;
            if current.is_none() {
                if endpoint == Endpoint::Status {
                    return Err(ApiStatus::not_found(&gr, name));
                }
                let mut applied = applied;
                crate::meta::metadata_mut(&mut applied).insert("name".to_owned(), json!(name));
                let created = state.create(rt, target.namespace.as_deref(), applied, dry_run)?;
                return Ok((StatusCode::CREATED, created));
            }
            applied
        }
        (_, None) => return Err(ApiStatus::not_found(&gr, name)),
        (kind, Some(current)) => patch::apply_patch(&current, kind, &patch_body)?,
    };
    let written = state.write(rt, ns, name, candidate, endpoint, dry_run)?;
    Ok((StatusCode::OK, present(rt, written)))
}

fn delete_options(
    query: &HashMap<String, String>,
    body: &[u8],
    dry_run: bool,
) -> Result<DeleteOptions, ApiStatus> {
    let sent: Value = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        parse_json(body)?
    };
    let policy = query
        .get("propagationPolicy")
        .map(String::as_str)
        .or_else(|| sent.get("propagationPolicy").and_then(Value::as_str))
        .map(Propagation::parse)
        .transpose()?;
    let policy = match (
        policy,
        sent.get("orphanDependents").and_then(Value::as_bool),
    ) {
        (Some(p), _) => Some(p),
        (None, Some(true)) => Some(Propagation::Orphan),
        (None, Some(false)) => Some(Propagation::Background),
        (None, None) => None,
    };
    let body_dry_run = sent
        .get("dryRun")
        .and_then(Value::as_array)
        .is_some_and(|d| d.iter().any(|v| v == "All"));
    Ok(DeleteOptions {
        propagation: policy,
        uid: sent
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(str::to_owned),
        resource_version: sent
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_owned),
        dry_run: dry_run || body_dry_run,
    })
}
