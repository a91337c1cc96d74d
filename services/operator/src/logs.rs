//! Metrics on the cluster without a sidecar: one task per running trial follows the log of the
//! primary container of each of the trial's primary pods, oldest first, and parses every line
//! with the same collector as local mode, recording observations in the store as they are
//! read. A job that retries (a batch Job's `backoffLimit`) runs its attempts in new pods, and
//! each attempt's metrics are recorded, as Katib's collector in every pod records them; a
//! container restarted in place starts a new log, which is read from its start.
//!
//! The logs are always read from their beginning. A follower started after an operator restart
//! therefore first drops what an earlier follower recorded for the trial, and a follower whose
//! stream broke skips the lines it has already read, so no observation is recorded twice. A
//! follower is done once the job has ended and every pod it had is read.
//!
//! A follower wakes its trial's reconcile after recording new observations (at most once per
//! interval) and once more when the log ends, so a running trial whose log is silent costs no
//! reconciles at all.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, ListParams, LogParams};
use kube::{Client, ResourceExt};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;
use vernier_collector::{MetricsFilter, read_lines};
use vernier_core::Observation;
use vernier_spec::trial::TRIAL_LABEL;
use vernier_store::SqlStore;

/// How long a follower looks for the trial's primary pod before giving up.
const POD_WAIT: Duration = Duration::from_secs(120);
const RETRY: Duration = Duration::from_millis(300);
/// How often a follower that has read every pod looks for another (a retry's).
const IDLE_POLL: Duration = Duration::from_secs(1);

/// Which log to follow and what to look for in it.
#[derive(Debug, Clone)]
pub struct FollowTarget {
    pub namespace: String,
    pub trial: String,
    /// `primaryPodLabels`; the trial label is always added.
    pub pod_labels: BTreeMap<String, String>,
    pub container: String,
    /// Metric names to record, objective first.
    pub metrics: Vec<String>,
    /// `metricsFormat` regexes; empty means Katib's default.
    pub formats: Vec<String>,
}

/// How a follower tells its trial that there is something new to reconcile.
#[derive(Clone)]
pub struct Wake {
    /// Wake-ups for new observations are at least this far apart.
    pub interval: Duration,
    pub wake: Arc<dyn Fn() + Send + Sync>,
}

impl std::fmt::Debug for Wake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wake")
            .field("interval", &self.interval)
            .finish_non_exhaustive()
    }
}

/// Whether a trial's log has been read to its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FollowState {
    Following,
    Done,
}

#[derive(Debug)]
struct Follower {
    done: Arc<AtomicBool>,
    /// Set once the trial's job has ended: no pod is created after it.
    job_ended: Arc<AtomicBool>,
    handle: JoinHandle<()>,
}

/// The running followers, by trial UID.
#[derive(Debug, Default)]
pub struct Followers {
    inner: Mutex<HashMap<String, Follower>>,
}

impl Followers {
    /// Starts a follower for `key` unless one exists, telling it whether the trial's job has
    /// ended; reports whether every log of the trial is fully read.
    pub fn ensure(
        &self,
        key: &str,
        (client, store): (Client, SqlStore),
        target: FollowTarget,
        wake: Wake,
        job_ended: bool,
    ) -> FollowState {
        let mut map = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = map.get(key) {
            if job_ended {
                f.job_ended.store(true, Ordering::SeqCst);
            }
            return if f.done.load(Ordering::SeqCst) {
                FollowState::Done
            } else {
                FollowState::Following
            };
        }
        let done = Arc::new(AtomicBool::new(false));
        let ended = Arc::new(AtomicBool::new(job_ended));
        let (flag, ended_flag) = (done.clone(), ended.clone());
        let handle = tokio::spawn(async move {
            if let Err(e) = follow(client, store, &target, &wake, &ended_flag).await {
                tracing::warn!("trial {}: metrics from the pod log: {e}", target.trial);
            }
            flag.store(true, Ordering::SeqCst);
            (wake.wake)();
        });
        let follower = Follower {
            done,
            job_ended: ended,
            handle,
        };
        map.insert(key.to_string(), follower);
        FollowState::Following
    }

    /// Stops and forgets the follower of `key`, if any.
    pub fn stop(&self, key: &str) {
        let mut map = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = map.remove(key) {
            f.handle.abort();
        }
    }

    /// Stops every follower (this replica no longer leads).
    pub fn stop_all(&self) {
        let mut map = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        for (_, f) in map.drain() {
            f.handle.abort();
        }
    }

