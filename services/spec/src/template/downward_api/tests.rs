//! The downward API's env values against the kubelet's rules, and its refusals.

use super::*;
use crate::template::container_from;
use serde_json::json;

fn node() -> NodeFacts {
    NodeFacts {
        name: "laptop".into(),
        ip: "127.0.0.1".into(),
        cpus: 8,
        memory_bytes: 16 << 30,
        storage_bytes: 100_000_000_000,
    }
}

fn pod() -> PodFacts {
    let template = json!({
        "metadata": {"labels": {"app": "mnist"}, "annotations": {"note": "a $(X) b"}},
        "spec": {"serviceAccountName": "trainer", "containers": [
            {"name": "main"},
            {"name": "side", "resources": {"limits": {"cpu": "250m"}}}
        ]}
    });
    let controller = BTreeMap::from([("job-name".to_string(), "t-1".to_string())]);
    PodFacts::from_template(&template, "t-1", "ns", "uid-1", controller, node())
}

fn field(path: &str) -> Value {
    json!({"name": "V", "valueFrom": {"fieldRef": {"fieldPath": path}}})
}

fn resource(resource: &str, divisor: Option<&str>) -> Value {
    let mut r = json!({"resource": resource});
    if let Some(d) = divisor {
        r["divisor"] = json!(d);
    }
    json!({"name": "V", "valueFrom": {"resourceFieldRef": r}})
}

#[test]
fn each_pod_field_reads_what_the_pod_has_here() {
    let table = [
        ("metadata.name", "t-1"),
        ("metadata.namespace", "ns"),
        ("metadata.uid", "uid-1"),
        ("spec.nodeName", "laptop"),
        ("spec.serviceAccountName", "trainer"),
        ("status.podIP", "127.0.0.1"),
        ("status.podIPs", "127.0.0.1"),
        ("status.hostIP", "127.0.0.1"),
        ("metadata.labels['app']", "mnist"),
        ("metadata.labels['job-name']", "t-1"),
        ("metadata.labels['absent']", ""),
        ("metadata.annotations['note']", "a $(X) b"),
    ];
    for (path, want) in table {
        let from = pod_value(&field(path), "e").unwrap().unwrap();
        assert_eq!(from.resolve(&pod(), None), want, "{path}");
    }
}

#[test]
fn a_resource_is_the_quotient_rounded_up_and_an_unset_limit_the_node() {
    let own = json!({"limits": {"cpu": "1500m", "memory": "1Gi"}, "requests": {"memory": "100M"}});
    let exact = json!({"limits": {"cpu": "2.007", "memory": "2.14G", "hugepages-2Mi": "4Mi"}});
    let table = [
        ("limits.cpu", None, Some(&own), "2"),
        ("limits.cpu", Some("1m"), Some(&own), "1500"),
        ("requests.cpu", Some("1m"), Some(&own), "1500"),
        ("limits.memory", Some("1Mi"), Some(&own), "1024"),
        ("requests.memory", Some("1Mi"), Some(&own), "96"),
        ("requests.memory", None, Some(&own), "100000000"),
        ("limits.cpu", None, None, "8"),
        ("limits.memory", Some("1Gi"), None, "16"),
        ("requests.cpu", None, None, "0"),
        ("limits.ephemeral-storage", Some("1G"), None, "100"),
        // Exact, where f64 products round past a whole number.
        ("limits.cpu", Some("1m"), Some(&exact), "2007"),
        ("limits.memory", None, Some(&exact), "2140000000"),
        // Divisors the API server writes canonically: 1000m is 1, 1024Ki is 1Mi, 0 is unset.
        ("limits.cpu", Some("1000m"), Some(&exact), "3"),
        ("limits.memory", Some("1024Ki"), Some(&exact), "2041"),
        ("limits.memory", Some("1000"), Some(&exact), "2140000"),
        ("limits.cpu", Some("0"), Some(&exact), "3"),
        // Huge pages (Kubernetes 1.27): the container's, and none unset.
        ("limits.hugepages-2Mi", Some("1Mi"), Some(&exact), "4"),
        ("requests.hugepages-2Mi", None, None, "0"),
    ];
    for (name, divisor, own, want) in table {
        let from = pod_value(&resource(name, divisor), "e").unwrap().unwrap();
        assert_eq!(from.resolve(&pod(), own), want, "{name} / {divisor:?}");
    }
}

