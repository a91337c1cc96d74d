//! Rules the API server holds every pod template of the trial spec to (Kubernetes'
//! `ValidatePodSpec`), which Katib's webhook does not check: a Job is created only when its
//! trial starts, so a template breaking one fails every trial on a cluster, while local mode,
//! which does not read these fields, would run it. The ones checked are those a template
//! written by hand breaks: a mount of a volume the pod does not have, two containers or two
//! mounts of one container by one name or path, a request above its limit, an extended
//! resource (a GPU) whose request is not its limit, a volume without exactly one source, and a
//! variable with both a value and a `valueFrom`. Names and labels are `pod_names`' part; ports,
//! DNS policy, tolerations, `hostPath` types and the pod's deadline are `pod_fields`'. Text
//! holding a `${...}` placeholder is a value only once rendered, and is not checked.

use super::{Errors, pod_fields, pod_names, written_text as text};
use crate::quantity::Quantity;
use crate::template::downward_api::api_server_refusal;
use serde_json::Value;
use std::collections::HashSet;

/// Whether Kubernetes lets a container request less of `name` than its limit
/// (`IsOvercommitAllowed`): a native resource (no domain, or a `kubernetes.io/` one) other
/// than huge pages; an extended one (`nvidia.com/gpu`) must request what it limits.
fn overcommittable(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    native && !name.starts_with("hugepages-")
}

/// Checks every pod template's spec (an object with a `containers` list under a `template`)
/// under `value`, at `path`, and every object's metadata (`pod_names`). Other objects holding
/// containers (an Argo `containerSet`, whose volumes are the Workflow's) are left alone.
pub(super) fn check(value: &Value, path: &str, errs: &mut Errors) {
    match value {
        Value::Object(map) => {
            if let Some(meta) = map.get("metadata") {
                pod_names::check_meta(meta, &format!("{path}.metadata"), errs);
            }
            let pod_template = path.ends_with("template.spec");
            if pod_template && map.get("containers").is_some_and(Value::is_array) {
                check_pod(value, path, errs);
                pod_names::check_pod(value, path, errs);
                pod_fields::check_pod(value, path, errs);
            }
            for (key, child) in map {
                check(child, &format!("{path}.{key}"), errs);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                check(child, &format!("{path}[{i}]"), errs);
            }
        }
        _ => {}
    }
}

fn check_pod(pod: &Value, path: &str, errs: &mut Errors) {
    let volumes: HashSet<&str> = pod
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("name")?.as_str())
        .collect();
    let mut names = HashSet::new();
    for list in ["initContainers", "containers"] {
        let containers = pod.get(list).and_then(Value::as_array);
        for (i, c) in containers.into_iter().flatten().enumerate() {
            let here = format!("{path}.{list}[{i}]");
            if let Some(name) = text(c.get("name"))
                && !names.insert(name)
            {
                errs.add(
                    format!("{here}.name"),
                    format!(
                        "value {name:?} is the name of another container of the pod, which the \
                         API server refuses; hint: give each container its own name"
                    ),
                );
            }
            check_mounts(c, &volumes, &here, errs);
            check_resources(c, &here, errs);
            let env = c.get("env").and_then(Value::as_array);
            for (j, e) in env.into_iter().flatten().enumerate() {
                let at = format!("{here}.env[{j}]");
                let valued = e
                    .get("value")
                    .and_then(Value::as_str)
                    .is_some_and(|v| !v.is_empty());
                if valued && e.get("valueFrom").is_some() {
                    errs.add(
                        format!("{at}.valueFrom"),
                        "is set with a value, which the API server refuses; hint: keep one of the two",
                    );
                }
                if let Some(e) = api_server_refusal(e, &at) {
                    errs.add(e.path(), e.message());
                }
            }
        }
    }
    check_volume_sources(pod, path, errs);
}

/// Each volume has exactly one source (`emptyDir`, `persistentVolumeClaim`, ...): every key of
/// a volume but its name is one.
fn check_volume_sources(pod: &Value, path: &str, errs: &mut Errors) {
    let volumes = pod.get("volumes").and_then(Value::as_array);
    for (i, v) in volumes.into_iter().flatten().enumerate() {
        let Some(map) = v.as_object() else {
            continue;
        };
        let sources: Vec<&str> = map
            .keys()
            .map(String::as_str)
            .filter(|k| *k != "name")
            .collect();
        let problem = match sources.as_slice() {
            [_] => continue,
            [] => "has no source".to_string(),
            more => format!("has {} sources ({})", more.len(), more.join(", ")),
        };
        errs.add(
            format!("{path}.volumes[{i}]"),
            format!(
                "{problem}, which the API server refuses; hint: give it exactly one, such as \
                 emptyDir: {{}} or persistentVolumeClaim: {{claimName: NAME}}"
            ),
        );
    }
}

