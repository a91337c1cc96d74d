//! A batch Job's own run controls in local mode, as Kubernetes' Job controller applies them on
//! a cluster: a failed trial process runs again, up to the template's `spec.backoffLimit`
//! times (its `podFailurePolicy` may fail the job at once or not count a failure), each
//! attempt fails once it has run for the pod's `activeDeadlineSeconds`, and the job fails once
//! it has been active for `spec.activeDeadlineSeconds`. Only what the template sets is
//! applied: Kubernetes' default of six retries is not, since a crash on a laptop is usually a
//! bug to see at once (docs/katib-differences.md).

use crate::pod_failure_policy::{FailureAction, FailureRule, deciding_rule, failure_rules};
use crate::process::{Collection, ProcessEnd, ProcessReport, StopLevel, TrialCommand, run_process};
use crate::replicas::policy::{restart_delay, signal_exit_code};
use crate::replicas::supervise::{describe_end, log_note};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;
use vernier_store::SqlStore;

/// The run controls a trial spec sets; none for kinds other than a `batch/v1` Job.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JobControls {
    /// `spec.backoffLimit`: how many times a failed process runs again.
    pub retries: u32,
    /// `spec.activeDeadlineSeconds`: how long the job may be active, retries included.
    pub deadline: Option<Duration>,
    /// `spec.template.spec.activeDeadlineSeconds`: how long each attempt (pod) may run.
    pub pod_deadline: Option<Duration>,
    /// `spec.podFailurePolicy`'s exit-code rules.
    pub failure_rules: Vec<FailureRule>,
    /// The container that runs: the one whose exit code the rules read.
    pub container: String,
}

impl JobControls {
    /// The controls of a rendered trial spec (the Job schema check has refused wrong types)
    /// whose container named `primary` runs.
    pub fn of(rendered: &Value, primary: &str) -> JobControls {
        if !vernier_spec::template::is_batch_job(rendered) {
            return JobControls::default();
        }
        let field = |name: &str| {
            rendered
                .pointer(&format!("/spec/{name}"))
                .and_then(Value::as_u64)
        };
        JobControls {
            retries: field("backoffLimit").map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX)),
            deadline: field("activeDeadlineSeconds").map(Duration::from_secs),
            pod_deadline: field("template/spec/activeDeadlineSeconds").map(Duration::from_secs),
            failure_rules: failure_rules(rendered),
            container: primary.to_string(),
        }
    }
}

impl JobControls {
    /// Whether the spec sets no control: the process runs once, as any other kind's.
    fn apply_nothing(&self) -> bool {
        self.retries == 0
            && self.deadline.is_none()
            && self.pod_deadline.is_none()
            && self.failure_rules.is_empty()
    }
}

/// An attempt's failure as the Job controller counts it: `None` when the attempt did not
/// fail; else whether it ends the job at once, and what to say.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Failure {
    Counted(String),
    Ignored(String),
    Fatal(String),
}

/// How the Job controller takes an attempt that ended `end`, past its pod's deadline or not.
fn judge(end: &ProcessEnd, past_pod_deadline: bool, controls: &JobControls) -> Option<Failure> {
    if past_pod_deadline {
        let seconds = controls.pod_deadline.unwrap_or_default().as_secs();
        return Some(Failure::Counted(format!(
            "pod was active longer than its spec.template.spec.activeDeadlineSeconds of {seconds} s"
        )));
    }
    if !failed(end) {
        return None;
    }
    let said = format!("process {}", describe_end(end));
    let rule = exit_code(end)
        .and_then(|code| deciding_rule(&controls.failure_rules, &controls.container, code));
    Some(match rule {
        None => Failure::Counted(said),
        Some(r) => {
            let by = format!("{said}, which spec.podFailurePolicy.rules[{}]", r.index);
            match r.action {
                FailureAction::FailJob => Failure::Fatal(format!("{by} fails the Job for")),
                FailureAction::Ignore => Failure::Ignored(format!("{by} does not count")),
                FailureAction::Count => Failure::Counted(said),
            }
        }
    })
}

