//! `vernier delete NAME`: removes an experiment with its trials and observations (first
//! stopping the trial processes a dead driver left running), and with
//! `--logs` what its trials left in the log directory too (each trial's log, its own directory
//! and its checkpoint directory, and nothing else, so a log directory shared with other
//! experiments keeps theirs).

use crate::Exit;
use crate::out::{errln, outln};
use std::path::{Path, PathBuf};

pub async fn delete(db: &str, name: &str, logs: bool) -> anyhow::Result<Exit> {
    let store = crate::db::open(db, vernier_store::OpenMode::Existing).await?;
    let Some(exp) = store.get_experiment(name).await? else {
        anyhow::bail!(
            "experiment {name:?} does not exist in {}\nhint: `vernier list` shows the experiments there",
            vernier_store::redact_url(db)
        )
    };
    let listed = store.list_trials(name).await?;
    // Taking the lease refuses to pull an experiment from under its live driver; the delete
    // drops the lease row with the experiment.
    let lease = vernier_runner::lease::ExperimentLease::acquire(&store, name).await?;
    // With no live driver, a trial still marked active was left by one that died: its
    // processes would run on with nothing left to track or stop them.
    for t in listed.iter().filter(|t| t.state.is_active()) {
        let stopped = vernier_runner::orphans::stop_orphans(Path::new(&exp.log_dir), &t.name).await;
        if !stopped.is_empty() {
            outln!(
                "stopped {} left running by a vernier that is gone",
                stopped.join(", ")
            );
        }
    }
    let trials: Vec<String> = listed.into_iter().map(|t| t.name).collect();
    store.delete_experiment(name).await?;
    drop(lease);
    outln!("deleted experiment {name}");
    // Each trial's files that exist: a log, a directory and checkpoints, or only some.
    let per_trial: Vec<Vec<PathBuf>> = trials
        .iter()
        .map(|t| {
            log_files(Path::new(&exp.log_dir), std::slice::from_ref(t))
                .into_iter()
                .filter(|p| p.exists())
                .collect()
        })
        .collect();
    let with_files = per_trial.iter().filter(|f| !f.is_empty()).count();
    let files: Vec<PathBuf> = per_trial.into_iter().flatten().collect();
    let counted = format!(
        "the logs of {with_files} trial{}",
        if with_files == 1 { "" } else { "s" }
    );
    if files.is_empty() {
        return Ok(Exit::Succeeded);
    }
    if !logs {
        outln!(
            "kept {counted} in {}; `vernier delete {name} --logs` removes them with the experiment",
            exp.log_dir
        );
        return Ok(Exit::Succeeded);
    }
    for f in &files {
        let removed = match f.is_dir() {
            true => std::fs::remove_dir_all(f),
            false => std::fs::remove_file(f),
        };
        if let Err(e) = removed {
            errln!("warning: cannot remove {}: {e}", f.display());
        }
    }
    // Only an emptied directory goes; anything else in it stays.
    let _ = std::fs::remove_dir(Path::new(&exp.log_dir).join("checkpoints"));
    let _ = std::fs::remove_dir(&exp.log_dir);
    outln!("removed {counted} from {}", exp.log_dir);
    Ok(Exit::Succeeded)
}

/// What each trial left under the log directory (see [`vernier_runner::trial_files`]); none
/// when the experiment keeps no local logs.
fn log_files(log_dir: &Path, trials: &[String]) -> Vec<PathBuf> {
    if log_dir.as_os_str().is_empty() {
        return Vec::new();
    }
    trials
        .iter()
        .flat_map(|t| vernier_runner::trial_files(log_dir, t))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_files_are_the_trials_own_and_none_without_a_log_dir() {
        let trials = ["e-a".to_string(), "e-b".to_string()];
        let files = log_files(Path::new("logs/e"), &trials);
        let shown: Vec<&str> = files.iter().filter_map(|p| p.to_str()).collect();
        assert_eq!(
            shown,
            [
                "logs/e/e-a.log",
                "logs/e/e-a",
                "logs/e/checkpoints/e-a",
                "logs/e/e-b.log",
                "logs/e/e-b",
                "logs/e/checkpoints/e-b"
            ]
        );
        assert!(log_files(Path::new(""), &trials).is_empty());
    }
}
