//! Runs the replica processes of one distributed trial as the training operator would: every
//! replica in its own process group with its own log, restarted by its `restartPolicy` within
//! the job's backoff limit, the job ended by the success rule or a permanent failure, and every
//! replica still running then (parameter servers, evaluators) stopped.

use super::env::ReplicaId;
use super::launch::{ReplicaJob, ReplicaProcess};
use super::policy::{Decision, Verdict, decide, restart_delay, verdict};
use crate::process::{
    Collection, MetricSource, ProcessEnd, ProcessReport, StopLevel, TrialCommand, run_process,
};
use std::collections::BTreeMap;
use std::io::Write;
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
}

/// The supervisor's log: `<log dir>/<trial>.log`, one line per event, timed from the start.
struct Summary {
    file: Option<std::fs::File>,
    start: Instant,
}

impl Summary {
    fn line(&mut self, text: &str) {
        if let Some(f) = &mut self.file {
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
        let mut summary = Summary {
            file: std::fs::File::create(&job.summary_log).ok(),
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
    /// still be listened to.
    async fn until_ending(&mut self, stop: &mut watch::Receiver<StopLevel>) -> (Ending, bool) {
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
            .filter(|s| s.stop.is_some())
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
            &mut self.summary,
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
    summary: &mut Summary,
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
        }
    };
    if restart == 0 {
        summary.line(&format!(
            "{} started: {} {} (log {})",
            slot.process.id,
            cmd.program,
            cmd.args.join(" "),
            cmd.log_path.display()
        ));
    }
    let store = store.clone();
    tasks.spawn(async move {
        let report = if restart > 0 {
            delayed_start(cmd, collection, store, rx, restart, restart_note).await
        } else {
            run_process(cmd, collection, store, rx).await
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
