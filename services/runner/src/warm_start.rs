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
//! one lacks are dropped. A search of several objectives or with constraints reads their
//! metrics too ([`Objective::secondary_search_metrics`]): a record carries them all, and an
//! earlier trial or file row without one is skipped, since NSGA-II and ParEGO rank by every
//! objective and a missing constraint metric would count as breaking the constraint.
//!
//! Files (path relative to the experiment file's directory), by extension:
//! - `.csv`: a header row naming the columns; one column per parameter of this space and one
//!   named like the objective metric; other columns are ignored, so the output of
//!   `vernier report NAME --format csv` works as is. A `condition` column, if present, keeps
//!   only rows that are `Succeeded`, `EarlyStopped` or empty, unless a parameter or metric has
//!   that name (a report names such a column `condition (parameter)`); a row with an empty
//!   objective cell is skipped.
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
use vernier_core::{Assignment, Objective, SearchSpace, TrialRecord, TrialState};
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
    /// What the search starts from, by source: `warm start: 60 earlier result(s) (30 from
    /// experiment/toy-tpe, 30 from file/prev.csv)`; `None` without a warm start.
    pub fn summary(&self) -> Option<String> {
        if self.records.is_empty() {
            return None;
        }
        let mut by_source: BTreeMap<&str, usize> = BTreeMap::new();
        for r in &self.records {
            let source = r.labels.get(SOURCE_LABEL).map_or("", String::as_str);
            *by_source.entry(source).or_default() += 1;
        }
        let parts: Vec<String> = by_source
            .iter()
            .map(|(source, n)| format!("{n} from {source}"))
            .collect();
        Some(format!(
            "warm start: {} earlier result(s) ({})",
            self.records.len(),
            parts.join(", ")
        ))
    }

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

/// The known results of a file, and how many rows had the objective but lacked another
/// metric the search reads (skipped, and counted like earlier trials without them).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KnownResults {
    pub rows: Vec<KnownResult>,
    pub lacking: usize,
}

/// One known result read from a file.
#[derive(Debug, Clone, PartialEq)]
pub struct KnownResult {
    pub line: usize,
    pub assignment: Assignment,
    pub objective: f64,
    /// The other metrics the search reads (secondary objectives, constraints).
    pub metrics: BTreeMap<String, f64>,
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
        let secondary = exp.objective.secondary_search_metrics();
        for row in store.list_trials(name).await? {
            if !matches!(row.state, TrialState::Succeeded | TrialState::EarlyStopped) {
                continue;
            }
            let reduced = trial_metrics(store, &exp.objective, &row.name).await?;
            let objective = reduced.objective.filter(|v| v.is_finite());
            let others: Option<BTreeMap<String, f64>> = secondary
                .iter()
                .map(|n| Some((n.clone(), *reduced.metrics.get(n)?)))
                .map(|m| m.filter(|(_, v)| v.is_finite()))
                .collect();
            let fitting: Vec<(String, String)> = row
                .assignment
                .iter()
                .filter(|(n, _)| exp.space.get(n).is_some())
                .cloned()
                .collect();
            match (objective, others, exp.space.parse_assignment(&fitting)) {
                (Some(v), Some(others), Ok(a)) => {
                    push(&mut out, &exp.objective, (&source, &row.name), a, v, others)
                }
                _ => out.skipped += 1,
            }
        }
    }
    if let Some(file) = &ws.file {
        let path = exp.paths.work_dir.join(file);
        let source = format!("file/{file}");
        let known = read_file(&path, &exp.space, &exp.objective)?;
        out.skipped += known.lacking;
        for known in known.rows {
            let origin = format!("line {}", known.line);
            let (a, v) = (known.assignment, known.objective);
            push(
                &mut out,
                &exp.objective,
                (&source, &origin),
                a,
                v,
                known.metrics,
            );
        }
    }
    Ok(out)
}

