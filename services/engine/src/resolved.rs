//! The resolved experiment: what every driver derives from a parsed, defaulted and validated
//! spec before running it (search space, objective, limits, algorithm and early-stopping
//! settings, metrics collector). Where trials run (local paths, a cluster) is the driver's.

use crate::error::EngineError;
use crate::resume::ResumePolicy;
use vernier_core::{Objective, SearchSpace};
use vernier_spec::defaults::{DEFAULT_PROMETHEUS_PATH, DEFAULT_PROMETHEUS_PORT};
use vernier_spec::plan::Limits;
use vernier_spec::types::{MetricsCollectorSpec, SourceSpec};
use vernier_spec::{Experiment, known};

/// An experiment ready for any driver.
#[derive(Debug, Clone)]
pub struct ResolvedExperiment {
    pub spec: Experiment,
    pub name: String,
    pub space: SearchSpace,
    pub objective: Objective,
    pub limits: Limits,
    pub algorithm: String,
    pub settings: Vec<(String, String)>,
    pub early_stopping: Option<EarlyStopping>,
    pub collector: Collector,
    /// `spec.source.filter.metricsFormat` (empty: Katib's `name=value` default).
    pub metrics_formats: Vec<String>,
    pub resume_policy: ResumePolicy,
}

/// `source.filter.metricsFormat` of a metrics collector spec (empty: Katib's `name=value`
/// default).
pub fn metrics_formats(spec: Option<&MetricsCollectorSpec>) -> Vec<String> {
    spec.and_then(|m| m.source.as_ref())
        .and_then(|src| src.filter.as_ref())
        .map(|f| f.metrics_format.clone())
        .unwrap_or_default()
}

/// `spec.earlyStopping`: the rule's name and settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EarlyStopping {
    pub algorithm: String,
    pub settings: Vec<(String, String)>,
}

/// `spec.metricsCollectorSpec`: where a trial's metrics come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Collector {
    /// The primary container's output.
    StdOut,
    /// A file the trial writes: the spec's absolute path (or Katib's default), TEXT or JSON.
    File { path: String, json: bool },
    /// TensorFlow event files under the spec's directory (or Katib's default).
    TensorFlowEvent { dir: String },
    /// Prometheus text served by the trial.
    Prometheus { port: PrometheusPort, path: String },
    /// The trial pushes its metrics to the DBManager API.
    Push,
    /// A collector container of the user's (`collector.customCollector`), sharing the
    /// `source.fileSystemPath` with the trial when one is given.
    Custom {
        container: Option<serde_json::Value>,
        path: Option<SharedPath>,
    },
    /// A kind Vernier does not know (e.g. Katib's `None`).
    Other(String),
}

impl Collector {
    /// Whether Katib's webhook runs the trial's primary container as one shell line
    /// (`NeedWrapWorkerMetricsCollectorList`: StdOut, File and TensorFlowEvent), so its words
    /// lose their quotes as [`vernier_spec::template::unquote_katib_words`] says.
    pub fn runs_command_as_shell_line(&self) -> bool {
        matches!(
            self,
            Collector::StdOut | Collector::File { .. } | Collector::TensorFlowEvent { .. }
        )
    }
}

/// `source.fileSystemPath` of a Custom collector: where the trial and the collector meet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedPath {
    /// The absolute path as the spec writes it.
    pub path: String,
    /// Katib's `kind: Directory`; any other kind (`File`, or none) is a file, whose directory
    /// is the one shared.
    pub directory: bool,
}

/// `source.httpGet.port` of a Prometheus collector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrometheusPort {
    Number(u16),
    /// A named port or a value that is not a port, as written.
    Unusable(String),
}

impl ResolvedExperiment {
    /// Derives everything from a parsed, defaulted and validated experiment.
    pub fn new(spec: Experiment) -> Result<Self, EngineError> {
        let space = spec.search_space()?;
        let objective = spec.objective()?;
        let s = &spec.spec;
        let limits = Limits {
            parallel: s.parallel_trial_count.unwrap_or(3).max(1) as u32,
            max_trials: s.max_trial_count.map(|v| v.max(0) as u32),
            max_failed: s.max_failed_trial_count.map(|v| v.max(0) as u32),
        };
        let algorithm = s.algorithm.as_ref();
        let collector_spec = s.metrics_collector_spec.as_ref();
        Ok(ResolvedExperiment {
            name: spec.name().to_string(),
            algorithm: algorithm
                .and_then(|a| a.algorithm_name.clone())
                .unwrap_or_else(|| "random".to_string()),
            settings: algorithm
                .map(|a| pairs(&a.algorithm_settings))
                .unwrap_or_default(),
            early_stopping: s.early_stopping.as_ref().map(|es| EarlyStopping {
                algorithm: es.algorithm_name.clone().unwrap_or_default(),
                settings: pairs(&es.algorithm_settings),
            }),
            collector: Collector::of(collector_spec),
            metrics_formats: metrics_formats(collector_spec),
            resume_policy: ResumePolicy::of(s.resume_policy.as_deref()),
            space,
            objective,
            limits,
            spec,
        })
    }
}

