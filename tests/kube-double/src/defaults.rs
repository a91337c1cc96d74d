//! The few API-server defaults on create that clients of the double can observe: a batch/v1
//! Job gets its generated `spec.selector` (the controller-uid label), those labels on its
//! pod template, and `parallelism`, `completions`, `backoffLimit` defaults — what
//! `kubectl logs job/<name>` and pod lookups through `job.spec.selector` rely on; a new pod
//! is `Pending` and a new namespace `Active`, as their create strategies set.

use crate::meta::meta_str;
use crate::registry::ResourceType;
use serde_json::{Value, json};

/// Fill defaults into a new object (already carrying its `uid` and name).
pub fn apply_create_defaults(rt: &ResourceType, object: &mut Value) {
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("batch", "jobs") => default_job(object),
        ("", "pods") => object["status"] = json!({"phase": "Pending", "qosClass": "BestEffort"}),
        ("", "namespaces") => object["status"] = json!({"phase": "Active"}),
        _ => {}
    }
}

fn default_job(job: &mut Value) {
    let uid = meta_str(job, "uid").to_owned();
    let name = meta_str(job, "name").to_owned();
    let Some(spec) = job.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for (field, value) in [("parallelism", 1), ("completions", 1), ("backoffLimit", 6)] {
        spec.entry(field).or_insert(json!(value));
    }
    if spec.get("manualSelector").and_then(Value::as_bool) == Some(true) {
        return;
    }
    spec.insert(
        "selector".to_owned(),
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
    );
    let template = spec.entry("template").or_insert_with(|| json!({}));
    let labels = template
        .as_object_mut()
        .map(|t| t.entry("metadata").or_insert_with(|| json!({})))
        .and_then(|m| m.as_object_mut())
        .map(|m| m.entry("labels").or_insert_with(|| json!({})));
    if let Some(Value::Object(labels)) = labels {
        for (key, value) in [
            ("batch.kubernetes.io/controller-uid", &uid),
            ("batch.kubernetes.io/job-name", &name),
            ("controller-uid", &uid),
            ("job-name", &name),
        ] {
            labels.insert(key.to_owned(), json!(value));
        }
    }
}
