//! Turns one trial of a TFJob, PyTorchJob, XGBoostJob or MPIJob template into the replica
//! processes to run: a command per replica with the operator's environment and free loopback
//! ports, which replicas Katib would collect metrics from, and the notes the user should see.

use super::env::{
    ReplicaId, mpi_hostfiles, operator_env, operator_labels, receives_operator_env, replica_ids,
};
use super::policy::SuccessRule;
use super::resources::{GpuAssigner, gpus_requested, requested};
use crate::error::RunnerError;
use crate::experiment::LocalExperiment;
use crate::process::TrialCommand;
use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use vernier_spec::template::downward_api::PodFacts;
use vernier_spec::template::{JobKind, ReplicaSet, RestartPolicy, replica_set};
use vernier_spec::{ContainerSpec, SpecError};

/// One replica process of a trial.
#[derive(Debug, Clone)]
pub struct ReplicaProcess {
    pub id: ReplicaId,
    pub restart_policy: RestartPolicy,
    /// `None` for an MPI worker without a command: `mpirun` starts its ranks.
    pub command: Option<TrialCommand>,
    /// Katib collects metrics from this replica (its labels match `primaryPodLabels`).
    pub primary: bool,
}

/// Everything needed to run one distributed trial.
#[derive(Debug, Clone)]
pub struct ReplicaJob {
    pub trial: String,
    pub kind: JobKind,
    pub processes: Vec<ReplicaProcess>,
    pub backoff_limit: Option<u32>,
    /// `runPolicy.activeDeadlineSeconds`, counted from the job's start.
    pub active_deadline: Option<std::time::Duration>,
    pub success: SuccessRule,
    /// `<log dir>/<trial>.log`: what the supervisor did, replica by replica.
    pub summary_log: PathBuf,
    /// Lines for the top of the summary log: addresses, resources, ignored fields.
    pub description: Vec<String>,
    /// The MPI hostfiles to write before the launcher starts.
    pub hostfiles: Vec<(PathBuf, String)>,
}

/// The trial's replica set, if its template is a training-operator job.
pub fn replica_set_of(
    exp: &LocalExperiment,
    trial: &str,
    rendered: &serde_json::Value,
) -> Result<Option<ReplicaSet>, RunnerError> {
    replica_set(rendered, &exp.primary_container_name()).map_err(|source| RunnerError::Template {
        trial: trial.to_string(),
        source,
    })
}

/// Builds the processes of one trial. `gpus` are this machine's GPU indices.
pub fn build_job(
    exp: &LocalExperiment,
    trial: &str,
    set: &ReplicaSet,
    gpus: &[String],
) -> Result<ReplicaJob, RunnerError> {
    let wrap = |source: SpecError| RunnerError::Template {
        trial: trial.to_string(),
        source,
    };
    let ids = replica_ids(set);
    let trial_dir = exp.paths.log_dir.join(trial);
    std::fs::create_dir_all(&trial_dir).map_err(|source| RunnerError::LogDir {
        path: trial_dir.display().to_string(),
        source,
    })?;
    let ports = free_ports(&ids).map_err(|e| {
        wrap(SpecError::new(
            "spec.trialTemplate.trialSpec",
            format!(
                "cannot reserve loopback ports for {} replicas: {e}",
                ids.len()
            ),
        ))
    })?;
    let hostfiles: Vec<(PathBuf, String)> = match set.kind == JobKind::MpiJob {
        true => mpi_hostfiles(set)
            .into_iter()
            .map(|(name, text)| (trial_dir.join(name), text))
            .collect(),
        false => Vec::new(),
    };
    let primary_labels: BTreeMap<String, String> = exp
        .spec
        .spec
        .trial_template
        .as_ref()
        .and_then(|t| t.primary_pod_labels.clone())
        .unwrap_or_default();
    check_primary_replica(set, &primary_labels, trial).map_err(wrap)?;
    let job = JobContext {
        exp,
        trial,
        set,
        trial_dir: &trial_dir,
        ports: &ports,
        namespace: exp.spec.namespace(),
    };
    let mut description = job_description(set, ids.len(), trial);
    let mut gpu = GpuAssigner::new(gpus.to_vec());
    let mut processes = Vec::new();
    for id in ids.iter().copied() {
        let primary = selected_by(set, id, trial, &primary_labels);
        if let Some(process) = job.replica(id, primary, &mut gpu, &mut description)? {
            processes.push(process);
        }
    }
    Ok(ReplicaJob {
        trial: trial.to_string(),
        kind: set.kind,
        processes,
        backoff_limit: set.backoff_limit,
        active_deadline: set
            .active_deadline_seconds
            .map(|s| std::time::Duration::from_secs(s.into())),
        success: SuccessRule::of(set),
        summary_log: exp.log_path(trial),
        description,
        hostfiles,
    })
}

