//! The environment the Kubeflow training operator gives each replica (TF_CONFIG; MASTER_ADDR,
//! RANK and PET_* for PyTorch; the XGBoost/LightGBM variables; the MPI hostfile), rebuilt with
//! loopback addresses and the free ports chosen for this trial. Pure, so it is tested exactly.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use vernier_spec::template::{JobKind, ReplicaSet, ReplicaType};

/// Every replica is reached on the loopback interface. `localhost` may resolve to `::1`
/// first, where the replica is not listening, so the address is written out.
pub const LOOPBACK: &str = "127.0.0.1";

/// Environment variable naming every worker's `host:port` for XGBoost jobs: on a cluster all
/// workers share one `WORKER_PORT`, which replicas on one machine cannot.
pub const WORKER_ENDPOINTS_ENV: &str = "VERNIER_WORKER_ENDPOINTS";

/// Environment variable naming the MPI hostfile written for the launcher.
pub const MPI_HOSTFILE_ENV: &str = "VERNIER_MPI_HOSTFILE";

/// One replica of a job: its type and index, e.g. `worker-1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReplicaId {
    pub replica_type: ReplicaType,
    pub index: u32,
}

impl fmt::Display for ReplicaId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.replica_type.lower(), self.index)
    }
}

/// Every replica of the set, in start order.
pub fn replica_ids(set: &ReplicaSet) -> Vec<ReplicaId> {
    set.replicas
        .iter()
        .flat_map(|r| {
            (0..r.replicas).map(|index| ReplicaId {
                replica_type: r.replica_type,
                index,
            })
        })
        .collect()
}

/// The operator's environment for replica `id`. `ports` holds each replica's port.
pub fn operator_env(
    set: &ReplicaSet,
    id: ReplicaId,
    ports: &BTreeMap<ReplicaId, u16>,
    mpi_hostfile_dir: Option<&Path>,
) -> Vec<(String, String)> {
    match set.kind {
        // The operator leaves TF_CONFIG out of a job of one replica ("local training").
        JobKind::TfJob if total(set) == 1 => Vec::new(),
        JobKind::TfJob => vec![("TF_CONFIG".into(), tf_config(set, id, ports))],
        JobKind::PyTorchJob => pytorch_env(set, id, ports),
        JobKind::XgBoostJob => xgboost_env(set, id, ports),
        JobKind::MpiJob => mpi_env(set, id, mpi_hostfile_dir),
    }
}

/// Whether the operator gives its environment to the container named `container`: the TFJob
/// controller sets `TF_CONFIG` only in the container named `tensorflow` (`SetClusterSpec`);
/// the PyTorchJob, XGBoostJob and MPIJob controllers set theirs in every container.
pub fn receives_operator_env(kind: JobKind, container: &str) -> bool {
    kind != JobKind::TfJob || container == "tensorflow"
}

fn count(set: &ReplicaSet, t: ReplicaType) -> u32 {
    set.get(t).map_or(0, |r| r.replicas)
}

fn total(set: &ReplicaSet) -> u32 {
    set.replicas.iter().map(|r| r.replicas).sum()
}

fn endpoint(ports: &BTreeMap<ReplicaId, u16>, id: ReplicaId) -> String {
    format!("{LOOPBACK}:{}", ports.get(&id).copied().unwrap_or(0))
}

/// `{"cluster": {...}, "task": {"type": ..., "index": ...}, "environment": "cloud"}`: every
/// replica type except the evaluator is in the cluster (TensorFlow's rule), keys lowercase.
fn tf_config(set: &ReplicaSet, id: ReplicaId, ports: &BTreeMap<ReplicaId, u16>) -> String {
    let mut cluster: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for r in &set.replicas {
        if r.replica_type == ReplicaType::Evaluator {
            continue;
        }
        let addrs = (0..r.replicas)
            .map(|index| {
                endpoint(
                    ports,
                    ReplicaId {
                        replica_type: r.replica_type,
                        index,
                    },
                )
            })
            .collect();
        cluster.insert(r.replica_type.lower(), addrs);
    }
    serde_json::json!({
        "cluster": cluster,
        "task": {"type": id.replica_type.lower(), "index": id.index},
        "environment": "cloud",
    })
    .to_string()
}

