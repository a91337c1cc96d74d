//! The local experiment: the engine's resolved experiment plus what running it on this machine
//! adds (where trials start and log, how their metrics are read, and how an assignment becomes
//! a command line).

use crate::child::{map_spec_ancestor, map_spec_path, trim_dir_slash};
use crate::custom::CustomCollector;
use crate::error::RunnerError;
use crate::process::{Collection, MetricSource, TrialCommand};
use crate::volumes::{CollectorPath, moved, moved_mounts};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use vernier_collector::MetricsFilter;
use vernier_engine::{Collector, PrometheusPort, ResolvedExperiment};
use vernier_spec::template::downward_api::{NodeFacts, PodFacts};
use vernier_spec::template::mounts::volume_mounts;
use vernier_spec::{Experiment, SpecError, SpecErrors};

/// Where a local experiment runs and keeps its trial logs.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalPaths {
    /// Trial processes start here: the experiment file's directory.
    pub work_dir: PathBuf,
    /// `<trial>.log` files go here.
    pub log_dir: PathBuf,
}

/// An experiment ready to run locally. It reads as its [`ResolvedExperiment`] (`exp.space`,
/// `exp.objective`, ...) plus the local parts.
#[derive(Debug, Clone)]
pub struct LocalExperiment {
    pub resolved: ResolvedExperiment,
    pub collection: Collection,
    pub paths: LocalPaths,
    /// The File or TensorFlowEvent collector's path as written in the spec (absolute, e.g.
    /// `/var/log/katib/metrics.log` or `/var/log/katib/tfevent/`); each trial gets its own copy
    /// under its log directory.
    pub metrics_path: Option<String>,
    /// This machine as the trials' node, for their downward-API variables.
    pub node: NodeFacts,
}

impl Deref for LocalExperiment {
    type Target = ResolvedExperiment;

    fn deref(&self) -> &ResolvedExperiment {
        &self.resolved
    }
}

/// Environment variable telling a trial where its metrics file is (File collector).
pub const METRICS_FILE_ENV: &str = "VERNIER_METRICS_FILE";

/// Environment variable telling a trial where to write its event files (TensorFlowEvent).
pub const METRICS_DIR_ENV: &str = "VERNIER_METRICS_DIR";

impl LocalExperiment {
    /// Derives everything from a parsed, defaulted and validated experiment.
    pub fn new(spec: Experiment, paths: LocalPaths) -> Result<Self, RunnerError> {
        Self::from_resolved(ResolvedExperiment::new(spec)?, paths)
    }

    /// Adds the local parts to a resolved experiment; refuses collectors that cannot run here.
    pub fn from_resolved(
        resolved: ResolvedExperiment,
        paths: LocalPaths,
    ) -> Result<Self, RunnerError> {
        let filter = MetricsFilter::from_formats(&resolved.metrics_formats)?;
        let source = metric_source(&resolved.collector)?;
        Ok(LocalExperiment {
            collection: Collection {
                filter,
                metrics: resolved.objective.metric_names(),
                source,
                recorded: None,
            },
            metrics_path: resolved.collector.spec_path().map(str::to_string),
            node: crate::pod::this_node(&paths.work_dir),
            resolved,
            paths,
        })
    }

    /// Renders the trial template for one assignment into the command to run.
    pub fn command_for(
        &self,
        trial: &str,
        assignment: &[(String, String)],
    ) -> Result<TrialCommand, RunnerError> {
        let rendered = self.render(trial, assignment)?;
        let primary = self.primary_container_name();
        let mut container = vernier_spec::primary_container(&rendered, &primary)
            .map_err(|source| template_error(trial, source))?;
        let pod = crate::pod::trial_pod(
            &rendered,
            &primary,
            trial,
            self.spec.namespace(),
            &self.node,
        );
        container.for_pod(&pod);
        container.append_env(crate::pod::completion_index(&rendered));
        self.as_katib_runs_it(&mut container);
        self.container_command(trial, trial, container, pod, self.log_path(trial))
    }

