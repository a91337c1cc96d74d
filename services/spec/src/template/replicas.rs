//! Reads the replica sets of a rendered Kubeflow training job (TFJob, PyTorchJob, XGBoostJob,
//! MPIJob) the way the training operator's defaulter and validator see them, so local mode can
//! run every replica instead of only the primary container.

use super::container::{ContainerSpec, container_from};
use crate::error::SpecError;
use serde_json::Value;
use std::collections::BTreeMap;

const ROOT: &str = "spec.trialTemplate.trialSpec";

/// The training-operator job kinds whose replica sets run locally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobKind {
    TfJob,
    PyTorchJob,
    XgBoostJob,
    MpiJob,
}

impl JobKind {
    /// The kind of a trial spec, if it is a training-operator job.
    pub fn of(kind: &str) -> Option<JobKind> {
        match kind {
            "TFJob" => Some(JobKind::TfJob),
            "PyTorchJob" => Some(JobKind::PyTorchJob),
            "XGBoostJob" => Some(JobKind::XgBoostJob),
            "MPIJob" => Some(JobKind::MpiJob),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            JobKind::TfJob => "TFJob",
            JobKind::PyTorchJob => "PyTorchJob",
            JobKind::XgBoostJob => "XGBoostJob",
            JobKind::MpiJob => "MPIJob",
        }
    }

    /// The field under `spec` holding the replica specs.
    pub fn replica_specs_field(self) -> &'static str {
        match self {
            JobKind::TfJob => "tfReplicaSpecs",
            JobKind::PyTorchJob => "pytorchReplicaSpecs",
            JobKind::XgBoostJob => "xgbReplicaSpecs",
            JobKind::MpiJob => "mpiReplicaSpecs",
        }
    }

    /// The container the operator configures in each replica (it requires this name for TF,
    /// PyTorch and XGBoost).
    pub fn default_container(self) -> &'static str {
        match self {
            JobKind::TfJob => "tensorflow",
            JobKind::PyTorchJob => "pytorch",
            JobKind::XgBoostJob => "xgboost",
            JobKind::MpiJob => "mpi",
        }
    }

    /// Replica types in the order they are started and listed, as the operator spells them.
    pub fn replica_types(self) -> &'static [ReplicaType] {
        use ReplicaType::*;
        match self {
            JobKind::TfJob => &[Chief, Master, Ps, Worker, Evaluator],
            JobKind::PyTorchJob | JobKind::XgBoostJob => &[Master, Worker],
            JobKind::MpiJob => &[Launcher, Worker],
        }
    }

    /// The operator's `restartPolicy` when a replica sets none.
    pub fn default_restart_policy(self) -> RestartPolicy {
        match self {
            JobKind::PyTorchJob => RestartPolicy::OnFailure,
            _ => RestartPolicy::Never,
        }
    }
}

/// A replica type of any of the four kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ReplicaType {
    Chief,
    Master,
    Ps,
    Worker,
    Evaluator,
    Launcher,
}

impl ReplicaType {
    /// The operator's spelling (the key in the replica specs).
    pub fn name(self) -> &'static str {
        match self {
            ReplicaType::Chief => "Chief",
            ReplicaType::Master => "Master",
            ReplicaType::Ps => "PS",
            ReplicaType::Worker => "Worker",
            ReplicaType::Evaluator => "Evaluator",
            ReplicaType::Launcher => "Launcher",
        }
    }

    /// Lowercase, as in TF_CONFIG, pod names and the `replica-type` label.
    pub fn lower(self) -> &'static str {
        match self {
            ReplicaType::Chief => "chief",
            ReplicaType::Master => "master",
            ReplicaType::Ps => "ps",
            ReplicaType::Worker => "worker",
            ReplicaType::Evaluator => "evaluator",
            ReplicaType::Launcher => "launcher",
        }
    }
}

/// A replica's `restartPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestartPolicy {
    /// Restarted whenever it exits, even with code 0.
    Always,
    /// Restarted when it exits with a non-zero code or a signal.
    OnFailure,
    /// Never restarted; a non-zero exit fails the job.
    Never,
    /// Exit codes 1-127 fail the job, 128-255 (and signals) restart the replica.
    ExitCode,
}

