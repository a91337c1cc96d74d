//! Whether a SQLite database file is still the one a store opened. Deleting or replacing the
//! file under a running driver does not fail a single write (the open handle keeps the old,
//! now nameless file), so every later record would vanish with the process; the driver asks
//! this on its heartbeat and at the end instead.

use crate::error::StoreError;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The path a store opened and the file (device and inode) it found there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileIdentity {
    path: PathBuf,
    device: u64,
    inode: u64,
}

impl FileIdentity {
    /// The file at `path` now; `None` if it cannot be read (then nothing is checked later).
    pub(crate) fn of(path: &Path) -> Option<FileIdentity> {
        let meta = std::fs::metadata(path).ok()?;
        Some(FileIdentity {
            path: path.to_path_buf(),
            device: meta.dev(),
            inode: meta.ino(),
        })
    }

    /// [`StoreError::DatabaseFileGone`] if the path now names no file or another file; then
    /// the old file's side files are taken away from the path too ([`Self::release_side_files`]).
    pub(crate) fn check(&self) -> Result<(), StoreError> {
        let now = std::fs::metadata(&self.path).ok();
        match now {
            Some(m) if m.dev() == self.device && m.ino() == self.inode => Ok(()),
            other => Err({
                self.release_side_files();
                StoreError::DatabaseFileGone {
                    path: self.path.display().to_string(),
                    what: if other.is_some() {
                        "replaced"
                    } else {
                        "deleted"
                    },
                }
            }),
        }
    }

    /// Removes the `-wal` and `-shm` files at the path that this process holds open. They
    /// belong to the deleted or replaced file, and SQLite would replay that WAL into whatever
    /// database is put at the path next (a restored backup, say), overwriting it. A side file
    /// this process does not hold is another database's, and stays.
    fn release_side_files(&self) {
        for suffix in ["-wal", "-shm"] {
            let side = PathBuf::from(format!("{}{suffix}", self.path.display()));
            let Ok(meta) = std::fs::metadata(&side) else {
                continue;
            };
            if held_open(meta.dev(), meta.ino()) {
                let _ = std::fs::remove_file(&side);
            }
        }
    }
}

/// Whether one of this process's open files is the file `(device, inode)`.
fn held_open(device: u64, inode: u64) -> bool {
    let Ok(fds) = std::fs::read_dir("/proc/self/fd") else {
        return false;
    };
    fds.flatten()
        .any(|fd| std::fs::metadata(fd.path()).is_ok_and(|m| m.dev() == device && m.ino() == inode))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deleted_or_replaced_file_is_noticed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("v.db");
        std::fs::write(&path, b"x").expect("write");
        let id = FileIdentity::of(&path).expect("identity");
        assert!(id.check().is_ok());
        std::fs::write(&path, b"rewritten in place").expect("rewrite");
        assert!(id.check().is_ok(), "same inode, new contents");

        let moved = dir.path().join("old.db");
        std::fs::rename(&path, &moved).expect("rename");
        std::fs::write(&path, b"another file").expect("write");
        let e = id.check().expect_err("replaced").to_string();
        assert!(e.contains("was replaced"), "{e}");

        std::fs::remove_file(&path).expect("remove");
        let e = id.check().expect_err("deleted").to_string();
        assert!(e.contains("v.db") && e.contains("was deleted"), "{e}");
    }

    #[test]
    fn the_gone_files_wal_is_taken_off_the_path_and_anothers_is_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("v.db");
        std::fs::write(&path, b"x").expect("write");
        let id = FileIdentity::of(&path).expect("identity");
        // Held open, as the store's connections hold the WAL; the -shm is someone else's.
        let _held = std::fs::File::create(dir.path().join("v.db-wal")).expect("wal");
        std::fs::write(dir.path().join("v.db-shm"), b"other").expect("shm");
        assert!(id.check().is_ok());
        assert!(
            dir.path().join("v.db-wal").exists(),
            "kept while the file is in place"
        );
        std::fs::remove_file(&path).expect("remove");
        assert!(id.check().is_err());
        assert!(!dir.path().join("v.db-wal").exists());
        assert!(dir.path().join("v.db-shm").exists());
    }
}
