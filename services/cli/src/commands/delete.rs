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
        // The experiment is gone, so `delete --logs` can no longer find them (and a rerun of
        // the name would be another experiment's): the hint is the shell's.
        let remove = match holds_only(Path::new(&exp.log_dir), &files) {
            true => format!("`rm -r {}` removes them", shell_word(&exp.log_dir)),
            false => "they share the directory with other files, remove them by hand".into(),
        };
        outln!(
            "kept {counted} in {}; hint: {remove} (`vernier delete NAME --logs` deletes an experiment with its logs)",
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

/// Whether everything in `dir` is one of `files` (or the `checkpoints` directory holding
/// some of them), so removing `dir` removes nothing else.
fn holds_only(dir: &Path, files: &[PathBuf]) -> bool {
    let ours = |p: &Path| files.iter().any(|f| f == p);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().all(|e| {
        let p = e.path();
        if ours(&p) {
            return true;
        }
        p.file_name().is_some_and(|n| n == "checkpoints")
            && std::fs::read_dir(&p).is_ok_and(|mut c| c.all(|e| e.is_ok_and(|e| ours(&e.path()))))
    })
}

/// `text` as one word for a POSIX shell, as `--db` is quoted in suggested commands.
fn shell_word(text: &str) -> String {
    // Only a NUL byte cannot be quoted, and no path holds one.
    shlex::try_quote(text).map_or_else(|_| text.to_string(), |q| q.into_owned())
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

    #[test]
    fn a_log_directory_is_offered_for_removal_only_when_it_holds_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let trials = ["e-a".to_string()];
        let files = log_files(dir.path(), &trials);
        std::fs::write(&files[0], "loss=1\n").unwrap();
        std::fs::create_dir_all(&files[2]).unwrap();
        assert!(holds_only(dir.path(), &files));
        std::fs::write(dir.path().join("checkpoints/other"), "").unwrap();
        assert!(!holds_only(dir.path(), &files));
        assert!(!holds_only(&dir.path().join("missing"), &files));
    }

    #[test]
    fn shell_words_are_read_back_by_a_shell_as_one_word() {
        for text in ["vernier-logs/census", "my logs/x", "it's", "", "$HOME/a b"] {
            assert_eq!(
                shlex::split(&shell_word(text)),
                Some(vec![text.to_string()]),
                "{text}"
            );
        }
        assert_eq!(shell_word("vernier-logs/census"), "vernier-logs/census");
    }
}
