//! A batch Job's own run controls in local mode, as Kubernetes' Job controller applies them on
//! a cluster: a failed trial process runs again, up to the template's `spec.backoffLimit`
//! times, and the job fails once it has been active for `spec.activeDeadlineSeconds`. Only
//! what the template sets is applied: Kubernetes' default of six retries is not, since a crash
//! on a laptop is usually a bug to see at once (docs/katib-differences.md).

use crate::process::{Collection, ProcessEnd, ProcessReport, StopLevel, TrialCommand, run_process};
use crate::replicas::policy::restart_delay;
use crate::replicas::supervise::{describe_end, log_note};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;
use vernier_store::SqlStore;

/// The run controls a trial spec sets; none for kinds other than a `batch/v1` Job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JobControls {
    /// `spec.backoffLimit`: how many times a failed process runs again.
    pub retries: u32,
    /// `spec.activeDeadlineSeconds`: how long the job may be active, retries included.
    pub deadline: Option<Duration>,
}

impl JobControls {
    /// The controls of a rendered trial spec (the Job schema check has refused wrong types).
    pub fn of(rendered: &Value) -> JobControls {
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
        }
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
    if controls == JobControls::default() {
        return run_process(cmd, collection, store, stop).await;
    }
    let deadline = controls.deadline.map(|d| Instant::now() + d);
    let past = Arc::new(AtomicBool::new(false));
    let mut total: Option<ProcessReport> = None;
    // Retries made so far.
    let mut retried = 0;
    loop {
        let (tx, rx) = watch::channel(*stop.borrow());
        let guard = tokio::spawn(forward(stop.clone(), tx, deadline, past.clone()));
        let report = run_process(cmd.clone(), collection.clone(), store.clone(), rx).await;
        guard.abort();
        let end = report.end.clone();
        let mut sum = merge(total.take(), report);
        if past.load(Ordering::SeqCst) {
            sum.end = past_deadline(controls);
            return sum;
        }
        if !failed(&end) || retried >= controls.retries || *stop.borrow() != StopLevel::Run {
            return sum;
        }
        retried += 1;
        log_note(
            &cmd,
            &format!(
                "the process {}; retry {retried} of the Job's spec.backoffLimit of {}",
                describe_end(&end),
                controls.retries
            ),
        );
        cmd.append_log = true;
        total = Some(sum);
        tokio::select! {
            () = tokio::time::sleep(restart_delay(retried)) => {}
            _ = stop.wait_for(|l| *l != StopLevel::Run) => return stopped(total),
            () = until(deadline) => {
                let mut sum = stopped(total);
                sum.end = past_deadline(controls);
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

/// The stop requests of the run, passed on, and a stop of its own once the deadline passes.
async fn forward(
    mut outer: watch::Receiver<StopLevel>,
    inner: watch::Sender<StopLevel>,
    deadline: Option<Instant>,
    past: Arc<AtomicBool>,
) {
    let mut deadline = deadline;
    loop {
        tokio::select! {
            changed = outer.changed() => {
                if changed.is_err() {
                    return;
                }
                let level = *outer.borrow();
                let _ = inner.send(level);
            }
            () = until(deadline) => {
                past.store(true, Ordering::SeqCst);
                let _ = inner.send(StopLevel::Terminate);
                deadline = None;
            }
        }
    }
}

fn past_deadline(controls: JobControls) -> ProcessEnd {
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
        let table = [
            (job(json!({})), JobControls::default()),
            (
                job(json!({"backoffLimit": 2, "activeDeadlineSeconds": 60})),
                JobControls {
                    retries: 2,
                    deadline: Some(Duration::from_secs(60)),
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
            assert_eq!(JobControls::of(&spec), want, "{spec}");
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
