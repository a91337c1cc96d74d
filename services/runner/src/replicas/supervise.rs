//! Runs the replica processes of one distributed trial as the training operator would: every
//! replica in its own process group with its own log, restarted by its `restartPolicy` within
//! the job's backoff limit, the job ended by the success rule or a permanent failure, and every
//! replica still running then (parameter servers, evaluators) stopped.

use super::env::ReplicaId;
use super::launch::{ReplicaJob, ReplicaProcess};
use super::policy::{Decision, Verdict, decide, restart_delay, verdict};
use crate::process::{
    Collection, MetricSource, ProcessEnd, ProcessReport, StopLevel, TrialCommand, now_us,
    run_process, run_process_then,
};
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::watch;
use tokio::task::JoinSet;
use vernier_store::SqlStore;

/// One replica as the supervisor tracks it.
struct Slot {
    process: ReplicaProcess,
    /// How many times it has been started.
    attempts: u32,
    /// Present while it runs (or waits to be restarted).
    stop: Option<watch::Sender<StopLevel>>,
    /// Whether its first attempt's process has started: one whose program was not found
    /// never has, and is not said to be stopped.
    started: Arc<AtomicBool>,
}

/// The supervisor's log: `<log dir>/<trial>.log`, one line per event, timed from the start.
/// Shared with the replicas' tasks, which say when their process has started.
#[derive(Clone)]
struct Summary {
    file: Option<Arc<Mutex<std::fs::File>>>,
    start: Instant,
}

impl Summary {
    fn line(&self, text: &str) {
        if let Some(Ok(mut f)) = self.file.as_ref().map(|f| f.lock()) {
            let t = self.start.elapsed().as_secs_f64();
            // A full disk must not stop the trial; the replicas' own logs may still work.
            let _ = writeln!(f, "[{t:8.3}s] {text}");
        }
    }
}

/// How the job ended.
#[derive(Debug, Clone, PartialEq)]
enum Ending {
    Succeeded,
    /// Why, naming the replica.
    Failed(String),
    /// Ctrl-C, the experiment completing, or the driver going away.
    StopRequested,
}

/// The job while it runs: its replicas, their tasks, and what has happened so far.
struct Supervisor {
    job: ReplicaJob,
    all: Vec<ReplicaId>,
    slots: Vec<Slot>,
    tasks: JoinSet<(usize, ProcessReport)>,
    finished: BTreeMap<ReplicaId, Decision>,
    restarts: u32,
    summary: Summary,
    collection: Collection,
    store: SqlStore,
    report: ProcessReport,
}

/// Runs the whole job until it succeeds, fails or `stop` asks it to end, and reports it as one
/// process: `Exited(0)` when it succeeded, `JobFailed` naming the replica otherwise, `Stopped`
/// when stopped on request. Metrics seen are those of the primary replicas, over all attempts.
pub async fn run_job(
    job: ReplicaJob,
    collection: Collection,
    store: SqlStore,
    mut stop: watch::Receiver<StopLevel>,
) -> ProcessReport {
    let mut sup = Supervisor::new(job, collection, store);
    for (path, text) in &sup.job.hostfiles {
        if let Err(e) = std::fs::write(path, text) {
            let msg = format!("cannot write the MPI hostfile {}: {e}", path.display());
            sup.summary.line(&msg);
            sup.report.end = ProcessEnd::JobFailed(msg);
            sup.report.ended_us = Some(now_us());
            return sup.report;
        }
    }
    for i in 0..sup.slots.len() {
        sup.start(i, None);
    }
    let (ending, stop_open) = sup.until_ending(&mut stop).await;
    sup.summary.line(&match &ending {
        Ending::Succeeded => format!("job succeeded ({})", sup.job.success.describe()),
        Ending::Failed(why) => format!("job failed: {why}"),
        Ending::StopRequested => "stop requested".to_string(),
    });
    let level = if *stop.borrow() == StopLevel::Kill {
        StopLevel::Kill
    } else {
        StopLevel::Terminate
    };
    sup.stop_the_rest(level, &mut stop, stop_open).await;

    let job = &sup.job;
    sup.report.end = match ending {
        Ending::StopRequested => ProcessEnd::Stopped,
        Ending::Succeeded => ProcessEnd::Exited(0),
        Ending::Failed(why) => ProcessEnd::JobFailed(format!(
            "{} job failed: {why}; each replica's output is in {}",
            job.kind.name(),
            job.summary_log
                .with_extension("")
                .join("<replica>.log")
                .display()
        )),
    };
    sup.report
}

