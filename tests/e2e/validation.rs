//! Invalid experiment files: every problem is reported at once, each naming its field path and
//! the offending value, with exit code 2 and nothing recorded.

use crate::harness::{Sandbox, text};

const VALID: &str = r#"apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: valid-one
spec:
  objective:
    type: maximize
    goal: 0.99
    objectiveMetricName: accuracy
  algorithm:
    algorithmName: random
  parallelTrialCount: 2
  maxTrialCount: 4
  maxFailedTrialCount: 1
  parameters:
    - name: lr
      parameterType: double
      feasibleSpace:
        min: "0.01"
        max: "0.1"
    - name: layers
      parameterType: int
      feasibleSpace:
        min: "1"
        max: "5"
    - name: optimizer
      parameterType: categorical
      feasibleSpace:
        list: [sgd, adam]
  trialTemplate:
    primaryContainerName: training
    trialParameters:
      - name: learningRate
        reference: lr
      - name: numLayers
        reference: layers
      - name: opt
        reference: optimizer
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
                command: [python3, train.py, "--lr=${trialParameters.learningRate}", "--layers=${trialParameters.numLayers}", "--opt=${trialParameters.opt}"]
"#;

/// Validates `yaml` and returns stderr, asserting exit code 2.
fn invalid(yaml: &str) -> String {
    let sb = Sandbox::new();
    let file = sb.write("bad.yaml", yaml);
    let out = sb.run(&["validate", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let run = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(2), "{}", text(&run));
    assert_said_once(&run);
    assert!(
        !sb.path().join("vernier.db").exists() || {
            let list = sb.run(&["list"]);
            !String::from_utf8_lossy(&list.stdout).contains("valid-one")
        }
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Each problem and hint of a refused run is said once (a chained error once repeated both).
fn assert_said_once(run: &std::process::Output) {
    let said = String::from_utf8_lossy(&run.stderr).into_owned();
    let mut lines: Vec<&str> = said.lines().filter(|l| !l.trim().is_empty()).collect();
    let all = lines.len();
    lines.sort_unstable();
    lines.dedup();
    assert_eq!(lines.len(), all, "a line said twice:\n{said}");
}

fn assert_mentions(err: &str, parts: &[&str]) {
    for p in parts {
        assert!(err.contains(p), "expected {p:?} in:\n{err}");
    }
}

#[test]
fn the_base_file_is_valid() {
    let sb = Sandbox::new();
    let file = sb.write("ok.yaml", VALID);
    let out = sb.run(&["validate", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("valid experiment \"valid-one\""),
        "{stdout}"
    );
    assert!(stdout.contains("maximize accuracy"), "{stdout}");
    assert!(
        stdout.contains("  metrics collector: StdOut (name=value lines)\n"),
        "{stdout}"
    );
    assert!(!stdout.contains("early stopping"), "{stdout}");
    // Pruning is visible before the first trial is stopped.
    let pruned = VALID.replacen(
        "  algorithm:\n",
        "  earlyStopping:\n    algorithmName: medianstop\n    algorithmSettings:\n      \
         - {name: start_step, value: \"5\"}\n  algorithm:\n",
        1,
    );
    let file = sb.write("pruned.yaml", &pruned);
    let out = sb.run(&["validate", file.to_str().unwrap()]);
    assert!(
        text(&out).contains("  early stopping: medianstop (start_step 5)\n"),
        "{}",
        text(&out)
    );
}

#[test]
fn min_that_is_not_a_number() {
    let err = invalid(&VALID.replacen("min: \"1\"", "min: \"one\"", 1));
    assert_mentions(&err, &["spec.parameters[1].feasibleSpace.min", "one"]);
}

#[test]
fn min_above_max() {
    let err = invalid(&VALID.replacen("min: \"0.01\"", "min: \"0.5\"", 1));
    assert_mentions(&err, &["spec.parameters[0].feasibleSpace", "0.5"]);
}

#[test]
fn unknown_field_is_named() {
    let err = invalid(&VALID.replacen("parallelTrialCount: 2", "paralelTrialCount: 2", 1));
    assert_mentions(&err, &["spec.paralelTrialCount"]);
}

#[test]
fn objective_type_must_be_minimize_or_maximize() {
    let err = invalid(&VALID.replacen("type: maximize", "type: maximise", 1));
    assert_mentions(&err, &["spec.objective.type", "maximise"]);
}

#[test]
fn max_failed_above_max_trials() {
    let err = invalid(&VALID.replacen("maxFailedTrialCount: 1", "maxFailedTrialCount: 9", 1));
    assert_mentions(&err, &["spec.maxFailedTrialCount", "9"]);
}

#[test]
fn trial_parameter_references_an_unknown_parameter() {
    let err = invalid(&VALID.replacen("reference: lr", "reference: learning_rate", 1));
    assert_mentions(
        &err,
        &[
            "spec.trialTemplate.trialParameters[0].reference",
            "learning_rate",
        ],
    );
}

#[test]
fn placeholder_without_trial_parameter() {
    let err = invalid(&VALID.replacen(
        "\"--opt=${trialParameters.opt}\"",
        "\"--opt=${trialParameters.opt}\", \"--seed=${trialParameters.seed}\"",
        1,
    ));
    assert_mentions(&err, &["spec.trialTemplate", "seed"]);
}

#[test]
fn trial_parameter_never_used() {
    let err = invalid(&VALID.replacen(", \"--opt=${trialParameters.opt}\"", "", 1));
    assert_mentions(&err, &["spec.trialTemplate.trialParameters[2]", "opt"]);
}

/// Validates `yaml`, which must be valid with a warning at `field` mentioning `value`.
fn warned(yaml: &str, field: &str, value: &str) {
    let sb = Sandbox::new();
    let file = sb.write("odd.yaml", yaml);
    let out = sb.run(&["validate", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with(&format!("warning: {field}: ")) && l.contains(value)),
        "{stdout}"
    );
}

#[test]
fn duplicate_categorical_value_is_a_warning() {
    warned(
        &VALID.replacen("list: [sgd, adam]", "list: [sgd, adam, sgd]", 1),
        "spec.parameters[2].feasibleSpace.list[2]",
        "\"sgd\"",
    );
}

#[test]
fn log_uniform_from_zero_is_sampled_uniformly_with_a_warning() {
    warned(
        &VALID.replacen(
            "min: \"0.01\"\n        max: \"0.1\"",
            "min: \"0\"\n        max: \"0.1\"\n        distribution: logUniform",
            1,
        ),
        "spec.parameters[0].feasibleSpace.min",
        "sampled uniformly",
    );
}

#[test]
fn min_equal_to_max_is_a_fixed_value() {
    warned(
        &VALID.replacen(
            "min: \"1\"\n        max: \"5\"",
            "min: \"3\"\n        max: \"3\"",
            1,
        ),
        "spec.parameters[1].feasibleSpace.max",
        "a fixed value",
    );
}

/// `vernier validate` on `yaml`: exit code and stdout.
fn verdict(yaml: &str) -> (Option<i32>, String) {
    let sb = Sandbox::new();
    let file = sb.write("exp.yaml", yaml);
    let out = sb.run(&["validate", file.to_str().unwrap()]);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn validate_shows_both_verdicts() {
    let (code, out) = verdict(VALID);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("cluster: valid"), "{out}");
    assert!(out.contains("local: runnable"), "{out}");

    // The image's entrypoint and a secret: fine on a cluster, not here.
    let entrypoint = VALID
        .replacen(
            "command: [python3, train.py, ",
            "env: [{name: TOKEN, valueFrom: {secretKeyRef: {name: s, key: k}}}]\n                args: [",
            1,
        );
    let (code, out) = verdict(&entrypoint);
    assert_eq!(code, Some(3), "{out}");
    assert!(out.contains("cluster: valid"), "{out}");
    assert!(
        out.contains("local: `vernier run` cannot run it:")
            && out.contains("containers[0].command")
            && out.contains("entrypoint would run with args")
            && out.contains("hint:"),
        "{out}"
    );
    // With a command, the secret is what local mode cannot take.
    let secret = VALID.replacen(
        "command: [python3, train.py, ",
        "env: [{name: TOKEN, valueFrom: {secretKeyRef: {name: s, key: k}}}]\n                command: [python3, train.py, ",
        1,
    );
    let (code, out) = verdict(&secret);
    assert_eq!(code, Some(3), "{out}");
    assert!(
        out.contains("containers[0].env[0].valueFrom") && out.contains("hint:"),
        "{out}"
    );
    // A collector only local mode has: the operator would fail the experiment, so validate
    // does not call it valid there.
    let scraped = VALID.replacen(
        "  parameters:",
        "  metricsCollectorSpec:\n    collector:\n      kind: PrometheusMetric\n  parameters:",
        1,
    );
    let (code, out) = verdict(&scraped);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("cluster: refused by `vernier operator`: spec.metricsCollectorSpec.collector.kind: value \"PrometheusMetric\"")
            && out.contains("local: runnable"),
        "{out}"
    );
    // A Job without restartPolicy runs once locally and is refused by a cluster: said once,
    // as the cluster's refusal, not also as a warning.
    let (code, out) = verdict(&VALID.replacen("            restartPolicy: Never\n", "", 1));
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(out.matches("restartPolicy: is not set").count(), 1, "{out}");
    assert!(
        out.contains("cluster: refused by `vernier operator`: spec.trialTemplate.trialSpec.spec.template.spec.restartPolicy: is not set")
            && out.contains("local: runnable"),
        "{out}"
    );
    // Words kubectl's YAML 1.1 reads as booleans: runnable here, refused by a cluster, each
    // named; quoted, they are text everywhere.
    let (code, out) = verdict(&VALID.replacen("list: [sgd, adam]", "list: [yes, no, 'on']", 1));
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("warning: spec.parameters[2].feasibleSpace.list[0]: value yes is written unquoted, and kubectl reads it as the boolean true")
            && out.contains("spec.parameters[2].feasibleSpace.list[1]: value no")
            && !out.contains("list[2]")
            && out.contains("cluster: refused: 2 field(s) a cluster reads as numbers or booleans")
            && out.contains("local: runnable"),
        "{out}"
    );
}

#[test]
fn run_refuses_what_local_mode_cannot_run_before_any_trial() {
    let sb = Sandbox::new();
    let cm = VALID.replacen(
        "    trialSpec:",
        "    successCondition: status.conditions.#(type==\"Complete\")#|#(status==\"True\")#\n    failureCondition: status.conditions.#(type==\"Failed\")#|#(status==\"True\")#\n    configMap:\n      configMapName: templates\n      configMapNamespace: kubeflow\n      templatePath: job.yaml\n    trialSpecUnused:",
        1,
    );
    // The inline template is dropped: the ConfigMap holds it.
    let cm = cm[..cm.find("    trialSpecUnused:").unwrap()].to_string();
    let file = sb.write("cm.yaml", &cm);
    let out = sb.run(&["validate", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let run = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(2), "{}", text(&run));
    assert_said_once(&run);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.contains("spec.trialTemplate.configMap") && err.contains("hint:"),
        "{err}"
    );
    let list = sb.run(&["list"]);
    assert!(
        !String::from_utf8_lossy(&list.stdout).contains("valid-one"),
        "{}",
        text(&list)
    );
}

#[test]
fn bad_metrics_format_regex() {
    let err = invalid(&VALID.replacen(
        "  parallelTrialCount: 2",
        "  parallelTrialCount: 2\n  metricsCollectorSpec:\n    source:\n      filter:\n        metricsFormat: [\"([a-z]+=(\"]",
        1,
    ));
    assert_mentions(
        &err,
        &[
            "spec.metricsCollectorSpec.source.filter.metricsFormat[0]",
            "([a-z]+=(",
        ],
    );
}

#[test]
fn an_algorithm_refusing_the_space() {
    let err = invalid(&VALID.replacen("algorithmName: random", "algorithmName: grid", 1));
    assert_mentions(&err, &["spec.algorithm", "grid"]);
}

#[test]
fn unknown_algorithm() {
    let err = invalid(&VALID.replacen("algorithmName: random", "algorithmName: genetic", 1));
    assert_mentions(&err, &["spec.algorithm.algorithmName", "genetic"]);
}

#[test]
fn yaml_syntax_error_gives_line_and_column() {
    let err = invalid(&VALID.replacen("  maxTrialCount: 4", "  maxTrialCount: [4", 1));
    assert_mentions(&err, &["line"]);
    assert!(err.contains("column"), "{err}");
}

#[test]
fn many_problems_are_reported_together() {
    let bad = VALID
        .replacen("type: maximize", "type: upward", 1)
        .replacen("min: \"1\"", "min: \"x\"", 1)
        .replacen("parallelTrialCount: 2", "parallelTrialCount: 0", 1);
    let err = invalid(&bad);
    assert_mentions(
        &err,
        &[
            "spec.objective.type",
            "spec.parameters[1].feasibleSpace.min",
            "spec.parallelTrialCount",
        ],
    );
}

/// `validate` names every algorithm setting it refuses and the early-stopping rule's, where
/// `run` stops at the first.
#[test]
fn every_refused_setting_is_reported_together() {
    let bad = VALID.replacen(
        "    algorithmName: random\n",
        "    algorithmName: tpe\n    algorithmSettings:\n      - {name: gamma, value: \"2\"}\n      \
         - {name: n_EI_candidates, value: \"-1\"}\n  earlyStopping:\n    algorithmName: \
         medianstop\n    algorithmSettings:\n      - {name: start_step, value: \"0\"}\n",
        1,
    );
    let err = invalid(&bad);
    assert!(err.contains("3 problem(s) found"), "{err}");
    assert_mentions(
        &err,
        &[
            "spec.algorithm.algorithmSettings[0].value: setting gamma",
            "spec.algorithm.algorithmSettings[1].value: setting n_EI_candidates",
            "spec.earlyStopping.algorithmSettings[0].value",
        ],
    );
}

#[test]
fn wrong_kind_and_missing_file() {
    let err = invalid(&VALID.replacen("kind: Experiment", "kind: Trial", 1));
    assert_mentions(&err, &["kind", "Trial"]);
    let sb = Sandbox::new();
    let out = sb.run(&["validate", "does-not-exist.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does-not-exist.yaml"));
}

/// What Kubernetes and the training operator refuse at admission is invalid here too, though
/// local mode would ignore it: a Job restarting Always, a container without an image, a
/// TFJob replica without a container named `tensorflow`.
#[test]
fn what_a_cluster_refuses_in_a_trial_template_is_invalid() {
    let always = invalid(&VALID.replacen("restartPolicy: Never", "restartPolicy: Always", 1));
    assert_mentions(
        &always,
        &[
            "spec.trialTemplate.trialSpec.spec.template.spec.restartPolicy: value \"Always\"",
            "hint: set restartPolicy: Never",
        ],
    );
    let no_image = invalid(&VALID.replacen("                image: python:3.11\n", "", 1));
    assert_mentions(
        &no_image,
        &[
            "spec.trialTemplate.trialSpec.spec.template.spec.containers[0].image: is required",
            "hint: set image",
        ],
    );
    let command = VALID[VALID.find("command: [python3").unwrap()..].trim_end();
    let tfjob = format!(
        "{}    trialSpec:\n      apiVersion: kubeflow.org/v1\n      kind: TFJob\n      spec:\n        tfReplicaSpecs:\n          Worker:\n            replicas: 2\n            template:\n              spec:\n                containers:\n                  - name: training\n                    image: python:3.11\n                    {command}\n",
        &VALID[..VALID.find("    trialSpec:").unwrap()]
    );
    let trainer = invalid(&tfjob);
    assert_mentions(
        &trainer,
        &[
            "spec.trialTemplate.trialSpec.spec.tfReplicaSpecs.Worker.template.spec.containers: no container is named \"tensorflow\" (containers: training)",
            "hint: name the training container \"tensorflow\"",
        ],
    );
}

/// `validate` lists every field local mode cannot run, not the first of each container, and
/// every field it runs without.
#[test]
fn validate_lists_every_local_blocker_and_every_ignored_field() {
    let yaml = VALID
        .replacen(
            "                command: [python3, train.py, ",
            "                envFrom: [{configMapRef: {name: settings}}]\n                env: [{name: A, valueFrom: {configMapKeyRef: {name: settings, key: a}}}, {name: B, valueFrom: {secretKeyRef: {name: s, key: k}}}]\n                command: [python3, train.py, ",
            1,
        )
        .replacen("      spec:\n        template:", "      spec:\n        completions: 4\n        template:", 1);
    let (code, out) = verdict(&yaml);
    assert_eq!(code, Some(3), "{out}");
    let c = "spec.trialTemplate.trialSpec.spec.template.spec.containers[0]";
    let refused = out
        .split("local: `vernier run` cannot run it:")
        .nth(1)
        .unwrap_or_else(|| panic!("{out}"));
    for field in ["envFrom", "env[0].valueFrom", "env[1].valueFrom"] {
        assert!(
            refused.contains(&format!("  {c}.{field}: ")),
            "{field} in {out}"
        );
    }
    let ignored = out
        .split("local: runs without:")
        .nth(1)
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        ignored.contains(
            "spec.trialTemplate.trialSpec.spec.completions: value 4 is not applied locally"
        ),
        "{out}"
    );
}

/// A program or script this machine lacks is warned about before the first trial (the
/// cluster's image may have it, so it is not an error).
#[test]
fn a_program_this_machine_lacks_is_warned_about() {
    let sb = Sandbox::new();
    // (the command as written, the warning's start; None: everything is here)
    let cases = [
        (
            "[vernier-absent-program, ",
            Some(
                "warning: the trial command runs \"vernier-absent-program\", which is not on PATH",
            ),
        ),
        (
            "[./missing.sh, ",
            Some(
                "warning: the trial command runs \"./missing.sh\", which is not in the trial's working directory",
            ),
        ),
        (
            "[/usr/bin/vernier-absent, ",
            Some(
                "warning: the trial command runs \"/usr/bin/vernier-absent\", which is not on this machine",
            ),
        ),
        (
            "[python3, train.py, ",
            Some(
                "warning: the trial command runs \"train.py\", which is not in the trial's working directory",
            ),
        ),
        ("[python3, present.py, ", None),
    ];
    sb.write("present.py", "print('accuracy=0.5')\n");
    for (i, (command, want)) in cases.into_iter().enumerate() {
        let yaml = VALID.replacen("[python3, train.py, ", command, 1);
        let file = sb.write(&format!("e{i}.yaml"), &yaml);
        let out = sb.run(&["validate", file.to_str().unwrap()]);
        let said = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        match want {
            Some(w) => assert!(
                said.contains(w) && said.contains("only a warning"),
                "{said}"
            ),
            None => assert!(!said.contains("warning: the trial command runs"), "{said}"),
        }
    }
}
