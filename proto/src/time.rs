//! RFC 3339 timestamps as Katib puts them on the wire, to and from microseconds since the epoch.

use crate::error::ProtoError;
use chrono::{DateTime, Datelike, SecondsFormat, Utc};

/// Parses an RFC 3339 time (any offset, any fraction) into µs since the Unix epoch, as Katib's
/// DB manager does (Go's `time.Parse(time.RFC3339Nano, ...)`: no spaces around it, an
/// upper-case `T` and `Z`). A time whose offset takes it outside the years 0000 to 9999 in UTC
/// is refused: it could not be written back as RFC 3339.
pub fn parse_rfc3339_us(field: &str, text: &str) -> Result<i64, ProtoError> {
    let hint = "\nhint: write it like 2024-05-01T12:00:00Z";
    let go = vernier_core::go_rfc3339_text(text).ok_or_else(|| {
        ProtoError::invalid(
            field,
            text,
            format!("is not an RFC 3339 time as Katib reads one (Go's time.Parse){hint}"),
        )
    })?;
    let t = DateTime::parse_from_rfc3339(&go).map_err(|e| {
        ProtoError::invalid(field, text, format!("is not an RFC 3339 time ({e}){hint}"))
    })?;
    let utc = t.with_timezone(&Utc);
    if !(0..=9999).contains(&utc.year()) {
        return Err(ProtoError::invalid(
            field,
            text,
            format!(
                "is in the year {} in UTC, outside 0000 to 9999{hint}",
                utc.year()
            ),
        ));
    }
    Ok(t.timestamp_micros())
}

/// Formats µs since the epoch as RFC 3339 UTC as Go's RFC3339Nano does (what Katib's DB
/// manager returns): the fraction without trailing zeros, none when it is zero.
pub fn format_rfc3339_us(us: i64) -> String {
    let Some(t) = DateTime::<Utc>::from_timestamp_micros(us) else {
        return String::new();
    };
    let seconds = t.format("%Y-%m-%dT%H:%M:%S");
    let fraction = format!("{:06}", t.timestamp_subsec_micros());
    let fraction = fraction.trim_end_matches('0');
    if fraction.is_empty() {
        format!("{seconds}Z")
    } else {
        format!("{seconds}.{fraction}Z")
    }
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
        assert_eq!(format_rfc3339_us(us), "2024-05-01T12:00:00.25Z");
        assert_eq!(format_rfc3339_us(us - 250_000), "2024-05-01T12:00:00Z");
        assert_eq!(format_rfc3339_us(us + 1), "2024-05-01T12:00:00.250001Z");
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
        // An offset may not carry a time out of the years RFC 3339 can write.
        let e = parse_rfc3339_us("t", "9999-12-31T23:59:59-23:59")
            .unwrap_err()
            .to_string();
        assert!(e.contains("year 10000 in UTC"), "{e}");
        assert!(parse_rfc3339_us("t", "9999-12-31T23:59:59Z").is_ok());
    }
}
