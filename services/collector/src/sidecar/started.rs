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