impl RestartPolicy {
    pub const NAMES: &'static [&'static str] = &["Always", "OnFailure", "Never", "ExitCode"];

    fn parse(s: &str) -> Option<RestartPolicy> {
        match s {
            "Always" => Some(RestartPolicy::Always),
            "OnFailure" => Some(RestartPolicy::OnFailure),
            "Never" => Some(RestartPolicy::Never),
            "ExitCode" => Some(RestartPolicy::ExitCode),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            RestartPolicy::Always => "Always",
            RestartPolicy::OnFailure => "OnFailure",
            RestartPolicy::Never => "Never",
            RestartPolicy::ExitCode => "ExitCode",
        }
    }
}

/// One replica type of the job.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaSpec {
    pub replica_type: ReplicaType,
    pub replicas: u32,
    pub restart_policy: RestartPolicy,
    /// The container run for each replica; `None` for an MPI worker without a command (its
    /// processes are started by the launcher's `mpirun`).
    pub container: Option<ContainerSpec>,
    /// Other containers of the replica's pod, which local mode does not run.
    pub skipped_containers: Vec<String>,
    /// The pod template's own labels, matched against `primaryPodLabels` with the operator's.
    pub pod_labels: BTreeMap<String, String>,
    /// The pod template (`metadata` and `spec`), which the downward API reads.
    pub pod_template: Value,
    /// The field path of this replica spec, for messages.
    pub path: String,
}

/// Everything local mode needs from a training-operator job.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaSet {
    pub kind: JobKind,
    /// The job's `apiVersion` (the MPI operator's `kubeflow.org/v2beta1` labels its pods and
    /// defaults its launcher otherwise than the training operator's `kubeflow.org/v1`).
    pub api_version: String,
    /// In [`JobKind::replica_types`] order.
    pub replicas: Vec<ReplicaSpec>,
    /// `spec.runPolicy.backoffLimit`: restarts allowed across the whole job.
    pub backoff_limit: Option<u32>,
    /// `spec.runPolicy.activeDeadlineSeconds`: the job fails once it has run this long.
    pub active_deadline_seconds: Option<u32>,
    /// TFJob `spec.successPolicy` (`""` or `AllWorkers`).
    pub success_policy: Option<String>,
    /// PyTorchJob `spec.nprocPerNode`.
    pub nproc_per_node: Option<String>,
    /// PyTorchJob `spec.elasticPolicy.nProcPerNode` (deprecated; refused beside
    /// `nprocPerNode`): the operator's elastic variables set `PET_NPROC_PER_NODE` from it.
    pub elastic_nproc_per_node: Option<String>,
    /// MPIJob `spec.slotsPerWorker` (default 1).
    pub slots_per_worker: u32,
    /// MPIJob `spec.mpiImplementation` of the MPI operator's v2beta1 (`OpenMPI` when unset,
    /// `Intel`, `MPICH`): which slot variable its launcher gets.
    pub mpi_implementation: Option<String>,
    /// Fields read but not acted on locally, for a note in the trial log and `validate`'s
    /// list: each a field path under the trial spec, then what is done instead in
    /// parentheses, if anything needs saying.
    pub ignored: Vec<String>,
}

impl ReplicaSet {
    pub fn get(&self, t: ReplicaType) -> Option<&ReplicaSpec> {
        self.replicas.iter().find(|r| r.replica_type == t)
    }
}

/// The replica sets of `rendered` when it is a TFJob, PyTorchJob, XGBoostJob or MPIJob, `None`
/// for any other kind. In each replica the container named `primary_container_name` is run,
/// else the operator's default container (`tensorflow`, `pytorch`, ...), else a lone container.
pub fn replica_set(
    rendered: &Value,
    primary_container_name: &str,
) -> Result<Option<ReplicaSet>, SpecError> {
    read_replica_set(rendered, primary_container_name, Mode::Local)
}

/// The training operator's own checks of a TFJob, PyTorchJob, XGBoostJob or MPIJob (replica
/// types, counts, restart policies, a container in every replica, the containers its webhook
/// requires), without what only local mode needs: a container that runs the image's
/// entrypoint, or takes values from `valueFrom`/`envFrom`, is normal on a cluster. Every
/// container problem is listed, after the first problem of the set's shape.
pub fn check_replica_set(spec: &Value, primary_container_name: &str) -> Vec<SpecError> {
    let mut problems: Vec<SpecError> =
        read_replica_set(spec, primary_container_name, Mode::Cluster)
            .err()
            .into_iter()
            .collect();
    // A replica whose containers the shape check already refused is not named twice.
    let shape_paths: Vec<String> = problems.iter().map(SpecError::path).collect();
    problems.extend(
        container_rules(spec)
            .into_iter()
            .filter(|e| !shape_paths.contains(&e.path())),
    );
    problems
}

