//! Replica sets of training-operator trial templates: defaults, the container chosen per
//! replica, and every shape the operator would refuse.

use super::{TFJOB, parse_ok};
use crate::template::{JobKind, ReplicaType, RestartPolicy, replica_set};
use serde_json::{Value, json};

fn pod(name: &str) -> Value {
    json!({"template": {"spec": {"containers": [
        {"name": name, "image": "python:3.11", "command": ["python3", "t.py"]}
    ]}}})
}

fn job(kind: &str, field: &str, specs: Value) -> Value {
    json!({"apiVersion": "kubeflow.org/v1", "kind": kind, "spec": {field: specs}})
}

#[track_caller]
fn error(doc: Value, path: &str, needle: &str) {
    let e = replica_set(&doc, "main").unwrap_err();
    assert_eq!(e.path(), path, "{e}");
    assert!(e.message().contains(needle), "{e}");
}

#[test]
fn the_tfjob_fixture_runs_its_chief_and_its_worker_but_not_the_sidecar() {
    let exp = parse_ok(TFJOB);
    let spec = exp.spec.trial_template.unwrap().trial_spec.unwrap();
    let set = replica_set(&spec, "tensorflow").unwrap().unwrap();
    assert_eq!(set.kind, JobKind::TfJob);
    let types: Vec<ReplicaType> = set.replicas.iter().map(|r| r.replica_type).collect();
    assert_eq!(types, [ReplicaType::Chief, ReplicaType::Worker]);
    // The chief's sidecar comes first; the container named primaryContainerName runs.
    let chief = set.get(ReplicaType::Chief).unwrap();
    assert_eq!(chief.container.as_ref().unwrap().name, "tensorflow");
    assert_eq!(chief.skipped_containers, ["sidecar"]);
    assert_eq!(chief.restart_policy, RestartPolicy::Never);
    let worker = set.get(ReplicaType::Worker).unwrap();
    assert_eq!(worker.restart_policy, RestartPolicy::OnFailure);
    assert_eq!(worker.container.as_ref().unwrap().name, "tensorflow");
}

#[test]
fn defaults_follow_the_operator_per_kind() {
    let set = replica_set(
        &job(
            "PyTorchJob",
            "pytorchReplicaSpecs",
            json!({"worker": pod("pytorch"), "Master": pod("pytorch")}),
        ),
        "pytorch",
    )
    .unwrap()
    .unwrap();
    // Letter case is normalised and the order is master first.
    assert_eq!(set.replicas[0].replica_type, ReplicaType::Master);
    assert_eq!(set.replicas[1].replicas, 1);
    assert_eq!(set.replicas[1].restart_policy, RestartPolicy::OnFailure);
    let mut doc = job(
        "XGBoostJob",
        "xgbReplicaSpecs",
        json!({"Master": pod("main")}),
    );
    doc["spec"]["runPolicy"] =
        json!({"backoffLimit": 2, "activeDeadlineSeconds": 60, "cleanPodPolicy": "None"});
    let set = replica_set(&doc, "main").unwrap().unwrap();
    assert_eq!(set.backoff_limit, Some(2));
    assert_eq!(set.active_deadline_seconds, Some(60));
    assert_eq!(set.replicas[0].restart_policy, RestartPolicy::Never);
    assert_eq!(set.ignored, ["spec.runPolicy.cleanPodPolicy"]);
    assert!(
        replica_set(&json!({"kind": "Job", "spec": {}}), "main")
            .unwrap()
            .is_none()
    );
    // MPIJob: Workers default to none; the MPI operator's v2beta1 Launcher restarts OnFailure.
    for (api, launcher_policy) in [
        ("kubeflow.org/v1", RestartPolicy::Never),
        ("kubeflow.org/v2beta1", RestartPolicy::OnFailure),
    ] {
        let mut doc = job(
            "MPIJob",
            "mpiReplicaSpecs",
            json!({"Launcher": pod("l"), "Worker": pod("w")}),
        );
        doc["apiVersion"] = json!(api);
        let set = replica_set(&doc, "l").unwrap().unwrap();
        assert_eq!(set.replicas[0].restart_policy, launcher_policy, "{api}");
        assert_eq!(set.replicas[1].replicas, 0, "{api}");
        assert_eq!(
            set.replicas[1].restart_policy,
            RestartPolicy::Never,
            "{api}"
        );
    }
}