/// The PyTorch operator's variables: with a Master, `MASTER_ADDR`/`MASTER_PORT` (the master's
/// address), `WORLD_SIZE` (replicas × numeric `nprocPerNode`, else × 1), `RANK` (master 0,
/// worker i → i + 1), `PET_NPROC_PER_NODE` (`elasticPolicy.nProcPerNode`, else `nprocPerNode`,
/// default `auto`), `PET_NODE_RANK`;
/// always `PET_NNODES` (the replica count) and `PYTHONUNBUFFERED=0`.
fn pytorch_env(
    set: &ReplicaSet,
    id: ReplicaId,
    ports: &BTreeMap<ReplicaId, u16>,
) -> Vec<(String, String)> {
    let total = total(set);
    let mut env = vec![("PYTHONUNBUFFERED".to_string(), "0".to_string())];
    if count(set, ReplicaType::Master) > 0 {
        let master = ReplicaId {
            replica_type: ReplicaType::Master,
            index: 0,
        };
        let nproc = set.nproc_per_node.clone().unwrap_or_else(|| "auto".into());
        let per_node: u32 = nproc.parse().unwrap_or(1);
        let rank = match id.replica_type {
            ReplicaType::Worker => id.index + 1,
            _ => id.index,
        };
        env.extend([
            (
                "MASTER_PORT".to_string(),
                ports.get(&master).copied().unwrap_or(0).to_string(),
            ),
            ("MASTER_ADDR".to_string(), LOOPBACK.to_string()),
            ("WORLD_SIZE".to_string(), (total * per_node).to_string()),
            ("RANK".to_string(), rank.to_string()),
            (
                "PET_NPROC_PER_NODE".to_string(),
                set.elastic_nproc_per_node.clone().unwrap_or(nproc),
            ),
            ("PET_NODE_RANK".to_string(), rank.to_string()),
        ]);
    }
    env.push(("PET_NNODES".to_string(), total.to_string()));
    env
}

/// The XGBoost operator's variables (`MASTER_ADDR`, `MASTER_PORT`, `WORLD_SIZE`, `RANK` with
/// workers after the master, `PYTHONUNBUFFERED=0`; with more than one replica `WORKER_ADDRS`
/// and `WORKER_PORT`). Locally every worker has its own port: `WORKER_PORT` is the replica's
/// own port (the first worker's for the master) and [`WORKER_ENDPOINTS_ENV`] lists every
/// worker's `host:port`.
fn xgboost_env(
    set: &ReplicaSet,
    id: ReplicaId,
    ports: &BTreeMap<ReplicaId, u16>,
) -> Vec<(String, String)> {
    let total = total(set);
    let masters = count(set, ReplicaType::Master);
    let rank = match id.replica_type {
        ReplicaType::Worker => id.index + masters,
        _ => id.index,
    };
    let master = ReplicaId {
        replica_type: ReplicaType::Master,
        index: 0,
    };
    let mut env = vec![
        (
            "MASTER_PORT".to_string(),
            ports.get(&master).copied().unwrap_or(0).to_string(),
        ),
        ("MASTER_ADDR".to_string(), LOOPBACK.to_string()),
        ("WORLD_SIZE".to_string(), total.to_string()),
        ("RANK".to_string(), rank.to_string()),
        ("PYTHONUNBUFFERED".to_string(), "0".to_string()),
    ];
    if total > 1 {
        let workers: Vec<ReplicaId> = (0..count(set, ReplicaType::Worker))
            .map(|index| ReplicaId {
                replica_type: ReplicaType::Worker,
                index,
            })
            .collect();
        let own = if id.replica_type == ReplicaType::Worker {
            Some(id)
        } else {
            workers.first().copied()
        };
        env.push((
            "WORKER_PORT".to_string(),
            own.and_then(|w| ports.get(&w))
                .copied()
                .unwrap_or(0)
                .to_string(),
        ));
        env.push((
            "WORKER_ADDRS".to_string(),
            vec![LOOPBACK; workers.len()].join(","),
        ));
        env.push((
            WORKER_ENDPOINTS_ENV.to_string(),
            workers
                .iter()
                .map(|w| endpoint(ports, *w))
                .collect::<Vec<_>>()
                .join(","),
        ));
    }
    env
}

