//! Katib's TEXT metrics format: regexes whose first group is the metric name and second the
//! value, applied to every line; an optional leading RFC 3339 timestamp dates the line.

use crate::error::CollectorError;
use regex::Regex;

/// Katib's default `metricsFormat`: `name=value`.
pub use vernier_core::KATIB_DEFAULT_METRICS_FORMAT as KATIB_DEFAULT_FORMAT;

/// A metric value read from a line.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedMetric {
    pub name: String,
    pub value: String,
    /// From a leading RFC 3339 timestamp on the line, if there was one.
    pub timestamp_us: Option<i64>,
}

impl ParsedMetric {
    /// The observation to record, dated by the line's own timestamp, else `now_us` (when it
    /// was read).
    pub fn into_observation(self, now_us: i64) -> vernier_core::Observation {
        vernier_core::Observation {
            metric: self.name,
            timestamp_us: self.timestamp_us.unwrap_or(now_us),
            value: self.value,
        }
    }
}

/// A match for a wanted metric whose value is not recorded (empty, `nan`, infinite, too long or
/// holding a NUL byte); kept so the user can be told.
#[derive(Debug, Clone, PartialEq)]
pub struct RejectedMetric {
    pub name: String,
    pub raw: String,
}

impl std::fmt::Display for RejectedMetric {
    /// `name=raw`, as the user wrote it, a NUL byte shown as `\0` (a terminal shows nothing).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={}", self.name, self.raw.replace('\0', "\\0"))
    }
}

/// Everything one line yielded.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParsedLine {
    pub metrics: Vec<ParsedMetric>,
    pub rejected: Vec<RejectedMetric>,
}

impl ParsedLine {
    /// Keeps `value` of metric `name` as an observation when [`recordable`], else as a rejected
    /// value shown as `shown(value)`: the one rule for TEXT and JSON lines.
    pub(crate) fn take(
        &mut self,
        name: &str,
        value: String,
        timestamp_us: Option<i64>,
        shown: impl FnOnce(&str) -> String,
    ) {
        if recordable(&value) {
            self.metrics.push(ParsedMetric {
                name: name.to_string(),
                value,
                timestamp_us,
            });
        } else {
            self.rejected.push(RejectedMetric {
                name: name.to_string(),
                raw: shown(&value),
            });
        }
    }
}

/// The compiled `metricsFormat` regexes of an experiment.
#[derive(Debug, Clone)]
pub struct MetricsFilter {
    regexes: Vec<Regex>,
}

impl MetricsFilter {
    /// The filter Katib uses when `metricsFormat` is empty.
    pub fn katib_default() -> Self {
        match Regex::new(&vernier_core::go_regex(KATIB_DEFAULT_FORMAT)) {
            Ok(r) => MetricsFilter { regexes: vec![r] },
            // The constant is known to compile; an empty filter would only collect nothing.
            Err(_) => MetricsFilter { regexes: vec![] },
        }
    }

