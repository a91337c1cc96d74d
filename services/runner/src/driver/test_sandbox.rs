//! A recorded one-parameter experiment in a temporary folder with its own SQLite database and
//! lease, for the driver's in-crate tests that run it to its end.

#![allow(clippy::unwrap_used)]

use super::{DriverEvent, Observer, Progress};
use crate::experiment::{LocalExperiment, LocalPaths};
use crate::lease::ExperimentLease;
use vernier_store::{SqlStore, StoreOptions};

/// The experiment `name` of `max` trials, `parallel` at a time: each runs `sh -c script`
/// with `${trialParameters.x}` (a double in 0..5) and reports `loss`.
pub(super) fn experiment_yaml(name: &str, max: u32, parallel: u32, script: &str) -> String {
    experiment_yaml_with(name, (max, parallel), "", script)
}

/// [`experiment_yaml`] with `extra`, lines of `spec` (two-space indented), added.
pub(super) fn experiment_yaml_with(
    name: &str,
    (max, parallel): (u32, u32),
    extra: &str,
    script: &str,
) -> String {
    format!(
        r#"
apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: {name}
spec:
  maxTrialCount: {max}
  parallelTrialCount: {parallel}
{extra}  objective:
    type: minimize
    objectiveMetricName: loss
  algorithm:
    algorithmName: random
  parameters:
    - name: x
      parameterType: double
      feasibleSpace: {{min: "0", max: "5"}}
  trialTemplate:
    primaryContainerName: main
    trialParameters:
      - name: x
        reference: x
    trialSpec:
      apiVersion: batch/v1
      kind: Job
      spec:
        template:
          spec:
            restartPolicy: Never
            containers:
              - name: main
                image: none
                command: ["sh", "-c", "{script}"]
"#
    )
}

pub(super) struct Sandbox {
    _dir: tempfile::TempDir,
    pub url: String,
    pub store: SqlStore,
    pub exp: LocalExperiment,
    pub lease: ExperimentLease,
}

impl Sandbox {
    /// Records the experiment `yaml` in a new database opened with `options`, and takes its
    /// lease.
    pub async fn new(yaml: &str, options: StoreOptions) -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("v.db").display());
        let store = SqlStore::connect_with(&url, options).await.unwrap();
        let spec = vernier_spec::parse_experiment(yaml).unwrap();
        let paths = LocalPaths {
            work_dir: dir.path().to_path_buf(),
            log_dir: dir.path().join("logs"),
        };
        let exp = LocalExperiment::new(spec, paths).unwrap();
        exp.create_log_dir().unwrap();
        super::create_experiment(&store, &exp, 1).await.unwrap();
        let lease = ExperimentLease::acquire(&store, &exp.name).await.unwrap();
        Sandbox {
            _dir: dir,
            url,
            store,
            exp,
            lease,
        }
    }
}

/// Keeps the warnings the driver gives.
#[derive(Default)]
pub(super) struct Warnings(pub Vec<String>);

impl Observer for Warnings {
    fn on_event(&mut self, event: &DriverEvent, _: &Progress) {
        if let DriverEvent::Warning(w) = event {
            self.0.push(w.clone());
        }
    }
}
