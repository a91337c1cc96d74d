//! Stops the process groups a killed driver (`kill -9`, a crash, a lost terminal) left
//! running, when `vernier resume` marks their trial Killed: a trial that sleeps or only
//! listens (a parameter server) would otherwise live on, unseen, beside the new trials.
//!
//! A running trial's process group id is kept in `<log dir>/<trial>.pid`, and each replica's of
//! a distributed trial in `<log dir>/<trial>/<replica>.pid`. A group is signalled only if one of
//! its processes still carries the trial's `KATIB_TRIAL_NAME` in its environment (read from
//! `/proc`), so a process id reused by an unrelated program is never touched. Where `/proc`
//! does not exist (macOS), nothing is stopped.

use crate::process::STOP_GRACE;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where a single-process trial's group id is kept while it runs.
pub fn pid_path(log_dir: &Path, trial: &str) -> PathBuf {
    log_dir.join(format!("{trial}.pid"))
}

/// Stops every process group of `trial` still running; returns what was stopped (`trial` for a
/// single-process trial, the replica names of a distributed one).
pub async fn stop_orphans(log_dir: &Path, trial: &str) -> Vec<String> {
    let mut pid_files = vec![pid_path(log_dir, trial)];
    if let Ok(entries) = std::fs::read_dir(log_dir.join(trial)) {
        pid_files.extend(
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("pid")),
        );
    }
    let mut stopped = Vec::new();
    for path in pid_files {
        let pgid = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok());
        if let Some(pgid) = pgid.filter(|p| *p > 1)
            && group_belongs_to(pgid, trial)
        {
            stop_group(Pid::from_raw(pgid)).await;
            if let Some(name) = path.file_stem().and_then(|s| s.to_str()) {
                stopped.push(name.to_string());
            }
        }
        let _ = std::fs::remove_file(&path);
    }
    stopped.sort();
    stopped
}

/// Whether a process of group `pgid` runs with `KATIB_TRIAL_NAME=<trial>`.
fn group_belongs_to(pgid: i32, trial: &str) -> bool {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return false;
    };
    let marker = format!("KATIB_TRIAL_NAME={trial}");
    procs.filter_map(Result::ok).any(|p| {
        let dir = p.path();
        let in_group = std::fs::read_to_string(dir.join("stat"))
            .ok()
            .and_then(|stat| process_group(&stat))
            == Some(pgid);
        in_group
            && std::fs::read(dir.join("environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == marker.as_bytes()))
    })
}

/// The process group field of `/proc/<pid>/stat` (`pid (comm) state ppid pgrp ...`); the
/// command name may hold spaces and parentheses, so fields are counted after the last `)`.
fn process_group(stat: &str) -> Option<i32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(2)?.parse().ok()
}

/// SIGTERM, then SIGKILL if the group outlives the grace period.
async fn stop_group(pgid: Pid) {
    if killpg(pgid, Signal::SIGTERM).is_err() {
        return;
    }
    let step = Duration::from_millis(100);
    let mut waited = Duration::ZERO;
    while waited < STOP_GRACE {
        // Signal 0 checks that the group still has a member.
        if killpg(pgid, None).is_err() {
            return;
        }
        tokio::time::sleep(step).await;
        waited += step;
    }
    let _ = killpg(pgid, Signal::SIGKILL);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_group_is_read_after_the_command_name() {
        assert_eq!(
            process_group("4242 (python3 (x) y) S 1 4240 4240 0 -1"),
            Some(4240)
        );
        assert_eq!(process_group("garbage"), None);
    }
}
