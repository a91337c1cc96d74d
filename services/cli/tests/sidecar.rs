//! The File and TensorFlowEvent collectors under the operator, end to end: the real
//! `vernier operator` binary against the Kubernetes API double, whose simulated kubelet runs
//! each trial's training container and the injected `vernier collect` native sidecar (this
//! same binary) as local processes sharing the emptyDir; the sidecar reports to the
//! operator's DBManager. Lives in the CLI crate because only here does cargo build the
//! binary for the test and name it (`CARGO_BIN_EXE_vernier`).
//!
//! Waits poll the API until a condition holds, with a generous deadline only so that a broken
//! build fails instead of hanging; nothing here asserts on time.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, ListParams, LogParams, PostParams};
use prost::Message;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use vernier_collector::{Event, Summary, SummaryValue, encode_record};
use vernier_kube_double::KubeDouble;
use vernier_kube_double::training::{SimulatedTrainingOperator, SimulationOptions};
use vernier_operator::objects::{experiment_resource, trial_resource};

const DEADLINE: Duration = Duration::from_secs(240);

/// Writes three epochs of `loss` and `accuracy` to `--out` in `--format` (text `name: value`
/// pairs, or JSON lines), and prints decoys to stdout that a log-following collector would
/// take for metrics. The loss is least at lr = 0.03.
const TRAINER: &str = r#"import json, sys
a = dict(x.lstrip('-').split('=', 1) for x in sys.argv[1:])
lr = float(a['lr'])
print('loss=99 accuracy=0', flush=True)
with open(a['out'], 'a') as f:
    for e in range(3):
        loss = round(abs(lr - 0.03) * 10 + 0.1 / (e + 1), 6)
        acc = round(1 - loss, 6)
        if a['format'] == 'json':
            f.write(json.dumps({'loss': str(loss), 'accuracy': str(acc)}) + '\n')
        else:
            f.write(f'loss: {loss} accuracy: {acc}\n')
        f.flush()
"#;

/// The trainer's last loss for `lr`.
fn final_loss(lr: f64) -> f64 {
    (((lr - 0.03).abs() * 10.0 + 0.1 / 3.0) * 1e6).round() / 1e6
}

/// The operator binary, killed when dropped.
struct Operator {
    child: Child,
    stderr: PathBuf,
}

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Env {
    double: KubeDouble,
    sim: Option<SimulatedTrainingOperator>,
    client: kube::Client,
    operator: Operator,
    dir: tempfile::TempDir,
}

fn vernier_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_vernier"))
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

impl Env {
    async fn start() -> Env {
        let double = KubeDouble::start().await.expect("double starts");
        let client = double.client().expect("client");
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        for crd in [
            vernier_operator::crd::experiment_crd(),
            vernier_operator::crd::trial_crd(),
        ] {
            crds.create(&PostParams::default(), &crd)
                .await
                .expect("crd created");
        }
        // The "image" of the sidecar is this build's `vernier`, found by its command name.
        let bin_dir = vernier_bin().parent().unwrap().to_path_buf();
        let sim = SimulatedTrainingOperator::spawn(
            &double,
            SimulationOptions {
                run_sidecars: true,
                program_dirs: vec![bin_dir],
                ..SimulationOptions::default()
            },
        )
        .await
        .expect("simulator");
        let dir = tempfile::tempdir().expect("tempdir");
        let grpc = format!("127.0.0.1:{}", free_port());
        let stderr = dir.path().join("operator.log");
        let child = Command::new(vernier_bin())
            .args([
                "--db",
                &dir.path().join("vernier.db").display().to_string(),
                "operator",
                "--kube-url",
                double.url(),
                "--http-addr",
                "127.0.0.1:0",
                "--grpc-listen",
                &grpc,
                "--lease-namespace",
                "default",
                "--identity",
                "sidecar-test",
                "--observation-interval",
                "1",
                "--collector-image",
                "vernier:test",
                "--db-manager-address",
                &grpc,
            ])
            .env_remove("VERNIER_DB")
            .env_remove("VERNIER_WATCH_NAMESPACE")
            .env_remove("VERNIER_DB_MANAGER_ADDRESS")
            .env_remove("VERNIER_COLLECTOR_IMAGE")
            .env_remove("POD_NAMESPACE")
            .env_remove("POD_NAME")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("operator starts");
        Env {
            double,
            sim: Some(sim),
            client,
            operator: Operator { child, stderr },
            dir,
        }
    }

