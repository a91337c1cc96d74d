//! The simulated training operator: plays kube's Job controller and Kubeflow's training
//! operator (plus the kubelet) against a [`KubeDouble`].
//!
//! For every `batch/v1` Job and `kubeflow.org/v1` TFJob, PyTorchJob, XGBoostJob and MPIJob
//! created in the double it
//! * creates the pods the real controller would, owned by the job (controller reference):
//!   batch Jobs get `<job>-<5 random chars>` with labels `job-name`,
//!   `batch.kubernetes.io/job-name`, `controller-uid`, `batch.kubernetes.io/controller-uid`;
//!   Kubeflow kinds get `<job>-<replica type>-<index>` per replica with
//!   `training.kubeflow.org/job-name`, `.../operator-name`, `.../replica-type` (lowercase),
//!   `.../replica-index`, and `training.kubeflow.org/job-role: master` on the primary pod
//!   (TFJob: Chief or Master, else Worker 0; PyTorchJob/XGBoostJob: Master, else Worker 0;
//!   MPIJob: Launcher) — Katib's default `primaryPodLabels`;
//! * runs the primary pod's training container (the kind's default container name
//!   `tensorflow`/`pytorch`/`xgboost`/`mpi` if present, else the first container) as a local
//!   process with the container's `command` + `args` and `env` (see [`process`]); its output
//!   is the pod log served at `pods/{name}/log`. Other containers and non-primary replicas are
//!   not executed (unless [`SimulationOptions::run_all_replicas`]): their pods run while the
//!   primary runs and end as it ends, with empty logs;
//! * with [`SimulationOptions::run_sidecars`], also runs an executed pod's native sidecars
//!   (`initContainers` with `restartPolicy: Always`) as local processes: started before the
//!   training container, sent SIGTERM after it exits, the pod ending once they have exited;
//!   their output is the log of their container name. Each `emptyDir` volume becomes a
//!   private temp directory substituted for its mount path in the containers' command, args
//!   and env values ([`volumes`]). A sidecar that cannot start fails the pod (a kubelet
//!   would retry forever); one that exits early is not restarted;
//! * moves pods Pending → Running → Succeeded/Failed with container states and exit codes,
//!   and the job's status as the real controller does: batch Jobs `active`/`ready`/
//!   `succeeded`/`failed`, then `SuccessCriteriaMet` + `Complete` (reason
//!   `CompletionsReached`) or `FailureTarget` + `Failed` (reason `BackoffLimitExceeded`) after
//!   `backoffLimit` (default 6) retries, each in a new pod; Kubeflow kinds `Created`, `Running`
//!   and `Succeeded` or `Failed` (reasons `<Kind>Created`, `<Kind>Running`, `<Kind>Succeeded`,
//!   `<Kind>Failed`; Running flips to False at the end), `replicaStatuses`, `startTime`,
//!   `completionTime`;
//! * deletes a finished batch Job `spec.ttlSecondsAfterFinished` seconds after its end, as
//!   the TTL-after-finished controller does;
//! * stops the job's processes when the job is deleted (or gets a `deletionTimestamp`).
//!
//! Tests choose what a job does with [`Outcome`]: run the command (default), fail without
//! running, or hang in Running until deleted — for all jobs or per job
//! ([`SimulationOptions::per_job`]).
//!
//! Not simulated: `restartPolicy: OnFailure` restarts in place (every retry is a new pod),
//! `parallelism` > 1, a Job's `activeDeadlineSeconds` (a trial runs on past it), Kubeflow
//! `runPolicy` (backoff, TTL, suspend, deadline), elastic PyTorch, gang
//! scheduling, images (only `command` runs; a container without one fails with
//! `ContainerCannotRun`).

mod crds;
mod kinds;
pub mod process;
mod runner;
pub mod volumes;

pub use kinds::JobKind;

use crate::KubeDouble;
use crate::error::DoubleError;
use futures_util::StreamExt;
use kube::api::{Api, DynamicObject};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// What a simulated job does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Run the primary container's command; its exit code decides.
    Run,
    /// Do not run anything: the primary container writes `message` to its log and exits with
    /// `exit_code` (non-zero).
    Fail {
        /// Exit code of the primary container.
        exit_code: i32,
        /// Line written to the pod log.
        message: String,
    },
    /// Stay Running, with an empty log, until the job is deleted.
    Hang,
}

/// The job a [`SimulationOptions::per_job`] decision is about.
#[derive(Debug)]
pub struct JobRef<'a> {
    /// `Job`, `TFJob`, `PyTorchJob`, `XGBoostJob` or `MPIJob`.
    pub kind: &'static str,
    /// Namespace of the job.
    pub namespace: &'a str,
    /// Name of the job.
    pub name: &'a str,
    /// The whole job object.
    pub object: &'a Value,
}