/// The training operator's webhooks (`ValidateReplicaSpecs`, and the XGBoostJob webhook's copy
/// of it): each replica of a TFJob, PyTorchJob or XGBoostJob has a container named after the
/// kind (`tensorflow`, `pytorch`, `xgboost`), the one the operator configures, and every
/// container has an image. An MPIJob's pods are refused by Kubernetes without an image too.
/// Local mode ignores both, so without these checks a template a cluster refuses ran here.
fn container_rules(spec: &Value) -> Vec<SpecError> {
    let Some((kind, specs)) = replica_specs(spec) else {
        return Vec::new();
    };
    let field = kind.replica_specs_field();
    let mut problems = Vec::new();
    for (key, replica) in specs.into_iter().flatten() {
        let path = format!("{ROOT}.spec.{field}.{key}.template.spec.containers");
        let Some(containers) = replica
            .pointer("/template/spec/containers")
            .and_then(Value::as_array)
        else {
            continue; // a replica without containers is refused by the shape check
        };
        problems.extend(missing_images(kind, containers, &path));
        if let Some(e) = missing_default_container(kind, key, containers, &path) {
            problems.push(e);
        }
    }
    problems
}

/// A training job's kind and its replica specs (`tfReplicaSpecs`, ...), if it is one; the
/// specs are `None` when missing or not a map, which the shape check refuses.
fn replica_specs(spec: &Value) -> Option<(JobKind, Option<&serde_json::Map<String, Value>>)> {
    let kind = spec
        .get("kind")
        .and_then(Value::as_str)
        .and_then(JobKind::of)?;
    let specs = spec
        .get("spec")
        .and_then(|s| s.get(kind.replica_specs_field()))
        .and_then(Value::as_object);
    Some((kind, specs))
}

fn missing_images(kind: JobKind, containers: &[Value], path: &str) -> Vec<SpecError> {
    let who = match kind {
        JobKind::MpiJob => "Kubernetes refuses the replica's pods with a container",
        _ => "the training operator's webhook refuses a replica container",
    };
    containers
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let image = c.get("image").and_then(Value::as_str).unwrap_or("");
            image.trim().is_empty().then(|| {
                let name = c.get("name").and_then(Value::as_str).unwrap_or("");
                SpecError::new(
                    format!("{path}[{i}].image"),
                    format!(
                        "is required: container {name:?} has no image, and {who} without one \
                         (local mode ignores the image, a cluster pulls it); hint: set image to \
                         the image holding the training code"
                    ),
                )
            })
        })
        .collect()
}

fn missing_default_container(
    kind: JobKind,
    key: &str,
    containers: &[Value],
    path: &str,
) -> Option<SpecError> {
    if kind == JobKind::MpiJob {
        return None;
    }
    let wanted = kind.default_container();
    let names: Vec<&str> = containers
        .iter()
        .map(|c| c.get("name").and_then(Value::as_str).unwrap_or(""))
        .collect();
    (!names.contains(&wanted)).then(|| {
        SpecError::new(
            path,
            format!(
                "no container is named {wanted:?} (containers: {}), and the training operator's \
                 webhook refuses a {} replica ({key}) without one; hint: name the training \
                 container {wanted:?}, and set primaryContainerName to it",
                names.join(", "),
                kind.name()
            ),
        )
    })
}

/// Whether the containers are read for running them here, or only checked for a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Local,
    Cluster,
}