/// Adds a record with objective `v` and the `others` metrics the search reads; algorithms
/// that read `metrics` (several objectives, constraints) find the objective there too.
fn push(
    out: &mut WarmStart,
    objective: &Objective,
    (source, origin): (&str, &str),
    a: Assignment,
    v: f64,
    others: BTreeMap<String, f64>,
) {
    let mut record = warm_record(out.records.len(), source, origin, a, v);
    record.metrics = others;
    record.metrics.insert(objective.metric.clone(), v);
    out.records.push(record);
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
        metrics: BTreeMap::new(),
    }
}

/// Reads a CSV or JSON-lines file of known results: the objective and every other metric the
/// search reads ([`Objective::secondary_search_metrics`]).
pub fn read_file(
    path: &Path,
    space: &SearchSpace,
    objective: &Objective,
) -> Result<KnownResults, RunnerError> {
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
        "csv" => parse_csv(&text, space, objective),
        "jsonl" | "ndjson" | "json" => parse_json_lines(&text, space, objective),
        _ => Err(format!(
            "extension {ext:?} is not known\nhint: use .csv (a header row of parameter and \
             metric names) or .jsonl (one JSON object per line)"
        )),
    };
    parsed.map_err(|e| RunnerError::WarmStart(format!("file {shown}: {e}")))
}

/// Keeps only rows a report marks as finished with a result.
/// Whether a parameter or a metric the search reads is named `condition`: in a hand-written
/// file that column is its value, not a trial's condition.
fn condition_is_taken(space: &SearchSpace, objective: &Objective) -> bool {
    let named = |n: &str| n == "condition";
    space.parameters().iter().any(|p| named(&p.name))
        || search_metrics(objective).iter().any(|m| named(m))
}

fn usable_condition(condition: Option<&str>) -> bool {
    condition.is_none_or(|c| matches!(c.trim(), "" | "Succeeded" | "EarlyStopped"))
}

/// Parses CSV text (header first) into known results.
pub fn parse_csv(
    text: &str,
    space: &SearchSpace,
    objective: &Objective,
) -> Result<KnownResults, String> {
    // Values keep their spaces (a categorical value may begin or end with one); `known`
    // falls back to the trimmed values for hand-written files (`lr, optimizer`).
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::Headers)
        .from_reader(text.as_bytes());
    let header = reader
        .headers()
        .map_err(|e| format!("the header row does not parse: {e}"))?;
    let columns = CsvColumns::of(header, space, objective)?;
    let mut out = KnownResults::default();
    for record in reader.records() {
        let record = record.map_err(|e| format!("does not parse as CSV: {e}"))?;
        let line = record
            .position()
            .map_or(0, |p| line_at(text, p.byte() as usize));
        if !usable_condition(columns.condition.and_then(|c| record.get(c))) {
            continue;
        }
        let cell = |(n, i): &(String, usize)| (n.clone(), record.get(*i).unwrap_or_default());
        let values: Vec<(String, &str)> = columns.metrics.iter().map(cell).collect();
        if values[0].1.trim().is_empty() {
            continue;
        }
        if values.iter().any(|(_, v)| v.trim().is_empty()) {
            out.lacking += 1;
            continue;
        }
        let pairs: Vec<(String, String)> = columns
            .params
            .iter()
            .map(|(n, i)| (n.clone(), record.get(*i).unwrap_or_default().to_string()))
            .collect();
        out.rows.push(known(line, space, &pairs, &values)?);
    }
    Ok(out)
}

/// Where a warm-start CSV holds each parameter, each metric the search needs (objective
/// first) and the trial's condition, if it has one.
struct CsvColumns {
    params: Vec<(String, usize)>,
    metrics: Vec<(String, usize)>,
    condition: Option<usize>,
}

