//! Warm start (`spec.warmStart`): results of earlier experiments in the same store and of a
//! file of known results, handed to the algorithm as extra history so a second run starts
//! where the first left off. They are never this experiment's trials: the planner, the
//! trial counts and `maxTrialCount` never see them, only the suggester does.
//!
//! Every record is a `TrialRecord` in state `Succeeded`, named `warmstart-<n>`, labelled
//! `vernier.warmstart/source` (`experiment/<name>` or `file/<path>`) and
//! `vernier.warmstart/origin` (the earlier trial's name, or `line <n>` of the file). They
//! carry no algorithm labels, so Hyperband and ASHA count them as taken configurations only.
//!
//! From earlier experiments: their Succeeded and EarlyStopped trials, with the objective
//! metric of *this* experiment reduced by this experiment's metric strategy; a trial without
//! that metric, or whose assignment does not fit this search space (a missing parameter, a
//! value outside it), is skipped and counted. Parameters the earlier experiment had and this
//! one lacks are dropped.
//!
//! Files (path relative to the experiment file's directory), by extension:
//! - `.csv`: a header row naming the columns; one column per parameter of this space and one
//!   named like the objective metric; other columns are ignored, so the output of
//!   `vernier report NAME --format csv` works as is. A `condition` column, if present, keeps
//!   only rows that are `Succeeded` or `EarlyStopped`; a row with an empty objective cell is
//!   skipped.
//! - `.jsonl`, `.ndjson` or `.json`: one JSON object per non-blank line, keyed the same way
//!   (`{"lr": 0.01, "optimizer": "adam", "loss": 0.21}`); values may be numbers or strings;
//!   a missing or null objective skips the line.
//!
//! A file row whose parameters are missing or outside the space is an error naming the line,
//! since a hand-written file is meant to fit.

use crate::error::RunnerError;
use crate::experiment::LocalExperiment;
use crate::observed::trial_metrics;
use std::collections::BTreeMap;
use std::path::Path;
use vernier_core::{Assignment, SearchSpace, TrialRecord, TrialState};
use vernier_store::SqlStore;

/// Label naming where a warm-start record came from.
pub const SOURCE_LABEL: &str = vernier_core::WARM_START_SOURCE_LABEL;
/// Label naming the earlier trial (or file line) a warm-start record copies.
pub const ORIGIN_LABEL: &str = "vernier.warmstart/origin";

/// The history an experiment starts from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WarmStart {
    pub records: Vec<TrialRecord>,
    /// Earlier trials left out because they lack the objective or do not fit this space.
    pub skipped: usize,
    /// Source experiments no longer in the store (deleted after this experiment started).
    pub missing: Vec<String>,
}

impl WarmStart {
    /// Refuses a warm start whose source experiments are not all there: what a new
    /// experiment requires (a resumed one goes on without a source deleted since).
    pub fn complete(self) -> Result<WarmStart, RunnerError> {
        match self.missing.first() {
            Some(name) => Err(RunnerError::WarmStart(format!(
                "experiment {name:?} does not exist in the store\nhint: `vernier list` shows \
                 the experiments there; warm start reads experiments of the same --db"
            ))),
            None => Ok(self),
        }
    }
}

/// One known result read from a file.
#[derive(Debug, Clone, PartialEq)]
pub struct KnownResult {
    pub line: usize,
    pub assignment: Assignment,
    pub objective: f64,
}