fn read_replica_set(
    rendered: &Value,
    primary_container_name: &str,
    mode: Mode,
) -> Result<Option<ReplicaSet>, SpecError> {
    let Some(kind) = rendered
        .get("kind")
        .and_then(Value::as_str)
        .and_then(JobKind::of)
    else {
        return Ok(None);
    };
    let field = kind.replica_specs_field();
    let specs_path = format!("{ROOT}.spec.{field}");
    let Some(specs) = rendered
        .get("spec")
        .and_then(|s| s.get(field))
        .and_then(Value::as_object)
    else {
        return Err(SpecError::new(
            specs_path,
            format!(
                "is required for a {} trial; hint: list the replica types, e.g. {field}: {{Worker: {{replicas: 2, template: ...}}}}",
                kind.name()
            ),
        ));
    };
    let api_version = rendered
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let replicas = ReplicaSpecs {
        kind,
        api_version,
        path: &specs_path,
    }
    .read(specs, primary_container_name, mode)?;
    let spec = rendered.get("spec");
    let run_policy = spec.and_then(|s| s.get("runPolicy"));
    let counted = |name: &str| match run_policy.and_then(|r| r.get(name)) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => non_negative(v, &format!("{ROOT}.spec.runPolicy.{name}")).map(Some),
    };
    let backoff_limit = counted("backoffLimit")?;
    let active_deadline_seconds = counted("activeDeadlineSeconds")?;
    let ignored = ignored_fields(spec);
    let slots_per_worker = match spec.and_then(|s| s.get("slotsPerWorker")) {
        None | Some(Value::Null) => 1,
        Some(v) => non_negative(v, &format!("{ROOT}.spec.slotsPerWorker"))?.max(1),
    };
    let text = |k: &str| {
        spec.and_then(|s| s.get(k)).and_then(|v| match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
    };
    let nproc_per_node = text("nprocPerNode");
    let elastic_nproc_per_node = elastic_nproc_per_node(spec, nproc_per_node.is_some())?;
    Ok(Some(ReplicaSet {
        kind,
        api_version: api_version.to_string(),
        replicas,
        backoff_limit,
        active_deadline_seconds,
        success_policy: text("successPolicy"),
        nproc_per_node,
        elastic_nproc_per_node,
        slots_per_worker,
        mpi_implementation: match (kind, api_version) {
            (JobKind::MpiJob, "kubeflow.org/v2beta1") => {
                mpi_implementation(text("mpiImplementation"))?
            }
            // Only the MPI operator's CRD has the field; another's API server drops it.
            _ => None,
        },
        ignored,
    }))
}

/// Where a job's replica specs are, and of which job.
struct ReplicaSpecs<'a> {
    kind: JobKind,
    api_version: &'a str,
    /// The field path of the map of replica specs.
    path: &'a str,
}

impl ReplicaSpecs<'_> {
    /// Each replica type's spec, in the kind's order of types, once the counts pass its
    /// operator's rules.
    fn read(
        &self,
        specs: &serde_json::Map<String, Value>,
        primary_container_name: &str,
        mode: Mode,
    ) -> Result<Vec<ReplicaSpec>, SpecError> {
        let mut replicas = Vec::new();
        for (key, spec) in specs {
            let path = format!("{}.{key}", self.path);
            let rt = replica_type_of(self.kind, key, &path, &replicas)?;
            replicas.push(replica(
                self.kind,
                rt,
                self.api_version,
                spec,
                &path,
                primary_container_name,
                mode,
            )?);
        }
        let allowed = self.kind.replica_types();
        replicas.sort_by_key(|r| allowed.iter().position(|t| *t == r.replica_type));
        check_counts(self.kind, &replicas, self.path)?;
        Ok(replicas)
    }
}

/// A PyTorchJob's deprecated `spec.elasticPolicy.nProcPerNode`, which the operator still
/// applies (`PET_NPROC_PER_NODE`); refused beside `spec.nprocPerNode`, as by the operator's
/// webhook.
fn elastic_nproc_per_node(
    spec: Option<&Value>,
    plain_given: bool,
) -> Result<Option<String>, SpecError> {
    let elastic = spec
        .and_then(|s| s.pointer("/elasticPolicy/nProcPerNode"))
        .filter(|v| !v.is_null());
    match elastic {
        Some(_) if plain_given => Err(SpecError::new(
            format!("{ROOT}.spec.elasticPolicy.nProcPerNode"),
            "must not be used with spec.nprocPerNode (the training operator's webhook refuses \
             both); hint: keep spec.nprocPerNode",
        )),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Ok(Some(other.to_string())),
        None => Ok(None),
    }
}

/// The MPI operator's CRD admits only these `spec.mpiImplementation` values; the API server
/// refuses an MPIJob with another before any pod starts.
const MPI_IMPLEMENTATIONS: [&str; 3] = ["OpenMPI", "Intel", "MPICH"];

