//! The Prometheus text exposition format (version 0.0.4), read only as far as a metrics
//! collector needs: one sample value per wanted metric name from a scraped page.
//!
//! Lines are `name[{label="value",...}] value [timestamp]`; `#` lines (HELP, TYPE, comments)
//! and blank lines are ignored. Gauge, counter and untyped samples all look alike, so the TYPE
//! is not needed. When a metric has several samples (labels), the one without labels wins,
//! else the first on the page.

use crate::text::RejectedMetric;

/// What one scraped page yielded for the wanted metrics.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Exposition {
    /// `(metric, value)` in the order of `wanted`; values are the page's text.
    pub values: Vec<(String, String)>,
    /// Chosen samples of wanted metrics whose value is not a finite number.
    pub rejected: Vec<RejectedMetric>,
    /// Lines that are not comments, blank, or a well-formed sample.
    pub malformed: usize,
}

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
struct Sample<'a> {
    name: &'a str,
    has_labels: bool,
    value: &'a str,
}

/// Reads the wanted metrics from a page of Prometheus text.
pub fn parse_exposition(text: &str, wanted: &[String]) -> Exposition {
    let mut out = Exposition::default();
    // Per wanted metric: (has_labels, raw value) of the best sample so far.
    let mut best: Vec<Option<(bool, &str)>> = vec![None; wanted.len()];
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some(sample) = parse_sample(line) else {
            out.malformed += 1;
            continue;
        };
        for (i, w) in wanted.iter().enumerate() {
            if w != sample.name {
                continue;
            }
            let replace = match best[i] {
                None => true,
                Some((labelled, _)) => labelled && !sample.has_labels,
            };
            if replace {
                best[i] = Some((sample.has_labels, sample.value));
            }
        }
    }
    for (name, found) in wanted.iter().zip(best) {
        let Some((_, raw)) = found else { continue };
        match parse_value(raw) {
            Some(v) if v.is_finite() => out.values.push((name.clone(), raw.to_string())),
            _ => out.rejected.push(RejectedMetric {
                name: name.clone(),
                raw: raw.to_string(),
            }),
        }
    }
    out
}

/// Prometheus values are Go floats: also `NaN`, `+Inf`, `-Inf` (which parse, then are
/// rejected as non-finite by the caller).
fn parse_value(raw: &str) -> Option<f64> {
    match raw {
        "+Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => raw.parse::<f64>().ok(),
    }
}

fn parse_sample(line: &str) -> Option<Sample<'_>> {
    let name_end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(line.len());
    let name = &line[..name_end];
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let mut rest = &line[name_end..];
    let has_labels = rest.starts_with('{');
    if has_labels {
        rest = skip_labels(rest)?;
    }
    let mut fields = rest.split_ascii_whitespace();
    let value = fields.next()?;
    parse_value(value)?;
    if let Some(ts) = fields.next() {
        ts.parse::<i64>().ok()?;
    }
    if fields.next().is_some() {
        return None;
    }
    // A sample needs whitespace between the name (or labels) and the value.
    if !rest.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    Some(Sample {
        name,
        has_labels,
        value,
    })
}

/// Skips `{name="value",...}` (quoted values may contain `\"`, `\\`, `\n`, `}` and `,`),
/// returning what follows the closing brace.
fn skip_labels(s: &str) -> Option<&str> {
    let mut in_quotes = false;
    let mut escaped = false;
    for (i, c) in s.char_indices().skip(1) {
        if in_quotes {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_quotes = false,
                _ => {}
            }
        } else {
            match c {
                '"' => in_quotes = true,
                '}' => return Some(&s[i + 1..]),
                c if c.is_ascii_alphanumeric() || matches!(c, '_' | '=' | ',' | ' ') => {}
                _ => return None,
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wanted(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    fn rejected(e: &Exposition) -> Vec<String> {
        e.rejected.iter().map(ToString::to_string).collect()
    }

    const PAGE: &str = r#"# HELP accuracy Validation accuracy.
# TYPE accuracy gauge
accuracy{split="val"} 0.81
accuracy 0.83 1700000000000
# TYPE loss counter
loss{split="train",note="a \"quoted\" } brace"} 0.4
loss{split="val"} 0.5
steps_total 12
lr NaN
this line is not a sample
"#;

    #[test]
    fn picks_unlabelled_sample_else_first() {
        let e = parse_exposition(PAGE, &wanted(&["loss", "accuracy", "missing", "lr"]));
        assert_eq!(
            e.values,
            vec![
                ("loss".to_string(), "0.4".to_string()),
                ("accuracy".to_string(), "0.83".to_string())
            ]
        );
        assert_eq!(rejected(&e), ["lr=NaN"]);
        assert_eq!(e.malformed, 1);
    }

    #[test]
    fn malformed_samples_are_counted() {
        for line in [
            "loss",
            "loss abc",
            "loss{split=\"x\" 1",
            "loss 1 2 3",
            "loss 1 notatime",
            "9loss 1",
            "{a=\"b\"} 1",
            "loss{a=\"b\"}1",
        ] {
            let e = parse_exposition(line, &wanted(&["loss"]));
            assert_eq!((e.malformed, e.values.len()), (1, 0), "{line:?}");
        }
        let e = parse_exposition("loss +Inf\nloss_sum 3", &wanted(&["loss"]));
        assert_eq!(rejected(&e), ["loss=+Inf"]);
        assert_eq!(e.malformed, 0);
    }
}
