//! The simulated training operator as Katib's trial controller would see it: jobs of each
//! kind get their pods with the real labels, the primary container's program runs and its
//! output is the pod log, and job conditions end as the real controllers end them.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns panic on setup failures by design

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::runtime::wait::await_condition;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use vernier_kube_double::training::JobKind;
use vernier_kube_double::{KubeDouble, Outcome, SimulatedTrainingOperator, SimulationOptions};

/// Guards against a hung test only; no assertion depends on it.
const PATIENCE: Duration = Duration::from_secs(120);

const TRAIN: &str = "import os,sys\nlr=float(sys.argv[1].split('=')[1])\nprint('trial', os.environ['TRIAL'], flush=True)\nfor epoch in range(3):\n    print(f'epoch={epoch} loss={lr*(3-epoch):.3f}', flush=True)\nsys.stderr.write('done\\n')\nsys.exit(int(os.environ.get('EXIT', '0')))\n";

fn container(name: &str, exit: i32) -> Value {
    json!({"name": name, "image": "python:3.11",
           "command": ["python3", "-c", TRAIN], "args": ["--lr=$(LR)"],
           "env": [{"name": "LR", "value": "0.5"}, {"name": "EXIT", "value": exit.to_string()},
                   {"name": "TRIAL", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['trial']"}}}]})
}

fn template(name: &str, exit: i32) -> Value {
    json!({"metadata": {"labels": {"trial": "t1"}},
           "spec": {"restartPolicy": "Never", "containers": [container(name, exit)]}})
}

async fn finished(
    api: &Api<DynamicObject>,
    name: &str,
    terminal: &'static [&'static str],
) -> DynamicObject {
    let done = move |job: Option<&DynamicObject>| {
        job.and_then(|j| j.data["status"]["conditions"].as_array())
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["status"] == "True" && terminal.iter().any(|t| c["type"] == *t))
            })
    };
    tokio::time::timeout(PATIENCE, await_condition(api.clone(), name, done))
        .await
        .expect("job did not finish")
        .unwrap()
        .unwrap()
}

fn condition_summary(job: &DynamicObject) -> Vec<(String, String, String)> {
    job.data["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["type"].as_str().unwrap().to_owned(),
                c["status"].as_str().unwrap().to_owned(),
                c["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

async fn start(
    options: SimulationOptions,
) -> (KubeDouble, SimulatedTrainingOperator, kube::Client) {
    let double = KubeDouble::start().await.unwrap();
    let operator = SimulatedTrainingOperator::spawn(&double, options)
        .await
        .unwrap();
    let client = double.client().unwrap();
    (double, operator, client)
}

fn job_api(client: &kube::Client, kind: JobKind) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), "default", &kind.api_resource())
}

async fn create(api: &Api<DynamicObject>, manifest: Value) {
    let object: DynamicObject = serde_json::from_value(manifest).unwrap();
    api.create(&PostParams::default(), &object).await.unwrap();
}