#[test]
fn a_resource_of_another_container_reads_that_container() {
    let mut entry = resource("limits.cpu", Some("1m"));
    entry["valueFrom"]["resourceFieldRef"]["containerName"] = json!("side");
    let from = pod_value(&entry, "e").unwrap().unwrap();
    assert_eq!(from.resolve(&pod(), None), "250");
}

#[test]
fn what_the_api_server_refuses_or_local_mode_cannot_read_names_its_field() {
    let secret = json!({"name": "K", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}});
    let mut version = field("metadata.name");
    version["valueFrom"]["fieldRef"]["apiVersion"] = json!("v2");
    let table = [
        (secret, "e.valueFrom", "\"secretKeyRef\""),
        (
            field("metadata.labels"),
            "e.valueFrom.fieldRef.fieldPath",
            "\"metadata.labels\"",
        ),
        (
            field("status.phase"),
            "e.valueFrom.fieldRef.fieldPath",
            "metadata.uid",
        ),
        (version, "e.valueFrom.fieldRef.apiVersion", "\"v2\""),
        (
            resource("limits.gpu", None),
            "e.valueFrom.resourceFieldRef.resource",
            "limits.cpu",
        ),
        (
            resource("limits.cpu", Some("1k")),
            "e.valueFrom.resourceFieldRef.divisor",
            "\"1k\"",
        ),
        (
            resource("limits.memory", Some("2Mi")),
            "e.valueFrom.resourceFieldRef.divisor",
            "1Mi",
        ),
        (
            resource("limits.memory", Some("1024")),
            "e.valueFrom.resourceFieldRef.divisor",
            "1Ki",
        ),
    ];
    for (entry, path, said) in table {
        let err = pod_value(&entry, "e").unwrap_err();
        assert_eq!(err.path(), path);
        assert!(err.message().contains(said), "{path}: {}", err.message());
    }
    assert_eq!(
        pod_value(&json!({"name": "A", "value": "1"}), "e").unwrap(),
        None
    );
}

#[test]
fn a_container_sees_its_pod_in_env_and_in_command_words() {
    let c = json!({"name": "main", "command": ["train", "--out=/tmp/$(OUT)"], "env": [
        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "OUT", "value": "$(POD)-run"},
        {"name": "NOTE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['note']"}}},
        {"name": "THREADS", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
    ], "resources": {"limits": {"cpu": "3"}}});
    let mut spec = container_from(&c, "main", "c").unwrap();
    assert_eq!(spec.env[0].1, "", "empty until the pod is known");
    spec.for_pod(&pod());
    let env: Vec<(&str, &str)> = spec
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    // The kubelet does not expand a value the pod gives: the annotation keeps its `$(X)`.
    assert_eq!(
        env,
        [
            ("POD", "t-1"),
            ("OUT", "t-1-run"),
            ("NOTE", "a $(X) b"),
            ("THREADS", "3")
        ]
    );
    assert_eq!(spec.command, ["train", "--out=/tmp/t-1-run"]);
}

#[test]
fn an_optional_secret_key_leaves_its_variable_out() {
    let c = json!({"name": "main", "command": ["t", "$(KEY)"], "env": [
        {"name": "A", "value": "a"},
        {"name": "KEY", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k", "optional": true}}},
        {"name": "B", "value": "$(KEY)"},
    ]});
    let mut spec = container_from(&c, "main", "c").unwrap();
    spec.for_pod(&pod());
    spec.append_env([("RANK".to_string(), "0".to_string())]);
    let names: Vec<(&str, &str)> = spec
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(names, [("A", "a"), ("B", "$(KEY)"), ("RANK", "0")]);
    assert_eq!(spec.command, ["t", "$(KEY)"]);
    spec.for_pod(&pod());
    assert_eq!(
        spec.env.len(),
        3,
        "resolving again keeps the appended variables once"
    );
}
