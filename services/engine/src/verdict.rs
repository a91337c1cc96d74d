//! Judging a finished trial: from how its job ended and which metrics it reported, Katib's
//! condition (state, reason, message), the hint that says how to report the objective, and the
//! `unavailable` observation Katib records for a trial without its objective.

use crate::plan::Completion;
use crate::reason;
use crate::resolved::{Collector, PrometheusPort, ResolvedExperiment};
use vernier_core::{Observation, TrialState, UNAVAILABLE};

/// Katib's zero time (`0001-01-01T00:00:00Z`) in µs: the timestamp of the `unavailable`
/// observation.
pub const ZERO_TIME_US: i64 = -62_135_596_800_000_000;

/// How many reported metric names a MetricsUnavailable message lists.
const SEEN_SHOWN: usize = 8;

/// How a trial's job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrialEnd {
    /// The process exited with code 0, or the job met its success condition.
    Completed,
    /// The process exited with this non-zero code.
    ExitCode(i32),
    /// The process was killed by this signal.
    Signal(String),
    /// The job failed (or could not start) for the reason given.
    Failed(String),
    /// The driver stopped it: the experiment completed (`Some`) or was interrupted.
    Stopped(Option<Completion>),
}

/// Where the trial ran, which decides how the hints are worded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place<'a> {
    /// A local process; `push_env` names the variable holding the DBManager address.
    Local { push_env: &'a str },
    /// A pod on a cluster; `container` is the primary container.
    Cluster { container: &'a str },
}

/// A finished trial as its driver observed it.
#[derive(Debug, Clone, Copy)]
pub struct Finished<'a> {
    pub end: &'a TrialEnd,
    /// The latest value recorded for the objective metric, if any: through
    /// [`objective_reported`] this, not `seen`, decides Succeeded against MetricsUnavailable.
    pub objective_latest: Option<&'a str>,
    /// Names of the metrics the trial reported or printed, any order (a bounded sample is
    /// enough): they word the MetricsUnavailable message. The objective's name can be among
    /// them when every value printed for it was rejected (`nan`, an infinity, an empty match).
    pub seen: &'a [String],
    /// The early-stopping rule stopped it: that is its end, whatever its exit.
    pub early_stopped: bool,
    /// Why the rule stopped it, in words ([`vernier_core::EarlyStopper::explain`]), when the
    /// rule said; added to Katib's message.
    pub stopped_because: Option<&'a str>,
    pub place: Place<'a>,
}

/// The judge's decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub state: TrialState,
    pub reason: &'static str,
    pub message: String,
    /// For MetricsUnavailable: the observation to record, as Katib does.
    pub unavailable: Option<Observation>,
}

impl Verdict {
    fn of(state: TrialState, reason: &'static str, message: impl Into<String>) -> Verdict {
        Verdict {
            state,
            reason,
            message: message.into(),
            unavailable: None,
        }
    }
}

/// Turns a finished trial into Katib's condition.
pub fn judge(exp: &ResolvedExperiment, trial: Finished<'_>) -> Verdict {
    if trial.early_stopped {
        let message = reason::early_stopped_message(trial.stopped_because);
        return Verdict::of(
            TrialState::EarlyStopped,
            reason::TRIAL_EARLY_STOPPED,
            message,
        );
    }
    let failed = |message: String| Verdict::of(TrialState::Failed, reason::TRIAL_FAILED, message);
    match trial.end {
        TrialEnd::Completed if objective_reported(trial.objective_latest) => Verdict::of(
            TrialState::Succeeded,
            reason::TRIAL_SUCCEEDED,
            reason::TRIAL_SUCCEEDED_MESSAGE,
        ),
        TrialEnd::Completed => metrics_unavailable(
            &exp.objective.metric,
            trial.seen,
            How {
                collector: &exp.collector,
                formats: &exp.metrics_formats,
            },
            trial.place,
        ),
        TrialEnd::ExitCode(code) => failed(format!("the trial process exited with code {code}")),
        TrialEnd::Signal(sig) => failed(format!("the trial process was killed by signal {sig}")),
        TrialEnd::Failed(message) => failed(message.clone()),
        TrialEnd::Stopped(Some(c)) => Verdict::of(
            TrialState::Killed,
            reason::TRIAL_KILLED,
            format!("stopped because the experiment completed ({})", c.reason()),
        ),
        TrialEnd::Stopped(None) => Verdict::of(
            TrialState::Killed,
            reason::TRIAL_KILLED,
            "stopped because the experiment was interrupted",
        ),
    }
}

