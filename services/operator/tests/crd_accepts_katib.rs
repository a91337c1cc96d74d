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