/// The top of the summary log: the job's shape, its run policy and what is not applied.
fn job_description(set: &ReplicaSet, replicas: usize, trial: &str) -> Vec<String> {
    let mut description = vec![format!(
        "{} trial {trial}: {replicas} replica(s) on 127.0.0.1; {}",
        set.kind.name(),
        SuccessRule::of(set).describe()
    )];
    if let Some(limit) = set.backoff_limit {
        description.push(format!(
            "runPolicy.backoffLimit {limit}: the job fails at restart {}",
            limit.max(1)
        ));
    }
    if let Some(deadline) = set.active_deadline_seconds {
        description.push(format!(
            "runPolicy.activeDeadlineSeconds {deadline}: the job fails if it runs longer"
        ));
    }
    for field in &set.ignored {
        description.push(format!("note: {field} is not applied locally"));
    }
    description
}

/// What every replica of one trial shares.
struct JobContext<'a> {
    exp: &'a LocalExperiment,
    trial: &'a str,
    set: &'a ReplicaSet,
    trial_dir: &'a Path,
    ports: &'a BTreeMap<ReplicaId, u16>,
    namespace: &'a str,
}

impl JobContext<'_> {
    /// Replica `id` as a process (without a command for an MPI worker that `mpirun`
    /// starts), its description line added to `description`; `None` for a replica type the
    /// set does not have.
    fn replica(
        &self,
        id: ReplicaId,
        primary: bool,
        gpu: &mut GpuAssigner,
        description: &mut Vec<String>,
    ) -> Result<Option<ReplicaProcess>, RunnerError> {
        let Some(spec) = self.set.get(id.replica_type) else {
            return Ok(None);
        };
        let operator_sets_env = |c: &ContainerSpec| receives_operator_env(self.set.kind, &c.name);
        let port = self.ports.get(&id).copied().unwrap_or(0);
        let mut line = format!(
            "{id}: port {port}, restartPolicy {}{}",
            spec.restart_policy.name(),
            if primary { ", metrics collected" } else { "" }
        );
        if !spec.skipped_containers.is_empty() {
            line.push_str(&format!(
                "; containers not run locally: {}",
                spec.skipped_containers.join(", ")
            ));
        }
        let mut process = ReplicaProcess {
            id,
            restart_policy: spec.restart_policy,
            command: None,
            primary,
        };
        let Some(mut container) = spec.container.clone() else {
            line.push_str("; no command: not started (the launcher's mpirun starts its ranks)");
            description.push(line);
            return Ok(Some(process));
        };
        let pod = self.pod(spec, id);
        container.for_pod(&pod);
        let req = requested(container.resources.as_ref());
        let assignment = gpu.assign(&id.to_string(), gpus_requested(&req));
        if !req.is_empty() {
            let shown: Vec<String> = req.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            line.push_str(&format!(
                "; resources {{{}}} (cpu and memory are not enforced locally)",
                shown.join(", ")
            ));
        }
        if let Some(visible) = &assignment.visible {
            line.push_str(&format!("; CUDA_VISIBLE_DEVICES={visible:?}"));
        }
        description.push(line);
        if let Some(note) = assignment.note {
            description.push(format!("note: {note}"));
        }
        if !operator_sets_env(&container) {
            description.push(format!(
                "note: {id}: container {:?} gets no TF_CONFIG: the operator sets it only in the container named \"tensorflow\"",
                container.name
            ));
        }
        // The operator appends its variables after the container's own, and Kubernetes lets
        // the last definition of a name win, in the env and in `$(VAR)` of the command.
        let mpi_dir = (self.set.kind == JobKind::MpiJob).then_some(self.trial_dir);
        if operator_sets_env(&container) {
            container.append_env(operator_env(self.set, id, self.ports, mpi_dir));
        }
        if primary {
            self.exp.as_katib_runs_it(&mut container);
        }
        let log_path = self.trial_dir.join(format!("{id}.log"));
        let metrics_key = format!("{}/{id}", self.trial);
        let pid_file = log_path.with_extension("pid");
        let mut cmd =
            self.exp
                .container_command(self.trial, &metrics_key, container, pod, log_path)?;
        cmd.pid_file = Some(pid_file);
        super::resources::show_devices(&mut cmd.env, assignment.visible);
        process.command = Some(cmd);
        Ok(Some(process))
    }

    /// Replica `id`'s pod as its operator names and labels it (`<job>-<type>-<index>`).
    fn pod(&self, spec: &vernier_spec::template::ReplicaSpec, id: ReplicaId) -> PodFacts {
        PodFacts::from_template(
            &spec.pod_template,
            &format!("{}-{id}", self.trial),
            self.namespace,
            &crate::pod::new_uid(),
            operator_labels(self.set, id, self.trial),
            self.exp.node.clone(),
        )
    }
}