#[test]
fn only_the_mpi_operator_reads_mpi_implementation_and_only_its_enum() {
    let mpi = |api: &str, implementation: &str| {
        let mut doc = job(
            "MPIJob",
            "mpiReplicaSpecs",
            json!({"Launcher": pod("main"), "Worker": pod("w")}),
        );
        doc["apiVersion"] = json!(api);
        doc["spec"]["mpiImplementation"] = json!(implementation);
        doc
    };
    for value in ["OpenMPI", "Intel", "MPICH"] {
        let set = replica_set(&mpi("kubeflow.org/v2beta1", value), "main")
            .unwrap()
            .unwrap();
        assert_eq!(set.mpi_implementation.as_deref(), Some(value));
    }
    error(
        mpi("kubeflow.org/v2beta1", "openmpi"),
        "spec.trialTemplate.trialSpec.spec.mpiImplementation",
        "value \"openmpi\" is not one the MPI operator accepts; hint: use one of OpenMPI, Intel, MPICH",
    );
    // The training operator's v1 MPIJob has no such field: its API server drops it.
    let v1 = replica_set(&mpi("kubeflow.org/v1", "openmpi"), "main")
        .unwrap()
        .unwrap();
    assert_eq!(v1.mpi_implementation, None);
}

#[test]
fn the_primary_container_name_wins_over_the_default_name() {
    let mut p = pod("tensorflow");
    p["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "main", "image": "x", "command": ["run-main"]}));
    let set = replica_set(
        &job("TFJob", "tfReplicaSpecs", json!({"Worker": p})),
        "main",
    )
    .unwrap()
    .unwrap();
    let w = &set.replicas[0];
    assert_eq!(w.container.as_ref().unwrap().command, ["run-main"]);
    assert_eq!(w.skipped_containers, ["tensorflow"]);
}

#[test]
fn malformed_replica_sets_are_refused_with_their_path() {
    let root = "spec.trialTemplate.trialSpec.spec";
    error(
        json!({"kind": "TFJob", "spec": {}}),
        &format!("{root}.tfReplicaSpecs"),
        "is required",
    );
    error(
        job("TFJob", "tfReplicaSpecs", json!({"Launcher": pod("main")})),
        &format!("{root}.tfReplicaSpecs.Launcher"),
        "not one of TFJob",
    );
    let mut bad_policy = pod("main");
    bad_policy["restartPolicy"] = json!("Sometimes");
    error(
        job("TFJob", "tfReplicaSpecs", json!({"Worker": bad_policy})),
        &format!("{root}.tfReplicaSpecs.Worker.restartPolicy"),
        "\"Sometimes\" is not a restart policy; hint: use one of Always, OnFailure, Never, ExitCode",
    );
    let mut negative = pod("main");
    negative["replicas"] = json!(-1);
    error(
        job("TFJob", "tfReplicaSpecs", json!({"Worker": negative})),
        &format!("{root}.tfReplicaSpecs.Worker.replicas"),
        "value -1 is not a non-negative whole number",
    );
    let mut two_chiefs = pod("main");
    two_chiefs["replicas"] = json!(2);
    error(
        job("TFJob", "tfReplicaSpecs", json!({"Chief": two_chiefs})),
        &format!("{root}.tfReplicaSpecs.Chief.replicas"),
        "at most one Chief",
    );
    error(
        job("TFJob", "tfReplicaSpecs", json!({"PS": pod("main")})),
        &format!("{root}.tfReplicaSpecs"),
        "no Chief, Master or Worker",
    );
    error(
        job(
            "XGBoostJob",
            "xgbReplicaSpecs",
            json!({"Worker": pod("main")}),
        ),
        &format!("{root}.xgbReplicaSpecs.Master"),
        "needs one Master",
    );
    error(
        job("MPIJob", "mpiReplicaSpecs", json!({"Worker": pod("main")})),
        &format!("{root}.mpiReplicaSpecs.Launcher"),
        "needs one Launcher",
    );
    let mut no_master = pod("pytorch");
    no_master["replicas"] = json!(0);
    error(
        job(
            "PyTorchJob",
            "pytorchReplicaSpecs",
            json!({"Master": no_master, "Worker": pod("pytorch")}),
        ),
        &format!("{root}.pytorchReplicaSpecs.Master.replicas"),
        "value 0 must be 1",
    );
    let mut two_masters = pod("pytorch");
    two_masters["replicas"] = json!(2);
    error(
        job(
            "PyTorchJob",
            "pytorchReplicaSpecs",
            json!({"Master": two_masters}),
        ),
        &format!("{root}.pytorchReplicaSpecs.Master.replicas"),
        "value 2 must be 1; hint: a PyTorchJob job has exactly one Master",
    );
    let mut no_workers = pod("pytorch");
    no_workers["replicas"] = json!(0);
    error(
        job(
            "PyTorchJob",
            "pytorchReplicaSpecs",
            json!({"Worker": no_workers}),
        ),
        &format!("{root}.pytorchReplicaSpecs"),
        "has no Master or Worker replica; hint: add a Master",
    );
    let pytorch =
        |spec: Value| json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "spec": spec});
    error(
        pytorch(json!({
            "nprocPerNode": "2",
            "elasticPolicy": {"nProcPerNode": 2},
            "pytorchReplicaSpecs": {"Master": pod("pytorch")},
        })),
        &format!("{root}.elasticPolicy.nProcPerNode"),
        "must not be used with spec.nprocPerNode",
    );
    let elastic = pytorch(json!({
        "elasticPolicy": {"nProcPerNode": 2},
        "pytorchReplicaSpecs": {"Master": pod("pytorch")},
    }));
    let set = replica_set(&elastic, "pytorch").unwrap().unwrap();
    assert_eq!(set.elastic_nproc_per_node.as_deref(), Some("2"));
    assert_eq!(set.nproc_per_node, None);
    let mut two = pod("a");
    two["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "b", "image": "x", "command": ["b"]}));
    error(
        job("PyTorchJob", "pytorchReplicaSpecs", json!({"Master": two})),
        &format!("{root}.pytorchReplicaSpecs.Master.template.spec.containers"),
        "containers found: a, b",
    );
}

