//! RFC 3339 timestamps as Katib puts them on the wire, to and from microseconds since the epoch.

use crate::error::ProtoError;
use chrono::{DateTime, SecondsFormat, Utc};

/// Parses an RFC 3339 time (any offset, any fraction) into µs since the Unix epoch.
pub fn parse_rfc3339_us(field: &str, text: &str) -> Result<i64, ProtoError> {
    DateTime::parse_from_rfc3339(text.trim())
        .map(|t| t.timestamp_micros())
        .map_err(|e| {
            ProtoError::invalid(
                field,
                text,
                format!("is not an RFC 3339 time ({e})\nhint: write it like 2024-05-01T12:00:00Z"),
            )
        })
}

/// Formats µs since the epoch as RFC 3339 UTC with as many fraction digits as needed
/// (Go's RFC3339Nano, which Katib's DB manager returns).
pub fn format_rfc3339_us(us: i64) -> String {
    DateTime::<Utc>::from_timestamp_micros(us)
        .map(|t| t.to_rfc3339_opts(SecondsFormat::AutoSi, true))
        .unwrap_or_default()
}

/// Second precision, as Katib's controller formats trial start and completion times.
pub fn format_rfc3339_seconds(us: i64) -> String {
    DateTime::<Utc>::from_timestamp_micros(us)
        .map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, true))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_microseconds() {
        let us = parse_rfc3339_us("t", "2024-05-01T12:00:00.25Z").unwrap();
        assert_eq!(us, 1_714_564_800_250_000);
        assert_eq!(format_rfc3339_us(us), "2024-05-01T12:00:00.250Z");
        assert_eq!(format_rfc3339_seconds(us), "2024-05-01T12:00:00Z");
        assert_eq!(
            parse_rfc3339_us("t", "2024-05-01T14:00:00+02:00").unwrap(),
            us - 250_000
        );
        let e = parse_rfc3339_us("start_time", "yesterday")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("start_time: value \"yesterday\" is not an RFC 3339 time"),
            "{e}"
        );
    }
}
