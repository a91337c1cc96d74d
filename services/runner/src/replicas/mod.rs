//! Distributed trials on one machine: a TFJob, PyTorchJob, XGBoostJob or MPIJob trial template
//! runs as one local process group per replica, with the environment, restart rules and
//! success rule of the Kubeflow training operator. Any other kind runs as a single process.

pub mod env;
pub mod launch;
pub mod policy;
pub mod resources;
pub mod supervise;

use crate::batch_job::JobControls;
use crate::error::RunnerError;
use crate::experiment::LocalExperiment;
use crate::process::{Collection, ProcessReport, StopLevel, TrialCommand};
use std::sync::OnceLock;
use tokio::sync::watch;
use vernier_store::SqlStore;

pub use launch::{ReplicaJob, ReplicaProcess};

/// What runs for one trial.
#[derive(Debug, Clone)]
pub enum TrialLaunch {
    /// The primary container as one process (a Job or any other kind), with a batch Job's
    /// retries and deadline.
    Process(TrialCommand, JobControls),
    /// Every replica of a training-operator job.
    Replicas(ReplicaJob),
}

/// This machine's GPUs, looked up once per run.
fn machine_gpus() -> &'static [String] {
    static GPUS: OnceLock<Vec<String>> = OnceLock::new();
    GPUS.get_or_init(resources::detect_gpus)
}

impl LocalExperiment {
    /// Renders the trial template for one assignment into what to run.
    pub fn launch_for(
        &self,
        trial: &str,
        assignment: &[(String, String)],
    ) -> Result<TrialLaunch, RunnerError> {
        let rendered = self.render(trial, assignment)?;
        match launch::replica_set_of(self, trial, &rendered)? {
            Some(set) => Ok(TrialLaunch::Replicas(launch::build_job(
                self,
                trial,
                &set,
                machine_gpus(),
            )?)),
            None => {
                let mut cmd = self.command_for(trial, assignment)?;
                let wanted = self.gpus_wanted(&rendered);
                let given =
                    resources::GpuAssigner::new(machine_gpus().to_vec()).assign(trial, wanted);
                resources::show_devices(&mut cmd.env, given.visible);
                Ok(TrialLaunch::Process(
                    cmd,
                    JobControls::of(&rendered, &self.primary_container_name()),
                ))
            }
        }
    }

    /// How many GPUs the primary container of a single-process trial asks for.
    fn gpus_wanted(&self, spec: &serde_json::Value) -> u32 {
        let container = vernier_spec::primary_container(spec, &self.primary_container_name());
        let resources = container.ok().and_then(|c| c.resources);
        resources::gpus_requested(&resources::requested(resources.as_ref()))
    }
}

/// Runs a trial launched by [`LocalExperiment::launch_for`] until it ends or is stopped.
pub async fn run_trial(
    launch: TrialLaunch,
    collection: Collection,
    store: SqlStore,
    stop: watch::Receiver<StopLevel>,
) -> ProcessReport {
    match launch {
        TrialLaunch::Process(cmd, controls) => {
            crate::batch_job::run_job(cmd, controls, collection, store, stop).await
        }
        TrialLaunch::Replicas(job) => supervise::run_job(job, collection, store, stop).await,
    }
}

/// Warnings worth showing once, before the first trial: GPU requests this machine cannot
/// honour. Placeholders in resource fields are read as written.
pub fn experiment_notes(exp: &LocalExperiment) -> Vec<String> {
    let Some(spec) = exp
        .spec
        .spec
        .trial_template
        .as_ref()
        .and_then(|t| t.trial_spec.as_ref())
    else {
        return Vec::new();
    };
    let (kind, wanted) =
        match vernier_spec::template::replica_set(spec, &exp.primary_container_name()) {
            Ok(Some(set)) => {
                let wanted = set.replicas.iter().filter_map(|r| {
                    let req = resources::requested(r.container.as_ref()?.resources.as_ref());
                    let n = resources::gpus_requested(&req);
                    (n > 0).then(|| format!("{} × {} GPU(s)", r.replica_type.name(), n))
                });
                (set.kind.name().to_string(), wanted.collect::<Vec<_>>())
            }
            Ok(None) => {
                let kind = spec
                    .get("kind")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("trial");
                let n = exp.gpus_wanted(spec);
                let wanted = (n > 0).then(|| format!("{n} GPU(s)"));
                (kind.to_string(), wanted.into_iter().collect())
            }
            Err(_) => return Vec::new(),
        };
    if wanted.is_empty() {
        return Vec::new();
    }
    let gpus = machine_gpus();
    if gpus.is_empty() {
        vec![format!(
            "the {kind} template requests GPUs ({}) but this machine has none (nvidia-smi -L lists no GPU): the requests cannot be honoured locally and the trials run without a GPU",
            wanted.join(", ")
        )]
    } else {
        vec![format!(
            "the {kind} template requests GPUs ({}); this machine has {} ({}), handed to each trial's processes through CUDA_VISIBLE_DEVICES; trials running in parallel may share them",
            wanted.join(", "),
            gpus.len(),
            gpus.join(",")
        )]
    }
}