impl ResolvedExperiment {
    /// The seed the algorithm's settings fix (`random_state`), if they do; drivers fall back to
    /// `--seed`, a random seed, or [`identity_seed`](crate::identity_seed) of the object's UID.
    pub fn setting_seed(&self) -> Option<u64> {
        vernier_algorithms::seed_setting(&self.algorithm, &self.settings)
    }
}

fn pairs(settings: &[vernier_spec::types::AlgorithmSetting]) -> Vec<(String, String)> {
    settings
        .iter()
        .map(|x| (x.name.clone(), x.value.clone()))
        .collect()
}

impl Collector {
    /// The collector of `spec.metricsCollectorSpec` (StdOut when unset).
    pub fn of(spec: Option<&MetricsCollectorSpec>) -> Collector {
        let kind = spec
            .and_then(|m| m.collector.as_ref())
            .and_then(|c| c.kind.as_deref())
            .unwrap_or("StdOut");
        let collector = spec.and_then(|m| m.collector.as_ref());
        let source = spec.and_then(|m| m.source.as_ref());
        match kind {
            "StdOut" => Collector::StdOut,
            "File" => Collector::File {
                path: spec_path(source, known::DEFAULT_METRICS_FILE),
                json: source
                    .and_then(|s| s.file_system_path.as_ref())
                    .and_then(|f| f.format.as_deref())
                    .is_some_and(|f| f.eq_ignore_ascii_case("JSON")),
            },
            "TensorFlowEvent" => Collector::TensorFlowEvent {
                dir: spec_path(source, known::DEFAULT_TFEVENT_DIR),
            },
            "PrometheusMetric" => prometheus(source),
            "Push" => Collector::Push,
            "Custom" => Collector::Custom {
                container: collector.and_then(|c| c.custom_collector.clone()),
                path: shared_path(source),
            },
            other => Collector::Other(other.to_string()),
        }
    }

    /// Katib's name of the kind.
    pub fn kind(&self) -> &str {
        match self {
            Collector::StdOut => "StdOut",
            Collector::File { .. } => "File",
            Collector::TensorFlowEvent { .. } => "TensorFlowEvent",
            Collector::Prometheus { .. } => "PrometheusMetric",
            Collector::Push => "Push",
            Collector::Custom { .. } => "Custom",
            Collector::Other(kind) => kind,
        }
    }

    /// The absolute path of the file or directory the trial writes, for File and
    /// TensorFlowEvent.
    pub fn spec_path(&self) -> Option<&str> {
        match self {
            Collector::File { path, .. } => Some(path),
            Collector::TensorFlowEvent { dir } => Some(dir),
            Collector::Custom { path, .. } => path.as_ref().map(|p| p.path.as_str()),
            _ => None,
        }
    }
}

/// `source.fileSystemPath.path`, or Katib's default when unset or empty.
fn spec_path(source: Option<&SourceSpec>, default: &str) -> String {
    source
        .and_then(|s| s.file_system_path.as_ref())
        .and_then(|f| f.path.clone())
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| default.to_string())
}

/// A Custom collector's `source.fileSystemPath`, when it names a path.
fn shared_path(source: Option<&SourceSpec>) -> Option<SharedPath> {
    let fsp = source?.file_system_path.as_ref()?;
    let path = fsp.path.clone().filter(|p| !p.is_empty())?;
    Some(SharedPath {
        path,
        directory: fsp.kind.as_deref() == Some("Directory"),
    })
}

fn prometheus(source: Option<&SourceSpec>) -> Collector {
    let http = source.and_then(|s| s.http_get.as_ref());
    let written = http.and_then(|h| h.get("port"));
    let number = match written {
        None => u16::try_from(DEFAULT_PROMETHEUS_PORT).ok(),
        Some(serde_json::Value::Number(n)) => n.as_u64().and_then(|p| u16::try_from(p).ok()),
        Some(serde_json::Value::String(s)) => s.parse::<u16>().ok(),
        Some(_) => None,
    };
    let port = match number.filter(|p| *p > 0) {
        Some(p) => PrometheusPort::Number(p),
        None => PrometheusPort::Unusable(written.map_or_else(String::new, |v| v.to_string())),
    };
    let path = http
        .and_then(|h| h.get("path"))
        .and_then(serde_json::Value::as_str)
        .filter(|p| !p.is_empty())
        .unwrap_or(DEFAULT_PROMETHEUS_PATH)
        .to_string();
    Collector::Prometheus { port, path }
}

#[cfg(test)]
pub(crate) mod tests;