    /// The primary container's words as the shell Katib's webhook adds reads them (the
    /// StdOut, File and TensorFlowEvent collectors).
    pub(crate) fn as_katib_runs_it(&self, container: &mut vernier_spec::ContainerSpec) {
        if self.resolved.collector.runs_command_as_shell_line() {
            container.unquote_as_katibs_shell();
        }
    }

    /// The primary container's `workingDir` when this machine has no such directory, so the
    /// trials run in the experiment's directory instead (a path inside the image).
    pub fn missing_working_dir(
        &self,
        trial: &str,
        assignment: &[(String, String)],
    ) -> Option<String> {
        let rendered = self.render(trial, assignment).ok()?;
        let primary = self.primary_container_name();
        let container = vernier_spec::primary_container(&rendered, &primary).ok()?;
        let wanted = container.working_dir.clone().filter(|w| !w.is_empty())?;
        let pod = vernier_spec::template::pod_template_of(&rendered, &primary);
        let volumes = pod.and_then(|p| p.pointer("/spec/volumes"));
        let missing = self.working_dir_missing(&wanted, &container, volumes);
        missing.then_some(wanted)
    }

    /// Whether this machine lacks `wanted`, the `workingDir` of `container` in a pod with
    /// `volumes`; one inside a mount local mode moves is the trial's own, made for it.
    fn working_dir_missing(
        &self,
        wanted: &str,
        container: &vernier_spec::ContainerSpec,
        volumes: Option<&serde_json::Value>,
    ) -> bool {
        let mounts = volume_mounts(
            container.volume_mounts.as_ref(),
            volumes.unwrap_or_default(),
        );
        let in_mount = mounts.iter().any(|m| {
            m.is_mapped() && Path::new(wanted).starts_with(m.mount_path.trim_end_matches('/'))
        });
        let here = local_working_dir(Some(wanted), &self.paths.work_dir, Path::is_dir);
        here.is_none() && !in_mount
    }

    /// Each replica type of a training-operator trial whose container's `workingDir` this
    /// machine does not have (replicas start in the experiment's directory instead), with
    /// that directory; empty for other kinds.
    pub fn missing_replica_working_dirs(
        &self,
        trial: &str,
        assignment: &[(String, String)],
    ) -> Vec<(String, String)> {
        let Ok(rendered) = self.render(trial, assignment) else {
            return Vec::new();
        };
        let primary = self.primary_container_name();
        let Ok(Some(set)) = vernier_spec::template::replica_set(&rendered, &primary) else {
            return Vec::new();
        };
        let mut missing = Vec::new();
        for r in &set.replicas {
            let Some(c) = &r.container else { continue };
            let Some(wanted) = c.working_dir.as_deref().filter(|w| !w.is_empty()) else {
                continue;
            };
            let volumes = r.pod_template.pointer("/spec/volumes");
            if self.working_dir_missing(wanted, c, volumes) {
                missing.push((r.replica_type.name().to_string(), wanted.to_string()));
            }
        }
        missing
    }

    /// The trial spec with this trial's values substituted.
    pub(crate) fn render(
        &self,
        trial: &str,
        assignment: &[(String, String)],
    ) -> Result<serde_json::Value, RunnerError> {
        vernier_spec::render_trial_spec(&self.spec, trial, assignment)
            .map_err(|source| template_error(trial, source))
    }

    /// `spec.trialTemplate.primaryContainerName` (empty when unset).
    pub(crate) fn primary_container_name(&self) -> String {
        self.spec
            .spec
            .trial_template
            .as_ref()
            .and_then(|t| t.primary_container_name.clone())
            .unwrap_or_default()
    }