/// Loads `spec.warmStart`, or nothing when the spec has none.
pub async fn load(store: &SqlStore, exp: &LocalExperiment) -> Result<WarmStart, RunnerError> {
    let mut out = WarmStart::default();
    let Some(ws) = &exp.spec.spec.warm_start else {
        return Ok(out);
    };
    for name in &ws.experiments {
        if store.get_experiment(name).await?.is_none() {
            out.missing.push(name.clone());
            continue;
        }
        let source = format!("experiment/{name}");
        for row in store.list_trials(name).await? {
            if !matches!(row.state, TrialState::Succeeded | TrialState::EarlyStopped) {
                continue;
            }
            let objective = trial_metrics(store, &exp.objective, &row.name)
                .await?
                .objective
                .filter(|v| v.is_finite());
            let fitting: Vec<(String, String)> = row
                .assignment
                .iter()
                .filter(|(n, _)| exp.space.get(n).is_some())
                .cloned()
                .collect();
            match (objective, exp.space.parse_assignment(&fitting)) {
                (Some(v), Ok(a)) => push(&mut out.records, &source, &row.name, a, v),
                _ => out.skipped += 1,
            }
        }
    }
    if let Some(file) = &ws.file {
        let path = exp.paths.work_dir.join(file);
        let source = format!("file/{file}");
        for known in read_file(&path, &exp.space, &exp.objective.metric)? {
            let origin = format!("line {}", known.line);
            push(
                &mut out.records,
                &source,
                &origin,
                known.assignment,
                known.objective,
            );
        }
    }
    // Algorithms that read `metrics` (multi-objective, constraints) find the objective there
    // too; other metrics of earlier runs are not carried over.
    for r in &mut out.records {
        if let Some(v) = r.objective {
            r.metrics.insert(exp.objective.metric.clone(), v);
        }
    }
    Ok(out)
}

fn push(records: &mut Vec<TrialRecord>, source: &str, origin: &str, a: Assignment, v: f64) {
    records.push(warm_record(records.len(), source, origin, a, v));
}

/// The `n`-th warm-start record: a succeeded trial with objective `v`, labelled with where
/// it came from.
pub fn warm_record(n: usize, source: &str, origin: &str, a: Assignment, v: f64) -> TrialRecord {
    let labels = BTreeMap::from([
        (SOURCE_LABEL.to_string(), source.to_string()),
        (ORIGIN_LABEL.to_string(), origin.to_string()),
    ]);
    TrialRecord {
        name: format!("warmstart-{n}"),
        assignment: a,
        state: TrialState::Succeeded,
        objective: Some(v),
        labels,
        metrics: Default::default(),
    }
}

/// Reads a CSV or JSON-lines file of known results.
pub fn read_file(
    path: &Path,
    space: &SearchSpace,
    metric: &str,
) -> Result<Vec<KnownResult>, RunnerError> {
    let shown = path.display().to_string();
    use vernier_spec::limits::{CappedReadError, MAX_WARM_START_BYTES, read_text_capped};
    let text = read_text_capped(path, MAX_WARM_START_BYTES).map_err(|e| match e {
        CappedReadError::Io(e) => RunnerError::WarmStart(format!(
            "cannot read file {shown}: {e}\nhint: spec.warmStart.file is relative to the \
             experiment file's directory"
        )),
        CappedReadError::TooLarge(limit) => RunnerError::WarmStart(format!(
            "spec.warmStart.file {shown} is larger than the {} MiB a warm-start file may have",
            limit >> 20
        )),
    })?;
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let parsed = match ext.as_str() {
        "csv" => parse_csv(&text, space, metric),
        "jsonl" | "ndjson" | "json" => parse_json_lines(&text, space, metric),
        _ => Err(format!(
            "extension {ext:?} is not known\nhint: use .csv (a header row of parameter and \
             metric names) or .jsonl (one JSON object per line)"
        )),
    };
    parsed.map_err(|e| RunnerError::WarmStart(format!("file {shown}: {e}")))
}

/// Keeps only rows a report marks as finished with a result.
fn usable_condition(condition: Option<&str>) -> bool {
    condition.is_none_or(|c| matches!(c.trim(), "" | "Succeeded" | "EarlyStopped"))
}