#[tokio::test]
async fn batch_job_runs_its_command_and_completes() {
    let (double, operator, client) = start(SimulationOptions::default()).await;
    let jobs = job_api(&client, JobKind::BatchJob);
    create(
        &jobs,
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "trial-a"},
        "spec": {"template": template("training-container", 0)}}),
    )
    .await;
    let job = finished(&jobs, "trial-a", &["Complete", "Failed"]).await;
    assert_eq!(
        condition_summary(&job),
        vec![
            (
                "SuccessCriteriaMet".into(),
                "True".into(),
                "CompletionsReached".into()
            ),
            (
                "Complete".into(),
                "True".into(),
                "CompletionsReached".into()
            )
        ]
    );
    assert_eq!(job.data["status"]["succeeded"], 1);
    assert!(job.data["status"]["completionTime"].is_string());
    let selector = job.data["spec"]["selector"]["matchLabels"].clone();
    assert_eq!(
        selector,
        json!({"batch.kubernetes.io/controller-uid": job.metadata.uid.clone().unwrap()})
    );
    assert_eq!(job.data["spec"]["backoffLimit"], 6, "API server default");

    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let list = pods
        .list(&ListParams::default().labels("job-name=trial-a"))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 1);
    let pod = &list.items[0];
    let labels = pod.metadata.labels.clone().unwrap();
    assert_eq!(labels["batch.kubernetes.io/job-name"], "trial-a");
    assert_eq!(labels["trial"], "t1", "template labels are kept");
    assert_eq!(labels["controller-uid"], job.metadata.uid.clone().unwrap());
    assert_eq!(
        pod.metadata.owner_references.as_ref().unwrap()[0].kind,
        "Job"
    );
    assert_eq!(
        pod.status.as_ref().unwrap().phase.as_deref(),
        Some("Succeeded")
    );
    let log = pods
        .logs(pod.metadata.name.as_deref().unwrap(), &Default::default())
        .await
        .unwrap();
    assert_eq!(
        log,
        "trial t1\nepoch=0 loss=1.500\nepoch=1 loss=1.000\nepoch=2 loss=0.500\ndone\n"
    );
    operator.shutdown().await;
    double.shutdown().await;
}

#[tokio::test]
async fn failing_batch_job_retries_up_to_its_backoff_limit() {
    let (double, operator, client) = start(SimulationOptions::default()).await;
    let jobs = job_api(&client, JobKind::BatchJob);
    create(
        &jobs,
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "bad"},
        "spec": {"backoffLimit": 1, "template": template("training-container", 3)}}),
    )
    .await;
    let job = finished(&jobs, "bad", &["Complete", "Failed"]).await;
    assert_eq!(
        condition_summary(&job),
        vec![
            (
                "FailureTarget".into(),
                "True".into(),
                "BackoffLimitExceeded".into()
            ),
            (
                "Failed".into(),
                "True".into(),
                "BackoffLimitExceeded".into()
            )
        ]
    );
    assert_eq!(job.data["status"]["failed"], 2);
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let list = pods
        .list(&ListParams::default().labels("job-name=bad"))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 2, "one pod per attempt");
    for pod in &list.items {
        let status = pod.status.as_ref().unwrap();
        assert_eq!(status.phase.as_deref(), Some("Failed"));
        let terminated = status.container_statuses.as_ref().unwrap()[0]
            .state
            .as_ref()
            .unwrap()
            .terminated
            .clone()
            .unwrap();
        assert_eq!(
            (terminated.exit_code, terminated.reason.as_deref()),
            (3, Some("Error"))
        );
    }
    operator.shutdown().await;
    double.shutdown().await;
}

#[tokio::test]
async fn pytorchjob_runs_the_master_and_reports_kubeflow_conditions() {
    let (double, operator, client) = start(SimulationOptions::default()).await;
    let jobs = job_api(&client, JobKind::PyTorchJob);
    create(&jobs, json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "pt"},
        "spec": {"pytorchReplicaSpecs": {
            "Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": template("pytorch", 0)},
            "Worker": {"replicas": 2, "restartPolicy": "OnFailure", "template": template("pytorch", 0)}}}}))
    .await;
    let job = finished(&jobs, "pt", &["Succeeded", "Failed"]).await;
    assert_eq!(
        condition_summary(&job),
        vec![
            ("Created".into(), "True".into(), "PyTorchJobCreated".into()),
            ("Running".into(), "False".into(), "PyTorchJobRunning".into()),
            (
                "Succeeded".into(),
                "True".into(),
                "PyTorchJobSucceeded".into()
            )
        ]
    );
    assert_eq!(
        job.data["status"]["replicaStatuses"],
        json!({"Master": {"succeeded": 1}, "Worker": {"succeeded": 2}})
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let primary = pods
        .list(
            &ListParams::default()
                .labels("training.kubeflow.org/job-name=pt,training.kubeflow.org/job-role=master"),
        )
        .await
        .unwrap();
    let names: Vec<String> = primary
        .items
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, vec!["pt-master-0"]);
    let log = pods.logs("pt-master-0", &Default::default()).await.unwrap();
    assert!(log.contains("epoch=2 loss=0.500\n"), "{log}");
    let workers = pods
        .list(&ListParams::default().labels("training.kubeflow.org/replica-type=worker"))
        .await
        .unwrap();
    let mut names: Vec<String> = workers
        .items
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, vec!["pt-worker-0", "pt-worker-1"]);
    assert_eq!(
        pods.logs("pt-worker-0", &Default::default()).await.unwrap(),
        "",
        "workers are not executed"
    );
    operator.shutdown().await;
    double.shutdown().await;
}