impl Supervisor {
    /// A supervisor of `job` with nothing started yet, its summary log begun.
    fn new(job: ReplicaJob, collection: Collection, store: SqlStore) -> Supervisor {
        let summary = Summary {
            file: std::fs::File::create(&job.summary_log)
                .ok()
                .map(|f| Arc::new(Mutex::new(f))),
            start: Instant::now(),
        };
        for line in &job.description {
            summary.line(line);
        }
        Supervisor {
            all: job.processes.iter().map(|p| p.id).collect(),
            slots: job
                .processes
                .iter()
                .cloned()
                .map(|process| Slot {
                    process,
                    attempts: 0,
                    stop: None,
                    started: Arc::new(AtomicBool::new(false)),
                })
                .collect(),
            job,
            tasks: JoinSet::new(),
            finished: BTreeMap::new(),
            restarts: 0,
            summary,
            collection,
            store,
            report: ProcessReport::stopped(Vec::new()),
        }
    }

    /// Follows the replicas until the job ends: by its success rule, a failure, its
    /// `activeDeadlineSeconds` (the operator's `PastActiveDeadline`, measured from the job's
    /// start, restarts included) or a stop request. The second value is whether `stop` can
    /// still be listened to. The job's end time (`report.ended_us`) is the exit that decided it,
    /// or the moment of its deadline or stop.
    async fn until_ending(&mut self, stop: &mut watch::Receiver<StopLevel>) -> (Ending, bool) {
        let ended = self.until_ending_unstamped(stop).await;
        if matches!(ended.0, Ending::StopRequested) || self.report.ended_us.is_none() {
            self.report.ended_us = Some(now_us());
        }
        ended
    }

    /// [`Self::until_ending`] without the stop's end time.
    async fn until_ending_unstamped(
        &mut self,
        stop: &mut watch::Receiver<StopLevel>,
    ) -> (Ending, bool) {
        let deadline = self.job.active_deadline;
        let never = std::time::Duration::from_secs(100 * 365 * 24 * 3600);
        let past_deadline = tokio::time::sleep(deadline.unwrap_or(never));
        tokio::pin!(past_deadline);
        loop {
            if *stop.borrow() != StopLevel::Run {
                return (Ending::StopRequested, true);
            }
            tokio::select! {
                joined = self.tasks.join_next() => {
                    if let Some(ending) = self.on_joined(joined) {
                        return (ending, true);
                    }
                }
                () = &mut past_deadline, if deadline.is_some() => {
                    self.report.ended_us = Some(now_us());
                    return (Ending::Failed(format!(
                        "it was active longer than its runPolicy.activeDeadlineSeconds of {} s",
                        deadline.unwrap_or_default().as_secs()
                    )), true);
                }
                changed = stop.changed() => {
                    if changed.is_err() {
                        // The driver went away: treat it as a stop request.
                        return (Ending::StopRequested, false);
                    }
                }
            }
        }
    }

    /// What a replica's supervising task ending means for the job, if it ends it.
    fn on_joined(
        &mut self,
        joined: Option<Result<(usize, ProcessReport), tokio::task::JoinError>>,
    ) -> Option<Ending> {
        match joined {
            None => Some(Ending::Failed(format!(
                "every replica has ended without meeting the success rule ({})",
                self.job.success.describe()
            ))),
            Some(Err(e)) => Some(Ending::Failed(format!(
                "a replica's supervising task failed: {e}"
            ))),
            Some(Ok((i, r))) => self.on_exit(i, &r),
        }
    }
}

impl Supervisor {
    /// Applies the replica's restart policy to how it ended; returns the job's ending once
    /// there is one.
    fn on_exit(&mut self, i: usize, r: &ProcessReport) -> Option<Ending> {
        merge(&mut self.report, &self.slots[i].process, r);
        self.report.ended_us = r.ended_us;
        let slot = &mut self.slots[i];
        slot.stop = None;
        let (id, policy, attempt) = (slot.process.id, slot.process.restart_policy, slot.attempts);
        let what = describe_end(&r.end);
        match decide(policy, &r.end) {
            Decision::Restart => {
                self.restarts += 1;
                // The operator fails the job once its pods' restart counts reach the limit
                // (`PastBackoffLimit`: `>= limit`, or `> 0` for a limit of 0).
                if let Some(limit) = self
                    .job
                    .backoff_limit
                    .filter(|l| self.restarts >= (*l).max(1))
                {
                    return Some(Ending::Failed(format!(
                        "replica {id} {what} (restartPolicy {}) and the job has used its runPolicy.backoffLimit of {limit} restart(s)",
                        policy.name()
                    )));
                }
                self.summary.line(&format!(
                    "{id} {what} (attempt {attempt}); restartPolicy {}: restarting (job restart {})",
                    policy.name(),
                    self.restarts
                ));
                let note = format!(
                    "{what}; restart {attempt} (restartPolicy {})",
                    policy.name()
                );
                self.start(i, Some(note));
                None
            }
            decision => {
                let failed = decision == Decision::Failed;
                self.summary.line(&format!(
                    "{id} {what}; restartPolicy {}: {}",
                    policy.name(),
                    if failed { "failed" } else { "succeeded" }
                ));
                self.finished.insert(id, decision);
                match verdict(&self.job.success, &self.finished, &self.all) {
                    Verdict::Running => None,
                    Verdict::Succeeded => Some(Ending::Succeeded),
                    Verdict::Failed(_) => Some(Ending::Failed(format!(
                        "replica {id} {what} (restartPolicy {})",
                        policy.name()
                    ))),
                }
            }
        }
    }