/// The launcher gets the hostfiles through the variables Open MPI
/// (`OMPI_MCA_orte_default_hostfile`, as the operator sets it), MPICH (`HYDRA_HOST_FILE`) and
/// Intel MPI (`I_MPI_HYDRA_HOST_FILE`) read, so a plain `mpirun` starts its ranks on this
/// machine; `dir` holds the files [`mpi_hostfiles`] names. No rsh agent is set: the ranks are
/// local processes of `mpirun`, not `kubectl exec` calls into worker pods. The MPI operator's
/// launcher also learns `slotsPerWorker` ([`mpi_slots_env`]).
fn mpi_env(set: &ReplicaSet, id: ReplicaId, dir: Option<&Path>) -> Vec<(String, String)> {
    // The MPI operator tells each pod its role (`K_MPI_JOB_ROLE`, launcher or worker).
    let role = (
        "K_MPI_JOB_ROLE".to_string(),
        id.replica_type.lower().to_string(),
    );
    let hostfiles = match (id.replica_type, dir) {
        (ReplicaType::Launcher, Some(dir)) => {
            let open_mpi = dir.join(OPEN_MPI_HOSTFILE).display().to_string();
            let hydra = dir.join(HYDRA_HOSTFILE).display().to_string();
            [
                ("OMPI_MCA_orte_default_hostfile", open_mpi.clone()),
                ("HYDRA_HOST_FILE", hydra.clone()),
                ("I_MPI_HYDRA_HOST_FILE", hydra),
                (MPI_HOSTFILE_ENV, open_mpi),
            ]
            .into_iter()
            .map(|(k, path)| (k.to_string(), path))
            .collect()
        }
        _ => Vec::new(),
    };
    let slots = match id.replica_type {
        ReplicaType::Launcher => mpi_slots_env(set),
        _ => None,
    };
    std::iter::once(role)
        .chain(hostfiles)
        .chain(slots)
        .collect()
}

/// The MPI operator (v2beta1) tells its launcher `slotsPerWorker` in the variable of the
/// job's `mpiImplementation`: Open MPI's `OMPI_MCA_orte_set_default_slots` (the default),
/// Intel MPI's `I_MPI_PERHOST`, nothing for MPICH; the training operator's v1 MPIJob sets
/// neither. Trainers read it as "processes per node", so it is the per-worker count here too,
/// not the hostfile's total.
fn mpi_slots_env(set: &ReplicaSet) -> Option<(String, String)> {
    if !is_mpi_operator_v2(set) {
        return None;
    }
    let name = match set.mpi_implementation.as_deref() {
        None | Some("OpenMPI") => "OMPI_MCA_orte_set_default_slots",
        Some("Intel") => "I_MPI_PERHOST",
        Some(_) => return None,
    };
    Some((name.to_string(), set.slots_per_worker.to_string()))
}

/// Open MPI's hostfile, `localhost slots=N`.
pub const OPEN_MPI_HOSTFILE: &str = "hostfile";
/// The Hydra launcher's (MPICH, Intel MPI), `localhost:N`: Hydra refuses `slots=`.
pub const HYDRA_HOSTFILE: &str = "hostfile.hydra";