#[test]
fn the_training_operators_webhook_rules_are_checked_for_a_cluster() {
    use crate::template::check_replica_set;
    let root = "spec.trialTemplate.trialSpec.spec";
    let no_image = json!({"template": {"spec": {"containers": [
        {"name": "pytorch", "command": ["t"]},
        {"name": "side", "image": " ", "command": ["s"]}
    ]}}});
    let mut two_chiefs = pod("tensorflow");
    two_chiefs["replicas"] = json!(2);
    let tf = |specs: Value| job("TFJob", "tfReplicaSpecs", specs);
    // (job, its primary container, every problem as path and needle; none: it is accepted)
    type Case = (Value, &'static str, Vec<(String, &'static str)>);
    let table: Vec<Case> = vec![
        (
            tf(json!({"Chief": pod("tensorflow"), "Worker": pod("tensorflow")})),
            "tensorflow",
            vec![],
        ),
        (
            tf(json!({"Chief": pod("trainer"), "Worker": pod("tensorflow")})),
            "tensorflow",
            vec![(
                format!("{root}.tfReplicaSpecs.Chief.template.spec.containers"),
                "no container is named \"tensorflow\" (containers: trainer)",
            )],
        ),
        (
            job(
                "PyTorchJob",
                "pytorchReplicaSpecs",
                json!({"Master": no_image, "Worker": pod("main")}),
            ),
            "pytorch",
            vec![
                (
                    format!("{root}.pytorchReplicaSpecs.Master.template.spec.containers[0].image"),
                    "container \"pytorch\" has no image",
                ),
                (
                    format!("{root}.pytorchReplicaSpecs.Master.template.spec.containers[1].image"),
                    "container \"side\" has no image",
                ),
                (
                    format!("{root}.pytorchReplicaSpecs.Worker.template.spec.containers"),
                    "no container is named \"pytorch\"",
                ),
            ],
        ),
        (
            job(
                "XGBoostJob",
                "xgbReplicaSpecs",
                json!({"Master": pod("xgboostjob")}),
            ),
            "xgboostjob",
            vec![(
                format!("{root}.xgbReplicaSpecs.Master.template.spec.containers"),
                "no container is named \"xgboost\"",
            )],
        ),
        // MPIJob containers need no particular name.
        (
            job(
                "MPIJob",
                "mpiReplicaSpecs",
                json!({"Launcher": pod("launcher")}),
            ),
            "launcher",
            vec![],
        ),
        // The set's shape problem and the other replicas' container problems, all at once.
        (
            tf(json!({"Chief": two_chiefs, "PS": pod("ps")})),
            "tensorflow",
            vec![
                (
                    format!("{root}.tfReplicaSpecs.Chief.replicas"),
                    "at most one Chief",
                ),
                (
                    format!("{root}.tfReplicaSpecs.PS.template.spec.containers"),
                    "no container is named \"tensorflow\"",
                ),
            ],
        ),
    ];
    for (doc, primary, want) in table {
        let got: Vec<String> = check_replica_set(&doc, primary)
            .iter()
            .map(ToString::to_string)
            .collect();
        super::assert_problems_with_hints(&got, &want);
    }
}

#[test]
fn validation_reports_a_bad_replica_set_before_any_trial_runs() {
    use super::{assert_error, mutated, parse_err, set};
    let text = mutated(TFJOB, |v| {
        set(
            v,
            "/spec/trialTemplate/trialSpec/spec/tfReplicaSpecs/Worker/restartPolicy",
            json!("Retry"),
        )
    });
    let errors = parse_err(&text);
    assert_error(
        &errors,
        "spec.trialTemplate.trialSpec.spec.tfReplicaSpecs.Worker.restartPolicy",
        "value \"Retry\" is not a restart policy",
    );
}
