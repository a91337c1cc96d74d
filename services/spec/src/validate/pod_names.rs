//! The API server's rules for names and labels in the trial spec's objects, which Katib's
//! webhook does not check: labels and annotation keys on every object's `metadata`
//! (`ValidateObjectMeta`), a pod template's `nodeSelector`, container and volume names
//! (RFC 1123 labels, volumes unique), and mount sub-paths (`validateLocalDescendingPath`). A
//! template breaking one has its job refused when each trial starts, so every trial fails on a
//! cluster. Text holding a `${...}` placeholder is a value only once rendered, and is not
//! checked. `pod::check` walks the trial spec and calls these.

use super::{Errors, holds_placeholder, is_rfc1123_label};
use serde_json::Value;
use std::collections::HashSet;

/// What a label value may be: at most 63 characters, letters, digits, `-`, `_`, `.`,
/// beginning and ending with a letter or digit; or empty.
const LABEL_VALUE_RULE: &str =
    "at most 63 letters, digits, '-', '_' or '.', beginning and ending with a letter or digit";

/// The entries of an object field such as `labels`, those whose key and value hold no
/// placeholder.
fn entries<'a>(value: &'a Value, field: &str) -> impl Iterator<Item = (&'a str, &'a Value)> {
    let map = value.get(field).and_then(Value::as_object);
    map.into_iter()
        .flatten()
        .filter(|(k, v)| !holds_placeholder(k) && !v.as_str().is_some_and(holds_placeholder))
        .map(|(k, v)| (k.as_str(), v))
}

/// Checks an object's `metadata` at `path`.
pub(super) fn check_meta(meta: &Value, path: &str, errs: &mut Errors) {
    check_labels(meta, "labels", path, errs);
    for (key, _) in entries(meta, "annotations") {
        if !qualified_name(&key.to_ascii_lowercase()) {
            errs.add(
                format!("{path}.annotations"),
                key_message(key, "an annotation"),
            );
        }
    }
}

/// Checks a map of label keys and values (`labels`, `nodeSelector`) under `value`.
fn check_labels(value: &Value, field: &str, path: &str, errs: &mut Errors) {
    for (key, v) in entries(value, field) {
        if !qualified_name(key) {
            errs.add(format!("{path}.{field}"), key_message(key, "a label"));
        }
        if let Some(text) = v.as_str()
            && !label_value(text)
        {
            errs.add(
                format!("{path}.{field}.{key}"),
                format!(
                    "value {text:?} is not a label value the API server takes ({LABEL_VALUE_RULE}); hint: write it as {:?}",
                    suggest(text, false)
                ),
            );
        }
    }
}

fn key_message(key: &str, what: &str) -> String {
    format!(
        "key {key:?} is not {what} key the API server takes (an optional DNS subdomain and '/', then {LABEL_VALUE_RULE}); hint: write it as {:?}",
        suggest(key, false)
    )
}

/// Checks a pod template's spec at `path`.
pub(super) fn check_pod(pod: &Value, path: &str, errs: &mut Errors) {
    check_labels(pod, "nodeSelector", path, errs);
    let mut volumes = HashSet::new();
    let listed = pod.get("volumes").and_then(Value::as_array);
    for (i, v) in listed.into_iter().flatten().enumerate() {
        let Some(name) = v.get("name").and_then(Value::as_str) else {
            continue;
        };
        let here = format!("{path}.volumes[{i}].name");
        check_dns_label(name, &here, "a volume", errs);
        if !volumes.insert(name) {
            errs.add(
                here,
                format!(
                    "value {name:?} is the name of another volume of the pod, which the API \
                     server refuses; hint: give each volume its own name"
                ),
            );
        }
    }
    for list in ["initContainers", "containers"] {
        let containers = pod.get(list).and_then(Value::as_array);
        for (i, c) in containers.into_iter().flatten().enumerate() {
            let here = format!("{path}.{list}[{i}]");
            if let Some(name) = c.get("name").and_then(Value::as_str) {
                check_dns_label(name, &format!("{here}.name"), "a container", errs);
            }
            let mounts = c.get("volumeMounts").and_then(Value::as_array);
            for (j, m) in mounts.into_iter().flatten().enumerate() {
                check_sub_path(m, &format!("{here}.volumeMounts[{j}]"), errs);
            }
        }
    }
}

