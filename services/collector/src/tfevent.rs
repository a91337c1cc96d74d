//! Following a TensorFlow event directory while a trial writes it: event files appear late and
//! in subdirectories, grow record by record, and may end in a half-written record. Like
//! [`crate::FileFollower`], each file keeps an offset and only complete records are consumed;
//! a file replaced by a copy that begins with what was read (`rsync`'s temporary file renamed
//! over it) is followed on, and one rewritten otherwise (a writer opened again with the same
//! file name) is read from its start ([`crate::consumed`]). Katib reads the files once, when
//! the trial has ended: the last read here reads every file to its end.

use crate::consumed::Consumed;
use crate::event::{EventScalar, decode_event, event_scalars};
use crate::tfrecord::{MAX_RECORD_BYTES, split_records};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Bytes read per file per `poll`, so one huge file cannot stall the caller. Larger than the
/// biggest record accepted, so a valid record always fits in one read.
const MAX_READ_PER_POLL: u64 = MAX_RECORD_BYTES + (4 << 20);

/// What one poll found.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct TfEventPoll {
    pub scalars: Vec<EventScalar>,
    /// Matching values that are not finite scalars.
    pub rejected: Vec<String>,
    /// Records skipped for a bad checksum or an undecodable event.
    pub corrupt_records: usize,
    /// Files or directories that could not be read, with the reason.
    pub errors: Vec<String>,
}

/// Reads the scalar summaries appended to the event files under a directory since the
/// previous call. Files are those whose name contains `tfevents` (TensorFlow's and
/// tensorboardX's `events.out.tfevents.*`), so checkpoints and other outputs kept alongside
/// are not mistaken for corrupt event files.
#[derive(Debug)]
pub struct TfEventFollower {
    root: PathBuf,
    wanted: Vec<String>,
    files: BTreeMap<PathBuf, Consumed>,
}