    /// Stops every replica still running (parameter servers, evaluators, a worker waiting to
    /// restart), as the operator deletes their pods, and waits for them; a Kill request while
    /// waiting escalates.
    async fn stop_the_rest(
        &mut self,
        level: StopLevel,
        stop: &mut watch::Receiver<StopLevel>,
        mut stop_open: bool,
    ) {
        let running: Vec<String> = self
            .slots
            .iter()
            .filter(|s| s.stop.is_some() && (s.attempts > 1 || s.started.load(Ordering::SeqCst)))
            .map(|s| s.process.id.to_string())
            .collect();
        if !running.is_empty() {
            self.summary.line(&format!(
                "stopping {} (SIGTERM to each process group, SIGKILL after the grace period)",
                running.join(", ")
            ));
        }
        self.signal_running(level);
        loop {
            tokio::select! {
                joined = self.tasks.join_next() => {
                    let Some(joined) = joined else { break };
                    if let Ok((i, r)) = joined {
                        merge(&mut self.report, &self.slots[i].process, &r);
                        let line = format!("{} {}", self.slots[i].process.id, describe_end(&r.end));
                        self.summary.line(&line);
                        self.slots[i].stop = None;
                    }
                }
                changed = stop.changed(), if stop_open => {
                    if changed.is_err() {
                        stop_open = false;
                    } else if *stop.borrow() == StopLevel::Kill {
                        self.signal_running(StopLevel::Kill);
                    }
                }
            }
        }
    }

    fn signal_running(&self, level: StopLevel) {
        for s in &self.slots {
            if let Some(tx) = &s.stop {
                let _ = tx.send(level);
            }
        }
    }

    /// Starts (or restarts, after the back-off delay) replica `i`; replicas without a command
    /// (MPI workers) are not started.
    fn start(&mut self, i: usize, restart_note: Option<String>) {
        start(
            &mut self.tasks,
            i,
            &mut self.slots[i],
            &self.collection,
            &self.store,
            &self.summary,
            restart_note,
        );
    }
}

/// Starts (or restarts, after the back-off delay) the replica in `slot`.
fn start(
    tasks: &mut JoinSet<(usize, ProcessReport)>,
    i: usize,
    slot: &mut Slot,
    collection: &Collection,
    store: &SqlStore,
    summary: &Summary,
    restart_note: Option<String>,
) {
    let Some(mut cmd) = slot.process.command.clone() else {
        return;
    };
    let restart = slot.attempts;
    slot.attempts += 1;
    cmd.append_log = restart > 0;
    let (tx, rx) = watch::channel(StopLevel::Run);
    slot.stop = Some(tx);
    let collection = if slot.process.primary {
        collection.clone()
    } else {
        // Katib injects its collector only into primary pods.
        Collection {
            filter: collection.filter.clone(),
            metrics: Vec::new(),
            source: MetricSource::Pushed,
            recorded: None,
        }
    };
    let store = store.clone();
    // Said once the process runs: a program that is not found never started.
    // Each word quoted for a shell where it needs it, so where words begin and end shows.
    let words = std::iter::once(&cmd.program).chain(&cmd.args);
    let shown: Vec<String> = words
        .map(|w| shlex::try_quote(w).map_or_else(|_| w.clone(), |q| q.into_owned()))
        .collect();
    let started = format!(
        "{} started: {} (log {})",
        slot.process.id,
        shown.join(" "),
        cmd.log_path.display()
    );
    let summary = summary.clone();
    let flag = slot.started.clone();
    tasks.spawn(async move {
        let report = if restart > 0 {
            delayed_start(cmd, collection, store, rx, restart, restart_note).await
        } else {
            let on_start = move |_| {
                flag.store(true, Ordering::SeqCst);
                summary.line(&started);
            };
            run_process_then(cmd, collection, store, rx, on_start).await
        };
        (i, report)
    });
}

/// Waits out the restart back-off (or a stop request), marks the restart in the replica's log,
/// and runs it again.
async fn delayed_start(
    cmd: TrialCommand,
    collection: Collection,
    store: SqlStore,
    mut rx: watch::Receiver<StopLevel>,
    restart: u32,
    note: Option<String>,
) -> ProcessReport {
    let stopped = tokio::select! {
        _ = tokio::time::sleep(restart_delay(restart)) => false,
        r = rx.wait_for(|l| *l != StopLevel::Run) => { let _ = r; true }
    };
    if stopped {
        return ProcessReport::stopped(Vec::new());
    }
    log_note(&cmd, &note.unwrap_or_else(|| format!("restart {restart}")));
    run_process(cmd, collection, store, rx).await
}

