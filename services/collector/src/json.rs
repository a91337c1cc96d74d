//! Katib's JSON metrics format: one JSON object per line, metric values as strings (numbers
//! are accepted too), an optional `timestamp` (RFC 3339 text or epoch seconds). Values follow
//! the TEXT format's rule: `"nan"`, `"Infinity"` and `""` are rejected, other text is kept; a
//! list, object, boolean or null value is rejected too.

use crate::error::CollectorError;
use crate::text::{ParsedLine, RejectedMetric};
use serde_json::Value;

/// Extracts the wanted metrics from one JSON line; blank lines yield nothing.
pub fn parse_json_line(line: &str, wanted: &[String]) -> Result<ParsedLine, CollectorError> {
    let trimmed = line.trim();
    if trimmed.is_empty() {
        return Ok(ParsedLine::default());
    }
    let bad = |reason: String| CollectorError::BadJson {
        line: trimmed.chars().take(200).collect(),
        reason,
    };
    let value: Value = serde_json::from_str(trimmed).map_err(|e| bad(e.to_string()))?;
    let Value::Object(map) = value else {
        return Err(bad("expected an object".into()));
    };
    let timestamp_us = match map.get("timestamp") {
        Some(Value::String(s)) => crate::text::go_rfc3339_us(s),
        Some(Value::Number(n)) => n
            .as_f64()
            .filter(|secs| secs.is_finite())
            .map(|secs| (secs * 1e6).round() as i64),
        _ => None,
    }
    .and_then(crate::text::datable_us);
    let mut out = ParsedLine::default();
    for name in wanted {
        let value = match map.get(name) {
            Some(Value::String(s)) => s.trim().to_string(),
            Some(Value::Number(n)) => n.to_string(),
            None => continue,
            // A list, an object, a boolean or null is no metric value (Katib skips it too);
            // kept as rejected so the user is told.
            Some(other) => {
                out.rejected.push(RejectedMetric {
                    name: name.clone(),
                    raw: other.to_string().chars().take(64).collect(),
                });
                continue;
            }
        };
        out.take(name, value, timestamp_us, |v| format!("{v:?}"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_strings_numbers_and_timestamps() {
        let w = vec!["loss".to_string(), "acc".to_string()];
        let m = parse_json_line(
            r#"{"loss": "0.5", "acc": 0.9, "timestamp": 1638422847.5}"#,
            &w,
        )
        .unwrap()
        .metrics;
        assert_eq!(m.len(), 2);
        assert_eq!(m[1].value, "0.9");
        assert_eq!(m[0].timestamp_us, Some(1_638_422_847_500_000));
        assert_eq!(parse_json_line("  ", &w).unwrap(), ParsedLine::default());
        let err = parse_json_line("[1,2]", &w).unwrap_err();
        assert!(err.to_string().contains("[1,2]"), "{err}");
        assert!(parse_json_line("{oops", &w).is_err());
    }

    /// A time RFC 3339 cannot write back (outside the years 0000 to 9999 in UTC) dates the
    /// line when it is read, as a missing or unreadable one does.
    #[test]
    fn timestamps_outside_the_years_0000_to_9999_are_left_to_the_reader() {
        let w = vec!["loss".to_string()];
        let cases = [
            (r#""2024-01-01T00:00:00Z""#, Some(1_704_067_200_000_000)),
            (r#""0000-01-01T00:00:00Z""#, Some(-62_167_219_200_000_000)),
            (r#""9999-12-31T23:59:59-23:59""#, None),
            (r#""0000-01-01T00:00:00+01:00""#, None),
            ("1e300", None),
            ("-1e300", None),
            (r#""yesterday""#, None),
        ];
        for (stamp, want) in cases {
            let line = format!(r#"{{"loss": 0.5, "timestamp": {stamp}}}"#);
            let p = parse_json_line(&line, &w).unwrap();
            assert_eq!(p.metrics[0].timestamp_us, want, "{stamp}");
        }
    }

    #[test]
    fn rejects_nan_infinities_and_empty_values_as_text_lines_do() {
        let w = vec!["loss".to_string()];
        let cases = [
            (r#"{"loss": [1, 2]}"#, Some("[1,2]")),
            (r#"{"loss": {"a": 1}}"#, Some(r#"{"a":1}"#)),
            (r#"{"loss": true}"#, Some("true")),
            (r#"{"loss": null}"#, Some("null")),
            (r#"{"loss": "nan"}"#, Some(r#""nan""#)),
            (r#"{"loss": "-Infinity"}"#, Some(r#""-Infinity""#)),
            (r#"{"loss": ""}"#, Some(r#""""#)),
            (r#"{"loss": " - "}"#, Some(r#""-""#)),
            (r#"{"loss": "Genotype(normal=[])"}"#, None),
            (r#"{"loss": "0.5"}"#, None),
        ];
        for (line, rejected) in cases {
            let p = parse_json_line(line, &w).unwrap();
            match rejected {
                Some(raw) => {
                    assert!(p.metrics.is_empty(), "{line}: {p:?}");
                    assert_eq!(p.rejected[0].to_string(), format!("loss={raw}"), "{line}");
                }
                None => assert_eq!((p.metrics.len(), p.rejected.len()), (1, 0), "{line}"),
            }
        }
    }
}