fn check_dns_label(name: &str, path: &str, what: &str, errs: &mut Errors) {
    if holds_placeholder(name) || is_rfc1123_label(name) {
        return;
    }
    errs.add(
        path,
        format!(
            "value {name:?} is not a name the API server takes for {what} (an RFC 1123 label: at \
             most 63 lowercase letters, digits or '-', beginning and ending with a letter or \
             digit); hint: write it as {:?}",
            suggest(name, true)
        ),
    );
}

fn check_sub_path(mount: &Value, path: &str, errs: &mut Errors) {
    let text = |field: &str| {
        mount
            .get(field)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    if text("subPath").is_some() && text("subPathExpr").is_some() {
        errs.add(
            format!("{path}.subPathExpr"),
            "is set with subPath, which the API server refuses; hint: keep one of the two",
        );
    }
    for field in ["subPath", "subPathExpr"] {
        let Some(sub) = text(field).filter(|s| !holds_placeholder(s)) else {
            continue;
        };
        let why = if sub.starts_with('/') {
            "is an absolute path"
        } else if sub.split('/').any(|part| part == "..") {
            "climbs out of the volume with '..'"
        } else {
            continue;
        };
        errs.add(
            format!("{path}.{field}"),
            format!(
                "value {sub:?} {why}, which the API server refuses; hint: give a path inside the \
                 volume, relative to its root"
            ),
        );
    }
}

/// An RFC 1123 subdomain: dot-separated labels, at most 253 characters.
pub(super) fn dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_rfc1123_label)
}

/// A label value ([`LABEL_VALUE_RULE`]).
pub(super) fn label_value(s: &str) -> bool {
    let inner = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
    s.is_empty()
        || (s.len() <= 63
            && s.bytes().all(inner)
            && s.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
            && s.bytes().last().is_some_and(|b| b.is_ascii_alphanumeric()))
}

/// A label or annotation key: `[prefix/]name`, the prefix a subdomain, the name a non-empty
/// label value.
pub(super) fn qualified_name(s: &str) -> bool {
    let (prefix, name) = match s.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, s),
    };
    prefix.is_none_or(dns_subdomain) && !name.is_empty() && label_value(name)
}

