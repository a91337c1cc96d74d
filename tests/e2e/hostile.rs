//! Inputs an adversary wrote: spaces spanning the whole `i64` range, metric output cut at the
//! line cap or full of huge non-numbers. Each run ends normally (no panic, exit 0) with what it
//! recorded correct.

use crate::harness::{Sandbox, python_experiment, text, trials_in};

/// An experiment whose only parameter is an int over the whole `i64` range, run by `algorithm`.
fn full_range_int(name: &str, algorithm: &str, settings: &str) -> String {
    format!(
        r#"apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: {name}
spec:
  objective:
    type: minimize
    objectiveMetricName: loss
  algorithm:
    algorithmName: {algorithm}
{settings}
  parallelTrialCount: 1
  maxTrialCount: 4
  maxFailedTrialCount: 0
  parameters:
    - name: "n"
      parameterType: int
      feasibleSpace:
        min: "-9223372036854775808"
        max: "9223372036854775807"
    - name: x
      parameterType: double
      feasibleSpace:
        min: "-1.7e308"
        max: "1.7e308"
  trialTemplate:
    primaryContainerName: training
    trialParameters:
      - name: "n"
        reference: "n"
      - name: x
        reference: x
    trialSpec:
      apiVersion: batch/v1
      kind: Job
      spec:
        template:
          spec:
            restartPolicy: Never
            containers:
              - name: training
                image: debian:bookworm-slim
                command: ["/usr/bin/printf", 'loss=1 n=%s x=%s\n', "${{trialParameters.n}}", "${{trialParameters.x}}"]
"#
    )
}

#[test]
fn spaces_over_the_whole_i64_range_run_to_completion() {
    for (algorithm, settings) in [
        ("random", ""),
        (
            "tpe",
            "    algorithmSettings:\n      - name: n_startup_trials\n        value: \"2\"",
        ),
        ("cmaes", ""),
        ("sobol", ""),
    ] {
        let sb = Sandbox::new();
        let name = format!("wide-{algorithm}");
        let file = sb.write("x.yaml", &full_range_int(&name, algorithm, settings));
        let v = sb.run(&["validate", file.to_str().unwrap()]);
        assert_eq!(v.status.code(), Some(0), "{}", text(&v));
        let out = sb.run(&["run", file.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{algorithm}: {}", text(&out));
        let report = sb.report(&name);
        assert_eq!(
            trials_in(&report, "Succeeded").len(),
            4,
            "{algorithm}: {report}"
        );
    }
}

#[test]
fn a_line_cut_at_the_cap_records_nothing_from_the_cut_token() {
    let sb = Sandbox::new();
    let script = "import sys\n\
sys.stdout.write('x' * (1024 * 1024 - 8) + ' loss=123456789\\n')\n\
sys.stdout.write('loss=0.5\\n')\n";
    let yaml = python_experiment(
        "cut",
        script,
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 1\n  maxTrialCount: 1",
    );
    let file = sb.write("x.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report = sb.report("cut");
    let trial = &trials_in(&report, "Succeeded")[0];
    let observed = trial["status"]["observation"]["metrics"][0].clone();
    assert_eq!(observed["latest"], "0.5", "{observed}");
    assert_eq!(observed["max"], "0.5", "{observed}");
}

#[test]
fn huge_non_numbers_are_counted_and_shown_shortened() {
    let sb = Sandbox::new();
    let script = "import sys\n\
for i in range(300):\n    sys.stdout.write('loss=' + 'n' * 100000 + '\\n')\n\
sys.stdout.write('loss=0.5\\n')\n";
    let yaml = python_experiment(
        "nan",
        script,
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 1\n  maxTrialCount: 1",
    );
    let file = sb.write("x.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let all = text(&out);
    let warning = all
        .lines()
        .find(|l| l.contains("could not be used"))
        .unwrap_or_else(|| panic!("no warning in {all}"));
    assert!(
        warning.contains("300 problem(s) reading its metrics"),
        "{warning}"
    );
    assert!(
        warning.contains(&format!("loss={}... (100000 bytes)", "n".repeat(64))),
        "{warning}"
    );
    assert!(warning.len() < 1000, "{} bytes", warning.len());
}

/// `vernier validate` on `yaml`: its exit code and stderr.
fn validate(yaml: &str) -> (Option<i32>, String) {
    let sb = Sandbox::new();
    let file = sb.write("x.yaml", yaml);
    let out = sb.run(&["validate", file.to_str().unwrap()]);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn validate_refuses_what_run_refuses() {
    let base = full_range_int("v", "random", "");
    let settings = |algorithm: &str, name: &str, value: &str| {
        base.replace(
            "algorithmName: random\n",
            &format!(
                "algorithmName: {algorithm}\n    algorithmSettings:\n      - name: {name}\n        value: \"{value}\"\n"
            ),
        )
    };
    let cases = [
        (
            settings("tpe", "n_ei_candidates", "1000000000"),
            "n_ei_candidates",
        ),
        (
            settings("bayesianoptimization", "n_initial_points", "-5"),
            "n_initial_points",
        ),
        (settings("cmaes", "sigma", "inf"), "sigma"),
        (
            base.replace("algorithmName: random", "algorithmName: grid")
                .replace("\"-9223372036854775808\"", "\"1\"")
                .replace("\"9223372036854775807\"", "\"10000000\"")
                .replace(
                    "min: \"-1.7e308\"\n        max: \"1.7e308\"",
                    "min: \"0\"\n        max: \"1\"\n        step: \"0.5\"",
                ),
            "combinations",
        ),
    ];
    for (yaml, needle) in cases {
        let (code, stderr) = validate(&yaml);
        assert_eq!(code, Some(2), "{needle}: {stderr}");
        assert!(stderr.contains(needle), "{needle}: {stderr}");
    }
    // An empty command runs the image's entrypoint on a cluster: valid there (exit 3), and the
    // local verdict names the field `run` refuses.
    let entrypoint = base.replace(
        r#"command: ["/usr/bin/printf", 'loss=1 n=%s x=%s\n', "${trialParameters.n}", "${trialParameters.x}"]"#,
        "command: []\n                env: [{name: \"N\", value: \"${trialParameters.n}\"}, {name: X, value: \"${trialParameters.x}\"}]",
    );
    let sb = Sandbox::new();
    let file = sb.write("x.yaml", &entrypoint);
    let out = sb.run(&["validate", file.to_str().unwrap()]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(3), "{shown}");
    assert!(shown.contains("containers[0].command"), "{shown}");
    let (code, stderr) = validate(&base);
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn a_relative_log_dir_is_stored_absolute() {
    let sb = Sandbox::new();
    let yaml = full_range_int("logs", "random", "").replace("maxTrialCount: 4", "maxTrialCount: 1");
    let file = sb.write("x.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap(), "--log-dir", "rel/logs"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let expected = sb.path().canonicalize().unwrap().join("rel/logs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("logs in {}", expected.display()))
            || stdout.contains(&format!("logs in {}", sb.path().join("rel/logs").display())),
        "{stdout}"
    );
}
