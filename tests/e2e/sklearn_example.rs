//! The scikit-learn example (examples/census-sklearn.yaml) runs as documented: two trials of
//! its Pipeline under `bayesianoptimization`, each reporting a plausible accuracy.

use crate::harness::{Sandbox, available_or_skip, text, trials_in};
use std::path::Path;
use std::process::Command;

#[test]
fn census_sklearn_example_runs_two_trials() {
    let has_sklearn = Command::new("python3")
        .args(["-c", "import sklearn"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !available_or_skip(
        has_sklearn,
        "census_sklearn_example_runs_two_trials",
        "python3 cannot import sklearn",
        "python3 -m pip install --user scikit-learn",
    ) {
        return;
    }
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let yaml = std::fs::read_to_string(examples.join("census-sklearn.yaml"))
        .unwrap()
        .replace(
            "\"trainers/",
            &format!("\"{}/", examples.join("trainers").display()),
        )
        // Two small forests keep the test cheap; the search space is otherwise the example's.
        .replace("maxTrialCount: 12", "maxTrialCount: 2")
        .replace("maxFailedTrialCount: 3", "maxFailedTrialCount: 1")
        .replace("max: \"200\"", "max: \"20\"");
    let sb = Sandbox::new();
    let file = sb.write("census-sklearn.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("census-sklearn");
    let ok = trials_in(&r, "Succeeded");
    assert_eq!(ok.len(), 2, "{r:#}");
    for t in ok {
        let metrics = t["status"]["observation"]["metrics"].as_array().unwrap();
        let accuracy = metrics
            .iter()
            .find(|m| m["name"] == "accuracy")
            .and_then(|m| m["latest"].as_str())
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap();
        // Always guessing "<=50K" scores 0.7707 on the test subset; a forest does better.
        assert!((0.77..0.9).contains(&accuracy), "accuracy {accuracy}");
    }
}
