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
use std::collections::{BTreeMap, HashSet};
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

/// Runs the whole job until it succeeds, fails or `stop` asks it to end, and reports it as one
/// process: `Exited(0)` when it succeeded, `JobFailed` naming the replica otherwise, `Stopped`
/// when stopped on request. Metrics seen are those of the primary replicas, over all attempts.
pub async fn run_job(
    job: ReplicaJob,
    collection: Collection,
    store: SqlStore,
    mut stop: watch::Receiver<StopLevel>,
) -> ProcessReport {
    let mut summary = Summary {
        file: std::fs::File::create(&job.summary_log).ok(),
        start: Instant::now(),
    };
    let mut report = ProcessReport {
        end: ProcessEnd::Stopped,
        metrics_seen: HashSet::new(),
        rejected: Vec::new(),
        store_error: None,
    };
    for line in &job.description {
        summary.line(line);
    }
    if let Some((path, text)) = &job.hostfile
        && let Err(e) = std::fs::write(path, text)
    {
        let msg = format!("cannot write the MPI hostfile {}: {e}", path.display());
        summary.line(&msg);
        report.end = ProcessEnd::JobFailed(msg);
        return report;
    }

    let all: Vec<ReplicaId> = job.processes.iter().map(|p| p.id).collect();
    let mut slots: Vec<Slot> = job
        .processes
        .iter()
        .cloned()
        .map(|process| Slot {
            process,
            attempts: 0,
            stop: None,
        })
        .collect();
    let mut tasks: JoinSet<(usize, ProcessReport)> = JoinSet::new();
    for (i, slot) in slots.iter_mut().enumerate() {
        if slot.process.command.is_some() {
            start(&mut tasks, i, slot, &collection, &store, &mut summary, None);
        }
    }

    let mut finished: BTreeMap<ReplicaId, Decision> = BTreeMap::new();
    let mut restarts = 0u32;
    let mut outcome = Verdict::Running;
    let mut failure: Option<String> = None;
    let mut stop_level = *stop.borrow();
    let mut stop_open = true;

    // Run until the job is decided or a stop is asked for.
    while outcome == Verdict::Running && stop_level == StopLevel::Run {
        tokio::select! {
            joined = tasks.join_next() => {
                let Some(joined) = joined else {
                    failure = Some(format!(
                        "every replica has ended without meeting the success rule ({})",
                        job.success.describe()
                    ));
                    break;
                };
                let Ok((i, r)) = joined else {
                    failure = Some("a replica's supervising task failed".into());
                    break;
                };
                merge(&mut report, &slots[i].process, &r);
                let slot = &mut slots[i];
                slot.stop = None;
                let id = slot.process.id;
                let policy = slot.process.restart_policy;
                let decision = decide(policy, &r.end);
                let what = describe_end(&r.end);
                match decision {
                    Decision::Restart => {
                        restarts += 1;
                        if let Some(limit) = job.backoff_limit.filter(|l| restarts > *l) {
                            let msg = format!(
                                "replica {id} {what} (restartPolicy {}) and the job has used its runPolicy.backoffLimit of {limit} restart(s)",
                                policy.name()
                            );
                            summary.line(&msg);
                            failure = Some(msg);
                            break;
                        }
                        summary.line(&format!(
                            "{id} {what} (attempt {}); restartPolicy {}: restarting (job restart {restarts})",
                            slot.attempts,
                            policy.name()
                        ));
                        let note = format!("{what}; restart {} (restartPolicy {})", slot.attempts, policy.name());
                        start(&mut tasks, i, slot, &collection, &store, &mut summary, Some(note));
                    }
                    Decision::Succeeded | Decision::Failed => {
                        let verb = if decision == Decision::Succeeded { "succeeded" } else { "failed" };
                        summary.line(&format!(
                            "{id} {what}; restartPolicy {}: {verb}",
                            policy.name()
                        ));
                        if decision == Decision::Failed {
                            failure = Some(format!(
                                "replica {id} {what} (restartPolicy {})",
                                policy.name()
                            ));
                        }
                        finished.insert(id, decision);
                        outcome = verdict(&job.success, &finished, &all);
                    }
                }
            }
            changed = stop.changed(), if stop_open => {
                if changed.is_err() {
                    stop_open = false;
                    stop_level = StopLevel::Terminate;
                } else {
                    stop_level = *stop.borrow();
                }
            }
        }
    }

    let asked_to_stop =
        stop_level != StopLevel::Run && outcome == Verdict::Running && failure.is_none();
    let ending = if asked_to_stop {
        "stop requested".to_string()
    } else if outcome == Verdict::Succeeded {
        format!("job succeeded ({})", job.success.describe())
    } else {
        format!("job failed: {}", failure.clone().unwrap_or_default())
    };
    let running: Vec<String> = slots
        .iter()
        .filter(|s| s.stop.is_some())
        .map(|s| s.process.id.to_string())
        .collect();
    summary.line(&ending);
    if !running.is_empty() {
        summary.line(&format!(
            "stopping {} (SIGTERM to each process group, SIGKILL after the grace period)",
            running.join(", ")
        ));
    }
    // Replicas still running when the job ends (parameter servers, evaluators, a restarting
    // worker) are stopped, as the operator deletes their pods.
    let level = if stop_level == StopLevel::Kill {
        StopLevel::Kill
    } else {
        StopLevel::Terminate
    };
    for s in &slots {
        if let Some(tx) = &s.stop {
            let _ = tx.send(level);
        }
    }
    loop {
        tokio::select! {
            joined = tasks.join_next() => {
                let Some(joined) = joined else { break };
                if let Ok((i, r)) = joined {
                    merge(&mut report, &slots[i].process, &r);
                    summary.line(&format!("{} {}", slots[i].process.id, describe_end(&r.end)));
                    slots[i].stop = None;
                }
            }
            changed = stop.changed(), if stop_open => {
                if changed.is_err() {
                    stop_open = false;
                } else if *stop.borrow() == StopLevel::Kill {
                    for s in &slots {
                        if let Some(tx) = &s.stop {
                            let _ = tx.send(StopLevel::Kill);
                        }
                    }
                }
            }
        }
    }

    report.end = if asked_to_stop {
        ProcessEnd::Stopped
    } else if outcome == Verdict::Succeeded {
        ProcessEnd::Exited(0)
    } else {
        ProcessEnd::JobFailed(format!(
            "{} job failed: {}; each replica's output is in {}",
            job.kind.name(),
            failure.unwrap_or_else(|| "a replica failed".into()),
            job.summary_log
                .with_extension("")
                .join("<replica>.log")
                .display()
        ))
    };
    report
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
        return ProcessReport {
            end: ProcessEnd::Stopped,
            metrics_seen: HashSet::new(),
            rejected: Vec::new(),
            store_error: None,
        };
    }
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&cmd.log_path)
    {
        let _ = writeln!(
            f,
            "--- vernier: {} ---",
            note.unwrap_or_else(|| format!("restart {restart}"))
        );
    }
    run_process(cmd, collection, store, rx).await
}

fn merge(report: &mut ProcessReport, process: &ReplicaProcess, r: &ProcessReport) {
    if process.primary {
        report.metrics_seen.extend(r.metrics_seen.iter().cloned());
    }
    report
        .rejected
        .extend(r.rejected.iter().map(|x| format!("{}: {x}", process.id)));
    if report.store_error.is_none() {
        report.store_error.clone_from(&r.store_error);
    }
}

fn describe_end(end: &ProcessEnd) -> String {
    match end {
        ProcessEnd::Exited(code) => format!("exited with code {code}"),
        ProcessEnd::Signaled(sig) => format!("was killed by signal {sig}"),
        ProcessEnd::SpawnFailed(msg) => format!("could not start: {msg}"),
        ProcessEnd::Stopped => "stopped".to_string(),
        ProcessEnd::JobFailed(msg) => msg.clone(),
    }
}
