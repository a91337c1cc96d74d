//! Following a metrics file while a trial writes it, like `tail -F`: the file may appear late,
//! be truncated or be replaced (rotated); lines may arrive split across writes; a line may be
//! absurdly long or not text at all.
//!
//! Trainers also rewrite their metrics file whole, each epoch: in place (`open(path, "w")`)
//! or through a temporary file renamed over it, with only the latest values or with every
//! line so far. Katib reads the file once, at the end, and would record the final content;
//! a follower must tell a rewrite from an append to do as well ([`crate::consumed`]). A file
//! that still begins with every byte consumed is followed on from where it was; any other is
//! read again from the start, and each of its
//! lines that matches, in order, one of the lines read before is not yielded again (a rewrite
//! that keeps every line so far, one caught half written, or one under a header that changes
//! each epoch yields only its new lines), while lines that match none are.

use crate::consumed::Consumed;
use crate::lines::{MAX_LINE_BYTES, cut_line_warning, drop_cut_token};
use std::collections::hash_map::DefaultHasher;
use std::fs::File;
use std::hash::{Hash, Hasher};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Bytes read per `poll`, so one huge write cannot stall the caller.
const MAX_READ_PER_POLL: usize = 8 << 20;
/// How many lines of the current content are remembered to tell a rewrite's old lines from
/// its new ones (8 bytes each): a rewrite that changes a file of more lines, other than by
/// appending, yields its lines past these again.
const MAX_REMEMBERED_LINES: usize = 1 << 22;
/// How far past the last matched line a rewrite's line is looked for among the old ones: a
/// header or a few lines that changed are skipped over, and a rewrite unlike the old content
/// costs a bounded search per line.
const MATCH_WINDOW: usize = 64;

/// Reads complete lines appended to a file since the previous call.
#[derive(Debug)]
pub struct FileFollower {
    path: PathBuf,
    file: Option<File>,
    /// Whether the file has existed at any poll.
    found: bool,
    consumed: Consumed,
    /// Hashes of the complete lines read from the current content, in order.
    lines: Vec<u64>,
    /// After a rewrite: the lines read before it, and where the next of them is looked for.
    replay: Option<(Vec<u64>, usize)>,
    /// Whether the current content, since the last rewrite, yielded a line that matches none
    /// read before: it is then new content, not the old one caught half rewritten.
    fresh: bool,
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
            found: false,
            consumed: Consumed::new(0),
            lines: Vec::new(),
            replay: None,
            fresh: false,
            partial: Vec::new(),
            overlong: false,
            line_bytes: 0,
            warnings: Vec::new(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file existed at any poll so far.
    pub fn found(&self) -> bool {
        self.found
    }

    /// Complete lines written since the last call (terminators and invalid UTF-8 replaced).
    /// A missing file yields nothing; a truncated, rewritten or replaced file is read again
    /// from the start, yielding the lines that are not what was read before.
    pub fn poll(&mut self) -> std::io::Result<Vec<String>> {
        let meta = match std::fs::metadata(&self.path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        self.found = true;
        if self.consumed.may_be_rewritten(&meta, self.file.as_mut())? {
            let file = File::open(&self.path)?;
            let kept = self.consumed.begins(&file, meta.len())?;
            if !kept {
                self.restart();
            }
            self.consumed.reopened(meta.ino(), kept);
            self.file = Some(file);
        }
        let Some(file) = self.file.as_mut() else {
            return Ok(Vec::new());
        };
        file.seek(SeekFrom::Start(self.consumed.offset()))?;
        let mut chunk = Vec::new();
        file.take(MAX_READ_PER_POLL as u64)
            .read_to_end(&mut chunk)?;
        let modified = file.metadata().ok().and_then(|m| m.modified().ok());
        self.consumed.advance(&chunk, modified);
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
                let (line, cut) = self.take_line();
                if self.is_new(&line) {
                    self.warnings.extend(cut.map(cut_line_warning));
                    lines.push(line);
                }
            }
        }
        Ok(lines)
    }

