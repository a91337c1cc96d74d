//! The one error type of the collector crate.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum CollectorError {
    #[error("metricsFormat {format:?} is not a valid regular expression: {reason}")]
    BadRegex { format: String, reason: String },
    #[error(
        "metricsFormat {format:?} must have two capture groups (name, value), it has {groups}\nhint: for example \"([\\w|-]+)\\s*=\\s*([+-]?\\d*(\\.\\d+)?)\""
    )]
    WrongGroupCount { format: String, groups: usize },
    #[error("metrics line {line:?} is not a JSON object: {reason}")]
    BadJson { line: String, reason: String },
    #[error("event record of {bytes} bytes is not a TensorFlow Event: {reason}")]
    BadEvent { bytes: usize, reason: String },
    #[error(
        "scraping {url} failed: {reason}\nhint: the trial must serve Prometheus text on 127.0.0.1 at metricsCollectorSpec.source.httpGet port and path"
    )]
    Scrape { url: String, reason: String },
    #[error("reading metrics stream: {0}")]
    Io(#[from] std::io::Error),
    /// A setting of the `vernier collect` sidecar, named by its flag.
    #[error("{flag} value {value:?} {problem}; hint: {hint}")]
    Flag {
        flag: &'static str,
        value: String,
        problem: String,
        hint: &'static str,
    },
    #[error("--metrics-format: {0}")]
    MetricsFormatFlag(Box<CollectorError>),
    #[error(
        "reporting to the db manager failed: {code}: {message}; hint: check --db-manager-address value {address:?} and that the operator's gRPC API listens there"
    )]
    Report {
        address: String,
        code: String,
        message: String,
    },
    #[error("{count} observation(s) of trial {trial} were not reported: {last}")]
    Unreported {
        count: usize,
        trial: String,
        last: Box<CollectorError>,
    },
}
