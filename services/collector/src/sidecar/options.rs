//! What `vernier collect` is asked to do, and the checks that turn its flags into a followed
//! source before anything runs. Messages name the command's flags: these options are its flags.

use crate::error::CollectorError;
use crate::source::{FollowedSource, SourceFormat};
use crate::text::MetricsFilter;
use std::path::PathBuf;
use std::time::Duration;

/// The collector kinds the sidecar serves (Katib `metricsCollectorSpec.collector.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SidecarKind {
    File,
    TensorFlowEvent,
}

/// Katib's `fileSystemPath.format` for the File collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    Text,
    Json,
}

/// The sidecar's settings, one field per flag of `vernier collect`.
#[derive(Debug, Clone)]
pub struct SidecarOptions {
    /// The trial the observations belong to.
    pub trial: String,
    /// Metric names to report, objective first.
    pub metric_names: Vec<String>,
    pub kind: SidecarKind,
    /// The metrics file, or the event directory, as the trial's container sees it.
    pub path: PathBuf,
    /// Format of the metrics file (File only).
    pub file_format: Option<FileFormat>,
    /// TEXT regexes with two groups, metric name and value; Katib's `name=value` when empty.
    pub metrics_format: Vec<String>,
    /// The DBManager to report to, HOST:PORT or an http(s) URL.
    pub db_manager_address: String,
    /// Labels the trial's primary pod carries, KEY=VALUE.
    pub primary_label: Vec<String>,
    /// This pod's values of the primary-label keys, KEY=VALUE.
    pub pod_label: Vec<String>,
    /// A marker created once the caller handles SIGTERM, removed at exit.
    pub started_file: Option<PathBuf>,
    /// Time between reads of the file or directory.
    pub poll: Duration,
}

fn flag(
    flag: &'static str,
    value: impl Into<String>,
    problem: impl Into<String>,
    hint: &'static str,
) -> CollectorError {
    CollectorError::Flag {
        flag,
        value: value.into(),
        problem: problem.into(),
        hint,
    }
}

impl SidecarOptions {
    /// The metric names to report, trimmed, empty ones dropped; at least one.
    pub fn wanted(&self) -> Result<Vec<String>, CollectorError> {
        if self.trial.is_empty() {
            return Err(flag(
                "--trial",
                "",
                "is empty",
                "pass the trial's name (or set KATIB_TRIAL_NAME)",
            ));
        }
        let wanted: Vec<String> = self
            .metric_names
            .iter()
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty())
            .collect();
        if wanted.is_empty() {
            return Err(flag(
                "--metric-names",
                self.metric_names.join(","),
                "names no metric",
                "give the objective metric first, e.g. --metric-names loss,accuracy",
            ));
        }
        Ok(wanted)
    }

    /// The source the flags describe, following the metrics in `wanted`.
    pub fn source(&self, wanted: Vec<String>) -> Result<FollowedSource, CollectorError> {
        if !self.path.is_absolute() {
            return Err(flag(
                "--path",
                self.path.display().to_string(),
                "is not absolute",
                "give the path as the trial's container sees it, e.g. /var/log/katib/metrics.log",
            ));
        }
        let format = match self.kind {
            SidecarKind::File => self.file_format()?,
            SidecarKind::TensorFlowEvent => {
                if let Some(format) = self.file_format {
                    return Err(flag(
                        "--file-format",
                        format!("{format:?}"),
                        "does not apply to --kind TensorFlowEvent",
                        "drop --file-format, event files have one format",
                    ));
                }
                if let Some(format) = self.metrics_format.first() {
                    return Err(flag(
                        "--metrics-format",
                        format.clone(),
                        "does not apply to --kind TensorFlowEvent",
                        "metrics are matched by summary tag, drop --metrics-format",
                    ));
                }
                SourceFormat::Events
            }
        };
        Ok(FollowedSource::new(&self.path, format, wanted))
    }

    fn file_format(&self) -> Result<SourceFormat, CollectorError> {
        if self.file_format != Some(FileFormat::Json) {
            let filter = MetricsFilter::from_formats(&self.metrics_format)
                .map_err(|e| CollectorError::MetricsFormatFlag(Box::new(e)))?;
            return Ok(SourceFormat::Text(filter));
        }
        match self.metrics_format.first() {
            Some(format) => Err(flag(
                "--metrics-format",
                format.clone(),
                "cannot be used with --file-format JSON",
                "JSON lines name their metrics, drop --metrics-format",
            )),
            None => Ok(SourceFormat::Json),
        }
    }
}