/// Refuses `primaryPodLabels` that select no replica with a command to run: no metrics could
/// be collected, on every trial alike, so `validate` and `run` say it before any trial.
pub fn check_primary_replica(
    set: &ReplicaSet,
    primary_labels: &BTreeMap<String, String>,
    trial: &str,
) -> Result<(), SpecError> {
    let running: Vec<ReplicaId> = replica_ids(set)
        .into_iter()
        .filter(|id| {
            set.get(id.replica_type)
                .is_some_and(|s| s.container.is_some())
        })
        .collect();
    if running
        .iter()
        .any(|id| selected_by(set, *id, trial, primary_labels))
    {
        return Ok(());
    }
    let shown: Vec<String> = primary_labels
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    let example = running
        .first()
        .map(|id| id.replica_type.lower())
        .unwrap_or("worker");
    // The MPI operator's v2beta1 pods carry their role, not their replica type.
    let key = match super::env::is_mpi_operator_v2(set) {
        true => "job-role",
        false => "replica-type",
    };
    let defaulted = primary_labels.len() == 1
        && primary_labels.get("training.kubeflow.org/job-role") == Some(&"master".to_string());
    let origin = match defaulted {
        true => " (Katib's default when primaryPodLabels is unset)",
        false => "",
    };
    Err(SpecError::new(
        "spec.trialTemplate.primaryPodLabels",
        format!(
            "{{{}}}{origin} matches no replica of this {} {} that runs a command, so no metrics could be collected; hint: set it to the labels of the replica that prints the metrics, e.g. {{training.kubeflow.org/{key}: {example}}}",
            shown.join(", "),
            set.api_version,
            set.kind.name()
        ),
    ))
}