    /// Reads the file again from the start, remembering the lines read so far to tell the
    /// rewrite's new lines. The old lines a replay had not reached are remembered too while the
    /// content read since held nothing new (a rewrite caught half written, then rewritten
    /// again); once it did, it replaced them, and a value they held is new when it returns
    /// (`loss=0.3`, `loss=0.1`, `loss=0.3` written over each other).
    fn restart(&mut self) {
        let mut before = std::mem::take(&mut self.lines);
        if let Some((old, at)) = self.replay.take()
            && !self.fresh
        {
            before.extend_from_slice(&old[at.min(old.len())..]);
        }
        self.replay = (!before.is_empty()).then_some((before, 0));
        self.fresh = false;
        self.partial.clear();
        self.overlong = false;
        self.line_bytes = 0;
    }

    /// Remembers a complete line and tells whether to yield it: not when, after a rewrite,
    /// it matches the next lines read before it (looked for within [`MATCH_WINDOW`]).
    fn is_new(&mut self, line: &str) -> bool {
        let mut h = DefaultHasher::new();
        line.hash(&mut h);
        let h = h.finish();
        if self.lines.len() < MAX_REMEMBERED_LINES {
            self.lines.push(h);
        }
        let Some((before, at)) = self.replay.as_mut() else {
            return true;
        };
        let window = &before[(*at).min(before.len())..before.len().min(*at + MATCH_WINDOW)];
        match window.iter().position(|old| *old == h) {
            Some(k) => {
                *at += k + 1;
                false
            }
            None => {
                self.fresh = true;
                true
            }
        }
    }

    /// What the file holds that was not yielded, once the writer is done: the file is read
    /// again from the start (so a last rewrite that changed neither its length nor its
    /// timestamp, within the file system's granularity, is not missed) to its end, whatever
    /// its size, with an unterminated last line. Katib reads the file once, at this moment.
    pub fn poll_last(&mut self) -> std::io::Result<Vec<String>> {
        // Past the remembered lines a re-read could not tell old lines from new ones.
        if self.lines.len() < MAX_REMEMBERED_LINES {
            self.file = None;
        }
        let mut lines = Vec::new();
        loop {
            let before = self.consumed.offset();
            lines.extend(self.poll()?);
            if self.consumed.offset() - before < MAX_READ_PER_POLL as u64 {
                break;
            }
        }
        lines.extend(self.finish());
        Ok(lines)
    }

    /// The last line if the file did not end with a newline (once the writer is done).
    fn finish(&mut self) -> Option<String> {
        if self.partial.is_empty() {
            return None;
        }
        let (line, cut) = self.take_line();
        self.warnings.extend(cut.map(cut_line_warning));
        Some(line)
    }

    /// A warning for each line cut since the last call.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// The current line, and its whole length when it was cut.
    fn take_line(&mut self) -> (String, Option<usize>) {
        let cut = self.overlong.then_some(self.line_bytes);
        if self.overlong {
            drop_cut_token(&mut self.partial);
        }
        self.line_bytes = 0;
        while self.partial.last() == Some(&b'\r') {
            self.partial.pop();
        }
        let line = String::from_utf8_lossy(&self.partial).into_owned();
        self.partial.clear();
        self.overlong = false;
        (line, cut)
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

    /// A value written over a different one is read even when an earlier content held it,
    /// alone or under a constant header, in place or renamed over.
    #[test]
    fn a_value_that_returns_after_a_rewrite_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.log");
        let tmp = dir.path().join("m.log.tmp");
        let mut f = FileFollower::new(&path);
        for text in ["loss=0.3\n", "loss=0.1\n", "loss=0.3\n", "loss=0.1\n"] {
            std::fs::write(&path, text).unwrap();
            assert_eq!(f.poll().unwrap(), [text.trim_end()]);
        }
        for value in ["0.5", "0.7", "0.5", "0.7", "0.5"] {
            std::fs::write(&tmp, format!("# run 1\nloss={value}\n")).unwrap();
            std::fs::rename(&tmp, &path).unwrap();
            let got = f.poll().unwrap();
            assert_eq!(
                got.last().map(String::as_str),
                Some(format!("loss={value}").as_str())
            );
        }
        assert!(f.poll_last().unwrap().is_empty());
    }

