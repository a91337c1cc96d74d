//! One metrics source a trial writes while it runs (a metrics file of TEXT or JSON lines, or a
//! directory of TensorFlow event files), read a little at a time. The local runner and the
//! `vernier collect` sidecar both follow sources through this type and [`follow_until`], so
//! both read a source alike; each only decides what to do with what was read.

use crate::json::parse_json_line;
use crate::text::{MetricsFilter, ParsedMetric, RejectedMetric};
use crate::{FileFollower, TfEventFollower};
use std::future::Future;
use std::path::Path;
use std::time::Duration;

/// What a trial writes, and how its lines are parsed.
#[derive(Debug, Clone)]
pub enum SourceFormat {
    /// Katib `File` with format TEXT: the filter's regexes on every line.
    Text(MetricsFilter),
    /// Katib `File` with format JSON: one object per line.
    Json,
    /// Katib `TensorFlowEvent`: scalar summaries in the event files under a directory.
    Events,
}

/// What one read of a source found.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct SourceRead {
    /// Values of wanted metrics, in the order they were written.
    pub metrics: Vec<ParsedMetric>,
    /// TEXT matches of wanted metrics whose value is not recorded (`nan`, empty).
    pub rejected: Vec<RejectedMetric>,
    /// What could not be read: a malformed JSON line, non-finite event values, corrupt event
    /// records, a file or directory that cannot be opened.
    pub warnings: Vec<String>,
    /// The timestamps are the source's own (event wall times) and are kept as they are, even
    /// when they go backwards (several event files, each in its own order).
    pub exact_time: bool,
}

impl SourceRead {
    pub fn is_empty(&self) -> bool {
        self.metrics.is_empty() && self.rejected.is_empty() && self.warnings.is_empty()
    }
}

#[derive(Debug)]
enum Reader {
    /// A metrics file; `None` for JSON lines.
    Lines {
        follower: Box<FileFollower>,
        filter: Option<MetricsFilter>,
    },
    Events(TfEventFollower),
}

/// A metrics file or event directory followed while a trial writes it.
#[derive(Debug)]
pub struct FollowedSource {
    reader: Reader,
    /// Metric names to keep, objective first.
    wanted: Vec<String>,
}

impl FollowedSource {
    /// Follows `path` (the metrics file, or the event directory for [`SourceFormat::Events`]),
    /// keeping the metrics named in `wanted`.
    pub fn new(path: &Path, format: SourceFormat, wanted: Vec<String>) -> FollowedSource {
        let reader = match format {
            SourceFormat::Text(filter) => Reader::Lines {
                follower: Box::new(FileFollower::new(path)),
                filter: Some(filter),
            },
            SourceFormat::Json => Reader::Lines {
                follower: Box::new(FileFollower::new(path)),
                filter: None,
            },
            SourceFormat::Events => Reader::Events(TfEventFollower::new(path, wanted.clone())),
        };
        FollowedSource { reader, wanted }
    }

    /// The metrics file or event directory.
    pub fn path(&self) -> &Path {
        match &self.reader {
            Reader::Lines { follower, .. } => follower.path(),
            Reader::Events(follower) => follower.root(),
        }
    }

    /// What was written since the last call; with `last` (the trial has ended) an
    /// unterminated final line too, and a warning when the file or directory never appeared.
    pub fn read(&mut self, last: bool) -> SourceRead {
        let mut read = match &mut self.reader {
            Reader::Lines { follower, filter } => {
                read_lines(follower, filter.as_ref(), &self.wanted, last)
            }
            Reader::Events(follower) => read_events(follower, last),
        };
        if last && !self.found() {
            read.warnings.push(self.never_created());
        }
        read
    }

    /// Whether the metrics file has existed at any read, or an event file has been found.
    fn found(&self) -> bool {
        match &self.reader {
            Reader::Lines { follower, .. } => follower.found(),
            Reader::Events(follower) => follower.found(),
        }
    }

    fn never_created(&self) -> String {
        let path = self.path().display();
        match self.reader {
            Reader::Lines { .. } => {
                format!("the metrics file {path} was never created while the trial ran")
            }
            Reader::Events(_) => format!(
                "no event file (events.out.tfevents.*) was written under {path} while the trial ran"
            ),
        }
    }
}

fn read_lines(
    follower: &mut FileFollower,
    filter: Option<&MetricsFilter>,
    wanted: &[String],
    last: bool,
) -> SourceRead {
    let mut out = SourceRead::default();
    let polled = match last {
        true => follower.poll_last(),
        false => follower.poll(),
    };
    let lines = polled.unwrap_or_else(|e| {
        out.warnings.push(format!(
            "cannot read metrics file {}: {e}",
            follower.path().display()
        ));
        Vec::new()
    });
    out.warnings.extend(follower.take_warnings());
    for line in lines {
        match filter {
            Some(filter) => {
                let parsed = filter.parse_line(&line, wanted);
                out.metrics.extend(parsed.metrics);
                out.rejected.extend(parsed.rejected);
            }
            None => match parse_json_line(&line, wanted) {
                Ok(parsed) => {
                    out.metrics.extend(parsed.metrics);
                    out.rejected.extend(parsed.rejected);
                }
                Err(e) => out.warnings.push(e.to_string()),
            },
        }
    }
    out
}