/// The exit code a cluster shows for a container that ended `end`: 128 + the signal number
/// for a killed one.
fn exit_code(end: &ProcessEnd) -> Option<i64> {
    match end {
        ProcessEnd::Exited(code) => Some(i64::from(*code)),
        ProcessEnd::Signaled(name) => signal_exit_code(name).map(i64::from),
        _ => None,
    }
}

/// Whether an attempt ended as the Job controller counts a failed pod.
fn failed(end: &ProcessEnd) -> bool {
    matches!(end, ProcessEnd::Exited(code) if *code != 0) || matches!(end, ProcessEnd::Signaled(_))
}

/// Runs a trial's process under its Job's controls until it succeeds, runs out of retries,
/// passes its deadline or is stopped. Metrics of every attempt are kept.
pub async fn run_job(
    mut cmd: TrialCommand,
    controls: JobControls,
    collection: Collection,
    store: SqlStore,
    mut stop: watch::Receiver<StopLevel>,
) -> ProcessReport {
    if controls.apply_nothing() {
        return run_process(cmd, collection, store, stop).await;
    }
    let deadline = controls.deadline.map(|d| Instant::now() + d);
    let past = Arc::new(AtomicBool::new(false));
    let mut total: Option<ProcessReport> = None;
    // Retries made so far, and those counted against backoffLimit.
    let (mut attempts, mut retried) = (0u32, 0);
    loop {
        let (tx, rx) = watch::channel(*stop.borrow());
        let pod_past = Arc::new(AtomicBool::new(false));
        let deadlines = Deadlines {
            job: deadline,
            pod: controls.pod_deadline.map(|d| Instant::now() + d),
        };
        let flags = (past.clone(), pod_past.clone());
        let guard = tokio::spawn(forward(stop.clone(), tx, deadlines, flags));
        let report = run_process(cmd.clone(), collection.clone(), store.clone(), rx).await;
        guard.abort();
        let end = report.end.clone();
        let mut sum = merge(total.take(), report);
        if past.load(Ordering::SeqCst) {
            sum.end = past_deadline(&controls);
            return sum;
        }
        let Some(failure) = judge(&end, pod_past.load(Ordering::SeqCst), &controls) else {
            return sum;
        };
        let (said, counted) = match failure {
            Failure::Fatal(said) => {
                sum.end = ProcessEnd::JobFailed(format!("the {said}"));
                return sum;
            }
            Failure::Counted(said) => (said, true),
            Failure::Ignored(said) => (said, false),
        };
        if (counted && retried >= controls.retries) || *stop.borrow() != StopLevel::Run {
            if pod_past.load(Ordering::SeqCst) {
                sum.end = ProcessEnd::JobFailed(format!("the {said}"));
            }
            return sum;
        }
        attempts += 1;
        let note = match counted {
            true => {
                retried += 1;
                format!(
                    "retry {retried} of the Job's spec.backoffLimit of {}",
                    controls.retries
                )
            }
            false => format!("retry {attempts}, not counted against spec.backoffLimit"),
        };
        log_note(&cmd, &format!("the {said}; {note}"));
        cmd.append_log = true;
        total = Some(sum);
        tokio::select! {
            () = tokio::time::sleep(restart_delay(attempts)) => {}
            _ = stop.wait_for(|l| *l != StopLevel::Run) => return stopped(total),
            () = until(deadline) => {
                let mut sum = stopped(total);
                sum.end = past_deadline(&controls);
                return sum;
            }
        }
    }
}

/// Resolves at `deadline`; never without one.
async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// When the job and the current attempt must end.
struct Deadlines {
    job: Option<Instant>,
    pod: Option<Instant>,
}

/// The stop requests of the run, passed on, and a stop of its own once a deadline passes,
/// which sets that deadline's flag (`past`: the job's, then the pod's).
async fn forward(
    mut outer: watch::Receiver<StopLevel>,
    inner: watch::Sender<StopLevel>,
    mut deadlines: Deadlines,
    past: (Arc<AtomicBool>, Arc<AtomicBool>),
) {
    loop {
        tokio::select! {
            changed = outer.changed() => {
                if changed.is_err() {
                    return;
                }
                let level = *outer.borrow();
                let _ = inner.send(level);
            }
            () = until(deadlines.job) => {
                past.0.store(true, Ordering::SeqCst);
                let _ = inner.send(StopLevel::Terminate);
                deadlines = Deadlines { job: None, pod: None };
            }
            () = until(deadlines.pod) => {
                past.1.store(true, Ordering::SeqCst);
                let _ = inner.send(StopLevel::Terminate);
                deadlines.pod = None;
            }
        }
    }
}

