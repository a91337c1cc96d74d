//! Where a trial container's volume mounts lead on this machine: an `emptyDir` to a directory
//! of the trial's own under the log directory (made empty for each trial, as each pod gets
//! one), a `hostPath` to its path. The spec crate decides which mounts move
//! (`vernier_spec::template::mounts`); this module makes the directories and rewrites the
//! words where the mount paths appear.

use crate::child::replace_paths;
use std::path::{Path, PathBuf};
use vernier_spec::template::mounts::{MountSource, VolumeMount};

/// The mounts that move here.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct MovedMounts {
    /// `(mount path, path here)` of each.
    pub paths: Vec<(String, String)>,
    /// The trial's own directories among them, made when its process starts.
    pub private_dirs: Vec<PathBuf>,
}

/// The metrics collector's path as the spec writes it and the directory its trial's copy of
/// the spec's paths lives under (`<log dir>/<trial>`).
pub(crate) struct CollectorPath<'a> {
    pub spec_path: &'a str,
    pub local_root: &'a Path,
}

/// Where each moved mount leads; `private_root` holds the trial's `emptyDir` volumes. A mount
/// holding or inside the metrics collector's path leads into the collector's copy of the
/// spec's paths (`<local root>/<mount path>`), so the metrics file and the rest of that volume
/// stay together, each trial's own.
pub(crate) fn moved_mounts(
    mounts: &[VolumeMount],
    private_root: &Path,
    collector: Option<&CollectorPath<'_>>,
) -> MovedMounts {
    let mut moved = MovedMounts::default();
    for m in mounts.iter().filter(|m| m.is_mapped()) {
        let with_metrics = collector.filter(|c| overlaps(&m.mount_path, c.spec_path));
        let target = match (&m.source, with_metrics) {
            (_, Some(c)) => {
                let target = c.local_root.join(m.mount_path.trim_start_matches('/'));
                let target = target.display().to_string();
                moved.private_dirs.push(PathBuf::from(&target));
                target
            }
            (MountSource::Host(path), None) => m.target_in(path),
            _ => {
                let root = private_root.join(&m.volume);
                let target = m.target_in(&root.display().to_string());
                moved.private_dirs.push(PathBuf::from(&target));
                target
            }
        };
        let from = m.mount_path.trim_end_matches('/').to_string();
        moved.paths.push((from, target));
    }
    moved
}

/// Makes the trial's own volume directories, as the kubelet makes each `emptyDir`.
pub(crate) fn make_private_dirs(dirs: &[PathBuf]) -> Result<(), String> {
    for dir in dirs {
        std::fs::create_dir_all(dir).map_err(|e| {
            format!(
                "cannot create the emptyDir directory {}: {e}",
                dir.display()
            )
        })?;
    }
    Ok(())
}

/// Whether one of two absolute paths is the other or lies inside it.
fn overlaps(a: &str, b: &str) -> bool {
    let (a, b) = (Path::new(a), Path::new(b));
    a.starts_with(b) || b.starts_with(a)
}

/// `text` with every moved mount path replaced by where it leads here, in one pass: a path
/// inside a nested mount goes to the inner one, and what was put in is not moved again.
pub(crate) fn moved(text: &str, mounts: &[(String, String)]) -> String {
    replace_paths(text, mounts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use vernier_spec::template::mounts::volume_mounts;

    #[test]
    fn an_empty_dir_moves_to_the_trials_own_directory_and_a_host_path_to_itself() {
        let volumes = json!([
            {"name": "ckpt", "emptyDir": {}},
            {"name": "data", "hostPath": {"path": "/srv/data"}},
            {"name": "metrics", "emptyDir": {}},
        ]);
        let mounts = json!([
            {"name": "ckpt", "mountPath": "/ckpt/"},
            {"name": "data", "mountPath": "/data"},
            {"name": "metrics", "mountPath": "/var/log/katib"},
        ]);
        let mounts = volume_mounts(Some(&mounts), &volumes);
        let root = tempfile::tempdir().unwrap();
        let collector = CollectorPath {
            spec_path: "/var/log/katib/m.log",
            local_root: Path::new("/logs/t"),
        };
        let moved_to = moved_mounts(&mounts, root.path(), Some(&collector));
        let ckpt = root.path().join("ckpt");
        let katib = PathBuf::from("/logs/t/var/log/katib");
        assert_eq!(moved_to.private_dirs, [ckpt.clone(), katib]);
        make_private_dirs(&moved_to.private_dirs[..1]).unwrap();
        assert!(ckpt.is_dir());
        let ckpt = ckpt.display().to_string();
        let moved_to = moved_to.paths;
        assert_eq!(
            moved_to,
            [
                ("/ckpt".to_string(), ckpt.clone()),
                ("/data".to_string(), "/srv/data".to_string()),
                (
                    "/var/log/katib".to_string(),
                    "/logs/t/var/log/katib".to_string()
                ),
            ]
        );
        // Nested mounts, and a private directory that itself lies under a mount path.
        let nested = [
            ("/data".to_string(), "/srv/data".to_string()),
            ("/data/sub".to_string(), "/srv/sub".to_string()),
            (
                "/tmp".to_string(),
                "/tmp/exp/vernier-logs/t/volumes/tmp".to_string(),
            ),
        ];
        let cases = [
            (
                "/data/sub/x /data/y /data2",
                "/srv/sub/x /srv/data/y /data2",
            ),
            (
                "--out=/tmp/a",
                "--out=/tmp/exp/vernier-logs/t/volumes/tmp/a",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(moved(text, &nested), want, "{text}");
        }
        let table = [
            (
                "--checkpoint=/ckpt/model.pt",
                format!("--checkpoint={ckpt}/model.pt"),
            ),
            ("/data/train.csv", "/srv/data/train.csv".to_string()),
            ("/database", "/database".to_string()),
            // The metrics file and its neighbours go where the collector reads it.
            (
                "/var/log/katib/m.log",
                "/logs/t/var/log/katib/m.log".to_string(),
            ),
            (
                "/var/log/katib/other",
                "/logs/t/var/log/katib/other".to_string(),
            ),
        ];
        for (text, want) in table {
            assert_eq!(moved(text, &moved_to), want, "{text}");
        }
    }
}