    /// How many followers are running (for tests and metrics).
    pub fn len(&self) -> usize {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for Followers {
    fn drop(&mut self) {
        let map = self.inner.get_mut().unwrap_or_else(|e| e.into_inner());
        for f in map.values() {
            f.handle.abort();
        }
    }
}

/// The label selector of the trial's primary pod.
pub fn pod_selector(target: &FollowTarget) -> String {
    let mut labels = target.pod_labels.clone();
    labels.insert(TRIAL_LABEL.into(), target.trial.clone());
    labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Follows the log of each primary pod of the trial, oldest first, until the job has ended
/// and every pod it had is read, recording metric lines in the store.
async fn follow(
    client: Client,
    store: SqlStore,
    target: &FollowTarget,
    wake: &Wake,
    job_ended: &AtomicBool,
) -> Result<(), String> {
    let filter = MetricsFilter::from_formats(&target.formats).map_err(|e| e.to_string())?;
    let pods: Api<Pod> = Api::namespaced(client, &target.namespace);
    let log = Log {
        filter: &filter,
        store: &store,
        target,
        wake,
    };
    let mut read: HashSet<String> = HashSet::new();
    let mut waited = Duration::ZERO;
    loop {
        // Read before listing: a listing made after the job ended shows every pod it had.
        let last_pass = job_ended.load(Ordering::SeqCst);
        let listed = primary_pods(&pods, target).await?;
        let Some(pod) = listed.into_iter().find(|p| !read.contains(p)) else {
            if last_pass {
                return Ok(());
            }
            if read.is_empty() && waited >= POD_WAIT {
                let selector = pod_selector(target);
                return Err(format!("no pod matches {selector} after {POD_WAIT:?}"));
            }
            let pause = if read.is_empty() { RETRY } else { IDLE_POLL };
            tokio::time::sleep(pause).await;
            waited += pause;
            continue;
        };
        if read.is_empty() {
            store
                .delete_observations(&target.trial)
                .await
                .map_err(|e| e.to_string())?;
        }
        follow_pod(&pods, &pod, &log).await?;
        read.insert(pod);
    }
}

/// Follows one pod's primary container to the end of its log, across broken streams (lines
/// already read are skipped) and restarts in place (a restarted container's log is new).
async fn follow_pod(pods: &Api<Pod>, pod_name: &str, log: &Log<'_>) -> Result<(), String> {
    let container = &log.target.container;
    let mut lines_read: usize = 0;
    let mut restarts = None;
    loop {
        let now = pod_state(pods, pod_name, container).await;
        (restarts, lines_read) = after_restarts(restarts, now.restarts, lines_read);
        match open_log(pods, pod_name, container).await {
            Ok(Some(stream)) => lines_read = lines_read.max(log.record(stream, lines_read).await?),
            Ok(None) => continue,
            Err(e) => {
                // A pod that ended without a readable log (its container never started) has
                // nothing to record; the next attempt's pod may.
                tracing::warn!("trial {}: {e}", log.target.trial);
                return Ok(());
            }
        }
        if pod_state(pods, pod_name, container).await.finished {
            return Ok(());
        }
        tokio::time::sleep(RETRY).await;
    }
}

/// The restart count to remember and the lines of the log already read, given the count seen
/// before and the one seen now. Only a count that grew is a restart in place, whose log starts
/// again; a count not known now (the pod could not be read) changes nothing, since reading the
/// log again from its start would record every observation twice.
fn after_restarts(
    before: Option<i32>,
    now: Option<i32>,
    lines_read: usize,
) -> (Option<i32>, usize) {
    match (before, now) {
        (Some(b), Some(n)) if n > b => (now, 0),
        (_, None) => (before, lines_read),
        _ => (now, lines_read),
    }
}

/// The trial's primary pods, oldest first.
async fn primary_pods(pods: &Api<Pod>, target: &FollowTarget) -> Result<Vec<String>, String> {
    let selector = pod_selector(target);
    let found = pods
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|e| format!("cannot list pods {selector}: {e}"))?;
    // Creation times have whole seconds; within one, a failed attempt came before the pod
    // the job created to replace it.
    let mut listed: Vec<(Option<Time>, u8, String)> = found
        .items
        .into_iter()
        .map(|p| {
            let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
            let rank = match phase {
                Some("Failed") => 0,
                Some("Succeeded") => 1,
                _ => 2,
            };
            (p.metadata.creation_timestamp.clone(), rank, p.name_any())
        })
        .collect();
    listed.sort();
    Ok(listed.into_iter().map(|(_, _, name)| name).collect())
}

/// The container's log stream; `None` (after a pause) while the container has not started.
async fn open_log(
    pods: &Api<Pod>,
    pod_name: &str,
    container: &str,
) -> Result<Option<impl futures_util::AsyncBufRead + use<>>, String> {
    let params = LogParams {
        container: (!container.is_empty()).then(|| container.to_string()),
        follow: true,
        ..LogParams::default()
    };
    match pods.log_stream(pod_name, &params).await {
        Ok(s) => Ok(Some(s)),
        Err(_) if !finished(pods, pod_name).await => {
            // The container may not have started yet.
            tokio::time::sleep(RETRY).await;
            Ok(None)
        }
        Err(e) => Err(format!("cannot read the log of pod {pod_name}: {e}")),
    }
}

/// One pass over a log stream: metric lines go to the store, and the trial is woken at most
/// once per interval after something new was recorded.
struct Log<'a> {
    filter: &'a MetricsFilter,
    store: &'a SqlStore,
    target: &'a FollowTarget,
    wake: &'a Wake,
}

impl Log<'_> {
    /// Reads `stream` past its first `skip` lines; returns the number of lines it had.
    async fn record(
        &self,
        stream: impl futures_util::AsyncBufRead + Unpin,
        skip: usize,
    ) -> Result<usize, String> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Vec<Observation>>();
        let (seen, written) = tokio::join!(self.read(stream, skip, tx), self.write(rx));
        written.map_err(|e| e.to_string())?;
        Ok(seen)
    }

    async fn read(
        &self,
        stream: impl futures_util::AsyncBufRead + Unpin,
        skip: usize,
        tx: tokio::sync::mpsc::UnboundedSender<Vec<Observation>>,
    ) -> usize {
        let mut seen = 0usize;
        // A broken stream is retried by the caller; the lines read so far are skipped then.
        let _ = read_lines(
            tokio_util::compat::FuturesAsyncReadCompatExt::compat(stream),
            |_| {},
            |line| {
                seen += 1;
                if seen <= skip {
                    return;
                }
                let parsed = self.filter.parse_line(line, &self.target.metrics);
                if parsed.metrics.is_empty() {
                    return;
                }
                let now = chrono::Utc::now().timestamp_micros();
                let batch = parsed.metrics.into_iter();
                let _ = tx.send(batch.map(|m| m.into_observation(now)).collect());
            },
        )
        .await;
        seen
    }

    async fn write(
        &self,
        mut rx: tokio::sync::mpsc::UnboundedReceiver<Vec<Observation>>,
    ) -> Result<(), vernier_store::StoreError> {
        let wake = self.wake;
        let mut last_wake: Option<tokio::time::Instant> = None;
        let mut unannounced = false;
        loop {
            let due = last_wake.map_or_else(tokio::time::Instant::now, |t| t + wake.interval);
            tokio::select! {
                batch = rx.recv() => {
                    let Some(batch) = batch else { break };
                    self.store.report_observations(&self.target.trial, &batch).await?;
                    unannounced = true;
                }
                _ = tokio::time::sleep_until(due), if unannounced => {
                    (wake.wake)();
                    last_wake = Some(tokio::time::Instant::now());
                    unannounced = false;
                }
            }
        }
        if unannounced {
            (wake.wake)();
        }
        Ok(())
    }
}