/// Whether replica `id`'s pod carries every label of `primary_labels`: its template's own
/// labels and the operator's, as Katib's metrics collector selects primary pods.
fn selected_by(
    set: &ReplicaSet,
    id: ReplicaId,
    trial: &str,
    primary_labels: &BTreeMap<String, String>,
) -> bool {
    let mut labels = set
        .get(id.replica_type)
        .map(|s| s.pod_labels.clone())
        .unwrap_or_default();
    labels.extend(operator_labels(set, id, trial));
    primary_labels.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// A free loopback port for every replica. All listeners are held until every port is known,
/// so two replicas never get the same port; a process elsewhere may still take one before the
/// replica binds it, which is rare and shows as "address in use" in the replica's log.
fn free_ports(ids: &[ReplicaId]) -> std::io::Result<BTreeMap<ReplicaId, u16>> {
    let mut held = Vec::with_capacity(ids.len());
    let mut ports = BTreeMap::new();
    for id in ids {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        ports.insert(*id, listener.local_addr()?.port());
        held.push(listener);
    }
    Ok(ports)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::experiment::LocalPaths;
    use crate::replicas::TrialLaunch;
    use vernier_spec::template::ReplicaType;

    fn experiment(log_dir: &std::path::Path, labels: &str) -> LocalExperiment {
        let yaml = format!(
            r#"apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: e
spec:
  objective:
    type: minimize
    objectiveMetricName: loss
  algorithm:
    algorithmName: random
  maxTrialCount: 1
  parallelTrialCount: 1
  metricsCollectorSpec:
    collector:
      kind: File
  parameters:
    - name: lr
      parameterType: double
      feasibleSpace: {{min: "0.1", max: "1"}}
  trialTemplate:
    primaryContainerName: tensorflow
{labels}    trialParameters:
      - name: lr
        reference: lr
    trialSpec:
      apiVersion: kubeflow.org/v1
      kind: TFJob
      spec:
        tfReplicaSpecs:
          PS:
            template:
              spec:
                containers:
                  - name: tensorflow
                    image: tf
                    command: ["serve", "--lr=${{trialParameters.lr}}"]
          Worker:
            replicas: 2
            template:
              metadata:
                labels:
                  team: vision
              spec:
                containers:
                  - name: tensorflow
                    image: tf
                    command: ["train", "--lr=${{trialParameters.lr}}", "--out=/var/log/katib/metrics.log"]
                    env:
                      - name: TF_CONFIG
                        value: "overridden by the operator"
"#
        );
        let spec = vernier_spec::parse_experiment(&yaml).unwrap();
        LocalExperiment::new(
            spec,
            LocalPaths {
                work_dir: PathBuf::from("/w"),
                log_dir: log_dir.to_path_buf(),
            },
        )
        .unwrap()
    }

    fn job(exp: &LocalExperiment) -> ReplicaJob {
        match exp
            .launch_for("t1", &[("lr".into(), "0.5".into())])
            .unwrap()
        {
            TrialLaunch::Replicas(job) => job,
            TrialLaunch::Process(cmd, _) => panic!("expected replicas, got {cmd:?}"),
        }
    }

    #[test]
    fn without_a_chief_worker_zero_is_primary_and_each_replica_has_its_own_paths() {
        let dir = tempfile::tempdir().unwrap();
        let exp = experiment(dir.path(), "");
        let job = job(&exp);
        let names: Vec<(String, bool)> = job
            .processes
            .iter()
            .map(|p| (p.id.to_string(), p.primary))
            .collect();
        assert_eq!(
            names,
            [
                ("ps-0".to_string(), false),
                ("worker-0".to_string(), true),
                ("worker-1".to_string(), false)
            ]
        );
        assert_eq!(
            job.success,
            SuccessRule::Replica(ReplicaId {
                replica_type: ReplicaType::Worker,
                index: 0
            })
        );
        let w1 = job.processes[2].command.as_ref().unwrap();
        let trial_dir = dir.path().join("t1");
        assert_eq!(w1.log_path, trial_dir.join("worker-1.log"));
        assert_eq!(w1.pid_file, Some(trial_dir.join("worker-1.pid")));
        let metrics = trial_dir.join("worker-1/var/log/katib/metrics.log");
        assert_eq!(w1.metrics_path.as_deref(), Some(metrics.as_path()));
        assert_eq!(
            w1.args,
            ["--lr=0.5", &format!("--out={}", metrics.display())]
        );
        // The operator's TF_CONFIG comes after the container's own, so it wins.
        let tf: Vec<&str> = w1
            .env
            .iter()
            .filter(|(k, _)| k == "TF_CONFIG")
            .map(|(_, v)| v.as_str())
            .collect();
        assert_eq!(tf.len(), 2);
        let cfg: serde_json::Value = serde_json::from_str(tf[1]).unwrap();
        assert_eq!(
            cfg["task"],
            serde_json::json!({"type": "worker", "index": 1})
        );
        assert_eq!(cfg["cluster"]["worker"].as_array().unwrap().len(), 2);
    }

    /// The MPI operator's v2beta1 launcher carries `job-role: launcher` (no `job-role:
    /// master`, no `replica-type`); the training operator's v1 launcher is the master.
    #[test]
    fn an_mpi_operator_v2_launcher_is_selected_by_its_role() {
        let rendered = serde_json::json!({
            "apiVersion": "kubeflow.org/v2beta1",
            "kind": "MPIJob",
            "spec": {"mpiReplicaSpecs": {
                "Launcher": {"template": {"spec": {"containers": [
                    {"name": "mpi-launcher", "image": "m", "command": ["mpirun", "train"]}
                ]}}},
                "Worker": {"replicas": 2, "template": {"spec": {"containers": [
                    {"name": "mpi-worker", "image": "m"}
                ]}}}
            }}
        });
        let role = |r: &str| BTreeMap::from([("training.kubeflow.org/job-role".into(), r.into())]);
        let set = replica_set(&rendered, "mpi-launcher").unwrap().unwrap();
        assert!(check_primary_replica(&set, &role("launcher"), "t").is_ok());
        let err = check_primary_replica(&set, &role("master"), "t")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("this kubeflow.org/v2beta1 MPIJob")
                && err.contains("e.g. {training.kubeflow.org/job-role: launcher}"),
            "{err}"
        );
        let mut v1 = rendered.clone();
        v1["apiVersion"] = "kubeflow.org/v1".into();
        let set = replica_set(&v1, "mpi-launcher").unwrap().unwrap();
        assert!(check_primary_replica(&set, &role("master"), "t").is_ok());
        assert!(check_primary_replica(&set, &role("launcher"), "t").is_err());
    }

    #[test]
    fn primary_pod_labels_can_select_every_worker_and_must_match_one() {
        let dir = tempfile::tempdir().unwrap();
        let exp = experiment(dir.path(), "    primaryPodLabels:\n      team: vision\n");
        let primary: Vec<bool> = job(&exp).processes.iter().map(|p| p.primary).collect();
        assert_eq!(primary, [false, true, true]);

        let exp = experiment(dir.path(), "    primaryPodLabels:\n      team: audio\n");
        let err = exp
            .launch_for("t2", &[("lr".into(), "0.5".into())])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("spec.trialTemplate.primaryPodLabels")
                && err.contains("{team: audio} matches no replica"),
            "{err}"
        );
    }

    /// `$(VAR)` in a replica's command sees the operator's variables, and the operator's
    /// value of a name the container also sets, as the kubelet expands after the training
    /// operator has appended them; `$$(RANK)` stays literal.
    #[test]
    fn command_references_see_the_operators_variables() {
        let dir = tempfile::tempdir().unwrap();
        let yaml = r#"apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: e
spec:
  objective: {type: minimize, objectiveMetricName: loss}
  algorithm: {algorithmName: random}
  maxTrialCount: 1
  parallelTrialCount: 1
  parameters:
    - {name: lr, parameterType: double, feasibleSpace: {min: "0.1", max: "1"}}
  trialTemplate:
    primaryContainerName: pytorch
    trialParameters:
      - {name: lr, reference: lr}
    trialSpec:
      apiVersion: kubeflow.org/v1
      kind: PyTorchJob
      spec:
        pytorchReplicaSpecs:
          Master:
            template:
              spec:
                containers:
                  - name: pytorch
                    image: torch
                    command: [train, "--lr=${trialParameters.lr}", "--at=$(MASTER_ADDR):$(MASTER_PORT)", "--rank=$(RANK)", "--lit=$$(RANK)"]
                    env:
                      - {name: MASTER_PORT, value: "1"}
          Worker:
            replicas: 1
            template:
              spec:
                containers:
                  - name: pytorch
                    image: torch
                    command: [train, "--rank=$(RANK)", "--of=$(WORLD_SIZE)"]
"#;
        let exp = LocalExperiment::new(
            vernier_spec::parse_experiment(yaml).unwrap(),
            LocalPaths {
                work_dir: PathBuf::from("/w"),
                log_dir: dir.path().to_path_buf(),
            },
        )
        .unwrap();
        let job = job(&exp);
        let command = |i: usize| job.processes[i].command.as_ref().unwrap();
        let env = |i: usize, name: &str| {
            let found = command(i).env.iter().rev().find(|(n, _)| n == name);
            found.map(|(_, v)| v.clone()).unwrap()
        };
        let (addr, port) = (env(0, "MASTER_ADDR"), env(0, "MASTER_PORT"));
        assert_ne!(port, "1");
        assert_eq!(
            command(0).args,
            [
                "--lr=0.5".to_string(),
                format!("--at={addr}:{port}"),
                "--rank=0".to_string(),
                "--lit=$(RANK)".to_string()
            ]
        );
        assert_eq!(command(1).args, ["--rank=1", "--of=2"]);
    }
}