/// The launcher's hostfiles (file name, text): this machine, with a slot for every worker slot
/// (`replicas × slotsPerWorker`), where the operator lists one line per worker pod.
pub fn mpi_hostfiles(set: &ReplicaSet) -> [(&'static str, String); 2] {
    let slots = count(set, ReplicaType::Worker).max(1) * set.slots_per_worker.max(1);
    [
        (OPEN_MPI_HOSTFILE, format!("localhost slots={slots}\n")),
        (HYDRA_HOSTFILE, format!("localhost:{slots}\n")),
    ]
}

/// The operator's pod labels for replica `id` (used to find the primary replicas).
pub fn operator_labels(set: &ReplicaSet, id: ReplicaId, trial: &str) -> BTreeMap<String, String> {
    if is_mpi_operator_v2(set) {
        return mpi_operator_labels(id, trial);
    }
    let operator = match set.kind {
        JobKind::TfJob => "tfjob-controller",
        JobKind::PyTorchJob => "pytorchjob-controller",
        JobKind::XgBoostJob => "xgboostjob-controller",
        JobKind::MpiJob => "mpijob-controller",
    };
    let mut labels = BTreeMap::from([
        (
            "training.kubeflow.org/job-name".to_string(),
            trial.to_string(),
        ),
        (
            "training.kubeflow.org/operator-name".to_string(),
            operator.to_string(),
        ),
        (
            "training.kubeflow.org/replica-type".to_string(),
            id.replica_type.lower().to_string(),
        ),
        (
            "training.kubeflow.org/replica-index".to_string(),
            id.index.to_string(),
        ),
    ]);
    if is_master_role(set, id) {
        labels.insert(
            "training.kubeflow.org/job-role".to_string(),
            "master".to_string(),
        );
    }
    // The MPI controller's own role label, which Katib's mpijob-horovod example selects by.
    if set.kind == JobKind::MpiJob {
        labels.insert(
            "mpi-job-role".to_string(),
            id.replica_type.lower().to_string(),
        );
    }
    labels
}

/// An MPIJob of the MPI operator's `kubeflow.org/v2beta1`, not the training operator's.
pub fn is_mpi_operator_v2(set: &ReplicaSet) -> bool {
    set.kind == JobKind::MpiJob && set.api_version == "kubeflow.org/v2beta1"
}

/// The MPI operator's (v2beta1) pod labels: `defaultLabels(job, role)` with the role
/// `launcher` or `worker`, and a worker's index; no `replica-type`, no `job-role: master`.
fn mpi_operator_labels(id: ReplicaId, trial: &str) -> BTreeMap<String, String> {
    let label = |k: &str, v: &str| (format!("training.kubeflow.org/{k}"), v.to_string());
    let mut labels = BTreeMap::from([
        label("operator-name", "mpi-operator"),
        label("job-name", trial),
        label("job-role", id.replica_type.lower()),
    ]);
    if id.replica_type == ReplicaType::Worker {
        labels.extend([label("replica-index", &id.index.to_string())]);
    }
    labels
}

/// The operator's `IsMasterRole`: the chief or master of a TFJob (worker 0 without one), the
/// PyTorch and XGBoost master, the MPI launcher.
pub fn is_master_role(set: &ReplicaSet, id: ReplicaId) -> bool {
    match set.kind {
        JobKind::TfJob => {
            let has_leader = count(set, ReplicaType::Chief) + count(set, ReplicaType::Master) > 0;
            if has_leader {
                matches!(id.replica_type, ReplicaType::Chief | ReplicaType::Master)
            } else {
                id.replica_type == ReplicaType::Worker && id.index == 0
            }
        }
        JobKind::PyTorchJob | JobKind::XgBoostJob => id.replica_type == ReplicaType::Master,
        JobKind::MpiJob => id.replica_type == ReplicaType::Launcher,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn set(kind: &str, field: &str, replicas: serde_json::Value) -> ReplicaSet {
        let doc = json!({
            "apiVersion": "kubeflow.org/v1",
            "kind": kind,
            "spec": {field: replicas},
        });
        vernier_spec::template::replica_set(&doc, "main")
            .unwrap()
            .unwrap()
    }

    fn pod(replicas: u32) -> serde_json::Value {
        json!({"replicas": replicas, "template": {"spec": {"containers": [
            {"name": "main", "image": "python:3.11", "command": ["python3", "t.py"]}
        ]}}})
    }

    fn ports_for(s: &ReplicaSet) -> BTreeMap<ReplicaId, u16> {
        replica_ids(s)
            .into_iter()
            .enumerate()
            .map(|(i, id)| (id, 5000 + i as u16))
            .collect()
    }

    fn get<'a>(env: &'a [(String, String)], k: &str) -> &'a str {
        env.iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("{k} missing from {env:?}"))
    }

    #[test]
    fn tf_config_lists_every_training_replica_and_the_task() {
        let s = set(
            "TFJob",
            "tfReplicaSpecs",
            json!({"Worker": pod(2), "PS": pod(1), "Chief": pod(1), "Evaluator": pod(1)}),
        );
        let ids = replica_ids(&s);
        let names: Vec<String> = ids.iter().map(ToString::to_string).collect();
        assert_eq!(
            names,
            ["chief-0", "ps-0", "worker-0", "worker-1", "evaluator-0"]
        );
        let ports = ports_for(&s);
        let env = operator_env(&s, ids[3], &ports, None);
        let cfg: serde_json::Value = serde_json::from_str(get(&env, "TF_CONFIG")).unwrap();
        assert_eq!(
            cfg,
            json!({
                "cluster": {
                    "chief": ["127.0.0.1:5000"],
                    "ps": ["127.0.0.1:5001"],
                    "worker": ["127.0.0.1:5002", "127.0.0.1:5003"],
                },
                "task": {"type": "worker", "index": 1},
                "environment": "cloud",
            })
        );
        let eval = operator_env(&s, ids[4], &ports, None);
        let cfg: serde_json::Value = serde_json::from_str(get(&eval, "TF_CONFIG")).unwrap();
        assert_eq!(cfg["task"], json!({"type": "evaluator", "index": 0}));
        assert!(cfg["cluster"].get("evaluator").is_none());
    }

    #[test]
    fn only_a_tfjobs_tensorflow_container_gets_tf_config() {
        // (kind, container, gets the operator's variables)
        let table = [
            (JobKind::TfJob, "tensorflow", true),
            (JobKind::TfJob, "trainer", false),
            (JobKind::PyTorchJob, "trainer", true),
            (JobKind::XgBoostJob, "main", true),
            (JobKind::MpiJob, "launcher", true),
        ];
        for (kind, container, want) in table {
            assert_eq!(
                receives_operator_env(kind, container),
                want,
                "{kind:?} {container}"
            );
        }
    }

    #[test]
    fn a_tfjob_of_one_replica_gets_no_tf_config_as_from_the_operator() {
        for replicas in [json!({"Worker": pod(1)}), json!({"Chief": pod(1)})] {
            let s = set("TFJob", "tfReplicaSpecs", replicas);
            let ids = replica_ids(&s);
            assert!(operator_env(&s, ids[0], &ports_for(&s), None).is_empty());
        }
        let two = set("TFJob", "tfReplicaSpecs", json!({"Worker": pod(2)}));
        let ids = replica_ids(&two);
        let env = operator_env(&two, ids[0], &ports_for(&two), None);
        assert!(get(&env, "TF_CONFIG").contains("\"worker\""));
    }

    #[test]
    fn pytorch_ranks_follow_the_master() {
        let s = set(
            "PyTorchJob",
            "pytorchReplicaSpecs",
            json!({"Master": pod(1), "Worker": pod(2)}),
        );
        let ids = replica_ids(&s);
        let ports = ports_for(&s);
        let master = operator_env(&s, ids[0], &ports, None);
        let worker1 = operator_env(&s, ids[2], &ports, None);
        for env in [&master, &worker1] {
            assert_eq!(get(env, "MASTER_ADDR"), "127.0.0.1");
            assert_eq!(get(env, "MASTER_PORT"), "5000");
            assert_eq!(get(env, "WORLD_SIZE"), "3");
            assert_eq!(get(env, "PET_NNODES"), "3");
            assert_eq!(get(env, "PET_NPROC_PER_NODE"), "auto");
            assert_eq!(get(env, "PYTHONUNBUFFERED"), "0");
        }
        assert_eq!(get(&master, "RANK"), "0");
        assert_eq!(get(&worker1, "RANK"), "2");
        assert_eq!(get(&worker1, "PET_NODE_RANK"), "2");
    }

    #[test]
    fn pytorch_world_size_multiplies_a_numeric_nproc_per_node() {
        let doc = json!({"kind": "PyTorchJob", "spec": {"nprocPerNode": "2",
            "pytorchReplicaSpecs": {"Master": pod(1), "Worker": pod(1)}}});
        let s = vernier_spec::template::replica_set(&doc, "main")
            .unwrap()
            .unwrap();
        let ids = replica_ids(&s);
        let env = operator_env(&s, ids[1], &ports_for(&s), None);
        assert_eq!(get(&env, "WORLD_SIZE"), "4");
        assert_eq!(get(&env, "PET_NPROC_PER_NODE"), "2");
    }

    #[test]
    fn xgboost_workers_rank_after_the_master_and_list_their_endpoints() {
        let s = set(
            "XGBoostJob",
            "xgbReplicaSpecs",
            json!({"Master": pod(1), "Worker": pod(2)}),
        );
        let ids = replica_ids(&s);
        let ports = ports_for(&s);
        let master = operator_env(&s, ids[0], &ports, None);
        let w1 = operator_env(&s, ids[2], &ports, None);
        assert_eq!(get(&master, "RANK"), "0");
        assert_eq!(get(&w1, "RANK"), "2");
        assert_eq!(get(&w1, "WORLD_SIZE"), "3");
        assert_eq!(get(&w1, "MASTER_PORT"), "5000");
        assert_eq!(get(&w1, "WORKER_PORT"), "5002");
        assert_eq!(get(&master, "WORKER_PORT"), "5001");
        assert_eq!(get(&w1, "WORKER_ADDRS"), "127.0.0.1,127.0.0.1");
        assert_eq!(
            get(&w1, WORKER_ENDPOINTS_ENV),
            "127.0.0.1:5001,127.0.0.1:5002"
        );
    }

    #[test]
    fn mpi_launcher_gets_a_local_hostfile_with_every_worker_slot() {
        let doc = json!({"kind": "MPIJob", "spec": {"slotsPerWorker": 2, "mpiReplicaSpecs": {
            "Launcher": pod(1),
            "Worker": {"replicas": 3, "template": {"spec": {"containers": [{"name": "w", "image": "x"}]}}}
        }}});
        let s = vernier_spec::template::replica_set(&doc, "main")
            .unwrap()
            .unwrap();
        assert_eq!(
            mpi_hostfiles(&s),
            [
                ("hostfile", "localhost slots=6\n".to_string()),
                ("hostfile.hydra", "localhost:6\n".to_string())
            ]
        );
        let ids = replica_ids(&s);
        let env = operator_env(&s, ids[0], &BTreeMap::new(), Some(Path::new("/t")));
        assert_eq!(get(&env, "OMPI_MCA_orte_default_hostfile"), "/t/hostfile");
        assert_eq!(get(&env, "HYDRA_HOST_FILE"), "/t/hostfile.hydra");
        assert_eq!(get(&env, "I_MPI_HYDRA_HOST_FILE"), "/t/hostfile.hydra");
        assert_eq!(get(&env, "K_MPI_JOB_ROLE"), "launcher");
        let worker = operator_env(&s, ids[1], &BTreeMap::new(), Some(Path::new("/t")));
        assert_eq!(
            worker,
            [("K_MPI_JOB_ROLE".to_string(), "worker".to_string())]
        );
        // The training operator's v1 launcher has no slot variable.
        assert!(
            !env.iter()
                .any(|(k, _)| k.contains("SLOTS") || k == "I_MPI_PERHOST")
        );
        // The worker has no command: mpirun starts its ranks.
        assert!(s.get(ReplicaType::Worker).unwrap().container.is_none());
    }

    #[test]
    fn the_mpi_operators_launcher_learns_the_slots_per_worker_of_its_implementation() {
        let launcher_env = |implementation: Option<&str>| {
            let mut doc = json!({"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
                "spec": {"slotsPerWorker": 2, "mpiReplicaSpecs": {
                    "Launcher": pod(1),
                    "Worker": {"replicas": 3, "template": {"spec": {"containers": [{"name": "w", "image": "x"}]}}}
            }}});
            if let Some(i) = implementation {
                doc["spec"]["mpiImplementation"] = json!(i);
            }
            let s = vernier_spec::template::replica_set(&doc, "main")
                .unwrap()
                .unwrap();
            let ids = replica_ids(&s);
            let worker = operator_env(&s, ids[1], &BTreeMap::new(), None);
            assert_eq!(worker.len(), 1, "{worker:?}");
            operator_env(&s, ids[0], &BTreeMap::new(), None)
        };
        let slot_vars = |env: Vec<(String, String)>| -> Vec<(String, String)> {
            env.into_iter()
                .filter(|(k, _)| k == "OMPI_MCA_orte_set_default_slots" || k == "I_MPI_PERHOST")
                .collect()
        };
        let pair = |k: &str| vec![(k.to_string(), "2".to_string())];
        for (implementation, expected) in [
            (None, pair("OMPI_MCA_orte_set_default_slots")),
            (Some("OpenMPI"), pair("OMPI_MCA_orte_set_default_slots")),
            (Some("Intel"), pair("I_MPI_PERHOST")),
            (Some("MPICH"), vec![]),
        ] {
            assert_eq!(
                slot_vars(launcher_env(implementation)),
                expected,
                "{implementation:?}"
            );
        }
    }

    #[test]
    fn master_role_is_the_chief_else_worker_zero() {
        let with_chief = set(
            "TFJob",
            "tfReplicaSpecs",
            json!({"Chief": pod(1), "Worker": pod(2)}),
        );
        let roles: Vec<bool> = replica_ids(&with_chief)
            .into_iter()
            .map(|id| is_master_role(&with_chief, id))
            .collect();
        assert_eq!(roles, [true, false, false]);
        let workers_only = set(
            "TFJob",
            "tfReplicaSpecs",
            json!({"Worker": pod(2), "PS": pod(1)}),
        );
        let roles: Vec<(String, bool)> = replica_ids(&workers_only)
            .into_iter()
            .map(|id| (id.to_string(), is_master_role(&workers_only, id)))
            .collect();
        assert_eq!(
            roles,
            [
                ("ps-0".to_string(), false),
                ("worker-0".to_string(), true),
                ("worker-1".to_string(), false)
            ]
        );
        let labels = operator_labels(&workers_only, replica_ids(&workers_only)[1], "t1");
        assert_eq!(labels["training.kubeflow.org/job-role"], "master");
        assert_eq!(labels["training.kubeflow.org/replica-type"], "worker");
    }
}
