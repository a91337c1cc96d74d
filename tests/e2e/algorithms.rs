//! Every algorithm wired through the real binary: grid ends the experiment when its grid is
//! exhausted, Hyperband runs every bracket, and the model-based algorithms complete runs.

use crate::harness::{Sandbox, last_condition, text};

/// A two-parameter experiment on `python3 -c SCRIPT x n` with the given algorithm block.
fn experiment(name: &str, algorithm: &str, x_space: &str, n_space: &str, extra: &str) -> String {
    format!(
        r#"apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: {name}
spec:
  objective:
    type: minimize
    objectiveMetricName: loss
{extra}
  algorithm:
{algorithm}
  parameters:
    - name: x
      parameterType: double
      feasibleSpace:
{x_space}
    - name: n
      parameterType: int
      feasibleSpace:
{n_space}
  trialTemplate:
    primaryContainerName: training
    trialParameters:
      - name: x
        reference: x
      - name: n
        reference: n
    trialSpec:
      apiVersion: batch/v1
      kind: Job
      spec:
        template:
          spec:
            restartPolicy: Never
            containers:
              - name: training
                image: python:3.11
                command:
                  - python3
                  - -c
                  - "import sys; x, n = float(sys.argv[1]), int(sys.argv[2]); print(f'loss={{(x - 0.3) ** 2 + 1 / n}}')"
                  - "${{trialParameters.x}}"
                  - "${{trialParameters.n}}"
"#
    )
}

#[test]
fn grid_exhaustion_ends_the_experiment_as_succeeded() {
    let sb = Sandbox::new();
    let yaml = experiment(
        "grid-small",
        "    algorithmName: grid",
        "        min: \"0\"\n        max: \"0.5\"\n        step: \"0.25\"",
        "        min: \"1\"\n        max: \"2\"",
        "  parallelTrialCount: 2\n  maxTrialCount: 20",
    );
    let file = sb.write("grid.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("grid-small");
    assert_eq!(
        last_condition(&r)["reason"],
        "ExperimentSuggestionEndReached"
    );
    // 3 values of x times 2 of n, each exactly once.
    assert_eq!(r["status"]["trials"], 6);
    let mut seen: Vec<String> = r["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["spec"]["parameterAssignments"].to_string())
        .collect();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 6);
    let best = &r["status"]["currentOptimalTrial"]["parameterAssignments"];
    assert_eq!(best[0]["value"], "0.25");
    assert_eq!(best[1]["value"], "2");
}

#[test]
fn hyperband_runs_every_bracket_then_ends() {
    let sb = Sandbox::new();
    let yaml = experiment(
        "hb",
        "    algorithmName: hyperband\n    algorithmSettings:\n      - name: resource_name\n        value: n\n      - name: eta\n        value: \"3\"\n      - name: r_l\n        value: \"9\"",
        "        min: \"0\"\n        max: \"1\"",
        "        min: \"1\"\n        max: \"9\"",
        "  parallelTrialCount: 3",
    );
    runs_every_bracket_then_ends(&sb, "hb", &yaml);
}

#[test]
fn bohb_runs_hyperbands_brackets_then_ends() {
    let sb = Sandbox::new();
    let yaml = experiment(
        "bohb",
        "    algorithmName: bohb\n    algorithmSettings:\n      - name: resource_name\n        value: n\n      - name: eta\n        value: \"3\"\n      - name: max_resource\n        value: \"9\"\n      - name: min_points_in_model\n        value: \"2\"",
        "        min: \"0\"\n        max: \"1\"",
        "        min: \"1\"\n        max: \"9\"",
        "  parallelTrialCount: 3",
    );
    runs_every_bracket_then_ends(&sb, "bohb", &yaml);
}

/// Runs experiment `name` (a Hyperband schedule over `n` up to 9 with eta 3) and checks that
/// it ends because the schedule did, every bracket ran, and some trial got the full budget.
fn runs_every_bracket_then_ends(sb: &Sandbox, name: &str, yaml: &str) {
    let file = sb.write(&format!("{name}.yaml"), yaml);
    let out = sb.run(&["run", file.to_str().unwrap(), "--seed", "5"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report(name);
    assert_eq!(
        last_condition(&r)["reason"],
        "ExperimentSuggestionEndReached"
    );
    let trials = r["trials"].as_array().unwrap();
    let mut brackets: Vec<String> = trials
        .iter()
        .filter_map(|t| {
            t["metadata"]["labels"]["vernier.hyperband/bracket"]
                .as_str()
                .map(String::from)
        })
        .collect();
    brackets.sort();
    brackets.dedup();
    assert_eq!(brackets, vec!["0", "1", "2"], "every bracket ran");
    // The full budget was reached by some configurations.
    assert!(
        trials
            .iter()
            .any(|t| t["spec"]["parameterAssignments"][1]["value"] == "9")
    );
    assert_eq!(r["status"]["trialsSucceeded"], r["status"]["trials"]);
}

#[test]
fn model_based_algorithms_complete_experiments() {
    for (algorithm, settings) in [
        (
            "tpe",
            "      - name: n_startup_trials\n        value: \"4\"",
        ),
        (
            "multivariate-tpe",
            "      - name: n_startup_trials\n        value: \"4\"",
        ),
        (
            "bayesianoptimization",
            "      - name: n_initial_points\n        value: \"4\"",
        ),
        ("cmaes", "      - name: sigma\n        value: \"0.2\""),
        ("sobol", ""),
    ] {
        let sb = Sandbox::new();
        let block = if settings.is_empty() {
            format!("    algorithmName: {algorithm}")
        } else {
            format!("    algorithmName: {algorithm}\n    algorithmSettings:\n{settings}")
        };
        let yaml = experiment(
            "model",
            &block,
            "        min: \"0\"\n        max: \"1\"",
            "        min: \"1\"\n        max: \"20\"",
            "  parallelTrialCount: 2\n  maxTrialCount: 10",
        );
        let file = sb.write("model.yaml", &yaml);
        let out = sb.run(&["run", file.to_str().unwrap(), "--seed", "1"]);
        assert_eq!(out.status.code(), Some(0), "{algorithm}: {}", text(&out));
        let r = sb.report("model");
        assert_eq!(r["status"]["trialsSucceeded"], 10, "{algorithm}");
        let distinct: std::collections::HashSet<String> = r["trials"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["spec"]["parameterAssignments"].to_string())
            .collect();
        assert_eq!(distinct.len(), 10, "{algorithm} repeated a configuration");
    }
}

#[test]
fn bad_algorithm_settings_are_refused_before_anything_runs() {
    let sb = Sandbox::new();
    let yaml = experiment(
        "badsettings",
        "    algorithmName: tpe\n    algorithmSettings:\n      - name: gamma\n        value: \"1.5\"",
        "        min: \"0\"\n        max: \"1\"",
        "        min: \"1\"\n        max: \"20\"",
        "  parallelTrialCount: 1\n  maxTrialCount: 3",
    );
    let file = sb.write("bad.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("gamma") && err.contains("1.5"), "{err}");
    let list = sb.run(&["list"]);
    assert!(!String::from_utf8_lossy(&list.stdout).contains("badsettings"));
    // Nor an empty log directory, which would send the corrected run's logs elsewhere.
    assert!(!sb.path().join("vernier-logs/badsettings").exists());
}
