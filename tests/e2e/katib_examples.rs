//! Katib's own example experiments, run the way a migrating Katib user would: validated as
//! they are, then run locally with a stand-in trainer in place of their images.

use crate::harness::{Sandbox, last_condition, python_experiment, text};
use std::path::Path;

fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(name)
        .display()
        .to_string()
}

/// The `num-epochs` value of every trial, in creation order.
fn epochs(r: &serde_json::Value) -> Vec<String> {
    r["trials"]
        .as_array()
        .expect("trials")
        .iter()
        .map(|t| {
            t["spec"]["parameterAssignments"]
                .as_array()
                .expect("assignments")
                .iter()
                .find(|a| a["name"] == "num-epochs")
                .and_then(|a| a["value"].as_str())
                .expect("num-epochs")
                .to_string()
        })
        .collect()
}

/// Katib's hp-tuning/hyperband.yaml: its resource parameter num-epochs is the placeholder
/// `min: "1"`, `max: "1"`, and Hyperband's budgets (1 and 2 epochs for r_l 2, eta 2) come
/// from the settings.
#[test]
fn katibs_hyperband_example_validates_and_runs() {
    let sb = Sandbox::new();
    let file = example("katib-hyperband.yaml");
    let out = sb.run(&["validate", &file]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("warning: spec.parameters[3].feasibleSpace.max")
            && stdout.contains("placeholder for the resource parameter"),
        "{stdout}"
    );

    let out = sb.run(&["run", &file, "--seed", "5"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("hyperband");
    assert_eq!(last_condition(&r)["reason"], "ExperimentMaxTrialsReached");
    assert_eq!(r["status"]["trialsSucceeded"], 2, "{r:#}");
    assert_eq!(epochs(&r), ["1", "1"]);

    // A larger budget reaches the next rung: the better configuration at 2 epochs, beyond
    // the placeholder's [1, 1].
    let out = sb.run(&["resume", "hyperband", "--max-trial-count", "3"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("hyperband");
    assert_eq!(r["status"]["trialsSucceeded"], 3, "{r:#}");
    assert_eq!(epochs(&r), ["1", "1", "2"]);
    let best = &r["status"]["currentOptimalTrial"]["observation"]["metrics"];
    assert!(
        best.as_array()
            .is_some_and(|m| m.iter().any(|m| m["name"] == "Validation-accuracy")),
        "{r:#}"
    );
}

/// Katib's metrics-collector/custom-metrics-collector.yaml: valid for a cluster, where the
/// operator injects its collector container; local mode cannot run the image's entrypoint of
/// that container and says which field to change.
#[test]
fn katibs_custom_collector_example_is_valid_for_a_cluster_only() {
    let sb = Sandbox::new();
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../services/operator/tests/fixtures/katib/custom-metrics-collector.yaml");
    let out = sb.run(&["validate", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let all = text(&out);
    assert!(
        all.contains("spec.metricsCollectorSpec.collector.customCollector.command")
            && all.contains("image's entrypoint"),
        "{all}"
    );
}

/// Katib's examples run trainers the image ships (`python3 /opt/...`); local mode ignores the
/// image, so `validate` and `run` say so before the first trial instead of leaving every
/// trial to fail with "No such file".
#[test]
fn a_command_naming_a_path_only_the_image_has_is_warned_about_before_the_first_trial() {
    let sb = Sandbox::new();
    let yaml = python_experiment(
        "image-path",
        "print('loss=0.5')",
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  maxTrialCount: 1\n  parallelTrialCount: 1",
    )
    .replace(
        "- python3\n",
        "- python3\n                  - /opt/vernier-absent/mnist.py\n",
    );
    let file = sb.write("image-path.yaml", &yaml);
    let warning = "warning: the trial command names a path that does not exist on this machine: /opt/vernier-absent/mnist.py";
    let validate = sb.run(&["validate", file.to_str().unwrap()]);
    assert!(text(&validate).contains(warning), "{}", text(&validate));
    let run = sb.run(&["run", file.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    let at = stderr
        .find(warning)
        .unwrap_or_else(|| panic!("{}", text(&run)));
    assert!(
        stderr[at..].contains("ignores the container image"),
        "{stderr}"
    );
    // The same experiment with the path present locally is not warned about.
    let fine = sb.write(
        "fine.yaml",
        &yaml.replace("/opt/vernier-absent/mnist.py", "/tmp"),
    );
    let validate = sb.run(&["validate", fine.to_str().unwrap()]);
    assert!(
        !text(&validate).contains("does not exist on this machine"),
        "{}",
        text(&validate)
    );
}
