//! `?watch=true`: newline-delimited `WatchEvent`s (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR)
//! from a `resourceVersion`, replayed from the store's history and then followed live.
//! Semantics copied from the API server: no or `"0"` resourceVersion starts with a synthetic
//! ADDED per existing object; `sendInitialEvents=true` does the same and ends the initial
//! state with a bookmark annotated `k8s.io/initial-events-end`; a compacted resourceVersion
//! is an ERROR event carrying a 410 Expired Status (HTTP 200, as the server does for watches);
//! a selector turns "stopped matching" into DELETED and "started matching" into ADDED; a
//! watch that falls too far behind the live broadcast also gets 410 and must relist.

use crate::registry::ResourceType;
use crate::response::Presentation;
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::ApiStatus;
use crate::store::{ChangeEvent, ChangeType, Store, present};
use axum::body::Bytes;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, watch};

/// Everything a watch request asks for.
#[derive(Debug, Clone)]
pub struct WatchRequest {
    /// The resource as requested (decides `apiVersion` of the objects sent).
    pub resource: ResourceType,
    /// Namespace, `None` for all namespaces or cluster-scoped resources.
    pub namespace: Option<String>,
    /// `labelSelector`.
    pub labels: LabelSelector,
    /// `fieldSelector`.
    pub fields: FieldSelector,
    /// `resourceVersion`, if given and not `"0"`.
    pub since: Option<u64>,
    /// `allowWatchBookmarks=true`.
    pub bookmarks: bool,
    /// `sendInitialEvents=true`.
    pub send_initial_events: bool,
    /// `timeoutSeconds`.
    pub timeout: Option<Duration>,
    /// Full objects or PartialObjectMetadata.
    pub presentation: Presentation,
}

/// How often an idle watch with bookmarks allowed gets one (the real server: about once a
/// minute; shorter here so tests see them).
const BOOKMARK_EVERY: Duration = Duration::from_secs(1);

/// Start a watch; the receiver yields the body's lines until the watch ends.
pub fn start(
    store: Arc<Store>,
    request: WatchRequest,
    mut shutdown: watch::Receiver<bool>,
) -> mpsc::Receiver<Bytes> {
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    let mut live = store.subscribe();
    let (initial, start_rv) = {
        let state = store.lock();
        let current = state.resource_version();
        match request.since.filter(|_| !request.send_initial_events) {
            None => {
                let objects = state.list(
                    &request.resource,
                    request.namespace.as_deref(),
                    &request.labels,
                    &request.fields,
                );
                let lines = objects
                    .into_iter()
                    .map(|o| event_line("ADDED", request.presentation.render(o)))
                    .collect();
                (Ok(lines), current)
            }
            Some(since) => match state.changes_since(&request.resource.group_resource(), since) {
                Ok(changes) => (
                    Ok(changes
                        .iter()
                        .filter_map(|c| translate(&request, c))
                        .collect::<Vec<_>>()),
                    current,
                ),
                Err(gone) => (Err(gone), current),
            },
        }
    };
    tokio::spawn(async move {
        let lines = match initial {
            Ok(lines) => lines,
            Err(gone) => {
                let _ = tx.send(event_line("ERROR", gone.to_json())).await;
                return;
            }
        };
        for line in lines {
            if tx.send(line).await.is_err() {
                return;
            }
        }
        let mut seen = start_rv;
        if request.send_initial_events && request.bookmarks {
            let mark = bookmark(&request.resource, seen, true);
            if tx.send(mark).await.is_err() {
                return;
            }
        }
        let deadline = request.timeout.map(|t| tokio::time::Instant::now() + t);
        let mut ticker = tokio::time::interval(BOOKMARK_EVERY);
        ticker.tick().await;
        loop {
            // Biased: pending changes first, then a due bookmark, and only then the timeout,
            // so a watch that outlives one bookmark period always delivers one.
            let line = tokio::select! {
                biased;
                received = live.recv() => match received {
                    Ok(change) => {
                        if change.resource_version <= seen {
                            continue;
                        }
                        seen = change.resource_version;
                        match translate(&request, &change) {
                            Some(line) => line,
                            None => continue,
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let _ = tx.send(event_line("ERROR", ApiStatus::expired(seen, seen).to_json())).await;
                        return;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                _ = ticker.tick(), if request.bookmarks => bookmark(&request.resource, seen, false),
                _ = sleep_until(deadline) => return,
                _ = shutdown.changed() => return,
                _ = tx.closed() => return,
            };
            if tx.send(line).await.is_err() {
                return;
            }
        }
    });
    rx
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The watch line a committed change becomes for this request, if any.
fn translate(request: &WatchRequest, change: &ChangeEvent) -> Option<Bytes> {
    let rt = &request.resource;
    if change.resource != rt.group_resource() {
        return None;
    }
    if let Some(ns) = &request.namespace
        && rt.namespaced
        && &change.namespace != ns
    {
        return None;
    }
    let selected = |o: &Value| request.labels.matches(o) && request.fields.matches(o);
    let now = selected(&change.object);
    let kind = match change.change {
        ChangeType::Added => now.then_some("ADDED"),
        ChangeType::Deleted => now.then_some("DELETED"),
        ChangeType::Modified => {
            let before = change.previous.as_ref().is_none_or(selected);
            match (before, now) {
                (true, true) => Some("MODIFIED"),
                (false, true) => Some("ADDED"),
                (true, false) => Some("DELETED"),
                (false, false) => None,
            }
        }
    }?;
    Some(event_line(
        kind,
        request
            .presentation
            .render(present(rt, change.object.clone())),
    ))
}

fn event_line(kind: &str, object: Value) -> Bytes {
    let mut line = serde_json::to_vec(&json!({"type": kind, "object": object}))
        .unwrap_or_else(|_| b"{}".to_vec());
    line.push(b'\n');
    Bytes::from(line)
}

fn bookmark(rt: &ResourceType, resource_version: u64, initial_events_end: bool) -> Bytes {
    let mut metadata = json!({"resourceVersion": resource_version.to_string()});
    if initial_events_end {
        metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    event_line(
        "BOOKMARK",
        json!({"apiVersion": rt.api_version(), "kind": rt.kind, "metadata": metadata}),
    )
}
