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

    /// [`StoreError::DatabaseFileGone`] if the path now names no file or another file.
    pub(crate) fn check(&self) -> Result<(), StoreError> {
        let now = std::fs::metadata(&self.path).ok();
        match now {
            Some(m) if m.dev() == self.device && m.ino() == self.inode => Ok(()),
            other => Err(StoreError::DatabaseFileGone {
                path: self.path.display().to_string(),
                what: if other.is_some() {
                    "replaced"
                } else {
                    "deleted"
                },
            }),
        }
    }
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
}