    fn experiments(&self) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), "default", &experiment_resource())
    }

    fn trials(&self) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), "default", &trial_resource())
    }

    /// Everything that explains a failure: the operator's stderr and every container log.
    async fn diagnostics(&self) -> String {
        let mut out = format!(
            "operator stderr:\n{}\n",
            std::fs::read_to_string(&self.operator.stderr).unwrap_or_default()
        );
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), "default");
        for pod in pods.list(&ListParams::default()).await.unwrap().items {
            let name = pod.metadata.name.clone().unwrap_or_default();
            let spec = pod.spec.clone().unwrap_or_default();
            let names = spec
                .init_containers
                .unwrap_or_default()
                .into_iter()
                .chain(spec.containers)
                .map(|c| c.name);
            for container in names {
                let params = LogParams {
                    container: Some(container.clone()),
                    ..LogParams::default()
                };
                let log = pods.logs(&name, &params).await.unwrap_or_default();
                out.push_str(&format!("--- {name}/{container}:\n{log}\n"));
            }
        }
        out
    }

    /// Creates the experiment and waits for it to reach `Succeeded` or `Failed`.
    async fn finish(&self, yaml: &str) -> Value {
        let obj: DynamicObject = yaml_serde::from_str(yaml).expect("experiment yaml");
        let name = obj.metadata.name.clone().unwrap();
        self.experiments()
            .create(&PostParams::default(), &obj)
            .await
            .expect("experiment created");
        let start = tokio::time::Instant::now();
        loop {
            let exp = serde_json::to_value(self.experiments().get(&name).await.unwrap()).unwrap();
            if condition(&exp, "Succeeded") || condition(&exp, "Failed") {
                return exp;
            }
            if start.elapsed() > DEADLINE {
                panic!(
                    "experiment {name} did not finish: {exp:#}\n{}",
                    self.diagnostics().await
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Creates the experiment and waits for it to succeed.
    async fn run(&self, yaml: &str) -> Value {
        let exp = self.finish(yaml).await;
        if !condition(&exp, "Succeeded") {
            panic!(
                "experiment did not succeed: {exp:#}\n{}",
                self.diagnostics().await
            );
        }
        exp
    }

    async fn trials_of(&self, experiment: &str) -> Vec<Value> {
        let lp =
            ListParams::default().labels(&format!("katib.kubeflow.org/experiment={experiment}"));
        self.trials()
            .list(&lp)
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|t| serde_json::to_value(t).unwrap())
            .collect()
    }

    async fn shutdown(mut self) {
        if let Some(sim) = self.sim.take() {
            sim.shutdown().await;
        }
        self.double.shutdown().await;
    }
}

fn condition(obj: &Value, type_: &str) -> bool {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == type_ && c["status"] == "True")
        })
}

fn lr_of(trial: &Value) -> String {
    trial["spec"]["parameterAssignments"]
        .as_array()
        .and_then(|a| a.iter().find(|p| p["name"] == "lr"))
        .and_then(|p| p["value"].as_str())
        .expect("lr assignment")
        .to_string()
}

fn metric<'a>(observation: &'a Value, name: &str) -> &'a Value {
    observation["metrics"]
        .as_array()
        .and_then(|ms| ms.iter().find(|m| m["name"] == name))
        .unwrap_or_else(|| panic!("metric {name} missing from {observation:#}"))
}

