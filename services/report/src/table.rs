//! `vernier report NAME` as text: a summary, the trials ranked best first, and the best trial.

use super::ExperimentReport;
use super::analysis::duration_s;
use comfy_table::{
    Attribute, Cell, Color, ColumnConstraint, ContentArrangement, Table,
    presets::UTF8_FULL_CONDENSED,
};
use std::fmt::Write;
use vernier_spec::conditions::rfc3339;

/// Options of the text table.
#[derive(Debug, Clone, Copy, Default)]
pub struct TableOptions {
    /// Only the best `top` trials.
    pub top: Option<usize>,
    /// Colour the best trial's row (only when writing to a terminal).
    pub highlight: bool,
    /// Fit the table into this many columns, wrapping cells (a terminal's width); `None`
    /// keeps every cell on one line, for files and pipes.
    pub width: Option<u16>,
}

/// The report as text, ending with a newline.
pub fn render(r: &ExperimentReport, opts: TableOptions) -> String {
    let mut out = summary(r);
    let ranked = r.ranked();
    let shown = opts.top.unwrap_or(ranked.len()).min(ranked.len());
    let _ = writeln!(out, "{}", trials_table(r, &ranked[..shown], opts));
    if shown < ranked.len() {
        let _ = writeln!(out, "({} of {} trials shown)", shown, ranked.len());
    }
    let cut = ranked[..shown].iter().any(|&i| {
        let t = &r.trials[i];
        t.row
            .assignment
            .iter()
            .any(|(_, v)| v.chars().count() > TABLE_VALUE_CHARS)
    });
    if cut {
        let _ = writeln!(
            out,
            "(values over {TABLE_VALUE_CHARS} characters are cut; `vernier report {} --format json` or `--format csv` shows them whole)",
            r.row.name
        );
    }
    if ranked[..shown].iter().any(|&i| marker(r, i) == "!") {
        let _ = writeln!(out, "(! marks a finished trial that breaks a constraint)");
    }
    if r.objective.is_multi() {
        out.push_str(&front_lines(r));
    } else {
        out.push_str(&best_line(r));
    }
    out
}

/// The experiment's name, condition, message and times.
fn summary(r: &ExperimentReport) -> String {
    let mut out = String::new();
    let s = &r.row.status;
    // Writing to a String cannot fail; the results are ignored for that reason.
    let _ = writeln!(out, "experiment {}: {} ({})", r.row.name, s.phase, s.reason);
    let _ = writeln!(out, "  {}", s.message);
    if let Some(note) = r.unattended_note() {
        let _ = writeln!(out, "  {}", note.replace('\n', "\n  "));
    }
    let _ = writeln!(
        out,
        "  started {}{}",
        s.started_us.map(rfc3339).unwrap_or_default(),
        s.completed_us
            .map(|c| format!(", completed {}", rfc3339(c)))
            .unwrap_or_default()
    );
    out
}

/// One row per trial of `ranked` (indices into `r.trials`, best first).
fn trials_table(r: &ExperimentReport, ranked: &[usize], opts: TableOptions) -> Table {
    let params = r.parameter_names();
    let metrics = r.objective.metric_names();
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    if opts.highlight {
        table.enforce_styling();
    } else {
        table.force_no_tty();
    }
    if let Some(width) = opts.width {
        table
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(width);
    }
    let mut header = vec![
        String::new(),
        "RANK".to_string(),
        "TRIAL".to_string(),
        "CONDITION".to_string(),
    ];
    // Metrics first, as Katib's UI and Optuna's trials_dataframe order them: with many
    // parameters the objective stays beside the trial's name.
    for m in &metrics {
        header.push(match r.objective.strategy_for(m) {
            Some(st) => format!("{m} ({})", strategy_name(st)),
            None => m.clone(),
        });
    }
    header.extend(params.iter().cloned());
    header.push("DURATION".to_string());
    table.set_header(header);
    for (rank, &i) in ranked.iter().enumerate() {
        let (marker, row) = trial_row(r, i, rank, &params, &metrics);
        let highlighted = marker == "*" && opts.highlight;
        table.add_row(row.into_iter().map(|c| {
            let cell = Cell::new(c);
            if highlighted {
                cell.fg(Color::Green).add_attribute(Attribute::Bold)
            } else {
                cell
            }
        }));
    }
    if opts.width.is_some() {
        keep_whole(&mut table, params.len() + metrics.len());
    }
    table
}

/// The cells of trial `i` at `rank` (from 0), and its marker: with one objective `*` marks
/// the best trial, with several every front member; `!` marks a trial that breaks a
/// constraint.
fn trial_row(
    r: &ExperimentReport,
    i: usize,
    rank: usize,
    params: &[String],
    metrics: &[String],
) -> (&'static str, Vec<String>) {
    let t = &r.trials[i];
    let marker = marker(r, i);
    let mut row = vec![
        marker.to_string(),
        (rank + 1).to_string(),
        t.row.name.clone(),
        t.row.state.as_str().to_string(),
    ];
    for m in metrics {
        row.push(short_number(&r.metric_text(t, m)));
    }
    for p in params {
        row.push(cut_value(&short_number(
            r.assignment(t, p).unwrap_or_default(),
        )));
    }
    row.push(
        duration_s(&t.row)
            .map(|d| format!("{d:.1}s"))
            .unwrap_or_default(),
    );
    (marker, row)
}

