//! Kubernetes events about Experiments and Trials: what a user sees in `kubectl describe`.

use kube::Resource;
use kube::ResourceExt;
use kube::api::DynamicObject;
use kube::runtime::events::{Event, EventType, Recorder};

/// Publishes an event about `obj` (of `resource`); failures are only reported, never fatal
/// to a reconcile.
pub async fn publish(
    recorder: &Recorder,
    obj: &DynamicObject,
    resource: &kube::api::ApiResource,
    warning: bool,
    reason: &str,
    note: String,
) {
    let reference = obj.object_ref(resource);
    let event = Event {
        type_: if warning {
            EventType::Warning
        } else {
            EventType::Normal
        },
        reason: reason.to_string(),
        note: Some(truncate(note, 1000)),
        action: reason.to_string(),
        secondary: None,
    };
    if let Err(e) = recorder.publish(&event, &reference).await {
        tracing::warn!("cannot publish event {reason} for {}: {e}", obj.name_any());
    }
}

fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut cut = max;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
    s
}
