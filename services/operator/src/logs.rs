//! Metrics on the cluster without a sidecar: one task per running trial follows the log of the
//! primary container of each of the trial's primary pods, oldest first, and parses every line
//! with the same collector as local mode, recording observations in the store as they are
//! read. A job that retries (a batch Job's `backoffLimit`) runs its attempts in new pods, and
//! each attempt's metrics are recorded, as Katib's collector in every pod records them; a
//! container restarted in place starts a new log, which is read from its start.
//!
//! The logs are always read from their beginning. A follower started after an operator restart
//! therefore first drops what an earlier follower recorded for the trial, and a follower whose
//! stream broke skips the lines it has already read, so no observation is recorded twice. The
//! log is asked with the kubelet's time of each line, which its observations keep (a line's own
//! leading time wins, as in Katib's collector), so a re-read keeps the times of the values. A
//! follower is done once the job has ended and every pod it had is read.
//!
//! A follower wakes its trial's reconcile after recording new observations (at most once per
//! interval) and once more when the log ends, so a running trial whose log is silent costs no
//! reconciles at all.

use crate::tenure::Tenure;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, LogParams};
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

/// How long a follower looks for the trial's primary pod before it warns that none matches.
const POD_WAIT: Duration = Duration::from_secs(120);
const RETRY: Duration = Duration::from_millis(300);
/// How many distinct metric names a follower keeps from the log for the verdict's message.
const MAX_SEEN: usize = 32;
/// How often a follower that has read every pod looks for another (a retry's).
const IDLE_POLL: Duration = Duration::from_secs(1);

/// Which log to follow and what to look for in it.
#[derive(Debug, Clone)]
pub struct FollowTarget {
    pub namespace: String,
    pub trial: String,
    /// `primaryPodLabels`; the trial label is added unless pods are found by owner.
    pub pod_labels: BTreeMap<String, String>,
    /// The kind of the trial's job when it has no pod template the operator labels (an Argo
    /// Workflow): its pods are then the ones whose owners lead to the job or the Trial.
    pub owner_kind: Option<String>,
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
    /// Done without any pod matching the trial's primary pod labels: no log was read.
    NoPod,
}

