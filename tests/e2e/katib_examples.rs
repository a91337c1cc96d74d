//! Katib's own example experiments, run the way a migrating Katib user would: validated as
//! they are, then run locally with a stand-in trainer in place of their images.

use crate::harness::{
    Sandbox, first_trial_log, last_condition, python_experiment, text, trials_in,
};
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

/// `vernier validate`'s exit code for a file: 0 runs here, 3 valid for a cluster only, 2 invalid.
const LOCAL: i32 = 0;
const CLUSTER_ONLY: i32 = 3;
const INVALID: i32 = 2;

/// Every Experiment under Katib's `examples/v1beta1` (fixtures/katib-v1beta1, unchanged), the
/// verdict `vernier validate` must give it and, for a file that does not run here, the field it
/// must name. The invalid ones are invalid in Katib too: its webhook refuses
/// `maxFailedTrialCount` above `maxTrialCount` and a trial parameter whose reference is not a
/// parameter.
const KATIB_EXAMPLES: &[(&str, i32, &str)] = &[
    (
        "argo/argo-workflow.yaml",
        CLUSTER_ONLY,
        "spec.trialTemplate.trialSpec.kind: value \"Workflow\"",
    ),
    (
        "early-stopping/median-stop-with-json-format.yaml",
        LOCAL,
        "",
    ),
    ("early-stopping/median-stop.yaml", LOCAL, ""),
    ("hp-tuning/bayesian-optimization.yaml", LOCAL, ""),
    ("hp-tuning/cma-es.yaml", LOCAL, ""),
    ("hp-tuning/grid.yaml", LOCAL, ""),
    ("hp-tuning/hyperband.yaml", LOCAL, ""),
    ("hp-tuning/hyperopt-distribution.yaml", LOCAL, ""),
    ("hp-tuning/multivariate-tpe.yaml", LOCAL, ""),
    ("hp-tuning/optuna-distribution.yaml", LOCAL, ""),
    ("hp-tuning/pbt.yaml", LOCAL, ""),
    ("hp-tuning/random.yaml", LOCAL, ""),
    (
        "hp-tuning/simple-pbt.yaml",
        INVALID,
        "spec.maxFailedTrialCount: value 3",
    ),
    ("hp-tuning/sobol.yaml", LOCAL, ""),
    ("hp-tuning/tpe.yaml", LOCAL, ""),
    (
        "kubeflow-trainer/trainjob-pytorch.yaml",
        CLUSTER_ONLY,
        "spec.trialTemplate.trialSpec.kind: value \"TrainJob\"",
    ),
    ("kubeflow-training-operator/mpijob-horovod.yaml", LOCAL, ""),
    (
        "kubeflow-training-operator/mxjob-byteps.yaml",
        CLUSTER_ONLY,
        "spec.trialTemplate.trialSpec.kind: value \"MXJob\"",
    ),
    (
        "kubeflow-training-operator/pytorchjob-mnist.yaml",
        LOCAL,
        "",
    ),
    (
        "kubeflow-training-operator/tfjob-mnist-with-summaries.yaml",
        LOCAL,
        "",
    ),
    (
        "kubeflow-training-operator/trainjob-pytorch.yaml",
        INVALID,
        "spec.trialTemplate.trialParameters[2].reference: value \"arg\"",
    ),
    (
        "kubeflow-training-operator/xgboostjob-lightgbm.yaml",
        CLUSTER_ONLY,
        "xgbReplicaSpecs.Master.template.spec.containers[0].command",
    ),
    (
        "metrics-collector/custom-metrics-collector.yaml",
        CLUSTER_ONLY,
        "spec.metricsCollectorSpec.collector.customCollector.command",
    ),
    (
        "metrics-collector/file-metrics-collector-with-json-format.yaml",
        LOCAL,
        "",
    ),
    ("metrics-collector/file-metrics-collector.yaml", LOCAL, ""),
    (
        "metrics-collector/metrics-collection-strategy.yaml",
        LOCAL,
        "",
    ),
    (
        "metrics-collector/tfevent-metrics-collector.yaml",
        LOCAL,
        "",
    ),
    ("nas/darts-cpu.yaml", LOCAL, ""),
    ("nas/darts-gpu.yaml", LOCAL, ""),
    ("nas/enas-cpu.yaml", LOCAL, ""),
    ("nas/enas-gpu.yaml", LOCAL, ""),
    ("resume-experiment/from-volume-resume.yaml", LOCAL, ""),
    ("resume-experiment/long-running-resume.yaml", LOCAL, ""),
    ("resume-experiment/never-resume.yaml", LOCAL, ""),
    (
        "tekton/pipeline-run.yaml",
        CLUSTER_ONLY,
        "spec.trialTemplate.trialSpec.kind: value \"PipelineRun\"",
    ),
    (
        "trial-template/trial-configmap-source.yaml",
        CLUSTER_ONLY,
        "spec.trialTemplate.configMap",
    ),
    ("trial-template/trial-metadata-substitution.yaml", LOCAL, ""),
];