/// An experiment over lr ∈ {0.01, 0.03, 0.05} (grid: one trial each, all at once) whose
/// batch Job runs `command`.
fn experiment(name: &str, objective: &str, collector: &str, command: &[String]) -> String {
    let command = serde_json::to_string(command).unwrap();
    format!(
        r#"apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: {name}
  namespace: default
spec:
  objective:
{objective}
  algorithm:
    algorithmName: grid
  parallelTrialCount: 3
  maxTrialCount: 3
  maxFailedTrialCount: 1
  metricsCollectorSpec:
{collector}
  parameters:
    - name: lr
      parameterType: categorical
      feasibleSpace:
        list: ["0.01", "0.03", "0.05"]
  trialTemplate:
    primaryContainerName: training-container
    trialParameters:
      - name: lr
        reference: lr
    trialSpec:
      apiVersion: batch/v1
      kind: Job
      spec:
        template:
          spec:
            restartPolicy: Never
            containers:
              - name: training-container
                image: python:3.11
                command: {command}
"#
    )
}

/// Every trial succeeded with the trainer's values from the file, and the best is lr 0.03.
async fn check_file_experiment(env: &Env, exp: &Value, name: &str, objective: &str) {
    assert_eq!(exp["status"]["trialsSucceeded"], 3, "{exp:#}");
    let trials = env.trials_of(name).await;
    assert_eq!(trials.len(), 3);
    for t in &trials {
        assert!(condition(t, "Succeeded"), "{t:#}");
        let lr: f64 = lr_of(t).parse().unwrap();
        let observation = &t["status"]["observation"];
        let loss = metric(observation, "loss");
        let latest: f64 = loss["latest"].as_str().unwrap().parse().unwrap();
        assert_eq!(latest, final_loss(lr), "trial {t:#}");
        let accuracy: f64 = metric(observation, "accuracy")["latest"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(accuracy, ((1.0 - final_loss(lr)) * 1e6).round() / 1e6);
    }
    let optimal = &exp["status"]["currentOptimalTrial"];
    let best = trials
        .iter()
        .find(|t| t["metadata"]["name"] == optimal["bestTrialName"])
        .unwrap_or_else(|| panic!("no trial named by {optimal:#}"));
    assert_eq!(lr_of(best), "0.03", "{optimal:#}");
    let best_value = metric(&optimal["observation"], objective);
    assert!(best_value["latest"].is_string(), "{optimal:#}");
}

fn trainer_command(out: &str, format: &str) -> Vec<String> {
    vec![
        "python3".into(),
        "-c".into(),
        TRAINER.into(),
        "--lr=${trialParameters.lr}".into(),
        format!("--out={out}"),
        format!("--format={format}"),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_collector_text_with_katibs_default_path_and_a_custom_format() {
    let env = Env::start().await;
    let yaml = experiment(
        "file-text",
        "    type: minimize\n    objectiveMetricName: loss\n    additionalMetricNames: [accuracy]",
        "    collector:\n      kind: File\n    source:\n      filter:\n        metricsFormat:\n          - '([\\w|-]+)\\s*:\\s*([+-]?\\d*(\\.\\d+)?([Ee][+-]?\\d+)?)'",
        &trainer_command("/var/log/katib/metrics.log", "text"),
    );
    let exp = env.run(&yaml).await;
    check_file_experiment(&env, &exp, "file-text", "loss").await;
    let best = &exp["status"]["currentOptimalTrial"]["observation"];
    assert_eq!(metric(best, "loss")["min"], "0.033333", "{best:#}");
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_collector_json_lines_at_a_custom_path() {
    let env = Env::start().await;
    let yaml = experiment(
        "file-json",
        "    type: maximize\n    objectiveMetricName: accuracy\n    additionalMetricNames: [loss]",
        "    collector:\n      kind: File\n    source:\n      fileSystemPath:\n        path: /output/metrics.json\n        kind: File\n        format: JSON",
        &trainer_command("/output/metrics.json", "json"),
    );
    let exp = env.run(&yaml).await;
    check_file_experiment(&env, &exp, "file-json", "accuracy").await;
    let best = &exp["status"]["currentOptimalTrial"]["observation"];
    assert_eq!(metric(best, "accuracy")["max"], "0.966667", "{best:#}");
    env.shutdown().await;
}

/// TensorFlow event records of `accuracy` (and `loss` = 1 - accuracy) at steps 0, 1, ...
fn event_file(accuracies: &[f32]) -> Vec<u8> {
    let mut data = Vec::new();
    for (step, acc) in accuracies.iter().enumerate() {
        let event = Event {
            wall_time: 1_700_000_000.0 + step as f64,
            step: step as i64,
            file_version: None,
            summary: Some(Summary {
                value: vec![
                    SummaryValue {
                        tag: "accuracy".into(),
                        simple_value: Some(*acc),
                        tensor: None,
                    },
                    SummaryValue {
                        tag: "loss".into(),
                        simple_value: Some(1.0 - *acc),
                        tensor: None,
                    },
                ],
            }),
        };
        data.extend(encode_record(&event.encode_to_vec()));
    }
    data
}

fn write_fixtures(dir: &Path) {
    for (lr, accuracies) in [
        ("0.01", [0.25f32, 0.5]),
        ("0.03", [0.5, 0.75]),
        ("0.05", [0.125, 0.25]),
    ] {
        std::fs::write(dir.join(format!("ev-{lr}")), event_file(&accuracies)).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tensorflow_event_collector_reads_event_files_under_katibs_default_dir() {
    let env = Env::start().await;
    let fixtures = env.dir.path().join("fixtures");
    std::fs::create_dir_all(&fixtures).unwrap();
    write_fixtures(&fixtures);
    // The trainer "writes" its summaries by copying a prepared event file into a
    // subdirectory of the event directory, as TensorBoard writers do (`train/`).
    let script = format!(
        "mkdir -p /var/log/katib/tfevent/train && cp {}/ev-${{trialParameters.lr}} /var/log/katib/tfevent/train/events.out.tfevents.1.host",
        fixtures.display()
    );
    let yaml = experiment(
        "tfevent",
        "    type: maximize\n    objectiveMetricName: accuracy\n    additionalMetricNames: [loss]",
        "    collector:\n      kind: TensorFlowEvent",
        &["sh".into(), "-c".into(), script],
    );
    let exp = env.run(&yaml).await;
    assert_eq!(exp["status"]["trialsSucceeded"], 3, "{exp:#}");
    let trials = env.trials_of("tfevent").await;
    let expected = |lr: &str| match lr {
        "0.01" => ("0.5", "0.25"),
        "0.03" => ("0.75", "0.5"),
        _ => ("0.25", "0.125"),
    };
    for t in &trials {
        assert!(condition(t, "Succeeded"), "{t:#}");
        let accuracy = metric(&t["status"]["observation"], "accuracy");
        let (max, min) = expected(&lr_of(t));
        assert_eq!(
            (accuracy["max"].as_str(), accuracy["min"].as_str()),
            (Some(max), Some(min)),
            "{t:#}"
        );
        assert_eq!(accuracy["latest"], max);
        metric(&t["status"]["observation"], "loss");
    }
    let optimal = &exp["status"]["currentOptimalTrial"];
    let best = trials
        .iter()
        .find(|t| t["metadata"]["name"] == optimal["bestTrialName"])
        .unwrap_or_else(|| panic!("no trial named by {optimal:#}"));
    assert_eq!(lr_of(best), "0.03", "{optimal:#}");
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collectors_without_a_sidecar_are_still_refused_with_a_hint() {
    let env = Env::start().await;
    let yaml = experiment(
        "prometheus",
        "    type: minimize\n    objectiveMetricName: loss",
        "    collector:\n      kind: PrometheusMetric",
        &trainer_command("/var/log/katib/metrics.log", "text"),
    );
    let exp = env.finish(&yaml).await;
    let failed = exp["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Failed"))
        .unwrap_or_else(|| panic!("{exp:#}"));
    let message = failed["message"].as_str().unwrap();
    assert!(
        message.contains("spec.metricsCollectorSpec.collector.kind")
            && message.contains("\"PrometheusMetric\"")
            && message.contains("hint:"),
        "{message}"
    );
    assert!(env.trials_of("prometheus").await.is_empty());
    env.shutdown().await;
}