/// Decides a job's outcome; `None` falls back to [`SimulationOptions::default_outcome`].
pub type OutcomeRule = Arc<dyn Fn(&JobRef<'_>) -> Option<Outcome> + Send + Sync>;

/// How the simulated operator behaves.
#[derive(Clone)]
pub struct SimulationOptions {
    /// Outcome of every job the rule does not decide.
    pub default_outcome: Outcome,
    /// Per-job outcome, e.g. fail jobs whose args contain `--lr=0.9`.
    pub per_job: Option<OutcomeRule>,
    /// Also run the commands of non-primary replicas (workers, parameter servers).
    pub run_all_replicas: bool,
    /// Keep pods Running at least this long, so a watcher sees the Running state even for
    /// instant programs.
    pub min_running: Duration,
    /// Create the Kubeflow CRDs on spawn (as installing the training operator does).
    pub install_crds: bool,
    /// Also run the executed pods' native sidecars (`initContainers` with `restartPolicy:
    /// Always`), with each `emptyDir` volume a private directory (see [`volumes`]).
    pub run_sidecars: bool,
    /// Directories searched first for a container command without a `/` (the binaries an
    /// image would provide, e.g. the `vernier` under test); then the test process's `PATH`.
    pub program_dirs: Vec<std::path::PathBuf>,
}

impl Default for SimulationOptions {
    fn default() -> Self {
        SimulationOptions {
            default_outcome: Outcome::Run,
            per_job: None,
            run_all_replicas: false,
            min_running: Duration::ZERO,
            install_crds: true,
            run_sidecars: false,
            program_dirs: Vec::new(),
        }
    }
}

impl std::fmt::Debug for SimulationOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimulationOptions")
            .field("default_outcome", &self.default_outcome)
            .field("per_job", &self.per_job.as_ref().map(|_| "<rule>"))
            .field("run_all_replicas", &self.run_all_replicas)
            .field("min_running", &self.min_running)
            .field("install_crds", &self.install_crds)
            .field("run_sidecars", &self.run_sidecars)
            .field("program_dirs", &self.program_dirs)
            .finish()
    }
}

impl SimulationOptions {
    fn outcome_for(&self, job: &JobRef<'_>) -> Outcome {
        self.per_job
            .as_ref()
            .and_then(|rule| rule(job))
            .unwrap_or_else(|| self.default_outcome.clone())
    }
}

/// The running simulation; stop it with [`SimulatedTrainingOperator::shutdown`] (dropping
/// it stops it too).
#[derive(Debug)]
pub struct SimulatedTrainingOperator {
    shutdown: tokio::sync::watch::Sender<bool>,
    watchers: Vec<tokio::task::JoinHandle<()>>,
}

impl SimulatedTrainingOperator {
    /// Install the Kubeflow CRDs (unless disabled) and start watching every job kind.
    pub async fn spawn(
        double: &KubeDouble,
        options: SimulationOptions,
    ) -> Result<Self, DoubleError> {
        let client = double.client()?;
        if options.install_crds {
            crds::install(&client).await?;
        }
        let (shutdown, shutdown_rx) = tokio::sync::watch::channel(false);
        let options = Arc::new(options);
        let watchers = JobKind::ALL
            .into_iter()
            .map(|kind| {
                let context = runner::Context {
                    client: client.clone(),
                    kind,
                    logs: double.pod_logs(),
                    options: options.clone(),
                };
                tokio::spawn(watch_kind(context, shutdown_rx.clone()))
            })
            .collect();
        Ok(SimulatedTrainingOperator { shutdown, watchers })
    }

    /// Stop watching and kill every running job process.
    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        for watcher in self.watchers.drain(..) {
            let _ = watcher.await;
        }
    }
}

impl Drop for SimulatedTrainingOperator {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
    }
}

fn is_finished(kind: JobKind, job: &Value) -> bool {
    let terminal: &[&str] = match kind {
        JobKind::BatchJob => &["Complete", "Failed"],
        _ => &["Succeeded", "Failed"],
    };
    job.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c["status"] == "True" && terminal.iter().any(|t| c["type"] == *t))
        })
}

async fn watch_kind(context: runner::Context, mut shutdown: tokio::sync::watch::Receiver<bool>) {
    let api: Api<DynamicObject> =
        Api::all_with(context.client.clone(), &context.kind.api_resource());
    let mut events = watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut jobs: HashMap<String, tokio::task::JoinHandle<()>> = HashMap::new();
    loop {
        let event = tokio::select! {
            event = events.next() => event,
            _ = shutdown.wait_for(|s| *s) => break,
        };
        let Some(event) = event else { break };
        match event {
            Ok(Event::Apply(job) | Event::InitApply(job)) => {
                let Ok(object) = serde_json::to_value(&job) else {
                    continue;
                };
                let uid = job.metadata.uid.clone().unwrap_or_default();
                if job.metadata.deletion_timestamp.is_some() {
                    if let Some(task) = jobs.get(&uid) {
                        task.abort();
                    }
                } else if !jobs.contains_key(&uid) && !is_finished(context.kind, &object) {
                    let task = tokio::spawn(runner::run_job(context.clone(), object));
                    jobs.insert(uid, task);
                }
            }
            Ok(Event::Delete(job)) => {
                if let Some(task) = jobs.get(&job.metadata.uid.clone().unwrap_or_default()) {
                    task.abort();
                }
            }
            Ok(Event::Init | Event::InitDone) => {}
            Err(e) => tracing::debug!("simulated {} watcher: {e}", context.kind.kind()),
        }
    }
    for task in jobs.values() {
        task.abort();
    }
}