    /// A poll that lands while a rewrite of every line so far is half written yields
    /// nothing again: only the lines after what was read before.
    #[test]
    fn a_rewrite_caught_half_written_yields_only_new_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.log");
        let mut f = FileFollower::new(&path);
        std::fs::write(&path, b"loss=1\nloss=2\nloss=3\n").unwrap();
        assert_eq!(f.poll().unwrap(), ["loss=1", "loss=2", "loss=3"]);
        let mut w = File::create(&path).unwrap();
        w.write_all(b"loss=1\n").unwrap();
        assert!(f.poll().unwrap().is_empty());
        w.write_all(b"loss=2\nlo").unwrap();
        assert!(f.poll().unwrap().is_empty());
        w.write_all(b"ss=3\nloss=4\n").unwrap();
        assert_eq!(f.poll().unwrap(), ["loss=4"]);
        // A rewrite that changes an earlier line yields that line alone (after the others:
        // Katib, reading the final file once, would have it in its place).
        std::fs::write(&path, b"loss=1\nloss=9\nloss=3\nloss=4\n").unwrap();
        assert_eq!(f.poll().unwrap(), ["loss=9"]);
        assert!(f.poll_last().unwrap().is_empty());
    }

    /// A rewrite of every line so far under a header that changes each epoch yields the
    /// header and the new lines, not the history again; the last read warns about a cut line
    /// only once.
    #[test]
    fn a_rewrite_under_a_changing_header_yields_only_new_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.log");
        let mut f = FileFollower::new(&path);
        let mut history = String::new();
        for epoch in 1..=4 {
            history.push_str(&format!("loss={epoch}\n"));
            std::fs::write(&path, format!("# epochs done: {epoch}\n{history}")).unwrap();
            let want = [format!("# epochs done: {epoch}"), format!("loss={epoch}")];
            assert_eq!(f.poll().unwrap(), want);
        }
        let mut long = vec![b'x'; MAX_LINE_BYTES + 10];
        long.extend_from_slice(b"\nloss=5\n");
        let mut w = File::options().append(true).open(&path).unwrap();
        w.write_all(&long).unwrap();
        assert_eq!(f.poll().unwrap().len(), 2);
        assert_eq!(f.take_warnings().len(), 1);
        assert!(f.poll_last().unwrap().is_empty());
        assert!(f.take_warnings().is_empty());
    }

    /// Rewrites of the same length whose last bytes do not change (the value first, then
    /// constant text): seen by the file's timestamp, and by the last read in any case.
    #[test]
    fn a_same_length_rewrite_behind_constant_text_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.json");
        let line = |v: &str| format!("{{\"loss\": \"{v}\", \"model\": \"{}\"}}", "x".repeat(80));
        let rewrite = |v: &str, modified: std::time::SystemTime| {
            let mut w = File::options().write(true).open(&path).unwrap();
            w.write_all(format!("{}\n", line(v)).as_bytes()).unwrap();
            w.set_modified(modified).unwrap();
        };
        std::fs::write(&path, format!("{}\n", line("0.9000"))).unwrap();
        let mut f = FileFollower::new(&path);
        assert_eq!(f.poll().unwrap(), [line("0.9000")]);
        let first = std::fs::metadata(&path).unwrap().modified().unwrap();
        rewrite("0.6000", first + std::time::Duration::from_secs(1));
        assert_eq!(f.poll().unwrap(), [line("0.6000")]);
        assert!(f.poll().unwrap().is_empty());
        // Rewritten within the timestamp's granularity: only the last read sees it.
        rewrite("0.4000", first + std::time::Duration::from_secs(1));
        assert!(f.poll().unwrap().is_empty());
        assert_eq!(f.poll_last().unwrap(), [line("0.4000")]);
    }

    /// The last read goes to the end of a file larger than one poll reads.
    #[test]
    fn the_last_read_reads_to_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.log");
        let line = format!("loss=0.5 {}\n", "x".repeat(90));
        let lines = MAX_READ_PER_POLL / line.len() + 100;
        std::fs::write(&path, line.repeat(lines)).unwrap();
        let mut f = FileFollower::new(&path);
        assert_eq!(f.poll_last().unwrap().len(), lines);
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