    /// The command for one rendered container. `metrics_key` names the directory under the log
    /// directory that holds its copy of the collector's path (the trial, or `trial/replica`).
    pub(crate) fn container_command(
        &self,
        trial: &str,
        metrics_key: &str,
        container: vernier_spec::ContainerSpec,
        pod: PodFacts,
        log_path: PathBuf,
    ) -> Result<TrialCommand, RunnerError> {
        let primary = container.name.clone();
        let mounts = volume_mounts(container.volume_mounts.as_ref(), &pod.volumes);
        let private = self.paths.log_dir.join(metrics_key).join("volumes");
        let local_root = self.local_metrics_path(metrics_key, "");
        let collector = self.metrics_path.as_deref().map(|spec_path| CollectorPath {
            spec_path,
            local_root: &local_root,
        });
        let mut moved_to = moved_mounts(&mounts, &private, collector.as_ref());
        let mounts = &moved_to.paths;
        let written_dir = container.working_dir.as_deref();
        let container_dir = written_dir.map(|d| moved(d, mounts));
        // A workingDir inside a moved mount is the trial's own: made when it starts, as the
        // container runtime makes a missing workingDir.
        let own_dir = container_dir
            .clone()
            .filter(|d| Some(d.as_str()) != written_dir);
        let program_list = if container.command.is_empty() {
            "args"
        } else {
            "command"
        };
        let command_field = format!("{}.{program_list}", container.path);
        let wrap = |source: SpecError| template_error(trial, source);
        let mut argv: Vec<String> = container
            .command
            .iter()
            .chain(&container.args)
            .map(|word| moved(word, mounts))
            .collect();
        if argv.is_empty() {
            return Err(wrap(SpecError::new(
                "spec.trialTemplate.trialSpec",
                format!("container {primary:?} has no command or args to run locally"),
            )));
        }
        let mut env: Vec<(String, String)> = container
            .env
            .into_iter()
            .map(|(k, v)| (k, moved(&v, mounts)))
            .collect();
        let metrics_path = self.point_at_own_metrics(metrics_key, &mut argv, &mut env);
        let program = argv.remove(0);
        Ok(TrialCommand {
            trial: trial.to_string(),
            program,
            args: argv,
            command_field,
            env,
            work_dir: match &own_dir {
                Some(dir) => PathBuf::from(dir),
                None => {
                    trial_work_dir(container_dir.as_deref(), &self.paths.work_dir, Path::is_dir)
                }
            },
            log_path,
            metrics_path,
            append_log: false,
            pid_file: Some(crate::orphans::pid_path(&self.paths.log_dir, trial)),
            pod: Box::new(pod),
            volume_dirs: {
                moved_to.private_dirs.extend(own_dir.map(PathBuf::from));
                moved_to.private_dirs
            },
        })
    }

    /// The trial's own copy of the collector's path, when the spec names one. The same YAML
    /// must work on a laptop: wherever the spec's absolute path appears in `argv` or `env`, the
    /// copy is put instead, and `env` gains the variable naming it.
    fn point_at_own_metrics(
        &self,
        metrics_key: &str,
        argv: &mut [String],
        env: &mut Vec<(String, String)>,
    ) -> Option<PathBuf> {
        let spec_path = self.metrics_path.as_deref()?;
        let local = self.local_metrics_path(metrics_key, spec_path);
        let to = local.display().to_string();
        let root = self.local_metrics_path(metrics_key, "");
        let map =
            |text: &str| map_spec_ancestor(&map_spec_path(text, spec_path, &to), spec_path, &root);
        for arg in argv.iter_mut() {
            *arg = map(arg);
        }
        for (_, value) in env.iter_mut() {
            *value = map(value);
        }
        let var = if self.collection.source.path_is_dir() {
            METRICS_DIR_ENV
        } else {
            METRICS_FILE_ENV
        };
        env.push((var.to_string(), trim_dir_slash(&to).to_string()));
        Some(local)
    }

    /// The File or TensorFlowEvent collector's absolute spec path, mapped under the trial's
    /// own directory: `/var/log/katib/metrics.log` becomes
    /// `<log dir>/<trial>/var/log/katib/metrics.log`.
    pub fn local_metrics_path(&self, trial: &str, spec_path: &str) -> PathBuf {
        self.paths
            .log_dir
            .join(trial)
            .join(spec_path.trim_start_matches('/'))
    }

    pub fn log_path(&self, trial: &str) -> PathBuf {
        let [log, ..] = trial_files(&self.paths.log_dir, trial);
        log
    }