#[tokio::test]
async fn tfjob_fails_when_its_chief_exits_non_zero_and_rules_can_force_failure() {
    let rule: vernier_kube_double::OutcomeRule = Arc::new(|job| {
        (job.name == "forced").then(|| Outcome::Fail {
            exit_code: 7,
            message: "simulated OOM".into(),
        })
    });
    let options = SimulationOptions {
        per_job: Some(rule),
        ..SimulationOptions::default()
    };
    let (double, operator, client) = start(options).await;
    let jobs = job_api(&client, JobKind::TfJob);
    for (name, exit) in [("exits", 2), ("forced", 0)] {
        create(
            &jobs,
            json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name},
            "spec": {"tfReplicaSpecs": {
                "Chief": {"replicas": 1, "template": template("tensorflow", exit)},
                "Worker": {"replicas": 1, "template": template("tensorflow", 0)}}}}),
        )
        .await;
    }
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    for (name, exit) in [("exits", 2), ("forced", 7)] {
        let job = finished(&jobs, name, &["Succeeded", "Failed"]).await;
        let last = condition_summary(&job).pop().unwrap();
        assert_eq!(last, ("Failed".into(), "True".into(), "TFJobFailed".into()));
        let message = job.data["status"]["conditions"][2]["message"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(
            message,
            format!("TFJob default/{name} has failed because 1 Chief replica(s) failed.")
        );
        let chief = pods.get(&format!("{name}-chief-0")).await.unwrap();
        let labels = chief.metadata.labels.clone().unwrap();
        assert_eq!(labels["training.kubeflow.org/job-role"], "master");
        let terminated = chief.status.unwrap().container_statuses.unwrap()[0]
            .state
            .clone()
            .unwrap()
            .terminated
            .unwrap();
        assert_eq!(terminated.exit_code, exit);
    }
    let forced_log = pods
        .logs("forced-chief-0", &Default::default())
        .await
        .unwrap();
    assert_eq!(forced_log, "simulated OOM\n");
    operator.shutdown().await;
    double.shutdown().await;
}

#[tokio::test]
async fn deleting_a_job_stops_its_process_and_collects_its_pods() {
    let (double, operator, client) = start(SimulationOptions::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let script = format!(
        "import os,time\nopen({:?},'w').write(str(os.getpid()))\nprint('started', flush=True)\ntime.sleep(600)\n",
        pid_file.to_str().unwrap()
    );
    let jobs = job_api(&client, JobKind::PyTorchJob);
    create(&jobs, json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "long"},
        "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {"spec": {"containers": [
            {"name": "pytorch", "image": "x", "command": ["python3", "-c", script]}]}}}}}}))
    .await;
    let running = |job: Option<&DynamicObject>| {
        job.and_then(|j| j.data["status"]["conditions"].as_array())
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Running" && c["status"] == "True")
            })
    };
    tokio::time::timeout(PATIENCE, await_condition(jobs.clone(), "long", running))
        .await
        .unwrap()
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let params = kube::api::LogParams {
        follow: true,
        ..Default::default()
    };
    let mut lines = futures_util::AsyncBufReadExt::lines(
        pods.log_stream("long-master-0", &params).await.unwrap(),
    );
    use futures_util::TryStreamExt;
    let first = tokio::time::timeout(PATIENCE, lines.try_next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.as_deref(), Some("started"));
    let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().parse().unwrap();
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());

    jobs.delete("long", &DeleteParams::foreground())
        .await
        .unwrap();
    assert_eq!(
        tokio::time::timeout(PATIENCE, lines.try_next())
            .await
            .unwrap()
            .unwrap(),
        None,
        "the followed log ends with the pod"
    );
    let gone = async {
        while std::path::Path::new(&format!("/proc/{pid}")).exists()
            && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .unwrap_or_default()
                .contains(") Z ")
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(PATIENCE, gone)
        .await
        .expect("the job's process was not stopped");
    assert!(
        pods.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty(),
        "pods are garbage-collected"
    );
    operator.shutdown().await;
    double.shutdown().await;
}

