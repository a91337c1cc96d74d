//! The API server's rules for a pod template's ports, DNS policy and configuration,
//! tolerations, `hostPath` types and deadline (Kubernetes' `ValidatePodSpec` in `pkg/apis/core/validation`), which
//! Katib's webhook does not check and local mode does not read: a template breaking one has
//! its pod refused when each trial starts, so every trial fails on a cluster. Only values
//! written literally are checked: text holding a `${...}` placeholder is a value only once
//! rendered. `pod::check` walks the trial spec and calls [`check_pod`].

use super::{Errors, holds_placeholder, pod_names, use_one_of, written_text};
use serde_json::Value;
use std::collections::HashSet;

const PROTOCOLS: &[&str] = &["TCP", "UDP", "SCTP"];
const DNS_POLICIES: &[&str] = &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"];
const OPERATORS: &[&str] = &["Exists", "Equal"];
const EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];
/// `supportedHostPathTypes`; the empty type (no check of the path) is taken too.
const HOST_PATH_TYPES: &[&str] = &[
    "DirectoryOrCreate",
    "Directory",
    "FileOrCreate",
    "File",
    "Socket",
    "CharDevice",
    "BlockDevice",
];

/// What a port name may be (`IsValidPortName`, an IANA_SVC_NAME).
const PORT_NAME_RULE: &str = "at most 15 lowercase letters, digits or '-', with at least one \
                              letter, not beginning or ending with '-' nor holding '--'";

/// Checks a pod template's spec at `path`.
pub(super) fn check_pod(pod: &Value, path: &str, errs: &mut Errors) {
    for list in ["initContainers", "containers"] {
        let containers = pod.get(list).and_then(Value::as_array);
        for (i, c) in containers.into_iter().flatten().enumerate() {
            check_ports(c, &format!("{path}.{list}[{i}]"), errs);
        }
    }
    check_host_ports(pod, path, errs);
    check_dns(pod, path, errs);
    check_dns_config(pod, path, errs);
    check_tolerations(pod, path, errs);
    check_host_path_types(pod, path, errs);
    check_deadline(pod, path, errs);
}

/// A field's text, unless it is missing, empty or holds a placeholder.
fn literal(v: Option<&Value>) -> Option<&str> {
    written_text(v).filter(|s| !s.is_empty())
}

/// Refuses `value` at `path` unless it is one of `allowed`.
fn one_of(errs: &mut Errors, path: String, value: &str, allowed: &[&str], also: &str) {
    if allowed.contains(&value) {
        return;
    }
    let hint = use_one_of(value, allowed);
    errs.add(
        path,
        format!(
            "value {value:?} is not one the API server takes, so it refuses the pod; hint: \
             {hint}{also}"
        ),
    );
}

/// `validateContainerPorts`: a port number in 1..=65535 (a host port may be 0, none), a known
/// protocol (unset defaults to TCP), and a valid name unique among the container's ports (the
/// same name in two containers is only warned about by the API server). A missing
/// `containerPort` is left to the schema, which requires it.
fn check_ports(c: &Value, path: &str, errs: &mut Errors) {
    let mut names = HashSet::new();
    let ports = c.get("ports").and_then(Value::as_array);
    for (i, p) in ports.into_iter().flatten().enumerate() {
        let here = format!("{path}.ports[{i}]");
        for (field, zero_ok) in [("containerPort", false), ("hostPort", true)] {
            let Some(n) = p.get(field).and_then(Value::as_i64) else {
                continue;
            };
            if (1..=65535).contains(&n) || (zero_ok && n == 0) {
                continue;
            }
            let unset = if zero_ok { ", or 0 for none" } else { "" };
            errs.add(
                format!("{here}.{field}"),
                format!(
                    "value {n} is not a port number, which the API server refuses; hint: use \
                     1 to 65535{unset}"
                ),
            );
        }
        if let Some(protocol) = literal(p.get("protocol")) {
            one_of(errs, format!("{here}.protocol"), protocol, PROTOCOLS, "");
        }
        let Some(name) = literal(p.get("name")) else {
            continue;
        };
        if !port_name(name) {
            errs.add(
                format!("{here}.name"),
                format!(
                    "value {name:?} is not a port name the API server takes ({PORT_NAME_RULE}); \
                     hint: write it as {:?}",
                    suggest_port_name(name)
                ),
            );
        } else if !names.insert(name) {
            errs.add(
                format!("{here}.name"),
                format!(
                    "value {name:?} names another port of this container, which the API server \
                     refuses; hint: give each port its own name"
                ),
            );
        }
    }
}