    /// Empties what a trial of this name may find under the log directory before it first
    /// starts: a deleted experiment of the same name and seed had trials of the same names,
    /// and a collector would read their metrics files as this trial's.
    pub fn clear_trial_dir(&self, trial: &str) -> Result<(), RunnerError> {
        let dir = self.paths.log_dir.join(trial);
        match std::fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(RunnerError::LogDir {
                path: dir.display().to_string(),
                source: e,
            }),
            _ => Ok(()),
        }
    }

    /// Creates the experiment's log directory (and its parents).
    pub fn create_log_dir(&self) -> Result<(), RunnerError> {
        let dir = &self.paths.log_dir;
        std::fs::create_dir_all(dir).map_err(|source| RunnerError::LogDir {
            path: dir.display().to_string(),
            source,
        })
    }
}

fn template_error(trial: &str, source: SpecError) -> RunnerError {
    RunnerError::Template {
        trial: trial.to_string(),
        source,
    }
}

/// Where the metrics of a collector come from locally.
fn metric_source(collector: &Collector) -> Result<MetricSource, RunnerError> {
    let unsupported = |message: String| -> RunnerError {
        SpecErrors(vec![SpecError::new(
            "spec.metricsCollectorSpec.collector.kind",
            message,
        )])
        .into()
    };
    Ok(match collector {
        Collector::StdOut => MetricSource::Output,
        Collector::File { json: true, .. } => MetricSource::JsonFile,
        Collector::File { json: false, .. } => MetricSource::TextFile,
        Collector::TensorFlowEvent { .. } => MetricSource::TfEventDir,
        Collector::Prometheus {
            port: PrometheusPort::Number(port),
            path,
        } => MetricSource::Prometheus {
            port: *port,
            path: path.clone(),
        },
        Collector::Prometheus {
            port: PrometheusPort::Unusable(shown),
            ..
        } => {
            return Err(unsupported(format!(
                "httpGet port {shown} cannot be scraped locally\nhint: local runs scrape http://127.0.0.1:<port><path> and need a numeric port (a named container port has no meaning outside Kubernetes)"
            )));
        }
        Collector::Push => MetricSource::Pushed,
        Collector::Custom { container, path } => MetricSource::Custom(Box::new(
            CustomCollector::of(container.as_ref(), path.clone()),
        )),
        Collector::Other(other) => {
            return Err(unsupported(format!(
                "collector kind {other:?} cannot run locally\nhint: use StdOut, File, TensorFlowEvent, PrometheusMetric, Push or Custom"
            )));
        }
    })
}

/// The directory a trial runs in: the experiment file's directory (or `.` for a bare name).
/// Everything a trial leaves under the experiment's log directory: its log, its own
/// directory (collector files mapped under it, the logs of a distributed trial's replicas) and
/// its checkpoint directory.
pub fn trial_files(log_dir: &Path, trial: &str) -> [PathBuf; 3] {
    [
        log_dir.join(format!("{trial}.log")),
        log_dir.join(trial),
        crate::checkpoint::checkpoint_dir(log_dir, trial),
    ]
}

/// Where a trial process starts: the container's `workingDir` when this machine has that
/// directory (relative to the experiment's directory if it is relative), else the experiment's
/// directory, since a `workingDir` inside the image does not exist here.
pub fn trial_work_dir(
    wanted: Option<&str>,
    default: &Path,
    is_dir: impl Fn(&Path) -> bool,
) -> PathBuf {
    local_working_dir(wanted, default, is_dir).unwrap_or_else(|| default.to_path_buf())
}

/// The container's `workingDir` as a directory of this machine, `None` when it is unset or
/// this machine has no such directory.
fn local_working_dir(
    wanted: Option<&str>,
    default: &Path,
    is_dir: impl Fn(&Path) -> bool,
) -> Option<PathBuf> {
    wanted
        .filter(|w| !w.is_empty())
        .map(|w| default.join(w))
        .filter(|dir| is_dir(dir))
}