#[tokio::test]
async fn a_hanging_job_stays_running() {
    let options = SimulationOptions {
        default_outcome: Outcome::Hang,
        ..SimulationOptions::default()
    };
    let (double, operator, client) = start(options).await;
    let jobs = job_api(&client, JobKind::BatchJob);
    create(
        &jobs,
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "stuck"},
        "spec": {"template": template("main", 0)}}),
    )
    .await;
    let ready = |job: Option<&DynamicObject>| job.is_some_and(|j| j.data["status"]["ready"] == 1);
    tokio::time::timeout(PATIENCE, await_condition(jobs.clone(), "stuck", ready))
        .await
        .unwrap()
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod = pods
        .list(&ListParams::default().labels("job-name=stuck"))
        .await
        .unwrap()
        .items
        .remove(0);
    assert_eq!(pod.status.unwrap().phase.as_deref(), Some("Running"));
    let log = pods
        .logs(&pod.metadata.name.unwrap(), &Default::default())
        .await;
    assert_eq!(
        log.unwrap(),
        "",
        "a Running pod's log can be read (it is empty while hanging)"
    );
    let job = jobs.get("stuck").await.unwrap();
    assert!(
        job.data["status"].get("conditions").is_none(),
        "{:?}",
        job.data["status"]
    );
    operator.shutdown().await;
    double.shutdown().await;
}

#[tokio::test]
async fn xgboost_and_mpi_jobs_run_their_master_and_launcher() {
    let (double, operator, client) = start(SimulationOptions::default()).await;
    let cases = [
        (
            JobKind::XgBoostJob,
            "XGBoostJob",
            "xgbReplicaSpecs",
            "Master",
            "xgboost",
            "xgb-master-0",
        ),
        (
            JobKind::MpiJob,
            "MPIJob",
            "mpiReplicaSpecs",
            "Launcher",
            "mpi",
            "mpi-launcher-0",
        ),
    ];
    for (kind, kind_name, field, primary, container_name, _) in cases {
        let api = job_api(&client, kind);
        let name = if kind == JobKind::MpiJob {
            "mpi"
        } else {
            "xgb"
        };
        create(
            &api,
            json!({"apiVersion": "kubeflow.org/v1", "kind": kind_name, "metadata": {"name": name},
            "spec": {field: {
                primary: {"replicas": 1, "template": template(container_name, 0)},
                "Worker": {"replicas": 1, "template": template(container_name, 0)}}}}),
        )
        .await;
    }
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    for (kind, kind_name, _, _, _, primary_pod) in cases {
        let name = if kind == JobKind::MpiJob {
            "mpi"
        } else {
            "xgb"
        };
        let job = finished(&job_api(&client, kind), name, &["Succeeded", "Failed"]).await;
        let last = condition_summary(&job).pop().unwrap();
        assert_eq!(
            last,
            (
                "Succeeded".into(),
                "True".into(),
                format!("{kind_name}Succeeded")
            )
        );
        let primary = pods
            .list(&ListParams::default().labels(&format!(
                "training.kubeflow.org/job-name={name},training.kubeflow.org/job-role=master"
            )))
            .await
            .unwrap();
        assert_eq!(primary.items.len(), 1);
        assert_eq!(primary.items[0].metadata.name.as_deref(), Some(primary_pod));
        let log = pods.logs(primary_pod, &Default::default()).await.unwrap();
        assert!(log.starts_with("trial t1\nepoch=0"), "{log}");
    }
    operator.shutdown().await;
    double.shutdown().await;
}