/// `checkHostPortConflicts` and `validateHostNetwork`: no two ports of the pod's containers
/// on one host port, protocol (unset is TCP) and host IP; and with `hostNetwork`, a host port
/// equal to its container port.
fn check_host_ports(pod: &Value, path: &str, errs: &mut Errors) {
    let host_network = pod.get("hostNetwork").and_then(Value::as_bool) == Some(true);
    let mut taken = HashSet::new();
    let containers = pod.get("containers").and_then(Value::as_array);
    for (i, c) in containers.into_iter().flatten().enumerate() {
        let ports = c.get("ports").and_then(Value::as_array);
        for (j, p) in ports.into_iter().flatten().enumerate() {
            let Some(host) = p
                .get("hostPort")
                .and_then(Value::as_i64)
                .filter(|n| *n != 0)
            else {
                continue;
            };
            let at = format!("{path}.containers[{i}].ports[{j}].hostPort");
            let protocol = literal(p.get("protocol")).unwrap_or("TCP");
            let ip = literal(p.get("hostIP")).unwrap_or("");
            if !taken.insert((host, protocol.to_string(), ip.to_string())) {
                errs.add(
                    at.clone(),
                    format!(
                        "value {host} ({protocol}) is another port's host port in this pod, \
                         which the API server refuses; hint: give each port its own hostPort"
                    ),
                );
            }
            let container_port = p.get("containerPort").and_then(Value::as_i64);
            if host_network && container_port.is_some_and(|c| c != host) {
                errs.add(
                    at,
                    format!(
                        "value {host} differs from containerPort {}, which the API server \
                         refuses with hostNetwork; hint: leave hostPort out, or set it to the \
                         containerPort",
                        container_port.unwrap_or_default()
                    ),
                );
            }
        }
    }
}