pub fn work_dir_of(experiment_file: &Path) -> PathBuf {
    let dir = experiment_file.parent().unwrap_or_else(|| Path::new("."));
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A one-parameter experiment with the collector block `collector` whose command passes
    /// `arg` to `train`.
    pub(crate) fn experiment(collector: &str, arg: &str) -> LocalExperiment {
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
{collector}
  parameters:
    - name: x
      parameterType: double
      feasibleSpace: {{min: "0", max: "1"}}
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
            containers:
              - name: main
                image: none
                command: ["train", "{arg}", "${{trialParameters.x}}"]
"#
        );
        let spec = vernier_spec::parse_experiment(&yaml).unwrap();
        let paths = LocalPaths {
            work_dir: PathBuf::from("/w"),
            log_dir: PathBuf::from("/logs"),
        };
        LocalExperiment::new(spec, paths).unwrap()
    }

    #[test]
    fn event_directory_is_mapped_with_or_without_its_trailing_slash() {
        let exp = experiment(
            "    collector:\n      kind: TensorFlowEvent",
            "--logdir=/var/log/katib/tfevent/train",
        );
        assert_eq!(exp.collection.source, MetricSource::TfEventDir);
        let cmd = exp
            .command_for("t1", &[("x".into(), "0.5".into())])
            .unwrap();
        assert_eq!(cmd.args[0], "--logdir=/logs/t1/var/log/katib/tfevent/train");
        assert_eq!(
            cmd.metrics_path,
            Some(PathBuf::from("/logs/t1/var/log/katib/tfevent/"))
        );
        assert!(cmd.env.contains(&(
            METRICS_DIR_ENV.into(),
            "/logs/t1/var/log/katib/tfevent".into()
        )));
    }

    /// Katib's tfjob-mnist-with-summaries reads `/mnist-with-summaries-logs/test` and passes
    /// the trainer its parent: both land in the trial's own directory.
    #[test]
    fn a_directory_above_the_collector_path_given_whole_is_mapped_too() {
        let collector = "    source:\n      fileSystemPath:\n        path: /summaries/test\n        kind: Directory\n    collector:\n      kind: TensorFlowEvent";
        let table = [
            ("--logdir=/summaries", "--logdir=/logs/t1/summaries"),
            ("/summaries/", "/logs/t1/summaries"),
            (
                "--logdir=/summaries/test/x",
                "--logdir=/logs/t1/summaries/test/x",
            ),
            ("--logdir=/summaries-other", "--logdir=/summaries-other"),
            ("--data=/summariesx/a", "--data=/summariesx/a"),
            ("/", "/"),
        ];
        for (arg, want) in table {
            let cmd = experiment(collector, arg)
                .command_for("t1", &[("x".into(), "0.5".into())])
                .unwrap();
            assert_eq!(cmd.args[0], want, "{arg}");
        }
    }

    #[test]
    fn a_custom_collector_shares_a_directory_or_a_file_as_its_kind_says() {
        let collector = |path: &str, kind: &str| {
            format!(
                "    collector:\n      kind: Custom\n      customCollector:\n        name: c\n        image: x\n        command: [python3, collect.py]\n    source:\n      fileSystemPath:\n        path: {path}\n        kind: {kind}"
            )
        };
        let cases = [
            (
                "/katib/out/",
                "Directory",
                true,
                METRICS_DIR_ENV,
                "/logs/t1/katib/out",
            ),
            (
                "/katib/m.log",
                "File",
                false,
                METRICS_FILE_ENV,
                "/logs/t1/katib/m.log",
            ),
        ];
        for (path, kind, is_dir, var, local) in cases {
            let exp = experiment(&collector(path, kind), "-v");
            assert_eq!(exp.collection.source.path_is_dir(), is_dir, "{kind}");
            let cmd = exp
                .command_for("t1", &[("x".into(), "0.5".into())])
                .unwrap();
            assert!(
                cmd.env.contains(&(var.into(), local.into())),
                "{kind}: {:?}",
                cmd.env
            );
        }
    }

    #[test]
    fn prometheus_port_and_path_come_from_http_get() {
        let exp = experiment(
            "    collector:\n      kind: PrometheusMetric\n    source:\n      httpGet:\n        port: \"9100\"\n        path: /m",
            "-v",
        );
        assert_eq!(
            exp.collection.source,
            MetricSource::Prometheus {
                port: 9100,
                path: "/m".into()
            }
        );
        let exp = experiment("    collector:\n      kind: PrometheusMetric", "-v");
        assert_eq!(
            exp.collection.source,
            MetricSource::Prometheus {
                port: 8080,
                path: "/metrics".into()
            }
        );
    }
}