fn past_deadline(controls: &JobControls) -> ProcessEnd {
    ProcessEnd::JobFailed(format!(
        "the Job was active longer than its spec.activeDeadlineSeconds of {} s",
        controls.deadline.unwrap_or_default().as_secs()
    ))
}

fn stopped(total: Option<ProcessReport>) -> ProcessReport {
    let mut r = total.unwrap_or_else(|| ProcessReport::stopped(Vec::new()));
    r.end = ProcessEnd::Stopped;
    r.ended_us = Some(crate::process::now_us());
    r
}

/// The attempts so far and the latest one: what every attempt saw, how the latest ended.
fn merge(total: Option<ProcessReport>, latest: ProcessReport) -> ProcessReport {
    let Some(mut sum) = total else {
        return latest;
    };
    sum.absorb_problems(&latest, "");
    sum.metrics_seen.extend(latest.metrics_seen);
    sum.end = latest.end;
    sum.ended_us = latest.ended_us;
    sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_a_batch_jobs_own_controls_are_read() {
        let job = |spec: Value| json!({"apiVersion": "batch/v1", "kind": "Job", "spec": spec});
        // (trial spec, controls)
        let main = JobControls {
            container: "main".into(),
            ..JobControls::default()
        };
        let table = [
            (job(json!({})), main.clone()),
            (
                job(json!({"backoffLimit": 2, "activeDeadlineSeconds": 60})),
                JobControls {
                    retries: 2,
                    deadline: Some(Duration::from_secs(60)),
                    ..main
                },
            ),
            (
                json!({"apiVersion": "kubeflow.org/v1", "kind": "Job", "spec": {"backoffLimit": 2}}),
                JobControls::default(),
            ),
            (
                json!({"apiVersion": "batch/v1", "kind": "CronJob", "spec": {"backoffLimit": 2}}),
                JobControls::default(),
            ),
        ];
        for (spec, want) in table {
            assert_eq!(JobControls::of(&spec, "main"), want, "{spec}");
        }
    }

    #[test]
    fn an_attempt_is_judged_by_its_deadline_then_the_failure_policy() {
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "spec": {
            "template": {"spec": {"activeDeadlineSeconds": 5}},
            "podFailurePolicy": {"rules": [
                {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
                {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [143]}}]}}});
        let controls = JobControls::of(&job, "main");
        let counted = |s: &str| Some(Failure::Counted(s.to_string()));
        let table = [
            (ProcessEnd::Exited(0), false, None),
            (ProcessEnd::Exited(1), false, counted("process exited with code 1")),
            (
                ProcessEnd::Exited(42),
                false,
                Some(Failure::Fatal(
                    "process exited with code 42, which spec.podFailurePolicy.rules[0] fails the Job for".into(),
                )),
            ),
            (
                ProcessEnd::Signaled("SIGTERM".into()),
                false,
                Some(Failure::Ignored(
                    "process was killed by signal SIGTERM, which spec.podFailurePolicy.rules[1] does not count".into(),
                )),
            ),
            (
                ProcessEnd::Stopped,
                true,
                counted("pod was active longer than its spec.template.spec.activeDeadlineSeconds of 5 s"),
            ),
        ];
        for (end, past, want) in table {
            assert_eq!(judge(&end, past, &controls), want, "{end:?}");
        }
    }

    #[test]
    fn failures_are_non_zero_exits_and_signals() {
        assert!(failed(&ProcessEnd::Exited(3)));
        assert!(failed(&ProcessEnd::Signaled("SIGSEGV".into())));
        assert!(!failed(&ProcessEnd::Exited(0)));
        assert!(!failed(&ProcessEnd::Stopped));
        assert!(!failed(&ProcessEnd::SpawnFailed("no such file".into())));
    }
}