/// `IsValidPortName`.
fn port_name(s: &str) -> bool {
    let b = s.as_bytes();
    (1..=15).contains(&b.len())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b.iter().any(u8::is_ascii_lowercase)
        && !s.contains("--")
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// `s` made to fit [`PORT_NAME_RULE`]: lowercased, other characters and runs of them one `-`,
/// cut to 15 characters.
fn suggest_port_name(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars().map(|c| c.to_ascii_lowercase()) {
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() {
            c
        } else {
            '-'
        };
        if !(c == '-' && (out.is_empty() || out.ends_with('-'))) {
            out.push(c);
        }
    }
    let cut: String = out.chars().take(15).collect();
    let trimmed = cut.trim_end_matches('-');
    if trimmed.bytes().any(|c| c.is_ascii_lowercase()) {
        trimmed.to_string()
    } else {
        format!("port-{trimmed}").trim_end_matches('-').to_string()
    }
}

/// `validateDNSPolicy` (unset defaults to `ClusterFirst`) and `validatePodDNSConfig`'s rule
/// for `None`: the pod then has only the name servers `dnsConfig` lists, so it needs one.
fn check_dns(pod: &Value, path: &str, errs: &mut Errors) {
    let Some(policy) = literal(pod.get("dnsPolicy")) else {
        return;
    };
    one_of(errs, format!("{path}.dnsPolicy"), policy, DNS_POLICIES, "");
    if policy != "None" {
        return;
    }
    let config = pod.get("dnsConfig").filter(|c| !c.is_null());
    let servers = config
        .and_then(|c| c.get("nameservers"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if servers == 0 {
        let field = if config.is_some() {
            "dnsConfig.nameservers"
        } else {
            "dnsConfig"
        };
        errs.add(
            format!("{path}.{field}"),
            "is required with dnsPolicy None (the pod then resolves names only through the \
             name servers listed there), and the API server refuses the pod; hint: list at \
             least one in dnsConfig.nameservers, or use dnsPolicy ClusterFirst",
        );
    }
}

/// `validatePodDNSConfig`'s limits (`MaxDNSNameservers`, `MaxDNSSearchPaths`,
/// `MaxDNSSearchListChars`).
const MAX_NAMESERVERS: usize = 3;
const MAX_SEARCHES: usize = 32;
const MAX_SEARCH_CHARS: usize = 2048;

/// `validatePodDNSConfig`, whatever the policy: at most 3 name servers, each an IP address;
/// at most 32 search domains of 2048 characters in all (with the spaces between them), each a
/// DNS subdomain (a trailing dot is taken); every option named.
fn check_dns_config(pod: &Value, path: &str, errs: &mut Errors) {
    let Some(config) = pod.get("dnsConfig").filter(|c| !c.is_null()) else {
        return;
    };
    let at = format!("{path}.dnsConfig");
    let list = |name: &str| config.get(name).and_then(Value::as_array).cloned();
    let servers = list("nameservers").unwrap_or_default();
    if servers.len() > MAX_NAMESERVERS {
        errs.add(
            format!("{at}.nameservers"),
            format!(
                "has {} name servers, and the API server takes at most {MAX_NAMESERVERS}; \
                 hint: keep the {MAX_NAMESERVERS} to ask first",
                servers.len()
            ),
        );
    }
    for (i, server) in servers.iter().enumerate() {
        if let Some(text) = literal(Some(server)).filter(|t| !ip_address(t)) {
            errs.add(
                format!("{at}.nameservers[{i}]"),
                format!(
                    "value {text:?} is not an IP address, which the API server refuses; hint: \
                     write the name server's address, e.g. 10.96.0.10"
                ),
            );
        }
    }
    check_searches(&list("searches").unwrap_or_default(), &at, errs);
    for (i, option) in list("options").unwrap_or_default().iter().enumerate() {
        if written_text(option.get("name")).is_none_or(str::is_empty) {
            errs.required(
                format!("{at}.options[{i}].name"),
                "name the resolver option, e.g. name: ndots",
            );
        }
    }
}

fn check_searches(searches: &[Value], at: &str, errs: &mut Errors) {
    let texts: Vec<&str> = searches.iter().filter_map(Value::as_str).collect();
    let chars = texts.iter().map(|s| s.len()).sum::<usize>() + texts.len().saturating_sub(1);
    let too_many = (searches.len() > MAX_SEARCHES)
        .then(|| format!("has {} search domains", searches.len()))
        .or_else(|| (chars > MAX_SEARCH_CHARS).then(|| format!("has {chars} characters")));
    if let Some(found) = too_many {
        errs.add(
            format!("{at}.searches"),
            format!(
                "{found}, and the API server takes at most {MAX_SEARCHES} domains of \
                 {MAX_SEARCH_CHARS} characters in all; hint: keep the domains the trial \
                 resolves names in"
            ),
        );
    }
    for (i, search) in searches.iter().enumerate() {
        let Some(text) = literal(Some(search)) else {
            continue;
        };
        let domain = text.strip_suffix('.').unwrap_or(text);
        if text != "." && !pod_names::dns_subdomain(domain) {
            errs.add(
                format!("{at}.searches[{i}]"),
                format!(
                    "value {text:?} is not a DNS domain (dot-separated lowercase letters, digits \
                     and '-'), which the API server refuses; hint: e.g. svc.cluster.local"
                ),
            );
        }
    }
}

/// What `ParseIPSloppy` takes: an IPv4 or IPv6 address, IPv4 parts possibly with leading
/// zeros (read as decimal).
fn ip_address(s: &str) -> bool {
    let sloppy_v4 = || {
        let parts: Vec<&str> = s.split('.').collect();
        parts.len() == 4
            && parts.iter().all(|p| {
                !p.is_empty()
                    && p.bytes().all(|b| b.is_ascii_digit())
                    && p.parse::<u32>().is_ok_and(|n| n <= 255)
            })
    };
    s.parse::<std::net::IpAddr>().is_ok() || sloppy_v4()
}

/// `ValidateTolerations`.
fn check_tolerations(pod: &Value, path: &str, errs: &mut Errors) {
    let tolerations = pod.get("tolerations").and_then(Value::as_array);
    for (i, t) in tolerations.into_iter().flatten().enumerate() {
        check_toleration(t, &format!("{path}.tolerations[{i}]"), errs);
    }
}

fn check_toleration(t: &Value, path: &str, errs: &mut Errors) {
    let field = |name: &str| t.get(name).and_then(Value::as_str);
    let placeholder = |name: &str| field(name).is_some_and(holds_placeholder);
    // An unset operator is Equal.
    let operator = field("operator")
        .filter(|s| !s.is_empty())
        .unwrap_or("Equal");
    let key = field("key").unwrap_or("");
    let value = field("value").unwrap_or("");
    if !placeholder("operator") {
        one_of(errs, format!("{path}.operator"), operator, OPERATORS, "");
    }
    if !placeholder("key") && !key.is_empty() && !pod_names::qualified_name(key) {
        errs.add(
            format!("{path}.key"),
            format!(
                "value {key:?} is not a label key, which the API server refuses for a \
                 toleration; hint: write the key of the taint to tolerate, such as \
                 nvidia.com/gpu"
            ),
        );
    }
    if key.is_empty() && operator == "Equal" {
        errs.add(
            format!("{path}.operator"),
            "is Equal with no key, which the API server refuses: only Exists may leave the key \
             empty (tolerating every taint); hint: set key, or operator: Exists",
        );
    }
    if operator == "Exists" && !value.is_empty() && !placeholder("value") {
        errs.add(
            format!("{path}.value"),
            format!(
                "value {value:?} is set with operator Exists, which the API server refuses; \
                 hint: remove value (Exists matches any value), or use operator: Equal"
            ),
        );
    }
    if operator == "Equal" && !placeholder("value") && !pod_names::label_value(value) {
        errs.add(
            format!("{path}.value"),
            format!(
                "value {value:?} is not a label value, which the API server refuses for a \
                 toleration; hint: write the value of the taint to tolerate"
            ),
        );
    }
    check_effect(t, path, errs);
}

/// A toleration's `effect` (unset matches every effect), and `tolerationSeconds`, which only
/// `NoExecute` (evicting a running pod) reads.
fn check_effect(t: &Value, path: &str, errs: &mut Errors) {
    let effect = t.get("effect").and_then(Value::as_str).unwrap_or("");
    if holds_placeholder(effect) {
        return;
    }
    if !effect.is_empty() {
        one_of(errs, format!("{path}.effect"), effect, EFFECTS, "");
    }
    let seconds = t.get("tolerationSeconds").filter(|s| !s.is_null());
    if seconds.is_some() && effect != "NoExecute" {
        let effect = if effect.is_empty() { "unset" } else { effect };
        errs.add(
            format!("{path}.tolerationSeconds"),
            format!(
                "is set with effect {effect}, which the API server refuses: only NoExecute \
                 takes it; hint: set effect: NoExecute, or remove tolerationSeconds"
            ),
        );
    }
}

/// `validateHostPathType`.
fn check_host_path_types(pod: &Value, path: &str, errs: &mut Errors) {
    let volumes = pod.get("volumes").and_then(Value::as_array);
    for (i, v) in volumes.into_iter().flatten().enumerate() {
        if let Some(kind) = literal(v.pointer("/hostPath/type")) {
            let here = format!("{path}.volumes[{i}].hostPath.type");
            one_of(errs, here, kind, HOST_PATH_TYPES, ", or \"\" for no check");
        }
    }
}

/// The pod's own `activeDeadlineSeconds`: 1 to 2^31 - 1 (`ValidatePodSpec`); a Job's
/// `spec.activeDeadlineSeconds` is another field, which may be 0.
fn check_deadline(pod: &Value, path: &str, errs: &mut Errors) {
    let Some(n) = pod.get("activeDeadlineSeconds").and_then(Value::as_i64) else {
        return;
    };
    if !(1..=i64::from(i32::MAX)).contains(&n) {
        errs.add(
            format!("{path}.activeDeadlineSeconds"),
            format!(
                "value {n} is not a deadline the API server takes for a pod; hint: use 1 to \
                 2147483647 seconds, or leave it unset for no deadline"
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problems(pod: Value) -> Vec<String> {
        let mut errs = Errors::default();
        super::super::pod::check(
            &json!({"spec": {"template": {"spec": pod}}}),
            "t",
            &mut errs,
        );
        errs.0.0.iter().map(ToString::to_string).collect()
    }

    /// A pod with one container holding `container`'s fields, and `pod`'s fields.
    fn pod(container: Value, pod: Value) -> Value {
        let mut c = json!({"name": "main", "image": "i"});
        c.as_object_mut()
            .unwrap()
            .extend(container.as_object().unwrap().clone());
        let mut p = json!({"containers": [c]});
        p.as_object_mut()
            .unwrap()
            .extend(pod.as_object().unwrap().clone());
        p
    }

    fn port(p: Value) -> Value {
        pod(json!({"ports": [p]}), json!({}))
    }

    /// A DNS domain of 251 characters: four labels of 62.
    fn long_domain() -> String {
        vec!["a".repeat(62); 4].join(".")
    }

    fn dns_config(config: Value) -> Value {
        pod(json!({}), json!({"dnsConfig": config}))
    }

    fn toleration(t: Value) -> Value {
        pod(json!({}), json!({"tolerations": [t]}))
    }

    #[test]
    fn what_the_api_server_refuses_in_ports_dns_tolerations_and_host_paths_is_named() {
        let c = "t.spec.template.spec.containers[0]";
        let p = "t.spec.template.spec";
        // (pod refused, its problem's path and words, the nearest pod accepted)
        let table: Vec<(Value, String, &str, Value)> = vec![
            (
                port(json!({"containerPort": 70000})),
                format!("{c}.ports[0].containerPort"),
                "value 70000 is not a port number",
                port(json!({"containerPort": 65535})),
            ),
            (
                port(json!({"containerPort": 0})),
                format!("{c}.ports[0].containerPort"),
                "value 0 is not a port number",
                port(json!({"containerPort": 1})),
            ),
            (
                port(json!({"containerPort": 80, "hostPort": -1})),
                format!("{c}.ports[0].hostPort"),
                "value -1 is not a port number",
                port(json!({"containerPort": 80, "hostPort": 0})),
            ),
            (
                port(json!({"containerPort": 80, "protocol": "tcp"})),
                format!("{c}.ports[0].protocol"),
                "value \"tcp\" is not one the API server takes, so it refuses the pod; hint: did you mean \"TCP\"? use one of TCP, UDP, SCTP",
                port(json!({"containerPort": 80, "protocol": "SCTP"})),
            ),
            (
                port(json!({"containerPort": 80, "name": "metrics_port"})),
                format!("{c}.ports[0].name"),
                "value \"metrics_port\" is not a port name the API server takes (at most 15 lowercase letters, digits or '-', with at least one letter, not beginning or ending with '-' nor holding '--'); hint: write it as \"metrics-port\"",
                port(json!({"containerPort": 80, "name": "metrics-port"})),
            ),
            (
                port(json!({"containerPort": 80, "name": "xgboostjob-port1"})),
                format!("{c}.ports[0].name"),
                "hint: write it as \"xgboostjob-port\"",
                port(json!({"containerPort": 80, "name": "xgboostjob-port"})),
            ),
            (
                port(json!({"containerPort": 80, "name": "8080"})),
                format!("{c}.ports[0].name"),
                "hint: write it as \"port-8080\"",
                port(json!({"containerPort": 80, "name": "p8080"})),
            ),
            (
                pod(
                    json!({"ports": [{"containerPort": 80, "name": "web"}, {"containerPort": 81, "name": "web"}]}),
                    json!({}),
                ),
                format!("{c}.ports[1].name"),
                "value \"web\" names another port of this container",
                pod(
                    json!({"ports": [{"containerPort": 80, "name": "web"}, {"containerPort": 81, "name": "web-2"}]}),
                    json!({}),
                ),
            ),
            (
                pod(json!({}), json!({"dnsPolicy": "ClusterFirstWithHostnet"})),
                format!("{p}.dnsPolicy"),
                "did you mean \"ClusterFirstWithHostNet\"?",
                pod(json!({}), json!({"dnsPolicy": "ClusterFirstWithHostNet"})),
            ),
            (
                pod(json!({}), json!({"dnsPolicy": "None"})),
                format!("{p}.dnsConfig"),
                "is required with dnsPolicy None",
                pod(
                    json!({}),
                    json!({"dnsPolicy": "None", "dnsConfig": {"nameservers": ["10.0.0.10"]}}),
                ),
            ),
            (
                pod(
                    json!({}),
                    json!({"dnsPolicy": "None", "dnsConfig": {"searches": ["a.example"]}}),
                ),
                format!("{p}.dnsConfig.nameservers"),
                "is required with dnsPolicy None",
                pod(
                    json!({}),
                    json!({"dnsPolicy": "Default", "dnsConfig": {"searches": ["a.example"]}}),
                ),
            ),
            (
                json!({"containers": [
                    {"name": "a", "image": "i", "ports": [{"containerPort": 80, "hostPort": 8080}]},
                    {"name": "b", "image": "i", "ports": [{"containerPort": 81, "hostPort": 8080, "protocol": "TCP"}]}]}),
                format!("{p}.containers[1].ports[0].hostPort"),
                "value 8080 (TCP) is another port's host port in this pod",
                json!({"containers": [
                    {"name": "a", "image": "i", "ports": [{"containerPort": 80, "hostPort": 8080}]},
                    {"name": "b", "image": "i", "ports": [{"containerPort": 81, "hostPort": 8080, "protocol": "UDP"}]}]}),
            ),
            (
                pod(
                    json!({"ports": [{"containerPort": 80, "hostPort": 8080}]}),
                    json!({"hostNetwork": true}),
                ),
                format!("{c}.ports[0].hostPort"),
                "value 8080 differs from containerPort 80, which the API server refuses with hostNetwork",
                pod(
                    json!({"ports": [{"containerPort": 8080, "hostPort": 8080}]}),
                    json!({"hostNetwork": true}),
                ),
            ),
            (
                dns_config(json!({"nameservers": ["10.0.0.256"]})),
                format!("{p}.dnsConfig.nameservers[0]"),
                "value \"10.0.0.256\" is not an IP address",
                dns_config(json!({"nameservers": ["010.0.0.1", "fd00::a"]})),
            ),
            (
                dns_config(json!({"nameservers": ["1.1.1.1", "8.8.8.8", "9.9.9.9", "8.8.4.4"]})),
                format!("{p}.dnsConfig.nameservers"),
                "has 4 name servers, and the API server takes at most 3",
                dns_config(json!({"nameservers": ["1.1.1.1", "8.8.8.8", "9.9.9.9"]})),
            ),
            (
                dns_config(json!({"searches": ["Corp_Net.example"]})),
                format!("{p}.dnsConfig.searches[0]"),
                "value \"Corp_Net.example\" is not a DNS domain",
                dns_config(json!({"searches": ["corp-net.example.", "."]})),
            ),
            (
                dns_config(
                    json!({"searches": (0..33).map(|i| format!("d{i}.example")).collect::<Vec<_>>()}),
                ),
                format!("{p}.dnsConfig.searches"),
                "has 33 search domains",
                dns_config(
                    json!({"searches": (0..32).map(|i| format!("d{i}.example")).collect::<Vec<_>>()}),
                ),
            ),
            (
                dns_config(json!({"searches": vec![long_domain(); 9]})),
                format!("{p}.dnsConfig.searches"),
                "has 2267 characters",
                dns_config(json!({"searches": vec![long_domain(); 8]})),
            ),
            (
                dns_config(json!({"options": [{"value": "2"}]})),
                format!("{p}.dnsConfig.options[0].name"),
                "is required",
                dns_config(json!({"options": [{"name": "ndots", "value": "2"}]})),
            ),
            (
                toleration(json!({"key": "gpu", "operator": "Exist"})),
                format!("{p}.tolerations[0].operator"),
                "did you mean \"Exists\"? use one of Exists, Equal",
                toleration(json!({"key": "gpu", "operator": "Exists"})),
            ),
            (
                toleration(json!({"key": "gpu", "operator": "Exists", "value": "a100"})),
                format!("{p}.tolerations[0].value"),
                "value \"a100\" is set with operator Exists",
                toleration(json!({"key": "gpu", "value": "a100"})),
            ),
            (
                toleration(json!({"value": "a100"})),
                format!("{p}.tolerations[0].operator"),
                "is Equal with no key",
                toleration(json!({"operator": "Exists"})),
            ),
            (
                toleration(json!({"key": "gpu", "value": "a100", "effect": "NoScheduel"})),
                format!("{p}.tolerations[0].effect"),
                "did you mean \"NoSchedule\"?",
                toleration(json!({"key": "gpu", "value": "a100", "effect": "NoSchedule"})),
            ),
            (
                toleration(
                    json!({"key": "gpu", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 60}),
                ),
                format!("{p}.tolerations[0].tolerationSeconds"),
                "is set with effect NoSchedule",
                toleration(
                    json!({"key": "gpu", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}),
                ),
            ),
            (
                toleration(json!({"key": "gpu type", "operator": "Exists"})),
                format!("{p}.tolerations[0].key"),
                "value \"gpu type\" is not a label key",
                toleration(json!({"key": "example.com/gpu-type", "operator": "Exists"})),
            ),
            (
                toleration(json!({"key": "gpu", "value": "a 100"})),
                format!("{p}.tolerations[0].value"),
                "value \"a 100\" is not a label value",
                toleration(json!({"key": "gpu", "value": "a-100"})),
            ),
            (
                pod(
                    json!({}),
                    json!({"volumes": [{"name": "d", "hostPath": {"path": "/d", "type": "Directroy"}}]}),
                ),
                format!("{p}.volumes[0].hostPath.type"),
                "value \"Directroy\" is not one the API server takes, so it refuses the pod; hint: did you mean \"Directory\"? use one of DirectoryOrCreate, Directory, FileOrCreate, File, Socket, CharDevice, BlockDevice, or \"\" for no check",
                pod(
                    json!({}),
                    json!({"volumes": [{"name": "d", "hostPath": {"path": "/d", "type": ""}}]}),
                ),
            ),
            (
                pod(json!({}), json!({"activeDeadlineSeconds": 0})),
                format!("{p}.activeDeadlineSeconds"),
                "value 0 is not a deadline the API server takes for a pod",
                pod(json!({}), json!({"activeDeadlineSeconds": 1})),
            ),
        ];
        for (refused, path, words, accepted) in table {
            crate::tests::assert_problems_with_hints(&problems(refused), &[(path, words)]);
            assert_eq!(
                problems(accepted.clone()),
                Vec::<String>::new(),
                "{accepted}"
            );
        }
    }

    #[test]
    fn placeholders_and_defaults_are_not_refused() {
        let fine = [
            port(
                json!({"containerPort": 80, "protocol": "${trialParameters.proto}", "name": "${trialParameters.port}"}),
            ),
            port(json!({"containerPort": "${trialParameters.port}"})),
            // The same port name in two containers is only warned about.
            json!({"containers": [
                {"name": "a", "ports": [{"containerPort": 80, "name": "web", "protocol": ""}]},
                {"name": "b", "ports": [{"containerPort": 81, "name": "web"}]}]}),
            pod(json!({}), json!({"dnsPolicy": "${trialParameters.dns}"})),
            dns_config(
                json!({"nameservers": ["${trialParameters.ns}"], "searches": ["${trialParameters.s}"]}),
            ),
            toleration(
                json!({"key": "${trialParameters.key}", "operator": "${trialParameters.op}", "value": "${trialParameters.v}"}),
            ),
            toleration(
                json!({"operator": "Exists", "effect": "${trialParameters.e}", "tolerationSeconds": 5}),
            ),
            pod(
                json!({}),
                json!({"volumes": [{"name": "d", "hostPath": {"path": "/d", "type": "${trialParameters.t}"}}]}),
            ),
        ];
        for pod in fine {
            assert_eq!(problems(pod.clone()), Vec::<String>::new(), "{pod}");
        }
    }
}