impl TfEventFollower {
    pub fn new(root: impl AsRef<Path>, wanted: Vec<String>) -> Self {
        TfEventFollower {
            root: root.as_ref().to_path_buf(),
            wanted,
            files: BTreeMap::new(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether an event file was found at any poll (a driver may make the directory itself).
    pub fn found(&self) -> bool {
        !self.files.is_empty()
    }

    /// New scalars from every event file; a missing directory yields nothing.
    pub fn poll(&mut self) -> TfEventPoll {
        self.poll_files(false).0
    }

    /// What the files hold that was not read, once the trial has ended: each file is checked
    /// whole for a rewrite (one that changed neither its length nor its timestamp, within the
    /// file system's granularity, is not missed) and read to its end, whatever its size.
    pub fn poll_last(&mut self) -> TfEventPoll {
        let (mut out, mut done) = self.poll_files(true);
        while !done {
            let (more, all_read) = self.poll_files(false);
            out.scalars.extend(more.scalars);
            out.rejected.extend(more.rejected);
            out.corrupt_records += more.corrupt_records;
            for e in more.errors {
                if !out.errors.contains(&e) {
                    out.errors.push(e);
                }
            }
            done = all_read;
        }
        out
    }

    /// One read of every event file, and whether each was read to its end; with `whole`,
    /// each file is checked for a rewrite by its whole content.
    fn poll_files(&mut self, whole: bool) -> (TfEventPoll, bool) {
        let mut out = TfEventPoll::default();
        let mut paths = Vec::new();
        collect_event_files(&self.root, &mut paths, &mut out.errors);
        paths.sort();
        let mut all_read = true;
        for path in paths {
            match self.read_file(&path, whole, &mut out) {
                Ok(read_to_end) => all_read &= read_to_end,
                Err(e) => out.errors.push(format!("{}: {e}", path.display())),
            }
        }
        (out, all_read)
    }

    /// Reads the complete records of `path` past what was consumed, at most
    /// [`MAX_READ_PER_POLL`] bytes; true when that reached the file's end.
    fn read_file(
        &mut self,
        path: &Path,
        whole: bool,
        out: &mut TfEventPoll,
    ) -> std::io::Result<bool> {
        let mut file = File::open(path)?;
        let meta = file.metadata()?;
        let consumed = self
            .files
            .entry(path.to_path_buf())
            .or_insert_with(|| Consumed::new(meta.ino()));
        if consumed.may_be_rewritten(&meta, (!whole).then_some(&mut file))? {
            let kept = consumed.begins(&file, meta.len())?;
            consumed.reopened(meta.ino(), kept);
        }
        if meta.len() == consumed.offset() {
            return Ok(true);
        }
        file.seek(SeekFrom::Start(consumed.offset()))?;
        let mut buf = Vec::new();
        (&file).take(MAX_READ_PER_POLL).read_to_end(&mut buf)?;
        let (records, used, corrupt) = split_records(&buf);
        consumed.advance(
            &buf[..used],
            file.metadata().ok().and_then(|m| m.modified().ok()),
        );
        out.corrupt_records += corrupt;
        let dir = path
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        for payload in records {
            match decode_event(payload) {
                Ok(event) => {
                    let found = event_scalars(&event, &dir, &self.wanted);
                    out.scalars.extend(found.scalars);
                    out.rejected.extend(found.rejected);
                }
                Err(_) => out.corrupt_records += 1,
            }
        }
        // A full window that held no complete record cannot be read further: done too.
        Ok((buf.len() as u64) < MAX_READ_PER_POLL || used == 0)
    }
}

/// An event file's name: it holds `tfevents`, and is not hidden, as `rsync`'s temporary copy
/// `.events.out.tfevents.1.host.Ab12Cd` is until it is renamed over the file it copies (read,
/// it would yield every value of the copy a second time).
fn is_event_file_name(name: &str) -> bool {
    name.contains("tfevents") && !name.starts_with('.')
}

/// Every `*tfevents*` file under `root` at any depth, as Katib's `os.walk` finds them: a
/// symbolic link to a directory is not followed (so a link cannot make a cycle), one to a file
/// is read, and the walk keeps its own stack, so a deep tree cannot overflow the thread's.
fn collect_event_files(root: &Path, out: &mut Vec<PathBuf>, errors: &mut Vec<String>) {
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                errors.push(format!("{}: {e}", dir.display()));
                continue;
            }
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let file = kind.is_file()
                || kind.is_symlink() && std::fs::metadata(entry.path()).is_ok_and(|m| m.is_file());
            if kind.is_dir() {
                pending.push(entry.path());
            } else if file && is_event_file_name(&entry.file_name().to_string_lossy()) {
                out.push(entry.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Event, Summary, SummaryValue};
    use crate::tfrecord::encode_record;
    use prost::Message;
    use std::io::Write;

    fn record(tag: &str, value: f32, step: i64) -> Vec<u8> {
        let e = Event {
            wall_time: 1000.0 + step as f64,
            step,
            file_version: None,
            summary: Some(Summary {
                value: vec![SummaryValue {
                    tag: tag.into(),
                    simple_value: Some(value),
                    tensor: None,
                }],
            }),
        };
        encode_record(&e.encode_to_vec())
    }

    fn values(p: &TfEventPoll) -> Vec<(String, String, i64)> {
        p.scalars
            .iter()
            .map(|s| (s.metric.clone(), s.value.clone(), s.step))
            .collect()
    }

    #[test]
    fn follows_growing_files_in_subdirectories() {
        let dir = tempfile::tempdir().unwrap();
        let wanted = vec!["loss".to_string(), "train/accuracy".to_string()];
        let mut f = TfEventFollower::new(dir.path().join("tfevent"), wanted);
        assert_eq!(
            f.poll(),
            TfEventPoll::default(),
            "missing dir is not an error"
        );

        let train = dir.path().join("tfevent/train");
        std::fs::create_dir_all(&train).unwrap();
        let path = train.join("events.out.tfevents.1.host");
        let mut w = File::create(&path).unwrap();
        w.write_all(&record("loss", 0.5, 1)).unwrap();
        let second = record("accuracy", 0.75, 1);
        w.write_all(&second[..10]).unwrap();
        assert_eq!(values(&f.poll()), vec![("loss".into(), "0.5".into(), 1)]);
        // The half-written record is waited for, not reported as corrupt.
        let p = f.poll();
        assert_eq!((p.scalars.len(), p.corrupt_records), (0, 0));
        w.write_all(&second[10..]).unwrap();
        assert_eq!(
            values(&f.poll()),
            vec![("train/accuracy".into(), "0.75".into(), 1)]
        );

        // A second file, not an event file, and a file in a directory not ending in "train".
        std::fs::write(train.join("checkpoint"), b"not an event file").unwrap();
        let eval = dir.path().join("tfevent/eval");
        std::fs::create_dir_all(&eval).unwrap();
        let mut data = record("accuracy", 0.9, 2);
        data.extend(record("loss", 0.25, 2));
        std::fs::write(eval.join("events.out.tfevents.2.host"), data).unwrap();
        let p = f.poll();
        assert_eq!(values(&p), vec![("loss".into(), "0.25".into(), 2)]);
        assert_eq!(p.corrupt_records, 0);
        assert_eq!(p.scalars[0].timestamp_us, Some(1_002_000_000));
    }

    #[test]
    fn corrupt_records_are_skipped_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let mut data = record("loss", 0.5, 1);
        let bad_at = data.len();
        data.extend(record("loss", 0.4, 2));
        data.extend(record("loss", 0.3, 3));
        data[bad_at + 14] ^= 0x55;
        // A record with good checksums around bytes that are not an Event.
        data.extend(encode_record(&[0xff, 0xff, 0xff]));
        std::fs::write(dir.path().join("events.out.tfevents.x"), data).unwrap();
        let mut f = TfEventFollower::new(dir.path(), vec!["loss".into()]);
        let p = f.poll();
        assert_eq!(
            values(&p),
            vec![
                ("loss".into(), "0.5".into(), 1),
                ("loss".into(), "0.3".into(), 3)
            ]
        );
        assert_eq!(p.corrupt_records, 2);
        assert_eq!(f.poll(), TfEventPoll::default(), "nothing is read twice");
    }

    /// Katib's `os.walk` has no depth limit: an event file 12 directories down is read; a
    /// symbolic link back up the tree is not followed, and a link to an event file is read.
    #[test]
    fn event_files_at_any_depth_are_read_and_links_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let deep = (0..12).fold(dir.path().to_path_buf(), |p, i| p.join(format!("l{i}")));
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(deep.join("events.out.tfevents.1"), record("loss", 0.5, 1)).unwrap();
        std::os::unix::fs::symlink(dir.path(), deep.join("up")).unwrap();
        let mut f = TfEventFollower::new(dir.path(), vec!["loss".into()]);
        let p = f.poll();
        assert_eq!(values(&p), vec![("loss".into(), "0.5".into(), 1)]);
        assert!(p.errors.is_empty(), "{:?}", p.errors);
        let elsewhere = tempfile::tempdir().unwrap();
        let target = elsewhere.path().join("events.out.tfevents.2");
        std::fs::write(&target, record("loss", 0.25, 2)).unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("events.out.tfevents.2")).unwrap();
        let mut f = TfEventFollower::new(dir.path(), vec!["loss".into()]);
        let mut got = values(&f.poll());
        got.sort_by_key(|v| v.2);
        assert_eq!(
            got,
            vec![
                ("loss".into(), "0.5".into(), 1),
                ("loss".into(), "0.25".into(), 2)
            ]
        );
    }

