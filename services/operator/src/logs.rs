//! Metrics on the cluster without a sidecar: one task per running trial follows the log of the
//! primary container of the trial's primary pod and parses every line with the same collector
//! as local mode, recording observations in the store as they are read.
//!
//! The log is always read from its beginning. A follower started after an operator restart
//! therefore first drops what an earlier follower recorded for the trial, and a follower whose
//! stream broke skips the lines it has already read, so no observation is recorded twice.
//!
//! A follower wakes its trial's reconcile after recording new observations (at most once per
//! interval) and once more when the log ends, so a running trial whose log is silent costs no
//! reconciles at all.

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, LogParams};
use kube::{Client, ResourceExt};
use std::collections::{BTreeMap, HashMap};
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
    handle: JoinHandle<()>,
}

/// The running followers, by trial UID.
#[derive(Debug, Default)]
pub struct Followers {
    inner: Mutex<HashMap<String, Follower>>,
}

impl Followers {
    /// Starts a follower for `key` unless one exists; reports whether the log is fully read.
    pub fn ensure(
        &self,
        key: &str,
        client: Client,
        store: SqlStore,
        target: FollowTarget,
        wake: Wake,
    ) -> FollowState {
        let mut map = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = map.get(key) {
            return if f.done.load(Ordering::SeqCst) {
                FollowState::Done
            } else {
                FollowState::Following
            };
        }
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let handle = tokio::spawn(async move {
            if let Err(e) = follow(client, store, &target, &wake).await {
                tracing::warn!("trial {}: metrics from the pod log: {e}", target.trial);
            }
            flag.store(true, Ordering::SeqCst);
            (wake.wake)();
        });
        map.insert(key.to_string(), Follower { done, handle });
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

/// Follows the primary pod's log to its end, across broken streams (lines already read are
/// skipped), recording metric lines in the store.
async fn follow(
    client: Client,
    store: SqlStore,
    target: &FollowTarget,
    wake: &Wake,
) -> Result<(), String> {
    let filter = MetricsFilter::from_formats(&target.formats).map_err(|e| e.to_string())?;
    let pods: Api<Pod> = Api::namespaced(client, &target.namespace);
    let mut lines_read: usize = 0;
    let mut cleared = false;
    loop {
        let pod_name = primary_pod(&pods, target).await?;
        let Some(stream) = open_log(&pods, &pod_name, &target.container).await? else {
            continue;
        };
        if !cleared {
            store
                .delete_observations(&target.trial)
                .await
                .map_err(|e| e.to_string())?;
            cleared = true;
        }
        let log = Log {
            filter: &filter,
            store: &store,
            target,
            wake,
        };
        lines_read = lines_read.max(log.record(stream, lines_read).await?);
        if finished(&pods, &pod_name).await {
            return Ok(());
        }
        tokio::time::sleep(RETRY).await;
    }
}

/// The name of the trial's primary pod, waiting up to [`POD_WAIT`] for it to exist.
async fn primary_pod(pods: &Api<Pod>, target: &FollowTarget) -> Result<String, String> {
    let selector = pod_selector(target);
    let mut waited = Duration::ZERO;
    loop {
        let found = pods
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(|e| format!("cannot list pods {selector}: {e}"))?;
        if let Some(pod) = found.items.into_iter().next() {
            return Ok(pod.name_any());
        }
        if waited >= POD_WAIT {
            return Err(format!("no pod matches {selector} after {POD_WAIT:?}"));
        }
        tokio::time::sleep(RETRY).await;
        waited += RETRY;
    }
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

/// Whether the pod is gone or has ended, so its log will not grow.
async fn finished(pods: &Api<Pod>, name: &str) -> bool {
    match pods.get_opt(name).await {
        Ok(Some(pod)) => pod
            .status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .is_some_and(|p| p == "Succeeded" || p == "Failed"),
        Ok(None) => true,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
