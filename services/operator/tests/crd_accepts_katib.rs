//! Katib's example Experiments, unchanged, deserialize into the generated custom resource type
//! and pass Vernier's validation.

use vernier_spec::ExperimentResource;

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/katib/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn katib_examples_are_accepted_unchanged() {
    for name in [
        "pytorchjob-mnist.yaml",
        "tfjob-mnist-with-summaries.yaml",
        "custom-metrics-collector.yaml",
    ] {
        let text = fixture(name);
        let resource: ExperimentResource =
            yaml_serde::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(resource.metadata.namespace.as_deref(), Some("kubeflow"));
        assert!(resource.spec.trial_template.is_some(), "{name}");
        let parsed =
            vernier_spec::parse_experiment(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(parsed.spec.parameters.len(), 2, "{name}");
        // Serialising the resource keeps the spec: nothing was dropped on the way.
        let back = serde_json::to_value(&resource).unwrap();
        let original: serde_json::Value = yaml_serde::from_str(&text).unwrap();
        assert_eq!(back["spec"], original["spec"], "{name}");
    }
}

/// Every YAML file under `dir`.
fn yaml_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml") {
            out.push(path);
        }
    }
}

/// Every Experiment of Katib's `examples/v1beta1` (the e2e tests' fixtures, where
/// `vernier validate`'s verdict on each is checked) deserializes into the custom resource type
/// and serializes back with its spec intact, so the operator drops no field Katib's CRD has.
#[test]
fn every_katib_example_round_trips_through_the_custom_resource() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/e2e/fixtures/katib-v1beta1");
    let mut files = Vec::new();
    yaml_files(&dir, &mut files);
    assert!(
        files.len() >= 30,
        "{} files in {}",
        files.len(),
        dir.display()
    );
    for path in files {
        let name = path.display();
        let text = std::fs::read_to_string(&path).unwrap();
        let resource: ExperimentResource =
            yaml_serde::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let back = serde_json::to_value(&resource).unwrap();
        let original: serde_json::Value = yaml_serde::from_str(&text).unwrap();
        assert_eq!(back["spec"], original["spec"], "{name}");
        assert_eq!(
            back["metadata"]["name"], original["metadata"]["name"],
            "{name}"
        );
    }
}
