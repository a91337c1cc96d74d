//! Which metric names a trial reported, for the MetricsUnavailable message ("saw val_loss,
//! val_accuracy"). The collector records only the experiment's metrics, so when the objective
//! is missing the trial's output (StdOut) or metrics file (File) is read again after the
//! trial ended: only its last [`TAIL_BYTES`], keeping at most [`MAX_NAMES`] names.

use crate::experiment::LocalExperiment;
use crate::process::MetricSource;
use std::collections::HashSet;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use vernier_collector::MetricsFilter;

/// How much of the end of the output or metrics file is read.
pub const TAIL_BYTES: u64 = 1 << 20;
/// How many distinct names are kept.
pub const MAX_NAMES: usize = 32;

/// The names the collector recorded, plus — when the objective is not among them — the other
/// names the files it read (`sources`: the trial's output, or its metrics file) show.
pub async fn reported_names(
    exp: &LocalExperiment,
    recorded: &HashSet<String>,
    sources: &[PathBuf],
) -> Vec<String> {
    let mut names: Vec<String> = recorded.iter().cloned().collect();
    if recorded.contains(&exp.objective.metric) {
        return names;
    }
    let json = matches!(exp.collection.source, MetricSource::JsonFile);
    let filter = exp.collection.filter.clone();
    let paths = sources.to_vec();
    let found = tokio::task::spawn_blocking(move || {
        paths
            .iter()
            .flat_map(|p| names_in_file(p, json, &filter))
            .collect::<Vec<_>>()
    })
    .await
    .unwrap_or_default();
    for name in found {
        if names.len() >= MAX_NAMES {
            break;
        }
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// Metric names in the last [`TAIL_BYTES`] of `path` (none if it cannot be read).
fn names_in_file(path: &Path, json: bool, filter: &MetricsFilter) -> Vec<String> {
    let Ok(text) = tail(path) else {
        return Vec::new();
    };
    names_in_text(&text, json, filter)
}

fn tail(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(TAIL_BYTES)))?;
    let mut bytes = Vec::new();
    file.take(TAIL_BYTES).read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Distinct metric names in `text`, in order of first appearance, at most [`MAX_NAMES`].
fn names_in_text(text: &str, json: bool, filter: &MetricsFilter) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for line in text.lines() {
        let found = if json {
            json_keys(line)
        } else {
            filter.names_in(line)
        };
        for name in found {
            if names.len() >= MAX_NAMES {
                return names;
            }
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

/// The keys of a JSON metrics line, except its timestamp.
fn json_keys(line: &str) -> Vec<String> {
    match serde_json::from_str::<serde_json::Value>(line.trim()) {
        Ok(serde_json::Value::Object(map)) => map
            .keys()
            .filter(|k| k.as_str() != "timestamp")
            .cloned()
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn names_come_from_text_or_json_lines_bounded() {
        let f = MetricsFilter::katib_default();
        let many: String = (0..40).map(|i| format!("m{i}=1\n")).collect();
        let first_32: Vec<String> = (0..32).map(|i| format!("m{i}")).collect();
        let cases: Vec<(&str, bool, Vec<String>)> = vec![
            (
                "step 1\nval_loss=0.3 val_acc=0.8\nval_loss=0.2\n",
                false,
                strings(&["val_loss", "val_acc"]),
            ),
            (
                "{\"timestamp\": 1, \"acc\": \"0.5\"}\nnot json\n{\"loss\": 2}\n",
                true,
                strings(&["acc", "loss"]),
            ),
            ("nothing to see\n", false, Vec::new()),
            (&many, false, first_32),
        ];
        for (text, json, want) in cases {
            assert_eq!(names_in_text(text, json, &f), want, "{text:?}");
        }
    }

    #[test]
    fn only_the_tail_of_a_large_file_is_read() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("out.log");
        let head = "early=1\n".to_string() + &"x".repeat(TAIL_BYTES as usize);
        std::fs::write(&path, head + "\nlate=2\n").unwrap_or_else(|e| panic!("{e}"));
        let names = names_in_file(&path, false, &MetricsFilter::katib_default());
        assert_eq!(names, ["late"]);
    }
}