fn merge(report: &mut ProcessReport, process: &ReplicaProcess, r: &ProcessReport) {
    if process.primary {
        report.metrics_seen.extend(r.metrics_seen.iter().cloned());
        for path in &r.collected_from {
            if !report.collected_from.contains(path) {
                report.collected_from.push(path.clone());
            }
        }
    }
    report.absorb_problems(r, &format!("{}: ", process.id));
}

/// A `--- vernier: ... ---` line in a process's log, between two of its runs.
pub(crate) fn log_note(cmd: &TrialCommand, what: &str) {
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&cmd.log_path)
    {
        let _ = writeln!(f, "--- vernier: {what} ---");
    }
}

/// How a process ended, as a log line says it.
pub(crate) fn describe_end(end: &ProcessEnd) -> String {
    match end {
        ProcessEnd::Exited(code) => format!("exited with code {code}"),
        ProcessEnd::Signaled(sig) => format!("was killed by signal {sig}"),
        ProcessEnd::SpawnFailed(msg) => format!("could not start: {msg}"),
        ProcessEnd::Stopped => "stopped".to_string(),
        ProcessEnd::JobFailed(msg) => msg.clone(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::experiment::{LocalExperiment, LocalPaths};
    use crate::replicas::TrialLaunch;
    use vernier_core::TrialState;

    /// A PyTorchJob whose master sleeps and whose two workers run a program nobody has.
    fn experiment(dir: &std::path::Path) -> LocalExperiment {
        let yaml = r#"apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata: {name: e}
spec:
  objective: {type: minimize, objectiveMetricName: loss}
  algorithm: {algorithmName: random}
  parameters:
    - {name: lr, parameterType: double, feasibleSpace: {min: "0.1", max: "1"}}
  trialTemplate:
    primaryContainerName: pytorch
    trialParameters: [{name: lr, reference: lr}]
    trialSpec:
      apiVersion: kubeflow.org/v1
      kind: PyTorchJob
      spec:
        pytorchReplicaSpecs:
          Master:
            replicas: 1
            template:
              spec:
                containers:
                  - {name: pytorch, image: p, command: [sleep, "30", "${trialParameters.lr}"]}
          Worker:
            replicas: 2
            template:
              spec:
                containers:
                  - {name: pytorch, image: p, command: [vernier-test-no-such-program, "${trialParameters.lr}"]}
"#;
        let spec = vernier_spec::parse_experiment(yaml).unwrap();
        let paths = LocalPaths {
            work_dir: dir.to_path_buf(),
            log_dir: dir.join("logs"),
        };
        let exp = LocalExperiment::new(spec, paths).unwrap();
        exp.create_log_dir().unwrap();
        exp
    }

    #[tokio::test]
    async fn a_replica_that_cannot_start_is_not_said_to_start_and_every_failure_is_logged() {
        let dir = tempfile::tempdir().unwrap();
        let exp = experiment(dir.path());
        let launch = exp.launch_for("e-0", &[("lr".into(), "0.5".into())]);
        let Ok(TrialLaunch::Replicas(job)) = launch else {
            panic!("expected replicas, got {launch:?}");
        };
        let summary_log = job.summary_log.clone();
        let store = SqlStore::connect(":memory:").await.unwrap();
        crate::test_store::with_trial(&store, TrialState::Running).await;
        let (_stop, rx) = watch::channel(StopLevel::Run);
        let report = run_job(job, exp.collection.clone(), store, rx).await;
        assert!(
            matches!(&report.end, ProcessEnd::JobFailed(why) if why.contains("could not start")),
            "{:?}",
            report.end
        );
        let log = std::fs::read_to_string(summary_log).unwrap();
        let field = "check spec.trialTemplate.trialSpec.spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].command";
        assert!(log.contains("] master-0 started: sleep 30 0.5"), "{log}");
        for worker in ["worker-0", "worker-1"] {
            assert!(!log.contains(&format!("{worker} started")), "{log}");
            let failed = format!(
                "] {worker} could not start: command \"vernier-test-no-such-program\" was not found"
            );
            let at = log.find(&failed).unwrap_or_else(|| panic!("{log}"));
            assert!(log[at..].contains(field), "{log}");
        }
        // The master may or may not have started before the first worker failed; the workers
        // never did, so they are not among those stopped.
        let mut stopping = log.lines().filter(|l| l.contains("] stopping "));
        assert!(stopping.all(|l| !l.contains("worker")), "{log}");
        assert!(!log.contains("..."), "{log}");
    }
}
