//! The training operator's rules, as pure functions: what a replica's exit means under its
//! `restartPolicy`, how long to wait before a restart, and when the whole job has succeeded or
//! failed.

use super::env::ReplicaId;
use crate::process::ProcessEnd;
use std::collections::BTreeMap;
use std::time::Duration;
use vernier_spec::template::{JobKind, ReplicaSet, ReplicaType, RestartPolicy};

/// What happens to a replica that has exited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// It completed; it is not started again.
    Succeeded,
    /// It is started again (subject to the job's backoff limit).
    Restart,
    /// It failed for good, and so does the job.
    Failed,
}

/// The operator's reading of one exit under `policy`. A command that cannot start at all fails
/// at once under every policy: restarting cannot find a missing program.
pub fn decide(policy: RestartPolicy, end: &ProcessEnd) -> Decision {
    match end {
        ProcessEnd::SpawnFailed(_) | ProcessEnd::JobFailed(_) => Decision::Failed,
        // Only asked-for stops end this way; the supervisor does not consult the policy then.
        ProcessEnd::Stopped => Decision::Failed,
        ProcessEnd::Exited(0) => match policy {
            RestartPolicy::Always => Decision::Restart,
            _ => Decision::Succeeded,
        },
        ProcessEnd::Exited(code) => after_failure(policy, Some(*code)),
        // A signal reaches Kubernetes as exit code 128 + n.
        ProcessEnd::Signaled(name) => after_failure(policy, signal_exit_code(name)),
    }
}

/// A failed exit with Kubernetes' exit `code` (`None`: not one Kubernetes would report).
fn after_failure(policy: RestartPolicy, code: Option<i32>) -> Decision {
    match policy {
        RestartPolicy::Always | RestartPolicy::OnFailure => Decision::Restart,
        RestartPolicy::Never => Decision::Failed,
        RestartPolicy::ExitCode if code.is_some_and(retryable_exit_code) => Decision::Restart,
        RestartPolicy::ExitCode => Decision::Failed,
    }
}

/// The training operator's `IsRetryableExitCode`: 130, 137 and 143 (SIGINT, SIGKILL, SIGTERM:
/// a rescheduled or preempted pod) and 138 (SIGUSR1, the code it reserves for a trainer that
/// asks to be retried). Every other code, 128 and SIGSEGV's 139 included, is permanent.
fn retryable_exit_code(code: i32) -> bool {
    matches!(code, 130 | 137 | 138 | 143)
}

/// The exit code Kubernetes reports for a container killed by the signal named `name`.
pub(crate) fn signal_exit_code(name: &str) -> Option<i32> {
    name.parse::<nix::sys::signal::Signal>()
        .ok()
        .map(|s| 128 + s as i32)
}

/// How long to wait before restarting a replica for the `restart`-th time (1-based): like the
/// kubelet's crash-loop back-off (10 s doubling to 5 min) but scaled down to seconds, since
/// a local trial that crash-loops is usually being debugged.
pub fn restart_delay(restart: u32) -> Duration {
    let exp = restart.saturating_sub(1).min(4);
    Duration::from_millis(500u64 << exp)
}

/// The job's verdict so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Running,
    Succeeded,
    /// Which replica decided it, and why.
    Failed(String),
}

/// The replica (or replica type) whose success ends the job successfully.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SuccessRule {
    /// This replica has succeeded: the chief or master (TFJob), the master (PyTorchJob,
    /// XGBoostJob), the launcher (MPIJob), else worker 0.
    Replica(ReplicaId),
    /// Every replica of this type has succeeded (TFJob `successPolicy: AllWorkers`, or a
    /// PyTorchJob without a master).
    AllOf(ReplicaType),
}

impl SuccessRule {
    /// The operator's success rule for `set`.
    pub fn of(set: &ReplicaSet) -> SuccessRule {
        let has = |t: ReplicaType| set.get(t).is_some_and(|r| r.replicas > 0);
        let first = |t: ReplicaType| {
            SuccessRule::Replica(ReplicaId {
                replica_type: t,
                index: 0,
            })
        };
        match set.kind {
            JobKind::TfJob if has(ReplicaType::Chief) => first(ReplicaType::Chief),
            JobKind::TfJob if has(ReplicaType::Master) => first(ReplicaType::Master),
            JobKind::TfJob if set.success_policy.as_deref() == Some("AllWorkers") => {
                SuccessRule::AllOf(ReplicaType::Worker)
            }
            JobKind::TfJob => first(ReplicaType::Worker),
            JobKind::PyTorchJob if has(ReplicaType::Master) => first(ReplicaType::Master),
            JobKind::PyTorchJob => SuccessRule::AllOf(ReplicaType::Worker),
            JobKind::XgBoostJob => first(ReplicaType::Master),
            JobKind::MpiJob => first(ReplicaType::Launcher),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            SuccessRule::Replica(id) => format!("the job succeeds when {id} succeeds"),
            SuccessRule::AllOf(t) => {
                format!("the job succeeds when every {} replica succeeds", t.lower())
            }
        }
    }
}