/// Katib's test of a completed trial, the same for both drivers: its objective has a latest
/// value other than `unavailable`. A number and text (DARTS's genotype) both count.
pub fn objective_reported(latest: Option<&str>) -> bool {
    latest.is_some_and(|v| v != UNAVAILABLE)
}

/// How an experiment takes its metrics: its collector and `source.filter.metricsFormat`.
#[derive(Debug, Clone, Copy)]
pub struct How<'a> {
    pub collector: &'a Collector,
    /// Empty: Katib's default `name=value` format.
    pub formats: &'a [String],
}

/// The verdict on a trial that completed without ever reporting its objective `metric`: Katib's
/// MetricsUnavailable with the names it did report (`seen`, any order) and how the experiment
/// takes the metric at `place`, and the `unavailable` observation to record. It needs only
/// what both drivers know of a trial, so the operator, which has no [`ResolvedExperiment`] in
/// its Trial reconciler, words it as [`judge`] does.
pub fn metrics_unavailable(
    metric: &str,
    seen: &[String],
    how: How<'_>,
    place: Place<'_>,
) -> Verdict {
    let (subject, hint_sep) = match place {
        Place::Local { .. } => ("the trial exited with code 0", "\n"),
        Place::Cluster { .. } => ("the job succeeded", "; "),
    };
    let what = if seen.iter().any(|s| s == metric) {
        format!(
            "never reported a usable value of the objective metric {metric:?}: every value printed for it was unusable (nan, an infinity, empty, {UNAVAILABLE:?} or cut off)"
        )
    } else {
        format!("never reported the objective metric {metric:?}")
    };
    let message = format!(
        "Metrics are not available: {subject} but {what} ({}){hint_sep}hint: {}",
        seen_text(seen),
        unavailable_hint(how, metric, place),
    );
    Verdict {
        unavailable: Some(Observation {
            metric: metric.to_string(),
            timestamp_us: ZERO_TIME_US,
            value: UNAVAILABLE.into(),
        }),
        ..Verdict::of(
            TrialState::MetricsUnavailable,
            reason::METRICS_UNAVAILABLE,
            message,
        )
    }
}

/// "saw a, b" (sorted, at most [`SEEN_SHOWN`]), or "it reported no metric".
fn seen_text(seen: &[String]) -> String {
    if seen.is_empty() {
        return "it reported no metric".to_string();
    }
    let mut names: Vec<&str> = seen.iter().map(String::as_str).collect();
    names.sort_unstable();
    names.dedup();
    let more = names.len().saturating_sub(SEEN_SHOWN);
    names.truncate(SEEN_SHOWN);
    let tail = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    let names: Vec<String> = names.into_iter().map(shown_name).collect();
    format!("saw {}{tail}", names.join(", "))
}

/// Longest metric name shown whole in a message: a name can be as long as a 1 MiB line, and
/// eight of them made a trial's message too long for a MySQL `TEXT` column.
const NAME_SHOWN: usize = 64;

/// `name`, cut to [`NAME_SHOWN`] characters with `…` when longer.
fn shown_name(name: &str) -> String {
    match vernier_core::first_chars(name, NAME_SHOWN) {
        None => name.to_string(),
        Some(cut) => format!("{cut}…"),
    }
}

/// Where a scalar for `metric` must be written under the event directory `root`, by Katib's
/// rule: a name with `/` is the directory the event file lies in, then the tag
/// (`test/accuracy`: tag `accuracy` in a directory ending in `test`).
fn event_place(metric: &str, root: &str) -> String {
    match metric.rsplit_once('/') {
        Some((dir, tag)) => format!(
            "a scalar summary tagged {tag:?} to an events.out.tfevents.* file in a directory \
             ending in {dir:?} under {root} (Katib reads a metric name with '/' as directory, \
             then tag)"
        ),
        None => {
            format!(
                "a scalar summary tagged {metric:?} to an events.out.tfevents.* file under {root}"
            )
        }
    }
}