    fn file_of(records: &[(&str, f32, i64)]) -> Vec<u8> {
        records
            .iter()
            .flat_map(|(tag, v, step)| record(tag, *v, *step))
            .collect()
    }

    /// `rsync` writes a temporary copy (`.NAME.XXXXXX`, beside the file) and renames it over
    /// the file: the copy is not read while hidden, and once renamed it yields only its new
    /// records, once each.
    #[test]
    fn a_file_replaced_by_a_longer_copy_yields_only_its_new_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.out.tfevents.1.host");
        let mut f = TfEventFollower::new(dir.path(), vec!["loss".into()]);
        let mut seen = Vec::new();
        for epoch in 1..=4 {
            let records: Vec<(&str, f32, i64)> =
                (1..=epoch).map(|i| ("loss", 1.0 / i as f32, i)).collect();
            let tmp = dir.path().join(".events.out.tfevents.1.host.Ab12Cd");
            std::fs::write(&tmp, file_of(&records)).unwrap();
            seen.extend(values(&f.poll()).into_iter().map(|v| v.2));
            std::fs::rename(&tmp, &path).unwrap();
            seen.extend(values(&f.poll()).into_iter().map(|v| v.2));
        }
        assert_eq!(seen, [1, 2, 3, 4]);
    }

    /// A writer opened again with the same file name truncates it and writes a record of the
    /// same size: the new record is read, though the file's length did not change.
    #[test]
    fn a_rewrite_of_the_same_length_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.out.tfevents.1.host");
        std::fs::write(&path, file_of(&[("loss", 0.5, 1)])).unwrap();
        let mut f = TfEventFollower::new(dir.path(), vec!["loss".into()]);
        assert_eq!(values(&f.poll()), [("loss".into(), "0.5".into(), 1)]);
        let first = std::fs::metadata(&path).unwrap().modified().unwrap();
        let mut w = File::options().write(true).open(&path).unwrap();
        w.write_all(&file_of(&[("loss", 0.25, 2)])).unwrap();
        w.set_modified(first + std::time::Duration::from_secs(1))
            .unwrap();
        assert_eq!(values(&f.poll()), [("loss".into(), "0.25".into(), 2)]);
        // Rewritten again without a new timestamp: the last read still sees it.
        w.seek(SeekFrom::Start(0)).unwrap();
        w.write_all(&file_of(&[("loss", 0.125, 3)])).unwrap();
        w.set_modified(first + std::time::Duration::from_secs(1))
            .unwrap();
        assert_eq!(values(&f.poll_last()), [("loss".into(), "0.125".into(), 3)]);
    }

    /// Katib reads the files whole once the trial has ended: so does the last read, however
    /// much was left unread (here more than one poll's window).
    #[test]
    fn the_last_read_reads_every_file_to_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let filler = record("samples", 0.0, 0);
        let per_epoch = (4 << 20) / filler.len() + 1;
        let mut data = Vec::new();
        for epoch in 1..=8 {
            for _ in 0..per_epoch {
                data.extend_from_slice(&filler);
            }
            data.extend(record("loss", 1.0 / epoch as f32, epoch));
        }
        assert!(data.len() as u64 > MAX_READ_PER_POLL);
        std::fs::write(dir.path().join("events.out.tfevents.1.host"), data).unwrap();
        let mut f = TfEventFollower::new(dir.path(), vec!["loss".into()]);
        let steps: Vec<i64> = values(&f.poll_last()).iter().map(|v| v.2).collect();
        assert_eq!(steps, (1..=8).collect::<Vec<_>>());
    }
}