/// The job's verdict from the replicas that have finished for good: a permanent failure ends
/// it as Failed, otherwise the success rule decides.
pub fn verdict(
    rule: &SuccessRule,
    finished: &BTreeMap<ReplicaId, Decision>,
    all: &[ReplicaId],
) -> Verdict {
    if let Some((id, _)) = finished.iter().find(|(_, d)| **d == Decision::Failed) {
        return Verdict::Failed(format!("replica {id} failed"));
    }
    let ok = |id: &ReplicaId| finished.get(id) == Some(&Decision::Succeeded);
    let done = match rule {
        SuccessRule::Replica(id) => ok(id),
        SuccessRule::AllOf(t) => {
            let mut of_type = all.iter().filter(|id| id.replica_type == *t).peekable();
            of_type.peek().is_some() && of_type.all(ok)
        }
    };
    if done {
        Verdict::Succeeded
    } else {
        Verdict::Running
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(t: ReplicaType, index: u32) -> ReplicaId {
        ReplicaId {
            replica_type: t,
            index,
        }
    }

    #[test]
    fn each_policy_reads_exits_as_the_operator_does() {
        use Decision::*;
        use RestartPolicy::*;
        let sig = ProcessEnd::Signaled("SIGKILL".into());
        let cases = [
            (Always, ProcessEnd::Exited(0), Restart),
            (Always, ProcessEnd::Exited(1), Restart),
            (OnFailure, ProcessEnd::Exited(0), Succeeded),
            (OnFailure, ProcessEnd::Exited(1), Restart),
            (OnFailure, sig.clone(), Restart),
            (Never, ProcessEnd::Exited(0), Succeeded),
            (Never, ProcessEnd::Exited(137), Failed),
            (Never, sig.clone(), Failed),
            (ExitCode, ProcessEnd::Exited(0), Succeeded),
            (ExitCode, ProcessEnd::Exited(1), Failed),
            (ExitCode, ProcessEnd::Exited(127), Failed),
            (ExitCode, ProcessEnd::Exited(128), Failed),
            (ExitCode, ProcessEnd::Exited(130), Restart),
            (ExitCode, ProcessEnd::Exited(134), Failed),
            (ExitCode, ProcessEnd::Exited(137), Restart),
            (ExitCode, ProcessEnd::Exited(138), Restart),
            (ExitCode, ProcessEnd::Exited(139), Failed),
            (ExitCode, ProcessEnd::Exited(143), Restart),
            (ExitCode, ProcessEnd::Exited(255), Failed),
            (ExitCode, sig, Restart),
            (ExitCode, ProcessEnd::Signaled("SIGTERM".into()), Restart),
            (ExitCode, ProcessEnd::Signaled("SIGUSR1".into()), Restart),
            (ExitCode, ProcessEnd::Signaled("SIGSEGV".into()), Failed),
            (ExitCode, ProcessEnd::Signaled("SIGABRT".into()), Failed),
            (ExitCode, ProcessEnd::Signaled("signal 77".into()), Failed),
            (OnFailure, ProcessEnd::Signaled("SIGSEGV".into()), Restart),
            (
                Always,
                ProcessEnd::SpawnFailed("no such file".into()),
                Failed,
            ),
        ];
        for (policy, end, want) in cases {
            assert_eq!(decide(policy, &end), want, "{policy:?} {end:?}");
        }
    }

    #[test]
    fn restart_delay_doubles_and_is_capped() {
        let delays: Vec<u128> = (1..=7).map(|n| restart_delay(n).as_millis()).collect();
        assert_eq!(delays, [500, 1000, 2000, 4000, 8000, 8000, 8000]);
    }

    #[test]
    fn the_chief_decides_success_and_any_permanent_failure_fails_the_job() {
        let all = [
            id(ReplicaType::Chief, 0),
            id(ReplicaType::Ps, 0),
            id(ReplicaType::Worker, 0),
        ];
        let rule = SuccessRule::Replica(all[0]);
        let mut finished = BTreeMap::from([(all[2], Decision::Succeeded)]);
        assert_eq!(verdict(&rule, &finished, &all), Verdict::Running);
        finished.insert(all[0], Decision::Succeeded);
        assert_eq!(verdict(&rule, &finished, &all), Verdict::Succeeded);
        finished.insert(all[1], Decision::Failed);
        assert_eq!(
            verdict(&rule, &finished, &all),
            Verdict::Failed("replica ps-0 failed".into())
        );
    }

    #[test]
    fn all_workers_must_succeed_under_all_of() {
        let all = [id(ReplicaType::Worker, 0), id(ReplicaType::Worker, 1)];
        let rule = SuccessRule::AllOf(ReplicaType::Worker);
        let mut finished = BTreeMap::from([(all[0], Decision::Succeeded)]);
        assert_eq!(verdict(&rule, &finished, &all), Verdict::Running);
        finished.insert(all[1], Decision::Succeeded);
        assert_eq!(verdict(&rule, &finished, &all), Verdict::Succeeded);
    }
}