fn katib_examples_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("e2e/fixtures/katib-v1beta1")
}

/// Every YAML file under `dir`, relative to it, sorted.
fn yaml_files(dir: &Path, root: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("read fixtures") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            yaml_files(&path, root, out);
        } else if path.extension().is_some_and(|e| e == "yaml") {
            let rel = path.strip_prefix(root).expect("under root");
            out.push(rel.display().to_string());
        }
    }
}

/// The drop-in rule on Katib's own examples: what Katib accepts is valid, what it refuses is
/// refused naming the same field, and what local mode cannot run says which field to change.
#[test]
fn every_katib_example_gets_katibs_verdict() {
    let root = katib_examples_dir();
    let mut files = Vec::new();
    yaml_files(&root, &root, &mut files);
    files.sort();
    let listed: Vec<&str> = KATIB_EXAMPLES.iter().map(|(f, _, _)| *f).collect();
    assert_eq!(files, listed, "every fixture has one expected verdict");

    let sb = Sandbox::new();
    for (file, code, field) in KATIB_EXAMPLES {
        let path = root.join(file);
        let out = sb.run(&["validate", path.to_str().unwrap()]);
        let all = text(&out);
        assert_eq!(out.status.code(), Some(*code), "{file}: {all}");
        assert!(all.contains(field), "{file} does not name {field:?}: {all}");
        if *code == CLUSTER_ONLY {
            assert!(all.contains("cluster: valid"), "{file}: {all}");
        }
        // Katib runs a Workflow, a PipelineRun or an MXJob only once katib-config lists its
        // kind; the operator likewise.
        let beyond_defaults = ["argo/", "tekton/", "kubeflow-training-operator/mxjob"]
            .iter()
            .any(|p| file.starts_with(p));
        assert_eq!(
            all.contains("cluster: valid for `vernier operator --trial-resources "),
            beyond_defaults,
            "{file}: {all}"
        );
    }
}

/// The examples whose trainer has a stand-in. The rest need what a laptop may lack or another
/// test covers: `python` (not `python3`) in the TFJob, mpirun, Katib's hyperband placeholder
/// (`katibs_hyperband_example_...`). The NAS examples quote their arguments
/// (`--architecture="${trialParameters.x}"`), which their trainers read only once a shell has
/// taken the quotes, as Katib's webhook runs them.
const RUN_WITH_STAND_INS: &[&str] = &[
    "early-stopping/median-stop.yaml",
    "early-stopping/median-stop-with-json-format.yaml",
    "hp-tuning/bayesian-optimization.yaml",
    "hp-tuning/cma-es.yaml",
    "hp-tuning/grid.yaml",
    "hp-tuning/hyperopt-distribution.yaml",
    "hp-tuning/multivariate-tpe.yaml",
    "hp-tuning/optuna-distribution.yaml",
    "hp-tuning/pbt.yaml",
    "hp-tuning/random.yaml",
    "hp-tuning/sobol.yaml",
    "hp-tuning/tpe.yaml",
    "metrics-collector/file-metrics-collector.yaml",
    "metrics-collector/file-metrics-collector-with-json-format.yaml",
    "metrics-collector/metrics-collection-strategy.yaml",
    "metrics-collector/tfevent-metrics-collector.yaml",
    "resume-experiment/from-volume-resume.yaml",
    "resume-experiment/long-running-resume.yaml",
    "resume-experiment/never-resume.yaml",
    "trial-template/trial-metadata-substitution.yaml",
    "kubeflow-training-operator/pytorchjob-mnist.yaml",
    "nas/enas-cpu.yaml",
    "nas/darts-cpu.yaml",
];