impl CsvColumns {
    fn of(
        header: &csv::StringRecord,
        space: &SearchSpace,
        objective: &Objective,
    ) -> Result<CsvColumns, String> {
        // In a report's CSV the parameters and metrics come after its own leading columns,
        // which a parameter may be named after (`index`): they are looked up after those.
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
        let mut found = |name: String, at: Option<usize>| match at {
            Some(i) => Some((name, i)),
            None => {
                missing.push(name);
                None
            }
        };
        let params: Vec<(String, usize)> = names
            .iter()
            .filter_map(|p| found(p.clone(), parameter_column(p)))
            .collect();
        let metrics: Vec<(String, usize)> = search_metrics(objective)
            .into_iter()
            .filter_map(|m| {
                let at = metric_column(&m);
                found(m, at)
            })
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "column(s) {} missing from the header row\nhint: name one column after each \
                 parameter and one after {}",
                missing.join(", "),
                metrics_wanted(objective)
            ));
        }
        let condition = match from_report {
            true => leading.iter().position(|c| *c == "condition"),
            false if condition_is_taken(space, objective) => None,
            false => column("condition"),
        };
        Ok(CsvColumns {
            params,
            metrics,
            condition,
        })
    }
}

/// The line a record starting at byte `at` stands on. The csv crate's own count is one short
/// for files with CRLF line ends (Python's `csv.writer` default): a record's position is taken
/// before the `\n` that ends the previous line is read.
fn line_at(text: &str, at: usize) -> usize {
    let rest = text.get(at..).unwrap_or_default();
    let start = at + (rest.len() - rest.trim_start_matches(['\r', '\n']).len());
    1 + text.as_bytes()[..start]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
}

/// Parses JSON lines into known results.
pub fn parse_json_lines(
    text: &str,
    space: &SearchSpace,
    objective: &Objective,
) -> Result<KnownResults, String> {
    let metric = &objective.metric;
    let metrics = search_metrics(objective);
    let mut out = KnownResults::default();
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
        let condition = match condition_is_taken(space, objective) {
            true => None,
            false => obj.get("condition").and_then(|c| c.as_str()),
        };
        if !usable_condition(condition) {
            continue;
        }
        if obj.get(metric).and_then(text_of).is_none() {
            continue;
        }
        let values: Option<Vec<(String, String)>> = metrics
            .iter()
            .map(|m| Some((m.clone(), obj.get(m).and_then(text_of)?)))
            .collect();
        let Some(values) = values else {
            out.lacking += 1;
            continue;
        };
        let values: Vec<(String, &str)> = values.iter().map(|(m, v)| (m.clone(), &**v)).collect();
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
        out.rows.push(known(line, space, &pairs, &values)?);
    }
    Ok(out)
}

/// The objective first, then the other metrics the search reads.
fn search_metrics(objective: &Objective) -> Vec<String> {
    let mut names = vec![objective.metric.clone()];
    names.extend(objective.secondary_search_metrics());
    names
}

/// The metric columns a file needs, for a hint.
fn metrics_wanted(objective: &Objective) -> String {
    match search_metrics(objective).as_slice() {
        [one] => format!("the objective metric {one:?}"),
        many => format!(
            "each metric the search reads ({}: objectives and constraints)",
            many.join(", ")
        ),
    }
}

/// A known result from a row's parameter values and its metric values (`values`, in
/// [`search_metrics`] order).
fn known(
    line: usize,
    space: &SearchSpace,
    pairs: &[(String, String)],
    values: &[(String, &str)],
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
    let number = |(metric, text): &(String, &str)| {
        let value = text.trim().parse().ok().filter(|v: &f64| v.is_finite());
        value
            .map(|v| (metric.clone(), v))
            .ok_or_else(|| format!("line {line}: {metric} value {text:?} is not a finite number"))
    };
    let (objective, others) = values
        .split_first()
        .ok_or_else(|| format!("line {line}: no objective value"))?;
    let objective = number(objective)?.1;
    let metrics = others.iter().map(number).collect::<Result<_, _>>()?;
    Ok(KnownResult {
        line,
        assignment,
        objective,
        metrics,
    })
}

#[cfg(test)]
#[path = "warm_start_tests.rs"]
mod tests;
