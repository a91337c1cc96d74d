//! A simplified server-side apply. Enough for controllers that `Patch::Apply` their objects
//! and status: field ownership per manager is recorded in real `managedFields` entries
//! (`operation: Apply`, `fieldsType: FieldsV1`); applying a field another apply-manager owns
//! with a different value is a 409 conflict unless `force=true`, which moves ownership; fields
//! a manager applied before and leaves out now are removed unless someone else owns them.
//! Simplifications (documented in the crate doc): lists are atomic values (no merge by key),
//! and non-apply writes (PUT, merge patches) take no ownership, so they never conflict.

use crate::meta;
use crate::status::ApiStatus;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

type Path = Vec<String>;

/// Fields the server owns; apply never records or removes them.
const SERVER_FIELDS: [&str; 8] = [
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "managedFields",
    "deletionTimestamp",
];

/// The object after `manager` applies `config` to `current` (`None` when it does not exist
/// yet). `what` names the object for error messages (`trials.kubeflow.org "t1"`).
pub fn apply(
    current: Option<&Value>,
    config: &Value,
    manager: &str,
    force: bool,
    what: (&crate::registry::GroupResource, &str),
) -> Result<Value, ApiStatus> {
    if !config.is_object() {
        return Err(ApiStatus::bad_request(
            "apply patch must be a YAML or JSON object",
        ));
    }
    for field in ["apiVersion", "kind"] {
        if config
            .get(field)
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(ApiStatus::bad_request(format!(
                "error decoding patch: {field} must be set in an apply patch; hint: send the full apiVersion and kind"
            )));
        }
    }
    let empty = json!({});
    let base = current.unwrap_or(&empty);
    let applied: BTreeSet<Path> = leaves(config).into_iter().collect();
    let mut owners = managers(base);
    let mut conflicts = Vec::new();
    for (other, paths) in owners.iter_mut().filter(|(m, _)| m != manager) {
        let contested: Vec<Path> = paths
            .iter()
            .filter(|p| applied.contains(*p) && value_at(base, p) != value_at(config, p))
            .cloned()
            .collect();
        for path in contested {
            if force {
                paths.remove(&path);
            } else {
                conflicts.push((other.clone(), path));
            }
        }
    }
    if !conflicts.is_empty() {
        let message = format!(
            "Apply failed with {} conflict{}: {}",
            conflicts.len(),
            if conflicts.len() == 1 { "" } else { "s" },
            conflicts
                .iter()
                .map(|(m, p)| format!("conflict with \"{m}\": .{}", p.join(".")))
                .collect::<Vec<_>>()
                .join("\n")
        );
        let mut status = ApiStatus::conflict(what.0, what.1, &message);
        status.message = message.clone();
        status.details["causes"] = json!(
            conflicts
                .iter()
                .map(|(m, p)| json!({"type": "FieldManagerConflict",
                "message": format!("conflict with \"{m}\""), "field": format!(".{}", p.join("."))}))
                .collect::<Vec<_>>()
        );
        return Err(status);
    }
    let mut next = base.clone();
    let previously: BTreeSet<Path> = owners
        .iter()
        .find(|(m, _)| m == manager)
        .map(|(_, p)| p.clone())
        .unwrap_or_default();
    for dropped in previously.difference(&applied) {
        let kept_by_other = owners
            .iter()
            .any(|(m, p)| m != manager && p.contains(dropped));
        if !kept_by_other {
            remove_at(&mut next, dropped);
        }
    }
    json_patch::merge(&mut next, config);
    owners.retain(|(m, _)| m != manager);
    owners.push((manager.to_owned(), applied));
    let api_version = config
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let entries: Vec<Value> = owners
        .into_iter()
        .filter(|(_, p)| !p.is_empty())
        .map(|(m, p)| {
            json!({
                "manager": m,
                "operation": "Apply",
                "apiVersion": api_version,
                "time": meta::now(),
                "fieldsType": "FieldsV1",
                "fieldsV1": encode(&p),
            })
        })
        .collect();
    let keep_other_operations: Vec<Value> = base
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|all| {
            all.iter()
                .filter(|e| e.get("operation").and_then(Value::as_str) != Some("Apply"))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    meta::metadata_mut(&mut next).insert(
        "managedFields".to_owned(),
        Value::Array(entries.into_iter().chain(keep_other_operations).collect()),
    );
    Ok(next)
}