#[tokio::test]
async fn native_sidecars_run_beside_the_main_container_and_share_its_empty_dir() {
    let out = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    // A sidecar program found through `program_dirs`, as an image's binary would be: it
    // announces itself on the shared volume, and on SIGTERM copies what the main container
    // wrote there (and where "there" really was) out of the pod. It is slow to get ready, so
    // a main container started without waiting for its startup probe would find no `ready`.
    let tool = bin.path().join("collector-tool");
    std::fs::write(
        &tool,
        "#!/bin/sh\ntrap 'cp \"$1/metrics\" \"$OUT/copied\"; echo \"$1\" > \"$OUT/dir\"; echo got TERM; exit 0' TERM\nsleep 0.2\ntouch \"$1/ready\"\nwhile :; do sleep 0.05; done\n",
    )
    .unwrap();
    std::fs::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let options = SimulationOptions {
        run_sidecars: true,
        program_dirs: vec![bin.path().to_path_buf()],
        ..SimulationOptions::default()
    };
    let (double, operator, client) = start(options).await;
    let jobs = job_api(&client, JobKind::BatchJob);
    let mount = json!([{"name": "shared", "mountPath": "/var/log/katib"}]);
    let out_dir = out.path().display().to_string();
    create(
        &jobs,
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "with-sidecar"},
        "spec": {"template": {"spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "volumes": [{"name": "shared", "emptyDir": {}}],
            "initContainers": [
                // Its startup probe holds the main container back until it is ready.
                {"name": "collector", "restartPolicy": "Always",
                 "command": ["collector-tool", "/var/log/katib"],
                 "startupProbe": {"exec": {"command": ["test", "-e", "/var/log/katib/ready"]},
                                  "periodSeconds": 1, "failureThreshold": 60},
                 "env": [{"name": "OUT", "value": out_dir}], "volumeMounts": mount},
                // Ignores SIGTERM: the simulated kubelet kills it after the grace period.
                {"name": "stubborn", "restartPolicy": "Always",
                 "command": ["sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"]}
            ],
            "containers": [{"name": "main", "volumeMounts": mount, "command": ["sh", "-c",
                "test -e /var/log/katib/ready || { echo started too early; exit 3; }; echo loss=0.25 > /var/log/katib/metrics; echo main done"]}]
        }}}}),
    )
    .await;
    let job = finished(&jobs, "with-sidecar", &["Complete", "Failed"]).await;
    assert_eq!(condition_summary(&job).pop().unwrap().1, "True");
    assert_eq!(job.data["status"]["succeeded"], 1);
    assert_eq!(
        std::fs::read_to_string(out.path().join("copied")).unwrap(),
        "loss=0.25\n",
        "the sidecar read the main container's file after it exited, before the job completed"
    );
    let host_dir = std::fs::read_to_string(out.path().join("dir")).unwrap();
    assert_ne!(host_dir.trim(), "/var/log/katib");
    assert!(
        !std::path::Path::new(host_dir.trim()).exists(),
        "the emptyDir is removed with the pod"
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod = pods
        .list(&ListParams::default().labels("job-name=with-sidecar"))
        .await
        .unwrap()
        .items
        .remove(0);
    let name = pod.metadata.name.clone().unwrap();
    let log = |container: &str| kube::api::LogParams {
        container: Some(container.to_owned()),
        ..Default::default()
    };
    assert_eq!(pods.logs(&name, &log("main")).await.unwrap(), "main done\n");
    assert_eq!(
        pods.logs(&name, &log("collector")).await.unwrap(),
        "got TERM\n"
    );
    operator.shutdown().await;
    double.shutdown().await;
}