fn mpi_implementation(given: Option<String>) -> Result<Option<String>, SpecError> {
    match given {
        Some(v) if !MPI_IMPLEMENTATIONS.contains(&v.as_str()) => Err(SpecError::new(
            format!("{ROOT}.spec.mpiImplementation"),
            format!(
                "value {v:?} is not one the MPI operator accepts; hint: use one of {}",
                MPI_IMPLEMENTATIONS.join(", ")
            ),
        )),
        other => Ok(other),
    }
}

/// The replica type `key` names (in any letter case, as the operator's defaulter accepts
/// "ps" or "worker"), if the kind has it and `earlier` does not.
fn replica_type_of(
    kind: JobKind,
    key: &str,
    path: &str,
    earlier: &[ReplicaSpec],
) -> Result<ReplicaType, SpecError> {
    let allowed = kind.replica_types();
    let Some(&rt) = allowed.iter().find(|t| t.name().eq_ignore_ascii_case(key)) else {
        let names: Vec<&str> = allowed.iter().map(|t| t.name()).collect();
        return Err(SpecError::new(
            path,
            format!(
                "replica type {key:?} is not one of {}; hint: use {}",
                kind.name(),
                names.join(", ")
            ),
        ));
    };
    if earlier.iter().any(|r| r.replica_type == rt) {
        return Err(SpecError::new(
            path,
            format!("replica type {key:?} appears twice (letter case is ignored)"),
        ));
    }
    Ok(rt)
}

/// The fields of a training-operator job (the whole rendered object) that have no meaning on
/// one machine, whether or not its replicas can run here: `validate` lists them beside the
/// fields that keep it from running.
pub fn training_job_ignored(job: &Value) -> Vec<String> {
    match replica_specs(job) {
        Some(_) => ignored_fields(job.get("spec")),
        None => Vec::new(),
    }
}

/// The job's fields that have no meaning on one machine, named for the trial's log.
fn ignored_fields(spec: Option<&Value>) -> Vec<String> {
    let run_policy = spec.and_then(|s| s.get("runPolicy"));
    let mut ignored: Vec<String> = [
        "ttlSecondsAfterFinished",
        "cleanPodPolicy",
        "schedulingPolicy",
    ]
    .into_iter()
    .filter(|f| run_policy.and_then(|r| r.get(f)).is_some())
    .map(|f| format!("spec.runPolicy.{f}"))
    .collect();
    if spec.and_then(|s| s.get("elasticPolicy")).is_some() {
        ignored.push("spec.elasticPolicy (the job runs with its fixed replica counts)".into());
    }
    if spec.and_then(|s| s.get("enableDynamicWorker")) == Some(&Value::Bool(true)) {
        ignored.push(
            "spec.enableDynamicWorker (TF_CONFIG is the dense cluster spec, not the operator's \
             sparseCluster one)"
                .into(),
        );
    }
    ignored
}

/// The operator's defaults for a replica of type `rt` that leaves them unset: its count and
/// restart policy. An MPIJob's Worker count defaults to 0 (the training operator's and the MPI
/// operator's `setDefaultsTypeWorker`), and the MPI operator's v2beta1 Launcher restarts
/// `OnFailure` (`DefaultLauncherRestartPolicy`); every other replica is one, restarted by its
/// kind's default.
fn replica_defaults(kind: JobKind, rt: ReplicaType, api_version: &str) -> (u32, RestartPolicy) {
    match (kind, rt) {
        (JobKind::MpiJob, ReplicaType::Worker) => (0, kind.default_restart_policy()),
        (JobKind::MpiJob, ReplicaType::Launcher) if api_version == "kubeflow.org/v2beta1" => {
            (1, RestartPolicy::OnFailure)
        }
        _ => (1, kind.default_restart_policy()),
    }
}

