//! Following a metrics file while a trial writes it, like `tail -F`: the file may appear late,
//! be truncated or be replaced (rotated); lines may arrive split across writes; a line may be
//! absurdly long or not text at all.
//!
//! Trainers also rewrite their metrics file whole, each epoch: in place (`open(path, "w")`)
//! or through a temporary file renamed over it, with only the latest values or with every
//! line so far. Katib reads the file once, at the end, and would record the final content;
//! a follower must tell a rewrite from an append to do as well. It keeps a hash of the bytes
//! it consumed and their last few bytes: when those last bytes change (or the file is
//! replaced or shrinks), a file that still begins with everything consumed is followed on
//! from where it was, and any other is new content, read from the start.

use crate::lines::{MAX_LINE_BYTES, cut_line_warning, drop_cut_token};
use std::collections::hash_map::DefaultHasher;
use std::fs::File;
use std::hash::Hasher;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Bytes read per `poll`, so one huge write cannot stall the caller.
const MAX_READ_PER_POLL: usize = 8 << 20;
/// How many of the last consumed bytes are compared on every poll to notice a rewrite.
const TAIL_BYTES: usize = 64;

/// Reads complete lines appended to a file since the previous call.
#[derive(Debug)]
pub struct FileFollower {
    path: PathBuf,
    file: Option<File>,
    inode: u64,
    offset: u64,
    /// Hash of the bytes `0..offset` (a streaming hash: chunking does not change it).
    consumed: DefaultHasher,
    /// The last (up to [`TAIL_BYTES`]) bytes before `offset`.
    tail: Vec<u8>,
    partial: Vec<u8>,
    /// True while the current line has grown past `MAX_LINE_BYTES` and is being skipped.
    overlong: bool,
    /// The current line's length, counted past the cut.
    line_bytes: usize,
    /// Warnings for lines cut since the last [`take_warnings`](Self::take_warnings).
    warnings: Vec<String>,
}