/// Splits the KEY=VALUE values of `name`.
fn pairs<'a>(
    name: &'static str,
    values: &'a [String],
) -> Result<Vec<(&'a str, &'a str)>, CollectorError> {
    values
        .iter()
        .map(|v| {
            v.split_once('=').ok_or_else(|| {
                flag(
                    name,
                    v.clone(),
                    "has no '='",
                    "write KEY=VALUE, e.g. training.kubeflow.org/job-role=master",
                )
            })
        })
        .collect()
}

/// Does this pod carry every primary label, as the pod labels say?
pub fn is_primary(options: &SidecarOptions) -> Result<bool, CollectorError> {
    let wanted = pairs("--primary-label", &options.primary_label)?;
    let actual = pairs("--pod-label", &options.pod_label)?;
    Ok(wanted
        .iter()
        .all(|(k, v)| actual.iter().any(|(ak, av)| ak == k && av == v)))
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Options as `vernier collect --trial t1 --metric-names loss,accuracy
    /// --db-manager-address 127.0.0.1:6789` gives them, for `kind` and `path`.
    pub(crate) fn options(kind: SidecarKind, path: &str) -> SidecarOptions {
        SidecarOptions {
            trial: "t1".into(),
            metric_names: vec!["loss".into(), "accuracy".into()],
            kind,
            path: path.into(),
            file_format: None,
            metrics_format: Vec::new(),
            db_manager_address: "127.0.0.1:6789".into(),
            primary_label: Vec::new(),
            pod_label: Vec::new(),
            started_file: None,
            poll: Duration::from_millis(500),
        }
    }

    fn source_error(o: &SidecarOptions) -> String {
        o.source(o.metric_names.clone()).unwrap_err().to_string()
    }

    #[test]
    fn bad_flags_are_named_with_their_values_and_a_hint() {
        let mut o = options(SidecarKind::File, "/m.log");
        o.metrics_format = vec!["(oops".into()];
        let e = source_error(&o);
        assert!(
            e.starts_with("--metrics-format") && e.contains("(oops"),
            "{e}"
        );
        let e = source_error(&options(SidecarKind::File, "rel/m.log"));
        assert!(
            e.contains("--path value \"rel/m.log\"") && e.contains("hint:"),
            "{e}"
        );
        let mut o = options(SidecarKind::TensorFlowEvent, "/ev");
        o.file_format = Some(FileFormat::Text);
        let e = source_error(&o);
        assert!(e.starts_with("--file-format") && e.contains("hint:"), "{e}");
        let mut o = options(SidecarKind::File, "/m.json");
        o.file_format = Some(FileFormat::Json);
        o.metrics_format = vec!["(a)=(b)".into()];
        let e = source_error(&o);
        assert!(e.contains("cannot be used with --file-format JSON"), "{e}");
        let mut o = options(SidecarKind::File, "/m.log");
        o.metric_names = vec![" ".into()];
        let e = o.wanted().unwrap_err().to_string();
        assert!(
            e.starts_with("--metric-names value \" \"") && e.contains("hint:"),
            "{e}"
        );
        let mut o = options(SidecarKind::File, "/m.log");
        o.trial = String::new();
        let e = o.wanted().unwrap_err().to_string();
        assert!(
            e.starts_with("--trial value \"\" is empty")
                && e.contains("hint: pass the trial's name"),
            "{e}"
        );
        let mut o = options(SidecarKind::TensorFlowEvent, "/ev");
        o.metrics_format = vec!["(a)=(b)".into()];
        let e = source_error(&o);
        assert!(
            e.starts_with(
                "--metrics-format value \"(a)=(b)\" does not apply to --kind TensorFlowEvent"
            ) && e.contains("hint: metrics are matched by summary tag"),
            "{e}"
        );
    }

    #[test]
    fn only_the_pod_with_every_primary_label_collects() {
        let with = |primary: &[&str], pod: &[&str]| {
            let mut o = options(SidecarKind::File, "/m.log");
            o.primary_label = primary.iter().map(|s| s.to_string()).collect();
            o.pod_label = pod.iter().map(|s| s.to_string()).collect();
            is_primary(&o)
        };
        assert!(with(&[], &[]).unwrap());
        let role = "training.kubeflow.org/job-role";
        let want = format!("{role}=master");
        let unset = format!("{role}=");
        assert!(with(&[&want], &[&want]).unwrap());
        assert!(!with(&[&want], &[&unset]).unwrap());
        assert!(!with(&[&want], &[]).unwrap());
        let e = with(&["nolabel"], &[]).unwrap_err().to_string();
        assert!(
            e.contains("--primary-label value \"nolabel\"") && e.contains("hint:"),
            "{e}"
        );
    }
}