/// How much of a parameter value a table cell shows: one long value (ENAS's ~600-character
/// `nn_config`, a list written as a categorical) would widen every row to its length.
const TABLE_VALUE_CHARS: usize = 80;

/// `value` cut to [`TABLE_VALUE_CHARS`], saying how long it was.
fn cut_value(value: &str) -> String {
    match vernier_core::first_chars(value, TABLE_VALUE_CHARS) {
        None => value.to_string(),
        Some(head) => format!("{head}... ({} chars)", value.chars().count()),
    }
}

/// Trial `i`'s marker (see [`trial_row`]).
fn marker(r: &ExperimentReport, i: usize) -> &'static str {
    let t = &r.trials[i];
    let best = if r.objective.is_multi() {
        r.front.contains(&i)
    } else {
        Some(i) == r.best
    };
    if best {
        "*"
    } else if !r.objective.constraints.is_empty() && t.row.state.is_terminal() && !r.is_feasible(t)
    {
        "!"
    } else {
        ""
    }
}

/// The Pareto front of a multi-objective experiment, one line per member.
fn front_lines(r: &ExperimentReport) -> String {
    let mut out = String::new();
    let names: Vec<String> = r
        .objective
        .objectives
        .iter()
        .map(|o| o.metric.clone())
        .collect();
    let _ = writeln!(
        out,
        "pareto front ({} trial{}, marked *; objectives {}):",
        r.front.len(),
        if r.front.len() == 1 { "" } else { "s" },
        names.join(", ")
    );
    for &i in &r.front {
        let t = &r.trials[i];
        let values: Vec<String> = names
            .iter()
            .map(|m| format!("{m}={}", r.metric_text(t, m)))
            .collect();
        let _ = writeln!(out, "  {}: {}", t.row.name, values.join("  "));
    }
    out
}

/// The best trial with its objective value and assignment, or why there is none.
fn best_line(r: &ExperimentReport) -> String {
    let Some(i) = r.best else {
        return format!("{}\n", r.no_best_note());
    };
    let t = &r.trials[i];
    let assignment: Vec<String> = t
        .row
        .assignment
        .iter()
        .map(|(n, v)| vernier_core::shown_pair(n, &cut_value(v)))
        .collect();
    format!(
        "best trial {}: {}={}  {}\n",
        t.row.name,
        r.objective.metric,
        r.metric_text(t, &r.objective.metric),
        assignment.join(", ")
    )
}

/// In a table fitted to a width, the marker, rank, trial, condition, objective and duration
/// columns keep their content on one line; only the other metrics and the parameters
/// (`values` columns after the first four, the objective first) wrap.
fn keep_whole(table: &mut Table, values: usize) {
    let last = 4 + values;
    for i in (0..5).chain([last]) {
        if let Some(column) = table.column_mut(i) {
            column.set_constraint(ColumnConstraint::ContentWidth);
        }
    }
}

/// Significant digits a number keeps in the table (JSON and CSV keep every digit).
const TABLE_DIGITS: usize = 6;

/// A cell's text with a number cut to [`TABLE_DIGITS`] significant digits, so a value such
/// as `0.012345678901234` does not widen its column; integers and text stay as they are.
pub fn short_number(text: &str) -> String {
    let Some(v) = text.trim().parse::<f64>().ok().filter(|v| v.is_finite()) else {
        return text.to_string();
    };
    let digits = text.chars().filter(char::is_ascii_digit).count();
    if !text.contains(['.', 'e', 'E']) || digits <= TABLE_DIGITS {
        return text.to_string();
    }
    let a = v.abs();
    if a != 0.0 && !(1e-4..1e9).contains(&a) {
        let s = format!("{v:.*e}", TABLE_DIGITS - 1);
        return match s.split_once('e') {
            Some((m, e)) => format!("{}e{e}", m.trim_end_matches('0').trim_end_matches('.')),
            None => s,
        };
    }
    let decimals = (TABLE_DIGITS as i32 - 1 - a.log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

pub(crate) fn strategy_name(s: vernier_core::MetricStrategy) -> &'static str {
    match s {
        vernier_core::MetricStrategy::Min => "min",
        vernier_core::MetricStrategy::Max => "max",
        vernier_core::MetricStrategy::Latest => "latest",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_six_significant_digits_and_text_stays() {
        // (cell text, shown)
        let cases = [
            ("0.012345678901234", "0.0123457"),
            ("0.05", "0.05"),
            ("123456.789", "123457"),
            ("0.1234567", "0.123457"),
            ("-2.718281828", "-2.71828"),
            ("1.5e-9", "1.5e-9"),
            ("0.00001234567891", "1.23457e-5"),
            ("123456789012.5", "1.23457e11"),
            ("100000000", "100000000"),
            ("42", "42"),
            ("adam", "adam"),
            ("", ""),
            ("NaN", "NaN"),
        ];
        for (text, want) in cases {
            assert_eq!(short_number(text), want, "{text}");
        }
    }
}