    /// Compiles user formats; an empty list means Katib's default.
    pub fn from_formats(formats: &[String]) -> Result<Self, CollectorError> {
        if formats.is_empty() {
            return Ok(Self::katib_default());
        }
        let regexes = formats
            .iter()
            .map(|f| {
                let r = Regex::new(&vernier_core::go_regex(f)).map_err(|e| {
                    CollectorError::BadRegex {
                        format: f.clone(),
                        reason: e.to_string(),
                    }
                })?;
                // Katib only needs two groups; extra (nested) groups are fine as long as the
                // first two are name and value.
                let groups = r.captures_len() - 1;
                if groups < 2 {
                    return Err(CollectorError::WrongGroupCount {
                        format: f.clone(),
                        groups,
                    });
                }
                Ok(r)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(MetricsFilter { regexes })
    }

    /// Extracts the wanted metrics from one line. Lines mentioning no wanted metric are skipped
    /// cheaply, as Katib does.
    pub fn parse_line(&self, line: &str, wanted: &[String]) -> ParsedLine {
        let mut out = ParsedLine::default();
        if !wanted.iter().any(|w| line.contains(w.as_str())) {
            return out;
        }
        let timestamp_us = leading_timestamp(line);
        for regex in &self.regexes {
            for caps in regex.captures_iter(line) {
                let (Some(name), Some(value)) = (caps.get(1), caps.get(2)) else {
                    continue;
                };
                let name = name.as_str().trim();
                if !wanted.iter().any(|w| w == name) {
                    continue;
                }
                let rest = &line[caps.get(0).map_or(0, |m| m.end())..];
                let value = value.as_str().trim().to_string();
                out.take(name, value, timestamp_us, |v| shown_value(v, rest));
            }
        }
        out
    }
}

impl MetricsFilter {
    /// Every metric name the formats match in `line`, wanted or not: what a trial printed,
    /// for telling a user whose objective never arrived which names did.
    pub fn names_in(&self, line: &str) -> Vec<String> {
        let mut names = Vec::new();
        for regex in &self.regexes {
            for caps in regex.captures_iter(line) {
                if let Some(name) = caps.get(1).map(|n| n.as_str().trim())
                    && !name.is_empty()
                    && !names.iter().any(|n| n == name)
                {
                    names.push(name.to_string());
                }
            }
        }
        names
    }
}

/// Whether a matched value becomes an observation: a finite number, or text such as DARTS's
/// `Genotype(...)` (Katib records any text); not an empty match, not `nan` or an infinity,
/// which would poison every min, max and comparison made with them, and not longer than
/// [`vernier_core::MAX_METRIC_VALUE_BYTES`], which no database column of every backend holds,
/// and without a NUL byte, which PostgreSQL's text cannot hold.
pub fn recordable(value: &str) -> bool {
    if value.len() > vernier_core::MAX_METRIC_VALUE_BYTES || value.contains('\0') {
        return false;
    }
    match value.parse::<f64>() {
        Ok(v) => v.is_finite(),
        Err(_) => !is_empty_number(value),
    }
}

/// Nothing, or only a sign: what Katib's default regex keeps of `loss=nan` and `loss=-inf`.
fn is_empty_number(value: &str) -> bool {
    matches!(value, "" | "-" | "+")
}

/// What to show of a value that is not a number: the match itself, or when the format matched
/// no digits (Katib's default regex matches an empty value before `nan`, a lone sign before
/// `-inf`), the match and the text that follows it, up to whitespace and at most
/// [`SHOWN_VALUE_BYTES`].
fn shown_value(matched: &str, rest: &str) -> String {
    let joined;
    let text = if is_empty_number(matched) {
        joined = format!("{matched}{}", rest.split_whitespace().next().unwrap_or(""));
        joined.as_str()
    } else {
        matched
    };
    let mut end = text.len().min(SHOWN_VALUE_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if end < text.len() {
        format!("{}... ({} bytes)", &text[..end], text.len())
    } else {
        text.to_string()
    }
}

/// How much of a rejected value is kept to show the user.
const SHOWN_VALUE_BYTES: usize = 64;

/// The line's time in µs, read as Katib's collector does: the text before the first space
/// (a line that starts with a space, or separates the time by a tab, has none), parsed by
/// [`go_rfc3339_us`].
pub(crate) fn leading_timestamp(line: &str) -> Option<i64> {
    let (token, _) = line.split_once(' ')?;
    go_rfc3339_us(token)
}

/// `text` as Katib's collectors read a time (Go's `time.Parse(time.RFC3339Nano, text)`, see
/// [`vernier_core::go_rfc3339_text`]), in µs; times outside the years 0000 to 9999 are refused
/// too ([`datable_us`]).
pub(crate) fn go_rfc3339_us(text: &str) -> Option<i64> {
    let text = vernier_core::go_rfc3339_text(text)?;
    chrono::DateTime::parse_from_rfc3339(&text)
        .ok()
        .and_then(|t| datable_us(t.timestamp_micros()))
}

/// `us` if it falls in the years 0000 to 9999 in UTC, the times RFC 3339 can write and so
/// the DBManager can hand back; a line dated outside them is dated when it is read, as a line
/// without a time is, rather than kept as a time nobody can read back.
pub(crate) fn datable_us(us: i64) -> Option<i64> {
    use chrono::Datelike;
    chrono::DateTime::from_timestamp_micros(us)
        .filter(|t| (0..=9999).contains(&t.year()))
        .map(|_| us)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wanted(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_leading_time_outside_the_years_0000_to_9999_does_not_date_the_line() {
        let cases = [
            ("2024-01-01T00:00:00Z loss=1", Some(1_704_067_200_000_000)),
            ("9999-12-31T23:59:59-23:59 loss=1", None),
            ("0000-01-01T00:00:00+01:00 loss=1", None),
            ("loss=1", None),
            // Katib splits at the first space and parses with Go's time.Parse.
            ("2024-01-01T00:00:00.5Z loss=1", Some(1_704_067_200_500_000)),
            ("2024-01-01T00:00:00,5Z loss=1", Some(1_704_067_200_500_000)),
            (
                "2024-01-01T01:00:00+01:00 loss=1",
                Some(1_704_067_200_000_000),
            ),
            ("2024-01-01T00:00:00Z\tloss=1", None),
            (" 2024-01-01T00:00:00Z loss=1", None),
            ("2024-01-01t00:00:00z loss=1", None),
            ("2024-01-01T00:00:00z loss=1", None),
            ("2024-01-01 00:00:00Z loss=1", None),
            ("2016-12-31T23:59:60Z loss=1", None),
            ("2024-01-01T00:00:00Z", None),
        ];
        for (line, want) in cases {
            assert_eq!(leading_timestamp(line), want, "{line}");
        }
    }

    #[test]
    fn names_in_lists_every_matched_name_once() {
        let f = MetricsFilter::katib_default();
        let cases: &[(&str, &[&str])] = &[
            (
                "epoch 3: val_accuracy=0.9 val_loss=0.2",
                &["val_accuracy", "val_loss"],
            ),
            ("loss=1 loss=2", &["loss"]),
            ("no metrics here", &[]),
        ];
        for (line, want) in cases {
            assert_eq!(f.names_in(line), wanted(want), "{line}");
        }
    }

    #[test]
    fn default_format_reads_katib_examples() {
        let f = MetricsFilter::katib_default();
        let w = wanted(&["loss", "accuracy", "Score"]);
        let p = f.parse_line("epoch 3: loss=0.3 accuracy=.98 Score=-7.53e-05", &w);
        let got: Vec<_> = p
            .metrics
            .iter()
            .map(|m| (m.name.as_str(), m.value.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![("loss", "0.3"), ("accuracy", ".98"), ("Score", "-7.53e-05")]
        );
        assert!(p.rejected.is_empty());
        assert_eq!(f.parse_line("Score = 1E0", &w).metrics[0].value, "1E0");
    }

    #[test]
    fn ignores_unwanted_and_reports_non_numbers() {
        let f = MetricsFilter::katib_default();
        let w = wanted(&["loss"]);
        assert!(f.parse_line("lr=0.1 epoch=2", &w).metrics.is_empty());
        let p = f.parse_line("loss=nan", &w);
        assert!(p.metrics.is_empty());
        assert_eq!(
            p.rejected,
            vec![RejectedMetric {
                name: "loss".into(),
                raw: "nan".into()
            }]
        );
        let long = format!("loss={}", "n".repeat(1 << 20));
        let raw = &f.parse_line(&long, &w).rejected[0].raw;
        assert_eq!(raw, &format!("{}... (1048576 bytes)", "n".repeat(64)));
        // Katib's regex keeps only the sign of a signed infinity: no value, not the text "-".
        for (line, shown) in [
            ("loss=-inf step=3", "-inf"),
            ("loss=+Infinity", "+Infinity"),
            ("loss=-", "-"),
        ] {
            let p = f.parse_line(line, &w);
            assert!(p.metrics.is_empty(), "{line}: {p:?}");
            let raws: Vec<&str> = p.rejected.iter().map(|r| r.raw.as_str()).collect();
            assert_eq!(raws, [shown], "{line}");
        }
    }

    #[test]
    fn records_text_values_and_rejects_nan_and_infinities() {
        // Katib's darts-cpu.yaml format and the line its DARTS trial prints.
        let f = MetricsFilter::from_formats(&[r"([\w-]+)=(Genotype.*)".to_string()]).unwrap();
        let w = wanted(&["Best-Genotype"]);
        let line =
            "Best-Genotype=Genotype(normal=[[('max_pooling_3x3', 0)]], normal_concat=range(2, 3))";
        let p = f.parse_line(line, &w);
        assert_eq!(p.metrics.len(), 1, "{p:?}");
        assert!(
            p.metrics[0]
                .value
                .starts_with("Genotype(normal=[[('max_pooling_3x3', 0)]]")
        );
        let table = [
            ("0.5", true),
            ("-1e-3", true),
            ("good", true),
            ("unavailable", true),
            ("", false),
            ("nan", false),
            ("NaN", false),
            ("inf", false),
            ("-Infinity", false),
            ("-", false),
            ("+", false),
            ("1\0x", false),
        ];
        for (value, want) in table {
            assert_eq!(recordable(value), want, "{value:?}");
        }
        // Longer than a MySQL TEXT column (a 70,000-digit number): refused, not a failed run.
        let longest = format!("0.{}", "1".repeat(vernier_core::MAX_METRIC_VALUE_BYTES - 2));
        assert!(recordable(&longest));
        assert!(!recordable(&format!("{longest}1")));
    }

    #[test]
    fn reads_leading_timestamps() {
        let f = MetricsFilter::katib_default();
        let p = f.parse_line("2021-12-02T05:27:27Z loss=1", &wanted(&["loss"]));
        assert_eq!(p.metrics[0].timestamp_us, Some(1_638_422_847_000_000));
        assert_eq!(
            f.parse_line("loss=1", &wanted(&["loss"])).metrics[0].timestamp_us,
            None
        );
    }

    #[test]
    fn custom_formats_need_two_groups() {
        let f = MetricsFilter::from_formats(&[
            r"{metricName: ([\w|-]+), metricValue: ((-?\d+)(\.\d+)?)}".to_string(),
        ])
        .unwrap();
        let p = f.parse_line(
            "{metricName: accuracy, metricValue: 0.91}",
            &wanted(&["accuracy"]),
        );
        assert_eq!(p.metrics[0].value, "0.91");
        let err = MetricsFilter::from_formats(&["loss=(\\d+)".into()]).unwrap_err();
        assert!(err.to_string().contains("two capture groups"), "{err}");
        let err = MetricsFilter::from_formats(&["(unclosed".into()]).unwrap_err();
        assert!(err.to_string().contains("\"(unclosed\""), "{err}");
    }
}