/// Copies the stand-in trainers to `<sandbox>/opt/<image>/<program>`, where the examples'
/// commands look for them once `/opt/` is read as `<sandbox>/opt/`; the event-file writer goes
/// beside the TensorFlow one.
fn install_stand_ins(sb: &Sandbox) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let from = root.join("e2e/fixtures/katib-stand-ins");
    for (image, program, at) in [
        ("mxnet-mnist", "mnist.py", "mxnet-mnist"),
        ("pytorch-mnist", "mnist.py", "pytorch-mnist"),
        (
            "tf-mnist-with-summaries",
            "mnist.py",
            "tf-mnist-with-summaries",
        ),
        ("simple-pbt", "pbt_test.py", "pbt"),
    ] {
        let dir = sb.path().join("opt").join(at);
        std::fs::create_dir_all(&dir).expect("stand-in directory");
        std::fs::copy(from.join(image).join(program), dir.join(program)).expect("copy a stand-in");
    }
    // The NAS examples run a program of the image's working directory, here the sandbox.
    for (image, program) in [
        ("enas-cnn-cifar10", "RunTrial.py"),
        ("darts-cnn-cifar10", "run_trial.py"),
    ] {
        std::fs::copy(from.join(image).join(program), sb.path().join(program))
            .expect("copy a stand-in");
    }
    std::fs::copy(
        root.join("../examples/trainers/tfevent_trainer.py"),
        sb.path()
            .join("opt/tf-mnist-with-summaries/tfevent_trainer.py"),
    )
    .expect("copy the event-file writer");
}

/// A migrating user's first run: each of Katib's examples whose trainer has a stand-in runs
/// to its end with `vernier run`, its YAML unchanged but for where `/opt/` is, every trial
/// succeeds with its metrics collected by the example's own collector, and the best trial
/// carries the objective metric.
#[test]
fn katibs_examples_run_locally_with_stand_in_trainers() {
    let sb = Sandbox::new();
    install_stand_ins(&sb);
    let opt = format!("{}/opt/", sb.path().display());
    for file in RUN_WITH_STAND_INS {
        let yaml = std::fs::read_to_string(katib_examples_dir().join(file)).expect("fixture");
        let local = sb.write("experiment.yaml", &yaml.replace("/opt/", &opt));
        let out = sb.run(&["run", local.to_str().unwrap(), "--seed", "1"]);
        assert_eq!(out.status.code(), Some(0), "{file}: {}", text(&out));
        let exp = vernier_spec::parse_experiment(&yaml).expect("a valid example");
        let name = exp.metadata.name.as_deref().expect("name");
        let r = sb.report(name);
        let s = &r["status"];
        assert_eq!(last_condition(&r)["type"], "Succeeded", "{file}: {r:#}");
        for bad in ["trialsFailed", "trialMetricsUnavailable"] {
            assert!(s[bad].as_u64().unwrap_or(0) == 0, "{file}: {bad} in {s:#}");
        }
        let objective = exp
            .spec
            .objective
            .as_ref()
            .and_then(|o| o.objective_metric_name.clone());
        let best = &s["currentOptimalTrial"]["observation"]["metrics"];
        assert!(
            best.as_array()
                .is_some_and(|m| m.iter().any(|m| m["name"].as_str() == objective.as_deref())),
            "{file}: {s:#}"
        );
    }
    // Katib's PBT example: each member saved its checkpoint in a directory of its own, the
    // one its command names as /var/log/katib/checkpoints/ (suggestion_trial_dir).
    let r = sb.report("random-experiment");
    let members = trials_in(&r, "Succeeded");
    assert_eq!(members.len(), 12, "{r:#}");
    for t in members {
        let name = t["metadata"]["name"].as_str().expect("trial name");
        let saved = sb.path().join(format!(
            "vernier-logs/random-experiment/checkpoints/{name}/training.ckpt"
        ));
        assert!(saved.exists(), "{}", saved.display());
    }
    // Katib's trial metadata references reach the trial's environment.
    let log = first_trial_log(&sb, "trial-metadata-substitution");
    for line in [
        "TRIAL_NAMESPACE: kubeflow",
        "TRIAL_KIND: Job",
        "TRIAL_API_VERSION: batch/v1",
        "TRIAL_LABEL_CUSTOM: custom-label",
        "TRIAL_ANNOTATION_CUSTOM: custom-annotation",
        "TRIAL_NAME: trial-metadata-substitution-",
    ] {
        assert!(log.contains(line), "{line:?} not in {log}");
    }
}
