//! Checkpoint directories for trials that continue another trial (PBT's exploit and continue
//! steps, ASHA and Hyperband promotions): every trial gets its own directory,
//! `<log dir>/checkpoints/<trial>/` (Katib's `<experiment>/<trial>` layout on the suggestion
//! volume, with the log directory standing for the volume), and before it starts the parent's
//! directory is copied into it, as Katib's PBT service copies it on the volume. The trial
//! learns its directories as on a cluster: the `suggestion_trial_dir` path, wherever it
//! appears in the command or environment, becomes its own directory (Katib mounts the trial's
//! sub-directory there), and `VERNIER_CHECKPOINT_DIR` / `VERNIER_PARENT_CHECKPOINT_DIR` name
//! both for templates that prefer the environment.
//!
//! The plan is pure ([`plan`], [`apply`]); [`prepare`] is the one I/O step. The copy is
//! hand-written (regular files, directories and symbolic links, a dozen lines of std) rather
//! than a crate, since nothing in the workspace copies trees yet.

use crate::child::replace_path;
use crate::experiment::LocalExperiment;
use crate::process::TrialCommand;
use crate::replicas::TrialLaunch;
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use vernier_algorithms::checkpoint::{parent_trial, trial_dir_setting};

/// Environment variable naming the trial's own checkpoint directory.
pub const CHECKPOINT_DIR_ENV: &str = "VERNIER_CHECKPOINT_DIR";
/// Environment variable naming the parent trial's checkpoint directory (only with a parent).
pub const PARENT_CHECKPOINT_DIR_ENV: &str = "VERNIER_PARENT_CHECKPOINT_DIR";

/// Where one trial's checkpoints live and where it starts from.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointPlan {
    pub own: PathBuf,
    pub parent: Option<PathBuf>,
    /// `suggestion_trial_dir` as written in the spec: mapped to `own` in commands.
    pub mount: Option<String>,
}

/// A trial's own checkpoint directory under the experiment's log directory.
pub fn checkpoint_dir(log_dir: &Path, trial: &str) -> PathBuf {
    log_dir.join("checkpoints").join(trial)
}

/// The plan for one trial, from the experiment's settings and the trial's labels.
pub fn plan(
    exp: &LocalExperiment,
    trial: &str,
    labels: &BTreeMap<String, String>,
) -> CheckpointPlan {
    let log_dir = &exp.paths.log_dir;
    CheckpointPlan {
        own: checkpoint_dir(log_dir, trial),
        parent: parent_trial(labels).map(|p| checkpoint_dir(log_dir, p)),
        mount: trial_dir_setting(&exp.settings).map(str::to_string),
    }
}

impl CheckpointPlan {
    /// Whether the trial has checkpoint directories at all: only when the algorithm names a
    /// `suggestion_trial_dir` or the trial continues a parent, so other experiments' log
    /// directories hold only their logs.
    pub fn used(&self) -> bool {
        self.mount.is_some() || self.parent.is_some()
    }
}

/// Tells every process of the launch where its directories are.
pub fn apply(plan: &CheckpointPlan, launch: &mut TrialLaunch) {
    if !plan.used() {
        return;
    }
    match launch {
        TrialLaunch::Process(cmd, _) => apply_to(plan, cmd),
        TrialLaunch::Replicas(job) => job
            .processes
            .iter_mut()
            .filter_map(|p| p.command.as_mut())
            .for_each(|cmd| apply_to(plan, cmd)),
    }
}