fn replica(
    kind: JobKind,
    rt: ReplicaType,
    api_version: &str,
    spec: &Value,
    path: &str,
    primary_container_name: &str,
    mode: Mode,
) -> Result<ReplicaSpec, SpecError> {
    let (default_replicas, default_restart) = replica_defaults(kind, rt, api_version);
    let replicas = match spec.get("replicas") {
        None | Some(Value::Null) => default_replicas,
        Some(v) => non_negative(v, &format!("{path}.replicas"))?,
    };
    let restart_policy = match spec.get("restartPolicy") {
        None | Some(Value::Null) => default_restart,
        Some(Value::String(s)) if s.is_empty() => default_restart,
        Some(v) => v.as_str().and_then(RestartPolicy::parse).ok_or_else(|| {
            SpecError::new(
                format!("{path}.restartPolicy"),
                format!(
                    "value {v} is not a restart policy; hint: use one of {}",
                    RestartPolicy::NAMES.join(", ")
                ),
            )
        })?,
    };
    let pod_path = format!("{path}.template.spec");
    let (names, chosen, container) =
        primary_container(kind, rt, spec, &pod_path, primary_container_name, mode)?;
    let pod_labels = spec
        .get("template")
        .and_then(|t| t.get("metadata"))
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default();
    Ok(ReplicaSpec {
        replica_type: rt,
        replicas,
        restart_policy,
        container,
        skipped_containers: names
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != chosen)
            .map(|(_, n)| n.clone())
            .collect(),
        pod_labels,
        pod_template: spec.get("template").cloned().unwrap_or(Value::Null),
        path: path.to_string(),
    })
}

/// The replica's container names, which one runs the training code (`primaryContainerName`,
/// else the kind's default name, else the only one), and that container as this machine
/// runs it (none for a cluster, or for an MPI worker without a command of its own).
fn primary_container(
    kind: JobKind,
    rt: ReplicaType,
    spec: &Value,
    pod_path: &str,
    primary_container_name: &str,
    mode: Mode,
) -> Result<(Vec<String>, usize, Option<ContainerSpec>), SpecError> {
    let containers = spec
        .get("template")
        .and_then(|t| t.get("spec"))
        .and_then(|s| s.get("containers"))
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty())
        .ok_or_else(|| {
            SpecError::new(
                format!("{pod_path}.containers"),
                format!(
                    "is required: each replica needs a container (the operator looks for one named {:?})",
                    kind.default_container()
                ),
            )
        })?;
    let names = container_names(containers);
    let chosen = chosen_container(kind, &names, primary_container_name).ok_or_else(|| {
            SpecError::new(
                format!("{pod_path}.containers"),
                format!(
                    "no container named {primary_container_name:?} or {:?} in replica {}; containers found: {}; hint: name the training container after primaryContainerName",
                    kind.default_container(),
                    rt.name(),
                    names.join(", ")
                ),
            )
        })?;
    let cpath = format!("{pod_path}.containers[{chosen}]");
    let c = &containers[chosen];
    let container = if mode == Mode::Cluster || mpirun_starts(kind, rt == ReplicaType::Worker, c) {
        None
    } else {
        Some(container_from(c, &names[chosen], &cpath)?)
    };
    Ok((names, chosen, container))
}

