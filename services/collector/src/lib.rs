//! Metrics collection: pure parsers for every source a trial can report through (Katib's TEXT
//! regexes, JSON lines, TensorFlow event files, Prometheus text), the followers that read
//! files and directories while a trial writes them ([`FollowedSource`], [`follow_until`]), a
//! loopback Prometheus scraper and its loop ([`ScrapedSource`], [`scrape_until`]), and (feature
//! `sidecar`) the `vernier collect` sidecar that
//! reports what it follows to a DBManager.
//!
//! # Outcome rules (the same for every collector)
//!
//! - **Malformed input is skipped and counted, never fatal.** A JSON line that is not an
//!   object, a Prometheus line that is not a sample, a TFRecord with a bad checksum, a record
//!   that is not an `Event`: each is skipped, counted, and reported to the user as a warning;
//!   collection goes on with the next line or record.
//! - **Non-finite values are rejected; text is kept.** `nan`, `inf`, `+Inf`, `NaN`, empty
//!   matches and a lone sign (all Katib's default regex keeps of `-inf`) are not observations:
//!   they are skipped and counted as rejected. A TEXT or JSON
//!   value that is not a number at all (DARTS's `Genotype(...)`) is recorded as text, as Katib
//!   does; it can be a metric's `latest`, never its min or max.
//! - **Input is untrusted bytes.** Invalid UTF-8 is replaced, binary garbage is skipped, a
//!   line longer than [`MAX_LINE_BYTES`] is cut there (the rest of it is consumed, not kept,
//!   and so is the token the cut went through, so `loss=123456789` never records `loss=12`;
//!   each cut is warned about),
//!   a TFRecord longer than [`MAX_RECORD_BYTES`] is treated as corrupt and a scraped page is
//!   cut at [`MAX_BODY_BYTES`], so memory stays bounded whatever a trial writes.
//! - **Incomplete input waits.** A line without its newline, or a record without its last
//!   bytes, is kept until the writer finishes it; a metric line split across writes is read
//!   once, whole. When the trial has ended, an unterminated last line is read as it is.
//! - **Metrics that never appear make the trial `MetricsUnavailable`.** If a trial exits 0 and
//!   its objective metric was never recorded, the runner records Katib's `unavailable` value
//!   for the objective and marks the trial `MetricsUnavailable` (not `Succeeded`).

mod consumed;
mod error;
mod event;
mod follow;
mod json;
mod lines;
mod prometheus;
mod scrape;
mod scraped;
#[cfg(feature = "sidecar")]
pub mod sidecar;
mod source;
mod text;
mod tfevent;
mod tfrecord;

pub use error::CollectorError;
pub use event::{
    Event, EventScalar, EventScalars, Summary, SummaryValue, TensorDim, TensorProto, TensorShape,
    decode_event, event_scalars, tag_matches,
};
pub use follow::FileFollower;
pub use json::parse_json_line;
pub use lines::{LineReader, MAX_LINE_BYTES, cut_line_warning, drop_cut_token, read_lines};
pub use prometheus::{Exposition, parse_exposition};
pub use scrape::{MAX_BODY_BYTES, SCRAPE_TIMEOUT, ScrapeFailure, parse_response, scrape};
pub use scraped::{LISTEN_RETRY, ScrapedSource, scrape_until};
pub use source::{FollowedSource, ReadSink, SourceFormat, SourceRead, follow_until};
pub use text::{
    KATIB_DEFAULT_FORMAT, MetricsFilter, ParsedLine, ParsedMetric, RejectedMetric, recordable,
};
pub use tfevent::{TfEventFollower, TfEventPoll};
pub use tfrecord::{
    Frame, MAX_RECORD_BYTES, encode_record, masked_crc32c, next_frame, split_records,
};