/// What a follower needs to know of a pod: whether it is gone or has ended (its log will not
/// grow), and how often the container has restarted in place (`None` when unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct PodState {
    finished: bool,
    restarts: Option<i32>,
}

async fn pod_state(pods: &Api<Pod>, name: &str, container: &str) -> PodState {
    match pods.get_opt(name).await {
        Ok(Some(pod)) => {
            let status = pod.status.as_ref();
            let finished = status
                .and_then(|s| s.phase.as_deref())
                .is_some_and(|p| p == "Succeeded" || p == "Failed");
            let restarts = status
                .and_then(|s| s.container_statuses.as_ref())
                .and_then(|all| {
                    all.iter()
                        .find(|c| container.is_empty() || c.name == container)
                })
                .map(|c| c.restart_count);
            PodState { finished, restarts }
        }
        Ok(None) => PodState {
            finished: true,
            restarts: None,
        },
        Err(_) => PodState::default(),
    }
}

async fn finished(pods: &Api<Pod>, name: &str) -> bool {
    pod_state(pods, name, "").await.finished
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_restart_count_that_grew_reads_the_log_again() {
        let cases = [
            // (before, now, lines read) -> (remembered, lines read)
            ((None, Some(0), 0), (Some(0), 0)),
            ((Some(0), Some(0), 7), (Some(0), 7)),
            ((Some(0), Some(1), 7), (Some(1), 0)),
            ((Some(0), None, 7), (Some(0), 7)),
            ((None, None, 7), (None, 7)),
            ((None, Some(2), 7), (Some(2), 7)),
        ];
        for ((before, now, read), want) in cases {
            assert_eq!(
                after_restarts(before, now, read),
                want,
                "{before:?} -> {now:?}"
            );
        }
    }

    #[test]
    fn selector_adds_the_trial_label() {
        let target = FollowTarget {
            namespace: "ns".into(),
            trial: "exp-abc".into(),
            pod_labels: BTreeMap::from([(
                "training.kubeflow.org/job-role".to_string(),
                "master".to_string(),
            )]),
            container: "pytorch".into(),
            metrics: vec!["loss".into()],
            formats: vec![],
        };
        assert_eq!(
            pod_selector(&target),
            "katib.kubeflow.org/trial=exp-abc,training.kubeflow.org/job-role=master"
        );
    }
}
