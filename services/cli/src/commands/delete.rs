//! `vernier delete NAME`: removes an experiment with its trials and observations, and with
//! `--logs` its trial logs too (only the `<trial>.log` files of its own trials, so a log
//! directory shared with other experiments keeps theirs).

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
    let trials: Vec<String> = store
        .list_trials(name)
        .await?
        .into_iter()
        .map(|t| t.name)
        .collect();
    // Taking the lease refuses to pull an experiment from under its live driver; the delete
    // drops the lease row with the experiment.
    let lease = vernier_runner::lease::ExperimentLease::acquire(&store, name).await?;
    store.delete_experiment(name).await?;
    drop(lease);
    outln!("deleted experiment {name}");
    let files: Vec<PathBuf> = log_files(Path::new(&exp.log_dir), &trials)
        .into_iter()
        .filter(|p| p.exists())
        .collect();
    if files.is_empty() {
        return Ok(Exit::Succeeded);
    }
    if !logs {
        outln!(
            "kept its {} trial log{} in {}; `vernier delete {name} --logs` removes them with the experiment",
            files.len(),
            if files.len() == 1 { "" } else { "s" },
            exp.log_dir
        );
        return Ok(Exit::Succeeded);
    }
    for f in &files {
        if let Err(e) = std::fs::remove_file(f) {
            errln!("warning: cannot remove {}: {e}", f.display());
        }
    }
    // Only an emptied directory goes; anything else in it stays.
    let _ = std::fs::remove_dir(&exp.log_dir);
    outln!(
        "removed {} trial log{} from {}",
        files.len(),
        if files.len() == 1 { "" } else { "s" },
        exp.log_dir
    );
    Ok(Exit::Succeeded)
}

/// The log file of each trial (`<log_dir>/<trial>.log`, as the runner names them); none when
/// the experiment keeps no local logs.
fn log_files(log_dir: &Path, trials: &[String]) -> Vec<PathBuf> {
    if log_dir.as_os_str().is_empty() {
        return Vec::new();
    }
    trials
        .iter()
        .map(|t| log_dir.join(format!("{t}.log")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_files_are_the_trials_own_and_none_without_a_log_dir() {
        let trials = ["e-a".to_string(), "e-b".to_string()];
        assert_eq!(
            log_files(Path::new("logs/e"), &trials),
            [
                PathBuf::from("logs/e/e-a.log"),
                PathBuf::from("logs/e/e-b.log")
            ]
        );
        assert!(log_files(Path::new(""), &trials).is_empty());
    }
}
