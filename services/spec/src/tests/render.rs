//! Trial-template rendering and primary-container extraction.

use super::{RANDOM, TFJOB, mutated, parse_ok, set};
use crate::{container_from, primary_container, render_trial_spec};
use serde_json::{Value, json};

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn renders_job_and_names_it_after_the_trial() {
    let exp = parse_ok(RANDOM);
    let run = render_trial_spec(
        &exp,
        "random-abc123",
        &pairs(&[("lr", "0.02"), ("momentum", "0.6"), ("optimizer", "adam")]),
    )
    .unwrap();
    assert_eq!(run["metadata"]["name"], "random-abc123");
    assert_eq!(run["metadata"]["namespace"], "kubeflow");
    let c = primary_container(&run, "training-container").unwrap();
    assert_eq!(
        c.command,
        vec![
            "sh",
            "-c",
            "echo loss=0.1 accuracy=0.9",
            "--lr=0.02",
            "--momentum=0.6",
            "--optimizer=adam"
        ]
    );
    assert_eq!(c.image.as_deref(), Some("docker.io/library/busybox:1.36"));
    assert_eq!(c.env, vec![("MODE".to_string(), "fast".to_string())]);
    assert_eq!(c.resources, Some(json!({"limits": {"cpu": "1"}})));
    assert!(c.args.is_empty());
}

#[test]
fn hostile_categorical_value_stays_one_string() {
    let exp = parse_ok(RANDOM);
    let hostile = r#"adam", "injected": "x $(rm -rf /) \ end"#;
    let run = render_trial_spec(
        &exp,
        "t1",
        &pairs(&[("lr", "0.02"), ("momentum", "0.6"), ("optimizer", hostile)]),
    )
    .unwrap();
    let c = primary_container(&run, "training-container").unwrap();
    assert_eq!(c.command.len(), 6);
    assert_eq!(c.command[5], format!("--optimizer={hostile}"));
    assert!(!contains_key(&run, "injected"));
}

#[test]
fn value_that_looks_like_a_placeholder_is_not_substituted_again() {
    let exp = parse_ok(RANDOM);
    let sneaky = "${trialParameters.learningRate}";
    let run = render_trial_spec(
        &exp,
        "t1",
        &pairs(&[("lr", "0.02"), ("momentum", "0.6"), ("optimizer", sneaky)]),
    )
    .unwrap();
    let c = primary_container(&run, "training-container").unwrap();
    assert_eq!(c.command[5], format!("--optimizer={sneaky}"));
}

fn contains_key(v: &Value, key: &str) -> bool {
    match v {
        Value::Object(m) => m.contains_key(key) || m.values().any(|c| contains_key(c, key)),
        Value::Array(a) => a.iter().any(|c| contains_key(c, key)),
        _ => false,
    }
}

#[test]
fn meta_references_and_default_namespace() {
    let exp = parse_ok(TFJOB);
    let run =
        render_trial_spec(&exp, "tfjob-example-x1", &pairs(&[("batch_size", "150")])).unwrap();
    assert_eq!(run["metadata"]["namespace"], "default");
    // The TFJob nests its containers in replica specs; the sidecar comes first and is skipped.
    let c = primary_container(&run, "tensorflow").unwrap();
    assert_eq!(c.command[2], "--batch-size=150");
    assert_eq!(c.command[3], "--log-dir=/logs/tfjob-example-x1");
}

#[test]
fn label_and_kind_references() {
    let text = mutated(RANDOM, |v| {
        set(
            v,
            "/spec/trialTemplate/trialSpec/metadata",
            json!({"labels": {"team": "vision"}}),
        );
        set(
            v,
            "/spec/trialTemplate/trialParameters/3",
            json!({"name": "team", "reference": "${trialSpec.Labels[team]}"}),
        );
        set(
            v,
            "/spec/trialTemplate/trialParameters/4",
            json!({"name": "kind", "reference": "${trialSpec.Kind}"}),
        );
        set(
            v,
            "/spec/trialTemplate/trialSpec/spec/template/spec/containers/0/args",
            json!(["${trialParameters.team}-${trialParameters.kind}"]),
        );
    });
    let exp = parse_ok(&text);
    let run = render_trial_spec(
        &exp,
        "t2",
        &pairs(&[("lr", "0.02"), ("momentum", "0.6"), ("optimizer", "sgd")]),
    )
    .unwrap();
    let c = primary_container(&run, "training-container").unwrap();
    assert_eq!(c.args, vec!["vision-Job"]);
    assert_eq!(run["metadata"]["labels"]["team"], "vision");
}

#[test]
fn missing_assignment_is_an_error() {
    let exp = parse_ok(RANDOM);
    let err = render_trial_spec(&exp, "t3", &pairs(&[("lr", "0.02")])).unwrap_err();
    assert_eq!(
        err.path(),
        "spec.trialTemplate.trialParameters[1].reference"
    );
    assert!(
        err.to_string()
            .contains(r#"parameter "momentum" has no value"#),
        "{err}"
    );
}

#[test]
fn container_errors() {
    let run = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "main", "image": "x", "env": [
            {"name": "A", "value": "1"},
            {"name": "SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
        ], "command": ["run"]},
        {"name": "bare", "image": "y"}
    ]}}}});
    let err = primary_container(&run, "main").unwrap_err();
    assert_eq!(
        err.path(),
        "spec.trialTemplate.trialSpec.spec.template.spec.containers[0].env[1].valueFrom"
    );
    assert!(
        err.to_string()
            .contains(r#"env var "SECRET" takes its value from "secretKeyRef""#)
    );
    let err = primary_container(&run, "bare").unwrap_err();
    assert!(err.to_string().contains("hint: set command"), "{err}");
    let err = primary_container(&run, "missing").unwrap_err();
    assert_eq!(err.path(), "spec.trialTemplate.primaryContainerName");
    assert!(
        err.to_string().contains("containers found: main, bare"),
        "{err}"
    );
}

#[test]
fn finds_containers_in_any_crd() {
    let run = json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Custom",
        "spec": {"stages": [{"pod": {"containers": [
            {"name": "train", "args": ["python", "train.py"], "workingDir": "/src"}]}}]}});
    let c = primary_container(&run, "train").unwrap();
    assert_eq!(c.args, vec!["python", "train.py"]);
    assert_eq!(c.working_dir.as_deref(), Some("/src"));
    assert!(c.command.is_empty());
}

/// Args without a command run as the program (an image with no ENTRYPOINT), unless they start
/// with an option or a parameter value: then only the image's entrypoint could take them.
#[test]
fn args_that_start_with_an_argument_need_a_command() {
    for (first, refused) in [
        ("python", false),
        ("./train.sh", false),
        ("--job_type=Train", true),
        ("-m", true),
        ("${trialParameters.lr}", true),
        ("", true),
    ] {
        let c = json!({"name": "train", "image": "i", "args": [first, "x"]});
        let got = container_from(&c, "train", "spec.c");
        assert_eq!(got.is_err(), refused, "{first:?}: {got:?}");
        if let Err(e) = got {
            assert_eq!(e.path(), "spec.c.command");
            assert!(
                e.to_string().contains("entrypoint would run with args"),
                "{e}"
            );
        }
    }
}
