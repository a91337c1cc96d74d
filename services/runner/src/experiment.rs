//! What the local driver needs from an Experiment spec, derived once: search space, objective,
//! limits, algorithm, metrics collection, and how to turn an assignment into a command line.

use crate::error::RunnerError;
use crate::process::{Collection, MetricSource, TrialCommand};
use std::path::{Path, PathBuf};
use vernier_collector::MetricsFilter;
use vernier_core::{Objective, SearchSpace};
use vernier_spec::plan::Limits;
use vernier_spec::{Experiment, SpecError, SpecErrors};

/// Where a local experiment runs and keeps its trial logs.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalPaths {
    /// Trial processes start here: the experiment file's directory.
    pub work_dir: PathBuf,
    /// `<trial>.log` files go here.
    pub log_dir: PathBuf,
}

/// An experiment ready to run locally.
#[derive(Debug, Clone)]
pub struct LocalExperiment {
    pub spec: Experiment,
    pub name: String,
    pub space: SearchSpace,
    pub objective: Objective,
    pub limits: Limits,
    pub algorithm: String,
    pub settings: Vec<(String, String)>,
    pub collection: Collection,
    pub paths: LocalPaths,
    /// The File collector's path as written in the spec (absolute, e.g.
    /// `/var/log/katib/metrics.log`); each trial gets its own copy under its log directory.
    pub metrics_file: Option<String>,
}

/// Metrics collector kinds the local runner reads today.
const LOCAL_COLLECTORS: &[&str] = &["StdOut", "File"];

/// Environment variable telling a trial where its metrics file is (File collector).
pub const METRICS_FILE_ENV: &str = "VERNIER_METRICS_FILE";

impl LocalExperiment {
    /// Derives everything from a parsed, defaulted and validated experiment.
    pub fn new(spec: Experiment, paths: LocalPaths) -> Result<Self, RunnerError> {
        let space = spec.search_space()?;
        let objective = spec.objective()?;
        let s = &spec.spec;
        let limits = Limits {
            parallel: s.parallel_trial_count.unwrap_or(3).max(1) as u32,
            max_trials: s.max_trial_count.map(|v| v.max(0) as u32),
            max_failed: s.max_failed_trial_count.map(|v| v.max(0) as u32),
        };
        let algorithm = s
            .algorithm
            .as_ref()
            .and_then(|a| a.algorithm_name.clone())
            .unwrap_or_else(|| "random".to_string());
        let settings: Vec<(String, String)> = s
            .algorithm
            .as_ref()
            .map(|a| {
                a.algorithm_settings
                    .iter()
                    .map(|x| (x.name.clone(), x.value.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let collector = s.metrics_collector_spec.as_ref();
        let kind = collector
            .and_then(|m| m.collector.as_ref())
            .and_then(|c| c.kind.clone())
            .unwrap_or_else(|| "StdOut".to_string());
        if !LOCAL_COLLECTORS.contains(&kind.as_str()) {
            return Err(SpecErrors(vec![SpecError::new(
                "spec.metricsCollectorSpec.collector.kind",
                format!(
                    "collector kind {kind:?} cannot run locally yet\nhint: local runs read metrics from the trial's output (kind StdOut) or a file it writes (kind File)"
                ),
            )])
            .into());
        }
        let formats: Vec<String> = collector
            .and_then(|m| m.source.as_ref())
            .and_then(|src| src.filter.as_ref())
            .map(|f| f.metrics_format.clone())
            .unwrap_or_default();
        let filter = MetricsFilter::from_formats(&formats)?;
        let file_source = collector
            .and_then(|m| m.source.as_ref())
            .and_then(|src| src.file_system_path.as_ref());
        let (source, metrics_file) = if kind == "File" {
            let json = file_source
                .and_then(|f| f.format.as_deref())
                .is_some_and(|f| f.eq_ignore_ascii_case("JSON"));
            let path = file_source
                .and_then(|f| f.path.clone())
                .unwrap_or_else(|| vernier_spec::known::DEFAULT_METRICS_FILE.to_string());
            let source = if json {
                MetricSource::JsonFile
            } else {
                MetricSource::TextFile
            };
            (source, Some(path))
        } else {
            (MetricSource::Output, None)
        };
        Ok(LocalExperiment {
            name: spec.name().to_string(),
            collection: Collection {
                filter,
                metrics: objective.metric_names(),
                source,
            },
            metrics_file,
            spec,
            space,
            objective,
            limits,
            algorithm,
            settings,
            paths,
        })
    }

    /// Renders the trial template for one assignment into the command to run.
    pub fn command_for(
        &self,
        trial: &str,
        assignment: &[(String, String)],
    ) -> Result<TrialCommand, RunnerError> {
        let wrap = |source: SpecError| RunnerError::Template {
            trial: trial.to_string(),
            source,
        };
        let rendered =
            vernier_spec::render_trial_spec(&self.spec, trial, assignment).map_err(wrap)?;
        let primary = self
            .spec
            .spec
            .trial_template
            .as_ref()
            .and_then(|t| t.primary_container_name.clone())
            .unwrap_or_default();
        let container = vernier_spec::primary_container(&rendered, &primary).map_err(wrap)?;
        let mut argv: Vec<String> = container
            .command
            .into_iter()
            .chain(container.args)
            .collect();
        if argv.is_empty() {
            return Err(wrap(SpecError::new(
                "spec.trialTemplate.trialSpec",
                format!("container {primary:?} has no command or args to run locally"),
            )));
        }
        let mut env = container.env;
        let metrics_file = match &self.metrics_file {
            Some(spec_path) => {
                let local = self.local_metrics_file(trial, spec_path);
                let local_text = local.display().to_string();
                // The same YAML must work on a laptop: wherever the spec's absolute path appears
                // in the command or environment, the trial's own copy is used instead.
                for arg in argv.iter_mut() {
                    *arg = arg.replace(spec_path.as_str(), &local_text);
                }
                for (_, value) in env.iter_mut() {
                    *value = value.replace(spec_path.as_str(), &local_text);
                }
                env.push((METRICS_FILE_ENV.to_string(), local_text));
                Some(local)
            }
            None => None,
        };
        let program = argv.remove(0);
        Ok(TrialCommand {
            trial: trial.to_string(),
            program,
            args: argv,
            env,
            work_dir: self.paths.work_dir.clone(),
            log_path: self.log_path(trial),
            metrics_file,
        })
    }

    /// The File collector's absolute spec path, mapped under the trial's own directory:
    /// `/var/log/katib/metrics.log` becomes `<log dir>/<trial>/var/log/katib/metrics.log`.
    pub fn local_metrics_file(&self, trial: &str, spec_path: &str) -> PathBuf {
        self.paths
            .log_dir
            .join(trial)
            .join(spec_path.trim_start_matches('/'))
    }

    pub fn log_path(&self, trial: &str) -> PathBuf {
        self.paths.log_dir.join(format!("{trial}.log"))
    }
}

/// The directory a trial runs in: the experiment file's directory (or `.` for a bare name).
pub fn work_dir_of(experiment_file: &Path) -> PathBuf {
    let dir = experiment_file.parent().unwrap_or_else(|| Path::new("."));
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())
}