fn check_mounts(c: &Value, volumes: &HashSet<&str>, path: &str, errs: &mut Errors) {
    let mut paths = HashSet::new();
    let mounts = c.get("volumeMounts").and_then(Value::as_array);
    for (i, m) in mounts.into_iter().flatten().enumerate() {
        let here = format!("{path}.volumeMounts[{i}]");
        if let Some(name) = text(m.get("name"))
            && !volumes.contains(name)
        {
            let mut known: Vec<&str> = volumes.iter().copied().collect();
            known.sort_unstable();
            errs.add(
                format!("{here}.name"),
                format!(
                    "value {name:?} names no volume of the pod, which the API server refuses; \
                     hint: add it to the pod's volumes (volumes: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            );
        }
        if let Some(mount) = text(m.get("mountPath"))
            && !paths.insert(mount)
        {
            errs.add(
                format!("{here}.mountPath"),
                format!(
                    "value {mount:?} is mounted twice in this container, which the API server \
                     refuses; hint: mount each volume at its own path"
                ),
            );
        }
    }
}

fn check_resources(c: &Value, path: &str, errs: &mut Errors) {
    let section = |name: &str| {
        c.pointer(&format!("/resources/{name}"))
            .and_then(Value::as_object)
    };
    let (requests, limits) = (section("requests"), section("limits"));
    // A placeholder (`${...}`) is a value only once rendered: it reads as no quantity.
    let amount = Quantity::of_field;
    // An extended resource is counted in whole units (half a GPU is no request), and huge
    // pages come with cpu or memory.
    for (section, amounts) in [("requests", requests), ("limits", limits)] {
        for (name, q) in amounts.into_iter().flatten() {
            let extended = !overcommittable(name) && !name.starts_with("hugepages-");
            if extended && amount(q).is_some_and(|q| !q.is_whole()) {
                errs.add(
                    format!("{path}.resources.{section}.{name}"),
                    format!(
                        "value {} is not a whole number, which the API server refuses for \
                         {name}; hint: ask for whole units",
                        show(q)
                    ),
                );
            }
        }
    }
    let names = || requests.into_iter().chain(limits).flat_map(|m| m.keys());
    if names().any(|n| n.starts_with("hugepages-")) && !names().any(|n| n == "cpu" || n == "memory")
    {
        errs.add(
            format!("{path}.resources"),
            "asks for huge pages without cpu or memory, which the API server refuses; hint: \
             add a memory (or cpu) request or limit",
        );
    }
    for (name, requested) in requests.into_iter().flatten() {
        let here = format!("{path}.resources.requests.{name}");
        let limit = limits.and_then(|l| l.get(name));
        let extended = !overcommittable(name);
        let (Some(req), limit_amount) = (amount(requested), limit.and_then(amount)) else {
            continue;
        };
        match (limit, limit_amount) {
            (None, _) if extended => errs.add(
                here,
                format!(
                    "{name} is requested without a limit, which the API server refuses for a \
                     resource that cannot be overcommitted; hint: set limits.{name} to the \
                     same amount (a limit alone is enough)"
                ),
            ),
            (Some(_), Some(lim)) if extended && req != lim => errs.add(
                here,
                format!(
                    "{name} is requested at {} and limited at {}, which the API server \
                     refuses for a resource that cannot be overcommitted; hint: make them \
                     equal (a limit alone is enough)",
                    show(requested),
                    show(limit.unwrap_or(&Value::Null))
                ),
            ),
            (Some(_), Some(lim)) if req > lim => errs.add(
                here,
                format!(
                    "value {} is more than limits.{name} ({}), which the API server refuses; \
                     hint: request at most the limit",
                    show(requested),
                    show(limit.unwrap_or(&Value::Null))
                ),
            ),
            _ => {}
        }
    }
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problems(pod: Value) -> Vec<String> {
        let mut errs = Errors::default();
        check(
            &json!({"spec": {"template": {"spec": pod.clone()}}}),
            "t",
            &mut errs,
        );
        // The same containers outside a pod template (an Argo containerSet) are not checked.
        check(&json!({"spec": {"containerSet": pod}}), "t", &mut errs);
        errs.0.0.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn what_the_api_server_refuses_in_a_pod_template_is_named() {
        let p = "t.spec.template.spec";
        let table = [
            (
                json!({"containers": [{"name": "a", "volumeMounts": [{"name": "data", "mountPath": "/d"}]}]}),
                vec![format!(
                    "{p}.containers[0].volumeMounts[0].name: value \"data\" names no volume"
                )],
            ),
            (
                json!({"volumes": [{"name": "v", "emptyDir": {}}], "containers": [{"name": "a", "volumeMounts": [{"name": "v", "mountPath": "/x"}, {"name": "v", "mountPath": "/x"}]}]}),
                vec![format!(
                    "{p}.containers[0].volumeMounts[1].mountPath: value \"/x\" is mounted twice"
                )],
            ),
            (
                json!({"initContainers": [{"name": "a"}], "containers": [{"name": "a"}]}),
                vec![format!(
                    "{p}.containers[0].name: value \"a\" is the name of another container"
                )],
            ),
            (
                json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "1500m", "memory": "1024Mi"}}}]}),
                vec![format!(
                    "{p}.containers[0].resources.requests.cpu: value 2 is more than limits.cpu (1500m)"
                )],
            ),
            (
                json!({"containers": [{"name": "a", "resources": {"requests": {"nvidia.com/gpu": 1}, "limits": {"nvidia.com/gpu": 2}}}]}),
                vec![format!(
                    "{p}.containers[0].resources.requests.nvidia.com/gpu: nvidia.com/gpu is requested at 1 and limited at 2"
                )],
            ),
            (
                json!({"containers": [{"name": "a", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]}),
                vec![format!(
                    "{p}.containers[0].resources.requests.nvidia.com/gpu: nvidia.com/gpu is requested without a limit"
                )],
            ),
            (
                json!({"containers": [{"name": "a", "resources": {"requests": {"hugepages-2Mi": "2Mi"}, "limits": {"hugepages-2Mi": "4Mi", "memory": "1Gi"}}}]}),
                vec![format!(
                    "{p}.containers[0].resources.requests.hugepages-2Mi: hugepages-2Mi is requested at 2Mi and limited at 4Mi"
                )],
            ),
            (
                json!({"containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": "0.5"}}}]}),
                vec![format!(
                    "{p}.containers[0].resources.limits.nvidia.com/gpu: value 0.5 is not a whole number"
                )],
            ),
            (
                json!({"containers": [{"name": "a", "resources": {"limits": {"hugepages-2Mi": "2Mi"}}}]}),
                vec![format!(
                    "{p}.containers[0].resources: asks for huge pages without cpu or memory"
                )],
            ),
            (
                json!({"containers": [{"name": "a", "env": [{"name": "P", "value": "x", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}]}),
                vec![format!(
                    "{p}.containers[0].env[0].valueFrom: is set with a value, which the API server refuses"
                )],
            ),
            (
                json!({"volumes": [{"name": "v"}, {"name": "w", "emptyDir": {}, "hostPath": {"path": "/w"}}], "containers": [{"name": "a"}]}),
                vec![
                    format!("{p}.volumes[0]: has no source"),
                    format!("{p}.volumes[1]: has 2 sources (emptyDir, hostPath)"),
                ],
            ),
            (
                json!({"containers": [{"name": "a", "env": [{"name": "M", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1024"}}}]}]}),
                vec![format!(
                    "{p}.containers[0].env[0].valueFrom.resourceFieldRef.divisor: value \"1024\" is not a divisor"
                )],
            ),
        ];
        for (pod, want) in table {
            let got = problems(pod.clone());
            assert_eq!(got.len(), want.len(), "{pod}: {got:?}");
            for (g, w) in got.iter().zip(&want) {
                assert!(g.starts_with(w.as_str()), "{g}\nwanted {w}");
                assert!(g.contains("hint: "), "{g}");
            }
        }
    }

    #[test]
    fn what_the_api_server_accepts_is_not_named() {
        let fine = [
            json!({"volumes": [{"name": "v", "emptyDir": {}}], "containers": [{"name": "a", "volumeMounts": [{"name": "v", "mountPath": "/x"}, {"name": "v", "mountPath": "/y", "subPath": "s"}]}, {"name": "b", "volumeMounts": [{"name": "v", "mountPath": "/x"}]}]}),
            json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": 1, "memory": "1Gi", "nvidia.com/gpu": 1}}}]}),
            json!({"containers": [{"name": "a", "resources": {"requests": {"nvidia.com/gpu": "${trialParameters.gpus}"}, "limits": {"nvidia.com/gpu": 2}}}]}),
            json!({"containers": [{"name": "${trialParameters.n}"}, {"name": "${trialParameters.n}"}]}),
            json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}),
            // Equal amounts in other units, as Kubernetes compares them: exactly.
            json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "700m", "memory": "8.3G"}, "limits": {"cpu": "0.7", "memory": "8300M"}}}]}),
            // Two mount paths that differ by a slash are two paths to the API server.
            json!({"volumes": [{"name": "v", "emptyDir": {}}], "containers": [{"name": "a", "volumeMounts": [{"name": "v", "mountPath": "/x"}, {"name": "v", "mountPath": "/x/"}]}]}),
            // A resource of a kubernetes.io domain is native and may be overcommitted.
            json!({"containers": [{"name": "a", "resources": {"requests": {"example.kubernetes.io/foo": "1"}}}]}),
        ];
        for pod in fine {
            assert_eq!(problems(pod.clone()), Vec::<String>::new(), "{pod}");
        }
    }
}
