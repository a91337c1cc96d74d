//! The Pareto front of a multi-objective experiment in the HTML report: one scatter plot of
//! the two objectives (a plot per pair for three or more), every finished trial a point, the
//! front members red and joined by the front's staircase, infeasible trials hollow.

use super::ExperimentReport;
use super::svg::{Chart, Scale, esc, id_part, num};
use std::fmt::Write;

/// The section's HTML: a heading, a short legend and the plots (empty for one objective).
pub fn section(r: &ExperimentReport) -> String {
    let terms = &r.objective.objectives;
    if terms.len() < 2 {
        return String::new();
    }
    let mut out = String::new();
    let _ = write!(
        out,
        "<h2>Pareto front</h2>\n<p id=\"pareto-summary\">{} trial{} on the front of {} objectives \
         ({}); red: front, blue: dominated, hollow: infeasible.</p>\n<div class=\"plots\">\n",
        r.front.len(),
        if r.front.len() == 1 { "" } else { "s" },
        terms.len(),
        esc(&terms
            .iter()
            .map(|t| format!("{} {}", t.direction.as_str(), t.metric))
            .collect::<Vec<_>>()
            .join(", "))
    );
    for a in 0..terms.len() {
        for b in (a + 1)..terms.len() {
            out.push_str(&pair_plot(r, a, b));
        }
    }
    out.push_str("</div>\n");
    out
}

/// Objective `a` against objective `b`.
fn pair_plot(r: &ExperimentReport, a: usize, b: usize) -> String {
    let (ta, tb) = (&r.objective.objectives[a], &r.objective.objectives[b]);
    let id = format!(
        "plot-pareto-{}-{}",
        id_part(&ta.metric),
        id_part(&tb.metric)
    );
    let mut c = Chart::new(
        &id,
        &format!("Pareto front: {} vs {}", ta.metric, tb.metric),
        560.0,
        400.0,
    );
    let value = |i: usize, metric: &str| -> Option<f64> {
        let t = &r.trials[i];
        t.values
            .get(metric)
            .copied()
            .or(if metric == r.objective.metric {
                t.objective
            } else {
                None
            })
            .filter(|v| v.is_finite())
    };
    let pts: Vec<(usize, f64, f64)> = (0..r.trials.len())
        .filter(|&i| r.trials[i].row.state.is_terminal())
        .filter_map(|i| Some((i, value(i, &ta.metric)?, value(i, &tb.metric)?)))
        .collect();
    let x = Scale::fit(pts.iter().map(|p| p.1), false);
    let y = Scale::fit(pts.iter().map(|p| p.2), false);
    c.axes(&x, &ta.metric, &y, &tb.metric);
    for &(i, va, vb) in &pts {
        let t = &r.trials[i];
        let on_front = r.front.contains(&i);
        let title = format!(
            "#{} {} {}={} {}={}",
            i + 1,
            t.row.name,
            ta.metric,
            num(va),
            tb.metric,
            num(vb)
        );
        if on_front {
            c.circle(x.unit(va), y.unit(vb), 4.5, "#d62728", "front", &title);
        } else if !r.is_feasible(t) {
            c.circle(x.unit(va), y.unit(vb), 3.0, "none", "infeasible", &title);
        } else {
            c.circle(x.unit(va), y.unit(vb), 3.0, "#1f77b4", "point", &title);
        }
    }
    // With two objectives the front is a staircase in the better-first order of `a`.
    if r.objective.objectives.len() == 2 {
        let mut front: Vec<(f64, f64)> = pts
            .iter()
            .filter(|p| r.front.contains(&p.0))
            .map(|p| (p.1, p.2))
            .collect();
        front.sort_by(|p, q| p.0.total_cmp(&q.0));
        let mut line = Vec::new();
        for (k, (va, vb)) in front.iter().enumerate() {
            if k > 0 {
                line.push((x.unit(*va), y.unit(front[k - 1].1)));
            }
            line.push((x.unit(*va), y.unit(*vb)));
        }
        if line.len() > 1 {
            c.polyline(&line, "#d62728", "front-line", "stroke-width=\"1.5\"");
        }
    }
    c.finish()
}