fn read_events(follower: &mut TfEventFollower, last: bool) -> SourceRead {
    let polled = match last {
        true => follower.poll_last(),
        false => follower.poll(),
    };
    let mut warnings = polled.rejected;
    if polled.corrupt_records > 0 {
        warnings.push(format!(
            "{} corrupt event record(s) under {} (bad checksum or not an Event)",
            polled.corrupt_records,
            follower.root().display()
        ));
    }
    warnings.extend(polled.errors);
    SourceRead {
        metrics: polled
            .scalars
            .into_iter()
            .map(|s| ParsedMetric {
                name: s.metric,
                value: s.value,
                timestamp_us: s.timestamp_us,
            })
            .collect(),
        rejected: Vec::new(),
        warnings,
        exact_time: true,
    }
}

/// Where the reads of a followed source go.
pub trait ReadSink {
    /// Takes one read, empty or not (so a sink can retry what it could not deliver before);
    /// `last` says it is the read made after the trial has ended.
    fn take(&mut self, read: SourceRead, last: bool) -> impl Future<Output = ()> + Send;
}

/// Reads `source` every `every` until `ended` completes, then once more as the last read,
/// handing every read to `sink`.
pub async fn follow_until(
    source: &mut FollowedSource,
    every: Duration,
    ended: impl Future<Output = ()>,
    sink: &mut impl ReadSink,
) {
    let mut ended = std::pin::pin!(ended);
    let mut last = false;
    loop {
        sink.take(source.read(last), last).await;
        if last {
            return;
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = &mut ended => last = true,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::tfrecord::encode_record;

    fn wanted() -> Vec<String> {
        vec!["loss".into(), "accuracy".into()]
    }

    #[test]
    fn text_lines_are_read_once_and_the_partial_last_line_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("metrics.log");
        let filter = MetricsFilter::katib_default();
        let mut source = FollowedSource::new(&path, SourceFormat::Text(filter), wanted());
        assert!(source.read(false).is_empty(), "a missing file is no error");
        std::fs::write(&path, "loss=0.5 accuracy=nan\nloss=0.25").unwrap();
        let read = source.read(false);
        let values: Vec<&str> = read.metrics.iter().map(|m| m.value.as_str()).collect();
        assert_eq!(values, ["0.5"]);
        assert_eq!(read.rejected.len(), 1);
        assert_eq!(read.rejected[0].name, "accuracy");
        assert!(!read.exact_time);
        assert!(source.read(false).is_empty());
        let read = source.read(true);
        assert_eq!(read.metrics[0].value, "0.25");
    }

    #[test]
    fn json_lines_warn_on_what_is_not_an_object() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.json");
        let mut source = FollowedSource::new(&path, SourceFormat::Json, wanted());
        std::fs::write(&path, "{\"loss\": 1.5}\n[1]\n").unwrap();
        let read = source.read(false);
        assert_eq!(read.metrics.len(), 1);
        assert_eq!(read.metrics[0].value, "1.5");
        assert_eq!(read.warnings.len(), 1, "{:?}", read.warnings);
        assert!(read.warnings[0].contains("not a JSON object"));
    }

    #[test]
    fn event_values_keep_their_wall_times_and_corrupt_records_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let mut source = FollowedSource::new(dir.path(), SourceFormat::Events, wanted());
        let bytes = encode_record(b"not an event at all");
        std::fs::write(dir.path().join("events.out.tfevents.1"), &bytes).unwrap();
        let read = source.read(true);
        assert!(read.metrics.is_empty());
        assert!(read.exact_time);
        assert_eq!(read.warnings.len(), 1, "{:?}", read.warnings);
        assert!(read.warnings[0].starts_with("1 corrupt event record(s) under"));
    }

    /// A file or event directory the trial never created is said at the last read only (a
    /// trainer may create it late); one that appeared and went is not.
    #[test]
    fn a_source_never_created_is_said_at_the_last_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("metrics.log");
        let text = SourceFormat::Text(MetricsFilter::katib_default());
        let mut file = FollowedSource::new(&path, text.clone(), wanted());
        assert!(file.read(false).is_empty());
        let said = file.read(true).warnings;
        let want = format!(
            "the metrics file {} was never created while the trial ran",
            path.display()
        );
        assert_eq!(said, [want]);
        let events = dir.path().join("events");
        std::fs::create_dir(&events).unwrap();
        let mut dir_source = FollowedSource::new(&events, SourceFormat::Events, wanted());
        let said = dir_source.read(true).warnings;
        assert!(
            said[0].starts_with("no event file (events.out.tfevents.*) was written under "),
            "{said:?}"
        );

        let mut gone = FollowedSource::new(&path, text, wanted());
        std::fs::write(&path, "loss=1\n").unwrap();
        assert_eq!(gone.read(false).metrics.len(), 1);
        std::fs::remove_file(&path).unwrap();
        assert!(gone.read(true).is_empty());
    }

    /// How many metrics each read held, and whether it was the last.
    struct Reads(Vec<(usize, bool)>);

    impl ReadSink for Reads {
        async fn take(&mut self, read: SourceRead, last: bool) {
            self.0.push((read.metrics.len(), last));
        }
    }

    #[tokio::test]
    async fn following_ends_with_one_last_read_after_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("metrics.log");
        std::fs::write(&path, "loss=1\nloss=2").unwrap();
        let filter = MetricsFilter::katib_default();
        let mut source = FollowedSource::new(&path, SourceFormat::Text(filter), wanted());
        let mut reads = Reads(Vec::new());
        let ended = std::future::ready(());
        follow_until(&mut source, Duration::from_secs(3600), ended, &mut reads).await;
        assert_eq!(reads.0, [(1, false), (1, true)]);
    }
}
