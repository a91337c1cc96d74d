//! `vernier report NAME` as text: a summary, the trials ranked best first, and the best trial.

use super::ExperimentReport;
use super::analysis::duration_s;
use comfy_table::{Attribute, Cell, Color, Table, presets::UTF8_FULL_CONDENSED};
use std::fmt::Write;
use vernier_spec::conditions::rfc3339;

/// Options of the text table.
#[derive(Debug, Clone, Copy, Default)]
pub struct TableOptions {
    /// Only the best `top` trials.
    pub top: Option<usize>,
    /// Colour the best trial's row (only when writing to a terminal).
    pub highlight: bool,
}

/// The report as text, ending with a newline.
pub fn render(r: &ExperimentReport, opts: TableOptions) -> String {
    let mut out = String::new();
    let s = &r.row.status;
    // Writing to a String cannot fail; the results are ignored for that reason.
    let _ = writeln!(out, "experiment {}: {} ({})", r.row.name, s.phase, s.reason);
    let _ = writeln!(out, "  {}", s.message);
    let _ = writeln!(
        out,
        "  started {}{}",
        s.started_us.map(rfc3339).unwrap_or_default(),
        s.completed_us
            .map(|c| format!(", completed {}", rfc3339(c)))
            .unwrap_or_default()
    );
    let params = r.parameter_names();
    let metrics = r.objective.metric_names();
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    if opts.highlight {
        table.enforce_styling();
    } else {
        table.force_no_tty();
    }
    let mut header = vec![
        String::new(),
        "RANK".to_string(),
        "TRIAL".to_string(),
        "CONDITION".to_string(),
    ];
    header.extend(params.iter().cloned());
    for m in &metrics {
        header.push(match r.objective.strategy_for(m) {
            Some(st) => format!("{m} ({})", strategy_name(st)),
            None => m.clone(),
        });
    }
    header.push("DURATION".to_string());
    table.set_header(header);
    let ranked = r.ranked();
    let shown = opts.top.unwrap_or(ranked.len()).min(ranked.len());
    for (rank, &i) in ranked.iter().take(shown).enumerate() {
        let t = &r.trials[i];
        // One objective: `*` marks the best trial. Several: `*` marks every front member.
        // `!` marks a trial that breaks a constraint.
        let best = if r.objective.is_multi() {
            r.front.contains(&i)
        } else {
            Some(i) == r.best
        };
        let marker = if best {
            "*"
        } else if !r.objective.constraints.is_empty()
            && t.row.state.is_terminal()
            && !r.is_feasible(t)
        {
            "!"
        } else {
            ""
        };
        let mut row = vec![
            marker.to_string(),
            (rank + 1).to_string(),
            t.row.name.clone(),
            t.row.state.as_str().to_string(),
        ];
        for p in &params {
            row.push(r.assignment(t, p).unwrap_or_default().to_string());
        }
        for m in &metrics {
            row.push(r.metric_text(t, m));
        }
        row.push(
            duration_s(&t.row)
                .map(|d| format!("{d:.1}s"))
                .unwrap_or_default(),
        );
        let cells = row.into_iter().map(|c| {
            let cell = Cell::new(c);
            if best && opts.highlight {
                cell.fg(Color::Green).add_attribute(Attribute::Bold)
            } else {
                cell
            }
        });
        table.add_row(cells);
    }
    let _ = writeln!(out, "{table}");
    if shown < ranked.len() {
        let _ = writeln!(out, "({} of {} trials shown)", shown, ranked.len());
    }
    if r.objective.is_multi() {
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
        return out;
    }
    match r.best {
        Some(i) => {
            let t = &r.trials[i];
            let assignment: Vec<String> = t
                .row
                .assignment
                .iter()
                .map(|(n, v)| format!("{n}={v}"))
                .collect();
            let _ = writeln!(
                out,
                "best trial {}: {}={}  {}",
                t.row.name,
                r.objective.metric,
                r.metric_text(t, &r.objective.metric),
                assignment.join(", ")
            );
        }
        None => {
            let _ = writeln!(out, "no trial has reported the objective metric yet");
        }
    }
    out
}

pub(crate) fn strategy_name(s: vernier_core::MetricStrategy) -> &'static str {
    match s {
        vernier_core::MetricStrategy::Min => "min",
        vernier_core::MetricStrategy::Max => "max",
        vernier_core::MetricStrategy::Latest => "latest",
    }
}