#[derive(Debug)]
struct Follower {
    done: Arc<AtomicBool>,
    /// Set when the job ended without any pod matching.
    no_pod: Arc<AtomicBool>,
    /// Set once the trial's job has ended: no pod is created after it.
    job_ended: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<String>>>,
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
        (client, store, tenure): (Client, SqlStore, Arc<Tenure>),
        target: FollowTarget,
        wake: Wake,
        job_ended: bool,
    ) -> FollowState {
        let mut map = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = map.get(key) {
            if job_ended {
                f.job_ended.store(true, Ordering::SeqCst);
            }
            return match (
                f.done.load(Ordering::SeqCst),
                f.no_pod.load(Ordering::SeqCst),
            ) {
                (false, _) => FollowState::Following,
                (true, false) => FollowState::Done,
                (true, true) => FollowState::NoPod,
            };
        }
        let done = Arc::new(AtomicBool::new(false));
        let no_pod = Arc::new(AtomicBool::new(false));
        let ended = Arc::new(AtomicBool::new(job_ended));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let flags = Flags {
            no_pod: no_pod.clone(),
            job_ended: ended.clone(),
            seen: seen.clone(),
        };
        let flag = done.clone();
        let handle = tokio::spawn(async move {
            let writer = (store, tenure.as_ref());
            if let Err(e) = follow(client, writer, &target, &wake, &flags).await {
                tracing::warn!("trial {}: metrics from the pod log: {e}", target.trial);
            }
            flag.store(true, Ordering::SeqCst);
            (wake.wake)();
        });
        let follower = Follower {
            done,
            no_pod,
            job_ended: ended,
            seen,
            handle,
        };
        map.insert(key.to_string(), follower);
        FollowState::Following
    }

    /// The metric names the follower of `key` read in the log, also those the store does not
    /// hold (a value it could not record, `nan`; a name the experiment does not collect), for
    /// the MetricsUnavailable message ("saw val_loss"), as local mode reads them.
    pub fn seen(&self, key: &str) -> Vec<String> {
        let map = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        map.get(key).map_or_else(Vec::new, |f| {
            f.seen.lock().unwrap_or_else(|e| e.into_inner()).clone()
        })
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

/// The label selector of the trial's primary pods: `primaryPodLabels`, and the trial label
/// on pods the operator labelled.
pub fn pod_selector(target: &FollowTarget) -> String {
    let mut labels = target.pod_labels.clone();
    if target.owner_kind.is_none() {
        labels.insert(TRIAL_LABEL.into(), target.trial.clone());
    }
    labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// What a follower tells its trial, and is told.
struct Flags {
    no_pod: Arc<AtomicBool>,
    /// Set once the trial's job has ended: no pod is created after it.
    job_ended: Arc<AtomicBool>,
    /// See [`Followers::seen`].
    seen: Arc<Mutex<Vec<String>>>,
}

/// Follows the log of each primary pod of the trial, oldest first, until the job has ended
/// and every pod it had is read, recording metric lines in the store. A pod may come late (a
/// workflow's earlier steps, a quota), so the follower waits for one as long as the job runs.
async fn follow(
    client: Client,
    (store, tenure): (SqlStore, &Tenure),
    target: &FollowTarget,
    wake: &Wake,
    flags: &Flags,
) -> Result<(), String> {
    let filter = MetricsFilter::from_formats(&target.formats).map_err(|e| e.to_string())?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &target.namespace);
    let log = Log {
        filter: &filter,
        store: &store,
        tenure,
        target,
        wake,
        seen: &flags.seen,
        told_rejected: AtomicBool::new(false),
    };
    let mut owned = Owned::new(client, target);
    let mut read: HashSet<String> = HashSet::new();
    let (mut waited, mut warned) = (Duration::ZERO, false);
    loop {
        // Read before listing: a listing made after the job ended shows every pod it had.
        let last_pass = flags.job_ended.load(Ordering::SeqCst);
        let listed = primary_pods(&pods, target, &mut owned).await?;
        let Some(pod) = listed.into_iter().find(|p| !read.contains(p)) else {
            if last_pass && read.is_empty() {
                flags.no_pod.store(true, Ordering::SeqCst);
                let selector = pod_selector(target);
                return Err(format!("no pod matched {selector}, so no log was read"));
            }
            if last_pass {
                return Ok(());
            }
            if read.is_empty() && waited >= POD_WAIT && !warned {
                warned = true;
                let selector = pod_selector(target);
                tracing::warn!(
                    "trial {}: no pod matches {selector} after {POD_WAIT:?}; still looking while its job runs",
                    target.trial
                );
            }
            let pause = if read.is_empty() { RETRY } else { IDLE_POLL };
            tokio::time::sleep(pause).await;
            waited += pause;
            continue;
        };
        if read.is_empty() {
            still_leading(tenure)?;
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
async fn primary_pods(
    pods: &Api<Pod>,
    target: &FollowTarget,
    owned: &mut Owned<'_>,
) -> Result<Vec<String>, String> {
    let selector = pod_selector(target);
    let found = pods
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|e| format!("cannot list pods {selector}: {e}"))?;
    let mut items = Vec::with_capacity(found.items.len());
    for p in found.items {
        if owned.is_trials(&p).await {
            items.push(p);
        }
    }
    // Creation times have whole seconds; within one, a failed attempt came before the pod
    // the job created to replace it.
    let mut listed: Vec<(Option<Time>, u8, String)> = items
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

/// Which pods belong to the trial by their owners, for a job whose pods carry no trial label
/// (Katib's pod webhook walks a pod's owners up to its Trial the same way). Each pod's answer
/// is kept: its owners do not change.
struct Owned<'a> {
    client: Client,
    target: &'a FollowTarget,
    known: HashMap<String, bool>,
}

/// How far up a pod's owners the trial is looked for (a step's pod, its Job, the Workflow).
const OWNER_DEPTH: usize = 6;

impl<'a> Owned<'a> {
    fn new(client: Client, target: &'a FollowTarget) -> Self {
        Owned {
            client,
            target,
            known: HashMap::new(),
        }
    }

    /// Whether `pod`, listed by the trial's selector, is the trial's.
    async fn is_trials(&mut self, pod: &Pod) -> bool {
        let Some(kind) = self.target.owner_kind.as_deref() else {
            return true; // the selector holds the trial label
        };
        let uid = pod.uid().unwrap_or_else(|| pod.name_any());
        if let Some(&known) = self.known.get(&uid) {
            return known;
        }
        // An owner that could not be read is asked about again at the next listing.
        let Some(verdict) = self.walk(pod.owner_references().to_vec(), kind).await else {
            return false;
        };
        self.known.insert(uid, verdict);
        verdict
    }

    /// Follows controller owners up from `refs` until one is the trial's job or the Trial;
    /// `None` when an owner could not be read.
    async fn walk(&self, mut refs: Vec<OwnerReference>, kind: &str) -> Option<bool> {
        for _ in 0..OWNER_DEPTH {
            if refs
                .iter()
                .any(|r| leads_to_trial(r, &self.target.trial, kind))
            {
                return Some(true);
            }
            let controller = refs.iter().find(|r| r.controller == Some(true));
            let Some(next) = controller.or(refs.first()) else {
                return Some(false);
            };
            let api = owner_api(&self.client, &self.target.namespace, next);
            match api.get_opt(&next.name).await {
                Ok(Some(owner)) => refs = owner.metadata.owner_references.unwrap_or_default(),
                Ok(None) => return Some(false),
                Err(e) => {
                    tracing::debug!("trial {}: owner {}: {e}", self.target.trial, next.name);
                    return None;
                }
            }
        }
        Some(false)
    }
}

/// Whether an owner reference is the trial's job (named as the trial) or the Trial itself.
fn leads_to_trial(r: &OwnerReference, trial: &str, job_kind: &str) -> bool {
    let trial_kind = r.kind == "Trial" && r.api_version.starts_with("kubeflow.org/");
    r.name == trial && (r.kind == job_kind || trial_kind)
}

/// The API of an owner's kind in `ns` (its plural guessed from the kind, as kube does).
fn owner_api(client: &Client, ns: &str, owner: &OwnerReference) -> Api<DynamicObject> {
    let (group, version) = match owner.api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", owner.api_version.as_str()),
    };
    let gvk = GroupVersionKind::gvk(group, version, &owner.kind);
    Api::namespaced_with(client.clone(), ns, &ApiResource::from_gvk(&gvk))
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
        timestamps: true,
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
    tenure: &'a Tenure,
    seen: &'a Mutex<Vec<String>>,
    /// Whether a value that could not be recorded (`nan`) was warned about.
    told_rejected: AtomicBool,
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
        written?;
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
            |stamped| {
                seen += 1;
                if seen <= skip {
                    return;
                }
                let (written_us, line) = kubelet_time(stamped);
                self.saw(line);
                let parsed = self.filter.parse_line(line, &self.target.metrics);
                if let Some(r) = parsed.rejected.first()
                    && !self.told_rejected.swap(true, Ordering::SeqCst)
                {
                    tracing::warn!(
                        "trial {}: a metric value that is not a number was skipped: {r} (the \
                         first; more are skipped without a word)",
                        self.target.trial
                    );
                }
                if parsed.metrics.is_empty() {
                    return;
                }
                let at = written_us.unwrap_or_else(|| chrono::Utc::now().timestamp_micros());
                let batch = parsed.metrics.into_iter();
                let _ = tx.send(batch.map(|m| m.into_observation(at)).collect());
            },
        )
        .await;
        seen
    }

    /// Keeps the metric names `line` shows among those seen, up to [`MAX_SEEN`] distinct ones
    /// (as local mode reads them from a trial's output once it ended without its objective).
    fn saw(&self, line: &str) {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if seen.len() >= MAX_SEEN {
            return;
        }
        for name in self.filter.names_in(line) {
            if seen.len() < MAX_SEEN && !seen.contains(&name) {
                seen.push(name);
            }
        }
    }

    async fn write(
        &self,
        mut rx: tokio::sync::mpsc::UnboundedReceiver<Vec<Observation>>,
    ) -> Result<(), String> {
        let wake = self.wake;
        let mut last_wake: Option<tokio::time::Instant> = None;
        let mut unannounced = false;
        loop {
            let due = last_wake.map_or_else(tokio::time::Instant::now, |t| t + wake.interval);
            tokio::select! {
                batch = rx.recv() => {
                    let Some(batch) = batch else { break };
                    still_leading(self.tenure)?;
                    let recorded = self.store.report_observations(&self.target.trial, &batch);
                    recorded.await.map_err(|e| e.to_string())?;
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

/// The time the kubelet put before a log line (`timestamps=true`) in microseconds, and the line
/// as the container wrote it. A line's observations take that time unless the line holds its
/// own, so a log read again after an operator restart keeps the times of its values instead of
/// taking the time of the re-read. A line without a readable time is taken whole.
fn kubelet_time(line: &str) -> (Option<i64>, &str) {
    let (time, rest) = line.split_once(' ').unwrap_or((line, ""));
    match chrono::DateTime::parse_from_rfc3339(time) {
        Ok(t) => (Some(t.timestamp_micros()), rest),
        Err(_) => (None, line),
    }
}

/// Refuses a store write once this replica's leader lease may have passed to another, whose
/// followers record the trial's log themselves.
fn still_leading(tenure: &Tenure) -> Result<(), String> {
    match tenure.holds() {
        true => Ok(()),
        false => Err(
            "this replica no longer holds the leader lease; the new leader records \
                      the log"
                .into(),
        ),
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
    fn the_kubelets_time_is_taken_off_the_line_and_kept() {
        let cases = [
            (
                "2026-12-05T10:00:01.123456789Z loss=0.5",
                Some(1_796_464_801_123_456),
                "loss=0.5",
            ),
            ("2026-12-05T10:00:01Z ", Some(1_796_464_801_000_000), ""),
            ("2026-12-05T10:00:01Z", Some(1_796_464_801_000_000), ""),
            (
                "loss=0.5 at 2026-12-05T10:00:01Z",
                None,
                "loss=0.5 at 2026-12-05T10:00:01Z",
            ),
            ("", None, ""),
        ];
        for (line, time, rest) in cases {
            assert_eq!(kubelet_time(line), (time, rest), "{line:?}");
        }
    }

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
    fn selector_adds_the_trial_label_unless_pods_are_found_by_owner() {
        let mut target = FollowTarget {
            namespace: "ns".into(),
            trial: "exp-abc".into(),
            pod_labels: BTreeMap::from([(
                "training.kubeflow.org/job-role".to_string(),
                "master".to_string(),
            )]),
            owner_kind: None,
            container: "pytorch".into(),
            metrics: vec!["loss".into()],
            formats: vec![],
        };
        assert_eq!(
            pod_selector(&target),
            "katib.kubeflow.org/trial=exp-abc,training.kubeflow.org/job-role=master"
        );
        target.owner_kind = Some("Workflow".into());
        assert_eq!(
            pod_selector(&target),
            "training.kubeflow.org/job-role=master"
        );
    }

    #[test]
    fn an_owner_leads_to_the_trial_when_it_is_its_job_or_the_trial() {
        let owner = |api_version: &str, kind: &str, name: &str| OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            ..OwnerReference::default()
        };
        let cases = [
            (owner("argoproj.io/v1alpha1", "Workflow", "t-1"), true),
            (owner("kubeflow.org/v1beta1", "Trial", "t-1"), true),
            (owner("argoproj.io/v1alpha1", "Workflow", "t-2"), false),
            (owner("batch/v1", "Job", "t-1"), false),
            (owner("example.com/v1", "Trial", "t-1"), false),
        ];
        for (r, want) in cases {
            assert_eq!(leads_to_trial(&r, "t-1", "Workflow"), want, "{r:?}");
        }
    }
}