/// Leaf paths of an applied configuration (non-object values and empty objects), without
/// the fields the server owns.
fn leaves(config: &Value) -> Vec<Path> {
    fn walk(node: &Value, path: &mut Path, out: &mut Vec<Path>) {
        match node {
            Value::Object(map) if !map.is_empty() => {
                for (key, child) in map {
                    let top = path.is_empty() && (key == "apiVersion" || key == "kind");
                    let server = path.len() == 1
                        && path[0] == "metadata"
                        && SERVER_FIELDS.contains(&key.as_str());
                    if top || server {
                        continue;
                    }
                    path.push(key.clone());
                    walk(child, path, out);
                    path.pop();
                }
            }
            _ => {
                if !path.is_empty() {
                    out.push(path.clone());
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(config, &mut Vec::new(), &mut out);
    out
}

/// The apply managers recorded in `metadata.managedFields` with the paths each owns.
fn managers(object: &Value) -> Vec<(String, BTreeSet<Path>)> {
    object
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|entries| {
            entries
                .iter()
                .filter(|e| e.get("operation").and_then(Value::as_str) == Some("Apply"))
                .filter_map(|e| {
                    let manager = e.get("manager")?.as_str()?.to_owned();
                    let mut paths = BTreeSet::new();
                    decode(e.get("fieldsV1")?, &mut Vec::new(), &mut paths);
                    Some((manager, paths))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn encode(paths: &BTreeSet<Path>) -> Value {
    let mut root = Map::new();
    for path in paths {
        let mut node = &mut root;
        for segment in path {
            let child = node
                .entry(format!("f:{segment}"))
                .or_insert_with(|| json!({}));
            if !child.is_object() {
                *child = json!({});
            }
            node = child.as_object_mut().expect("set to an object just above");
        }
    }
    Value::Object(root)
}

fn decode(node: &Value, path: &mut Path, out: &mut BTreeSet<Path>) {
    let Some(map) = node.as_object() else {
        return;
    };
    let fields: Vec<(&String, &Value)> = map.iter().filter(|(k, _)| k.starts_with("f:")).collect();
    if fields.is_empty() {
        if !path.is_empty() {
            out.insert(path.clone());
        }
        return;
    }
    for (key, child) in fields {
        path.push(key[2..].to_owned());
        decode(child, path, out);
        path.pop();
    }
}

fn value_at<'a>(object: &'a Value, path: &Path) -> Option<&'a Value> {
    path.iter().try_fold(object, |node, key| node.get(key))
}

fn remove_at(object: &mut Value, path: &Path) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut node = object;
    for key in parents {
        match node.get_mut(key) {
            Some(next) => node = next,
            None => return,
        }
    }
    if let Some(map) = node.as_object_mut() {
        map.remove(last);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::GroupResource;

    fn gr() -> GroupResource {
        GroupResource {
            group: "example.com".into(),
            resource: "widgets".into(),
        }
    }

    fn config(spec: Value) -> Value {
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec})
    }

    #[test]
    fn a_second_manager_conflicts_on_a_changed_field_unless_forced() {
        let first = apply(
            None,
            &config(json!({"size": 1, "color": "red"})),
            "a",
            false,
            (&gr(), "w"),
        )
        .unwrap();
        let err = apply(
            Some(&first),
            &config(json!({"size": 2})),
            "b",
            false,
            (&gr(), "w"),
        )
        .unwrap_err();
        assert_eq!(err.code, 409);
        assert_eq!(
            err.message,
            "Apply failed with 1 conflict: conflict with \"a\": .spec.size"
        );
        let same = apply(
            Some(&first),
            &config(json!({"size": 1})),
            "b",
            false,
            (&gr(), "w"),
        );
        assert!(same.is_ok(), "agreeing on a value is no conflict");
        let forced = apply(
            Some(&first),
            &config(json!({"size": 2})),
            "b",
            true,
            (&gr(), "w"),
        )
        .unwrap();
        assert_eq!(forced["spec"], json!({"size": 2, "color": "red"}));
        let a_now = apply(
            Some(&forced),
            &config(json!({"color": "red"})),
            "a",
            false,
            (&gr(), "w"),
        )
        .unwrap();
        assert_eq!(
            a_now["spec"],
            json!({"size": 2, "color": "red"}),
            "size now belongs to b"
        );
    }

    #[test]
    fn fields_a_manager_stops_applying_are_removed() {
        let first = apply(
            None,
            &config(json!({"size": 1, "color": "red"})),
            "a",
            false,
            (&gr(), "w"),
        )
        .unwrap();
        let second = apply(
            Some(&first),
            &config(json!({"size": 1})),
            "a",
            false,
            (&gr(), "w"),
        )
        .unwrap();
        assert_eq!(second["spec"], json!({"size": 1}));
        let entry = &second["metadata"]["managedFields"][0];
        assert_eq!(entry["manager"], "a");
        assert_eq!(entry["fieldsV1"], json!({"f:spec": {"f:size": {}}}));
    }

    #[test]
    fn apply_requires_kind_and_api_version() {
        let err = apply(
            None,
            &json!({"metadata": {"name": "w"}}),
            "a",
            false,
            (&gr(), "w"),
        )
        .unwrap_err();
        assert_eq!(err.code, 400);
        assert!(
            err.message.contains("apiVersion must be set"),
            "{}",
            err.message
        );
    }
}