impl FileFollower {
    pub fn new(path: impl AsRef<Path>) -> Self {
        FileFollower {
            path: path.as_ref().to_path_buf(),
            file: None,
            inode: 0,
            offset: 0,
            consumed: DefaultHasher::new(),
            tail: Vec::new(),
            partial: Vec::new(),
            overlong: false,
            line_bytes: 0,
            warnings: Vec::new(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Complete lines written since the last call (terminators and invalid UTF-8 replaced).
    /// A missing file yields nothing; a truncated or replaced file is read again from the start.
    pub fn poll(&mut self) -> std::io::Result<Vec<String>> {
        let meta = match std::fs::metadata(&self.path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let replaced = self.file.is_none() || meta.ino() != self.inode;
        if replaced || meta.len() < self.offset || !self.tail_unchanged()? {
            let file = File::open(&self.path)?;
            if !self.begins_with_consumed(&file, meta.len())? {
                self.restart();
            }
            self.file = Some(file);
            self.inode = meta.ino();
        }
        let Some(file) = self.file.as_mut() else {
            return Ok(Vec::new());
        };
        file.seek(SeekFrom::Start(self.offset))?;
        let mut chunk = Vec::new();
        file.take(MAX_READ_PER_POLL as u64)
            .read_to_end(&mut chunk)?;
        self.offset += chunk.len() as u64;
        self.consumed.write(&chunk);
        let keep = chunk.len().min(TAIL_BYTES);
        let drop = (self.tail.len() + keep).saturating_sub(TAIL_BYTES);
        self.tail.drain(..drop);
        self.tail.extend_from_slice(&chunk[chunk.len() - keep..]);
        let mut lines = Vec::new();
        for piece in chunk.split_inclusive(|b| *b == b'\n') {
            let complete = piece.last() == Some(&b'\n');
            let body = if complete {
                &piece[..piece.len() - 1]
            } else {
                piece
            };
            self.line_bytes += body.len();
            if !self.overlong {
                let room = MAX_LINE_BYTES.saturating_sub(self.partial.len());
                self.partial
                    .extend_from_slice(&body[..body.len().min(room)]);
                if body.len() > room {
                    self.overlong = true;
                }
            }
            if complete {
                lines.push(self.take_line());
            }
        }
        Ok(lines)
    }

    /// Forgets everything consumed: the file is read again from the start.
    fn restart(&mut self) {
        self.offset = 0;
        self.consumed = DefaultHasher::new();
        self.tail.clear();
        self.partial.clear();
        self.overlong = false;
        self.line_bytes = 0;
    }

    /// Whether the open file still holds the last consumed bytes where they were read.
    fn tail_unchanged(&mut self) -> std::io::Result<bool> {
        let Some(file) = self.file.as_mut() else {
            return Ok(false);
        };
        let mut now = vec![0; self.tail.len()];
        file.seek(SeekFrom::Start(self.offset - self.tail.len() as u64))?;
        match file.read_exact(&mut now) {
            Ok(()) => Ok(now == self.tail),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Whether `file` (of `len` bytes) begins with every byte consumed so far: a rewrite
    /// that kept the earlier lines, to be followed on from `offset`.
    fn begins_with_consumed(&self, mut file: &File, len: u64) -> std::io::Result<bool> {
        if self.offset == 0 || len < self.offset {
            return Ok(false);
        }
        let mut hash = DefaultHasher::new();
        let mut left = self.offset;
        let mut buf = vec![0; 64 << 10];
        file.seek(SeekFrom::Start(0))?;
        while left > 0 {
            let n = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            match file.read_exact(&mut buf[..n]) {
                Ok(()) => hash.write(&buf[..n]),
                // Shrunk while being read: rewritten again; the next poll looks afresh.
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
                Err(e) => return Err(e),
            }
            left -= n as u64;
        }
        Ok(hash.finish() == self.consumed.finish())
    }

    /// The last line if the file did not end with a newline (call once the writer is done).
    pub fn finish(&mut self) -> Option<String> {
        if self.partial.is_empty() {
            return None;
        }
        Some(self.take_line())
    }

    /// A warning for each line cut since the last call.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    fn take_line(&mut self) -> String {
        if self.overlong {
            drop_cut_token(&mut self.partial);
            self.warnings.push(cut_line_warning(self.line_bytes));
        }
        self.line_bytes = 0;
        while self.partial.last() == Some(&b'\r') {
            self.partial.pop();
        }
        let line = String::from_utf8_lossy(&self.partial).into_owned();
        self.partial.clear();
        self.overlong = false;
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn follows_appends_split_lines_truncation_and_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.log");
        let mut f = FileFollower::new(&path);
        assert!(
            f.poll().unwrap().is_empty(),
            "a missing file is not an error"
        );

        let mut w = File::create(&path).unwrap();
        w.write_all(b"loss=1\nloss=").unwrap();
        assert_eq!(f.poll().unwrap(), vec!["loss=1"]);
        w.write_all(b"2\r\n").unwrap();
        assert_eq!(f.poll().unwrap(), vec!["loss=2"]);

        // Truncated in place: read again from the start.
        w.set_len(0).unwrap();
        drop(w);
        std::fs::write(&path, b"loss=3\n").unwrap();
        assert_eq!(f.poll().unwrap(), vec!["loss=3"]);

        // Rotated: a new file under the same name.
        std::fs::rename(&path, dir.path().join("m.log.1")).unwrap();
        std::fs::write(&path, b"loss=4\nloss=5").unwrap();
        assert_eq!(f.poll().unwrap(), vec!["loss=4"]);
        assert_eq!(f.finish(), Some("loss=5".to_string()));
        assert_eq!(f.finish(), None);
    }

    /// A file rewritten whole each epoch, in place or by renaming a temporary file over it,
    /// with the latest value only or with every line so far: each value once, in order.
    #[test]
    fn rewrites_of_the_whole_file_yield_each_new_value_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.log");
        let mut f = FileFollower::new(&path);
        // In place, latest value only, same length and then longer.
        for (text, want) in [
            ("loss=0.9\n", "loss=0.9"),
            ("loss=0.5\n", "loss=0.5"),
            ("loss=0.25\n", "loss=0.25"),
        ] {
            std::fs::write(&path, text).unwrap();
            assert_eq!(f.poll().unwrap(), vec![want]);
            assert!(f.poll().unwrap().is_empty(), "{want} read twice");
        }
        // Renamed over, every line so far: only the new line, however the old ones were read.
        let mut all = String::new();
        for k in 0..4 {
            all.push_str(&format!("epoch={k} loss={}\n", 1.0 / f64::from(k + 1)));
            let tmp = dir.path().join("m.log.tmp");
            std::fs::write(&tmp, &all).unwrap();
            std::fs::rename(&tmp, &path).unwrap();
            let got = f.poll().unwrap();
            assert_eq!(got.len(), 1, "epoch {k}: {got:?}");
            assert!(got[0].starts_with(&format!("epoch={k} ")), "{got:?}");
        }
        // Rewritten in place with every line so far and one more.
        all.push_str("epoch=4 loss=0.2\n");
        std::fs::write(&path, &all).unwrap();
        assert_eq!(f.poll().unwrap(), vec!["epoch=4 loss=0.2"]);
    }

    #[test]
    fn overlong_lines_are_cut_and_binary_is_tolerated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.log");
        let mut data = vec![b'x'; MAX_LINE_BYTES * 2];
        data.extend_from_slice(b"\n\xff\xfeloss=1\n");
        std::fs::write(&path, &data).unwrap();
        let mut f = FileFollower::new(&path);
        let lines = f.poll().unwrap();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].len(), 0);
        assert!(lines[1].ends_with("loss=1"));
        let warnings = f.take_warnings();
        assert_eq!(warnings, vec![crate::cut_line_warning(MAX_LINE_BYTES * 2)]);
        assert!(warnings[0].contains("hint:"), "{warnings:?}");
        assert_eq!(f.take_warnings(), Vec::<String>::new());
    }

    #[test]
    fn a_cut_line_yields_nothing_from_the_cut_token() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.log");
        let mut data = vec![b'x'; MAX_LINE_BYTES - 8];
        data.extend_from_slice(b" loss=123456789\nloss=2\n");
        std::fs::write(&path, &data).unwrap();
        let mut f = FileFollower::new(&path);
        let lines = f.poll().unwrap();
        assert_eq!(lines.len(), 2);
        assert!(
            !lines[0].contains("loss"),
            "{}",
            &lines[0][lines[0].len() - 20..]
        );
        assert_eq!(lines[1], "loss=2");
    }
}
