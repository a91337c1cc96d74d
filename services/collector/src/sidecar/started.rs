//! The `--started-file` marker: created once the sidecar handles SIGTERM, so the container's
//! startup probe holds the training container back until then, and removed when the sidecar
//! exits so that a later pod of the same trial on a shared volume is not taken as started
//! before it is.

use crate::error::CollectorError;
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub(super) struct StartedFile(PathBuf);

impl StartedFile {
    pub(super) fn create(path: &Path) -> Result<StartedFile, CollectorError> {
        let write = || -> std::io::Result<()> {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(path, b"started\n")
        };
        write().map_err(|e| CollectorError::Flag {
            flag: "--started-file",
            value: path.display().to_string(),
            problem: format!("cannot be written: {e}"),
            hint: "it must be on a writable volume of the collector's container",
        })?;
        Ok(StartedFile(path.to_path_buf()))
    }
}

impl Drop for StartedFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_started_file_that_cannot_be_written_is_named_with_a_hint() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, "").unwrap();
        // Under a regular file: no directory can be made there, whoever runs the test.
        let path = file.join("started");
        let e = StartedFile::create(&path).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "--started-file value {:?} cannot be written: ",
                path.display().to_string()
            )) && e.contains("hint: it must be on a writable volume"),
            "{e}"
        );
        assert!(!path.exists());
        let ok = dir.path().join("sub").join("started");
        let started = StartedFile::create(&ok).unwrap();
        assert!(ok.exists());
        drop(started);
        assert!(!ok.exists());
    }
}