/// How a trial reports `metric` through the experiment's collector.
pub fn unavailable_hint(how: How<'_>, metric: &str, place: Place<'_>) -> String {
    let line = text_line(metric, how.formats);
    match (how.collector, place) {
        (Collector::StdOut, Place::Cluster { container }) => {
            format!("from container {container:?}, print {line}")
        }
        (Collector::File { path, json: false }, Place::Cluster { .. }) => {
            format!("write {line} to {path:?}, the File collector's path")
        }
        (Collector::File { json: true, path }, Place::Cluster { .. }) => {
            format!("write a JSON line such as {{\"{metric}\": \"0.5\"}} to {path:?}")
        }
        (Collector::TensorFlowEvent { dir }, Place::Cluster { .. }) => {
            format!("write {}", event_place(metric, &format!("{dir:?}")))
        }
        (Collector::Push, Place::Cluster { .. }) => format!(
            "report {metric:?} with ReportObservationLog to the operator's DBManager (e.g. the Katib SDK's report_metrics)"
        ),
        (Collector::File { json: true, path }, Place::Local { .. }) => format!(
            "write a JSON line such as {{\"{metric}\": \"0.5\"}} to $VERNIER_METRICS_FILE, where {path:?} is mapped (printing it is not read)"
        ),
        (Collector::File { json: false, path }, Place::Local { .. }) => format!(
            "write {line} to $VERNIER_METRICS_FILE, where {path:?} is mapped (printing it is not read)"
        ),
        (Collector::TensorFlowEvent { .. }, Place::Local { .. }) => {
            format!("write {}", event_place(metric, "$VERNIER_METRICS_DIR"))
        }
        (Collector::Prometheus { port, path }, _) => {
            let port = match port {
                PrometheusPort::Number(p) => p.to_string(),
                PrometheusPort::Unusable(p) => p.clone(),
            };
            format!(
                "serve `{metric} 0.5` at http://127.0.0.1:{port}{path} for at least a second before exiting"
            )
        }
        (Collector::Custom { .. }, Place::Local { push_env }) => format!(
            "have the custom collector report {metric:?} with DBManager.ReportObservationLog to ${push_env} (its output is in the trial's log)"
        ),
        (Collector::Custom { .. }, Place::Cluster { .. }) => format!(
            "have the custom collector container report {metric:?} with DBManager.ReportObservationLog to the operator's DBManager"
        ),
        (Collector::Push, Place::Local { push_env }) => format!(
            "call report_metrics({{\"{metric}\": 0.5}}, db_manager_address=os.environ[\"{push_env}\"]) from the Katib SDK, or send DBManager.ReportObservationLog to that address"
        ),
        _ if !how.formats.is_empty() => format!("print {line}"),
        _ if !vernier_spec::validate::default_format_reads(metric) => format!(
            "Katib's default metrics format reads names of letters, digits, '_', '|' and '-' \
             only: set spec.metricsCollectorSpec.source.filter.metricsFormat to a format that \
             reads {metric:?}, e.g. {}",
            vernier_spec::validate::format_reading(metric)
        ),
        _ => format!("print {line}, or set spec.metricsCollectorSpec.source.filter.metricsFormat"),
    }
}

/// A text line that reports `metric`: Katib's default `name=value`, or one the experiment's own
/// `metricsFormat` reads (a regular expression cannot be turned into an example line, so the
/// hint quotes it and says which group is which).
fn text_line(metric: &str, formats: &[String]) -> String {
    match formats {
        [] => format!("a line such as `{metric}=0.5`"),
        [format] => format!(
            "a line that spec.metricsCollectorSpec.source.filter.metricsFormat `{format}` \
             reads, its first group matching {metric:?} and its second the value"
        ),
        _ => format!(
            "a line that one of spec.metricsCollectorSpec.source.filter.metricsFormat {} \
             reads, its first group matching {metric:?} and its second the value",
            formats
                .iter()
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests;