fn apply_to(plan: &CheckpointPlan, cmd: &mut TrialCommand) {
    let own = plan.own.display().to_string();
    if let Some(mount) = &plan.mount {
        // Matched without its trailing '/', so `/ckpt/` in the settings also maps `/ckpt` and
        // `/ckpt/model.pt` as written in the command.
        let from = mount.trim_end_matches('/');
        if !from.is_empty() {
            for arg in cmd.args.iter_mut() {
                *arg = replace_path(arg, from, &own);
            }
            for (_, value) in cmd.env.iter_mut() {
                *value = replace_path(value, from, &own);
            }
        }
    }
    cmd.env.push((CHECKPOINT_DIR_ENV.to_string(), own));
    if let Some(parent) = &plan.parent {
        cmd.env.push((
            PARENT_CHECKPOINT_DIR_ENV.to_string(),
            parent.display().to_string(),
        ));
    }
}

/// Creates the trial's directory afresh and copies the parent's into it. A parent without a
/// directory (its trainer saved nothing) leaves the trial's empty: it trains from scratch. A
/// parent whose checkpoint is something else (a file put in its place) cannot be continued
/// from, as Katib's copy (`shutil.copytree`) refuses it too.
pub fn prepare(plan: &CheckpointPlan) -> io::Result<()> {
    if !plan.used() {
        return Ok(());
    }
    if plan.own.exists() {
        std::fs::remove_dir_all(&plan.own)?;
    }
    match &plan.parent {
        Some(parent) if parent.is_dir() => copy_tree(parent, &plan.own),
        Some(parent) if parent.exists() => Err(io::Error::other(format!(
            "its parent's checkpoint {} is not a directory",
            parent.display()
        ))),
        _ => std::fs::create_dir_all(&plan.own),
    }
}

fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        } else {
            // A named pipe would block the copy (and the driver) forever; sockets and devices
            // are no checkpoint either. Python's copytree, which Katib's PBT uses, refuses them.
            tracing::warn!(
                "checkpoint copy skips {}: not a regular file, directory or symlink",
                entry.path().display()
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(args: &[&str], env: &[(&str, &str)]) -> TrialCommand {
        TrialCommand {
            trial: "t2".into(),
            program: "python3".into(),
            command_field: String::new(),
            args: args.iter().map(|s| s.to_string()).collect(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            work_dir: PathBuf::from("/w"),
            log_path: PathBuf::from("/logs/t2.log"),
            metrics_path: None,
            append_log: false,
            pid_file: None,
            pod: Default::default(),
            volume_dirs: Vec::new(),
        }
    }

    #[test]
    fn the_mount_path_and_environment_name_the_trial_directories() {
        let plan = CheckpointPlan {
            own: checkpoint_dir(Path::new("/logs/e"), "t2"),
            parent: Some(checkpoint_dir(Path::new("/logs/e"), "t1")),
            mount: Some("/var/log/katib/checkpoints/".into()),
        };
        let mut launch = TrialLaunch::Process(
            command(
                &["--checkpoint=/var/log/katib/checkpoints/", "--lr=0.1"],
                &[("CKPT", "/var/log/katib/checkpoints")],
            ),
            Default::default(),
        );
        apply(&plan, &mut launch);
        let TrialLaunch::Process(cmd, _) = launch else {
            unreachable!()
        };
        assert_eq!(
            cmd.args,
            ["--checkpoint=/logs/e/checkpoints/t2/", "--lr=0.1"]
        );
        assert_eq!(
            cmd.env,
            [
                ("CKPT".to_string(), "/logs/e/checkpoints/t2".to_string()),
                (CHECKPOINT_DIR_ENV.into(), "/logs/e/checkpoints/t2".into()),
                (
                    PARENT_CHECKPOINT_DIR_ENV.into(),
                    "/logs/e/checkpoints/t1".into()
                ),
            ]
        );
    }

    #[test]
    fn only_the_mount_path_itself_and_paths_under_it_are_mapped() {
        let plan = CheckpointPlan {
            own: PathBuf::from("/logs/e/checkpoints/t2"),
            parent: None,
            mount: Some("/data".into()),
        };
        let mut launch = TrialLaunch::Process(
            command(
                &["--ckpt=/data", "--cache=/database/cache", "/data/m.pt"],
                &[("URL", "https://example.com/data/train.csv")],
            ),
            Default::default(),
        );
        apply(&plan, &mut launch);
        let TrialLaunch::Process(cmd, _) = launch else {
            unreachable!()
        };
        assert_eq!(
            cmd.args,
            [
                "--ckpt=/logs/e/checkpoints/t2",
                "--cache=/database/cache",
                "/logs/e/checkpoints/t2/m.pt"
            ]
        );
        assert_eq!(cmd.env[0].1, "https://example.com/data/train.csv");
    }

    #[test]
    fn a_named_pipe_in_the_parent_is_skipped_not_waited_on() {
        let root = std::env::temp_dir().join(format!("vernier-ckpt-fifo-{}", std::process::id()));
        let parent = checkpoint_dir(&root, "p");
        std::fs::create_dir_all(&parent).unwrap();
        std::fs::write(parent.join("model.ckpt"), "w").unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(parent.join("pipe"))
            .status()
            .unwrap();
        assert!(made.success());
        let plan = CheckpointPlan {
            own: checkpoint_dir(&root, "c"),
            parent: Some(parent),
            mount: None,
        };
        prepare(&plan).unwrap();
        assert!(plan.own.join("model.ckpt").is_file());
        assert!(!plan.own.join("pipe").exists());
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn without_a_mount_or_parent_nothing_is_named_or_made() {
        let root = std::env::temp_dir().join(format!("vernier-ckpt-none-{}", std::process::id()));
        let plan = CheckpointPlan {
            own: root.join("checkpoints/t"),
            parent: None,
            mount: None,
        };
        let mut launch = TrialLaunch::Process(
            command(&["/var/log/katib/checkpoints/"], &[]),
            Default::default(),
        );
        apply(&plan, &mut launch);
        let TrialLaunch::Process(cmd, _) = launch else {
            unreachable!()
        };
        assert_eq!(cmd.args, ["/var/log/katib/checkpoints/"]);
        assert!(cmd.env.is_empty());
        prepare(&plan).unwrap();
        assert!(!root.exists());
    }

    #[test]
    fn prepare_copies_the_parent_and_replaces_stale_contents() {
        let root = std::env::temp_dir().join(format!("vernier-ckpt-{}", std::process::id()));
        let parent = checkpoint_dir(&root, "p");
        std::fs::create_dir_all(parent.join("sub")).unwrap();
        std::fs::write(parent.join("model.ckpt"), "step=3").unwrap();
        std::fs::write(parent.join("sub/state"), "x").unwrap();
        let own = checkpoint_dir(&root, "c");
        std::fs::create_dir_all(&own).unwrap();
        std::fs::write(own.join("stale"), "old").unwrap();
        let plan = CheckpointPlan {
            own: own.clone(),
            parent: Some(parent),
            mount: None,
        };
        prepare(&plan).unwrap();
        assert_eq!(
            std::fs::read_to_string(own.join("model.ckpt")).unwrap(),
            "step=3"
        );
        assert_eq!(std::fs::read_to_string(own.join("sub/state")).unwrap(), "x");
        assert!(!own.join("stale").exists());
        // A parent that saved nothing: an empty directory, trained from scratch.
        let orphan = CheckpointPlan {
            own: checkpoint_dir(&root, "d"),
            parent: Some(checkpoint_dir(&root, "missing")),
            mount: None,
        };
        prepare(&orphan).unwrap();
        assert!(orphan.own.is_dir());
        // A file where the parent's directory should be breaks the lineage: said, not ignored.
        let file = checkpoint_dir(&root, "f");
        std::fs::write(&file, "not a directory").unwrap();
        let broken = CheckpointPlan {
            own: checkpoint_dir(&root, "e"),
            parent: Some(file.clone()),
            mount: None,
        };
        let e = prepare(&broken).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "its parent's checkpoint {} is not a directory",
                file.display()
            )
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