/// Each container's `name` (empty where it has none), in order.
fn container_names(containers: &[Value]) -> Vec<String> {
    containers
        .iter()
        .map(|c| {
            c.get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

/// Whether container `c` of a replica only hosts the ranks `mpirun` starts: an MPI worker
/// with no command of its own (on a cluster, often the image's sshd), which has no meaning on
/// one machine.
fn mpirun_starts(kind: JobKind, is_worker: bool, c: &Value) -> bool {
    let runs_nothing = ["command", "args"]
        .iter()
        .all(|f| c.get(f).and_then(Value::as_array).is_none_or(Vec::is_empty));
    kind == JobKind::MpiJob && is_worker && runs_nothing
}

/// Which of a replica's containers runs the training code: the one named
/// `primaryContainerName`, else the kind's default name, else the only one.
fn chosen_container(
    kind: JobKind,
    names: &[String],
    primary_container_name: &str,
) -> Option<usize> {
    names
        .iter()
        .position(|n| n == primary_container_name)
        .or_else(|| names.iter().position(|n| n == kind.default_container()))
        .or(if names.len() == 1 { Some(0) } else { None })
}

/// Everything that keeps local mode from running the container each replica runs
/// ([`super::local_blockers`]), every replica's, all at once; a replica whose container
/// cannot be chosen is left to [`replica_set`]'s error, and an MPI worker without a command
/// is started by `mpirun`, not run.
pub fn replica_local_blockers(spec: &Value, primary_container_name: &str) -> Vec<SpecError> {
    let Some((kind, specs)) = replica_specs(spec) else {
        return Vec::new();
    };
    let field = kind.replica_specs_field();
    let mut out = Vec::new();
    for (key, replica) in specs.into_iter().flatten() {
        let containers = replica
            .pointer("/template/spec/containers")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let names = container_names(containers);
        let Some(i) = chosen_container(kind, &names, primary_container_name) else {
            continue;
        };
        let c = &containers[i];
        if mpirun_starts(kind, key.eq_ignore_ascii_case("worker"), c) {
            continue;
        }
        let path = format!("{ROOT}.spec.{field}.{key}.template.spec.containers[{i}]");
        out.extend(super::local_blockers(c, &path));
    }
    out
}

/// The operator's validation of replica counts per kind.
fn check_counts(
    kind: JobKind,
    replicas: &[ReplicaSpec],
    specs_path: &str,
) -> Result<(), SpecError> {
    let counts = Counts {
        kind,
        replicas,
        specs_path,
    };
    match kind {
        JobKind::TfJob => counts.tf_job(),
        JobKind::PyTorchJob => counts.pytorch_job(),
        JobKind::XgBoostJob => counts.required_one(ReplicaType::Master),
        JobKind::MpiJob => counts.required_one(ReplicaType::Launcher),
    }
}

/// A job's replica counts, checked by the rules of its kind's operator.
struct Counts<'a> {
    kind: JobKind,
    replicas: &'a [ReplicaSpec],
    specs_path: &'a str,
}

impl Counts<'_> {
    fn count(&self, t: ReplicaType) -> Option<u32> {
        self.replicas
            .iter()
            .find(|r| r.replica_type == t)
            .map(|r| r.replicas)
    }

    fn at_most_one(&self, t: ReplicaType) -> Result<(), SpecError> {
        match self.count(t) {
            Some(n) if n > 1 => Err(SpecError::new(
                format!("{}.{}.replicas", self.specs_path, t.name()),
                format!(
                    "value {n} is more than 1; hint: a {} job has at most one {}",
                    self.kind.name(),
                    t.name()
                ),
            )),
            _ => Ok(()),
        }
    }

    fn required_one(&self, t: ReplicaType) -> Result<(), SpecError> {
        match self.count(t) {
            Some(1) => Ok(()),
            Some(n) => Err(SpecError::new(
                format!("{}.{}.replicas", self.specs_path, t.name()),
                format!(
                    "value {n} must be 1; hint: a {} job has exactly one {}",
                    self.kind.name(),
                    t.name()
                ),
            )),
            None => Err(SpecError::new(
                format!("{}.{}", self.specs_path, t.name()),
                format!(
                    "is required: a {} job needs one {} replica",
                    self.kind.name(),
                    t.name()
                ),
            )),
        }
    }

    fn tf_job(&self) -> Result<(), SpecError> {
        self.at_most_one(ReplicaType::Chief)?;
        self.at_most_one(ReplicaType::Master)?;
        if self.count(ReplicaType::Chief).is_some() && self.count(ReplicaType::Master).is_some() {
            return Err(SpecError::new(
                self.specs_path,
                "has both Chief and Master; hint: keep one of them",
            ));
        }
        let has_leader = [ReplicaType::Chief, ReplicaType::Master, ReplicaType::Worker]
            .iter()
            .any(|t| self.count(*t).is_some_and(|n| n > 0));
        if !has_leader {
            return Err(SpecError::new(
                self.specs_path,
                "has no Chief, Master or Worker replica, so nothing can decide the job's success; hint: add a Chief or a Worker",
            ));
        }
        Ok(())
    }

    fn pytorch_job(&self) -> Result<(), SpecError> {
        if self.count(ReplicaType::Master).is_some() {
            self.required_one(ReplicaType::Master)?;
        }
        if self.count(ReplicaType::Master).unwrap_or(0) == 0
            && self.count(ReplicaType::Worker).unwrap_or(0) == 0
        {
            return Err(SpecError::new(
                self.specs_path,
                "has no Master or Worker replica; hint: add a Master",
            ));
        }
        Ok(())
    }
}

fn non_negative(v: &Value, path: &str) -> Result<u32, SpecError> {
    v.as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| {
            SpecError::new(
                path,
                format!("value {v} is not a non-negative whole number"),
            )
        })
}