/// `text` made to fit: other characters become `-`, ends trimmed to alphanumerics (and
/// lowercased for an RFC 1123 label).
fn suggest(text: &str, lowercase: bool) -> String {
    let kept = |c: char| c.is_ascii_alphanumeric() || (!lowercase && matches!(c, '_' | '.' | '/'));
    let mapped: String = text
        .chars()
        .map(|c| match lowercase {
            true => c.to_ascii_lowercase(),
            false => c,
        })
        .map(|c| if kept(c) || c == '-' { c } else { '-' })
        .collect();
    let trimmed = mapped.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    trimmed.chars().take(63).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problems(spec: Value) -> Vec<String> {
        let mut errs = Errors::default();
        super::super::pod::check(&spec, "t", &mut errs);
        errs.0.0.iter().map(ToString::to_string).collect()
    }

    fn pod(pod: Value) -> Value {
        json!({"spec": {"template": {"metadata": {"labels": {"app": "a"}}, "spec": pod}}})
    }

    #[test]
    fn what_the_api_server_refuses_in_names_and_labels_is_named() {
        let p = "t.spec.template.spec";
        let table = [
            (
                json!({"metadata": {"labels": {"team": "ml team"}}}),
                "t.metadata.labels.team: value \"ml team\" is not a label value the API server takes",
                "write it as \"ml-team\"",
            ),
            (
                json!({"metadata": {"labels": {"Team Name": "x"}}}),
                "t.metadata.labels: key \"Team Name\" is not a label key",
                "write it as \"Team-Name\"",
            ),
            (
                json!({"spec": {"template": {"metadata": {"labels": {"v": "a".repeat(64)}}}}}),
                "t.spec.template.metadata.labels.v: value \"aaaa",
                "hint: ",
            ),
            (
                json!({"metadata": {"annotations": {"example.com/a/b": "x"}}}),
                "t.metadata.annotations: key \"example.com/a/b\" is not an annotation key",
                "hint: ",
            ),
            (
                pod(json!({"nodeSelector": {"pool": "gpu pool"}, "containers": [{"name": "a"}]})),
                "t.spec.template.spec.nodeSelector.pool: value \"gpu pool\"",
                "write it as \"gpu-pool\"",
            ),
            (
                pod(json!({"containers": [{"name": "Log_Shipper"}]})),
                &format!(
                    "{p}.containers[0].name: value \"Log_Shipper\" is not a name the API server takes for a container"
                ),
                "write it as \"log-shipper\"",
            ),
            (
                pod(
                    json!({"volumes": [{"name": "W_1", "emptyDir": {}}], "containers": [{"name": "a"}]}),
                ),
                &format!(
                    "{p}.volumes[0].name: value \"W_1\" is not a name the API server takes for a volume"
                ),
                "write it as \"w-1\"",
            ),
            (
                pod(
                    json!({"volumes": [{"name": "w", "emptyDir": {}}, {"name": "w", "emptyDir": {}}], "containers": [{"name": "a"}]}),
                ),
                &format!("{p}.volumes[1].name: value \"w\" is the name of another volume"),
                "hint: give each volume its own name",
            ),
            (
                pod(
                    json!({"volumes": [{"name": "w", "emptyDir": {}}], "containers": [{"name": "a", "volumeMounts": [{"name": "w", "mountPath": "/w", "subPath": "/data"}]}]}),
                ),
                &format!(
                    "{p}.containers[0].volumeMounts[0].subPath: value \"/data\" is an absolute path"
                ),
                "hint: ",
            ),
            (
                pod(
                    json!({"volumes": [{"name": "w", "emptyDir": {}}], "initContainers": [{"name": "i", "volumeMounts": [{"name": "w", "mountPath": "/w", "subPathExpr": "a/../../b"}]}], "containers": [{"name": "a"}]}),
                ),
                &format!(
                    "{p}.initContainers[0].volumeMounts[0].subPathExpr: value \"a/../../b\" climbs out of the volume"
                ),
                "hint: ",
            ),
            (
                pod(
                    json!({"volumes": [{"name": "w", "emptyDir": {}}], "containers": [{"name": "a", "volumeMounts": [{"name": "w", "mountPath": "/w", "subPath": "s", "subPathExpr": "$(POD)"}]}]}),
                ),
                &format!("{p}.containers[0].volumeMounts[0].subPathExpr: is set with subPath"),
                "hint: keep one of the two",
            ),
        ];
        for (spec, want, hint) in table {
            let got = problems(spec.clone());
            assert_eq!(got.len(), 1, "{spec}: {got:?}");
            assert!(got[0].starts_with(want), "{}\nwanted {want}", got[0]);
            assert!(got[0].contains(hint), "{}\nwanted {hint}", got[0]);
        }
    }

    #[test]
    fn what_the_api_server_accepts_is_not_named() {
        let fine = [
            json!({"metadata": {"labels": {"app.kubernetes.io/name": "My_App.v1", "empty": "", "team": "${trialParameters.team}"},
                                "annotations": {"sidecar.istio.io/inject": "false", "Example.com/Key": "any text at all"}}}),
            pod(json!({"nodeSelector": {"kubernetes.io/arch": "amd64"},
                       "volumes": [{"name": "data-1", "emptyDir": {}}],
                       "containers": [{"name": "trainer-0", "volumeMounts": [
                           {"name": "data-1", "mountPath": "/d", "subPath": "runs/a..b"},
                           {"name": "data-1", "mountPath": "/e", "subPathExpr": "$(POD_NAME)"}]},
                           {"name": "${trialParameters.side}"}]})),
        ];
        for spec in fine {
            assert_eq!(problems(spec.clone()), Vec::<String>::new(), "{spec}");
        }
    }
}