/// Parses CSV text (header first) into known results.
pub fn parse_csv(
    text: &str,
    space: &SearchSpace,
    metric: &str,
) -> Result<Vec<KnownResult>, String> {
    // Values keep their spaces (a categorical value may begin or end with one); `known`
    // falls back to the trimmed values for hand-written files (`lr, optimizer`).
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::Headers)
        .from_reader(text.as_bytes());
    let header = reader
        .headers()
        .map_err(|e| format!("the header row does not parse: {e}"))?
        .clone();
    // In a report's CSV the parameters and metrics come after its own leading columns, which
    // a parameter may be named after (`index`): they are looked up after those.
    let leading = vernier_spec::status::CSV_TRIAL_COLUMNS;
    let from_report =
        header.len() >= leading.len() && header.iter().zip(leading).all(|(h, l)| h == l);
    let skip = if from_report { leading.len() } else { 0 };
    let column = |name: &str| {
        header
            .iter()
            .skip(skip)
            .position(|h| h == name)
            .map(|i| i + skip)
    };
    // A report names a column `x (parameter)` or `x (metric)` when another has the name `x`.
    let names: Vec<String> = space.parameters().iter().map(|p| p.name.clone()).collect();
    let parameter_column = |name: &str| {
        column(&vernier_spec::status::csv_parameter_column(name)).or_else(|| column(name))
    };
    let metric_column = |name: &str| {
        column(&vernier_spec::status::csv_metric_column(name, &names)).or_else(|| column(name))
    };
    let mut missing = Vec::new();
    let params: Vec<(String, usize)> = space
        .parameters()
        .iter()
        .filter_map(|p| match parameter_column(&p.name) {
            Some(i) => Some((p.name.clone(), i)),
            None => {
                missing.push(p.name.clone());
                None
            }
        })
        .collect();
    let objective = metric_column(metric);
    if objective.is_none() {
        missing.push(metric.to_string());
    }
    let Some(objective) = objective.filter(|_| missing.is_empty()) else {
        return Err(format!(
            "column(s) {} missing from the header row\nhint: name one column after each \
             parameter and one after the objective metric {metric:?}",
            missing.join(", ")
        ));
    };
    let condition = match from_report {
        true => leading.iter().position(|c| *c == "condition"),
        false => column("condition"),
    };
    let mut out = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| format!("does not parse as CSV: {e}"))?;
        let line = record.position().map_or(0, |p| p.line() as usize);
        if !usable_condition(condition.and_then(|c| record.get(c))) {
            continue;
        }
        let value_text = record.get(objective).unwrap_or_default().trim();
        if value_text.is_empty() {
            continue;
        }
        let pairs: Vec<(String, String)> = params
            .iter()
            .map(|(n, i)| (n.clone(), record.get(*i).unwrap_or_default().to_string()))
            .collect();
        out.push(known(line, space, metric, &pairs, value_text)?);
    }
    Ok(out)
}

/// Parses JSON lines into known results.
pub fn parse_json_lines(
    text: &str,
    space: &SearchSpace,
    metric: &str,
) -> Result<Vec<KnownResult>, String> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value =
            serde_json::from_str(raw).map_err(|e| format!("line {line}: not JSON: {e}"))?;
        let Some(obj) = value.as_object() else {
            return Err(format!(
                "line {line}: not a JSON object\nhint: write one object per line, e.g. \
                 {{\"lr\": 0.01, \"{metric}\": 0.2}}"
            ));
        };
        let text_of = |v: &serde_json::Value| match v {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Number(n) => Some(n.to_string()),
            serde_json::Value::Bool(b) => Some(b.to_string()),
            _ => None,
        };
        if !usable_condition(obj.get("condition").and_then(|c| c.as_str())) {
            continue;
        }
        let Some(value_text) = obj.get(metric).and_then(text_of) else {
            continue;
        };
        let mut pairs = Vec::new();
        for p in space.parameters() {
            let Some(v) = obj.get(&p.name).and_then(text_of) else {
                return Err(format!(
                    "line {line}: parameter {:?} is missing\nhint: every line gives every \
                     parameter a value",
                    p.name
                ));
            };
            pairs.push((p.name.clone(), v));
        }
        out.push(known(line, space, metric, &pairs, &value_text)?);
    }
    Ok(out)
}

fn known(
    line: usize,
    space: &SearchSpace,
    metric: &str,
    pairs: &[(String, String)],
    value_text: &str,
) -> Result<KnownResult, String> {
    let trimmed: Vec<(String, String)> = pairs
        .iter()
        .map(|(n, v)| (n.clone(), v.trim().to_string()))
        .collect();
    let assignment = space
        .parse_assignment(pairs)
        .or_else(|_| space.parse_assignment(&trimmed))
        .map_err(|e| {
            format!("line {line}: {e}\nhint: warm-start results must lie inside the search space")
        })?;
    let objective: f64 = value_text
        .trim()
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| {
            format!("line {line}: {metric} value {value_text:?} is not a finite number")
        })?;
    Ok(KnownResult {
        line,
        assignment,
        objective,
    })
}

#[cfg(test)]
#[path = "warm_start_tests.rs"]
mod tests;
