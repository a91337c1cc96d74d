//! Metrics collection: pure parsers for metric lines (Katib's TEXT regexes and JSON lines) and
//! one async loop that turns any byte stream (child stdout, a tailed file) into lines.

mod error;
mod follow;
mod json;
mod lines;
mod text;

pub use error::CollectorError;
pub use follow::FileFollower;
pub use json::parse_json_line;
pub use lines::{MAX_LINE_BYTES, read_lines};
pub use text::{KATIB_DEFAULT_FORMAT, MetricsFilter, ParsedLine, ParsedMetric, RejectedMetric};
