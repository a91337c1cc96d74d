//! `vernier report NAME --format html`: one self-contained page (inline CSS and SVG, no
//! scripts, no network) with the summary, the best trial, the plots and the trial table.
//! Every plot is an `<svg class="plot">` with a stable id and every data mark has a class
//! (`point`, `trace`, `bar`, `curve`) so tests and users can find them.

use super::analysis::{duration_s, is_usable, phase_is_final};
use super::svg::{Chart, Scale, color, esc, fit_label, id_part, num, step_line};
use super::table::strategy_name;
use super::{ExperimentReport, TrialReport};
use std::fmt::Write;
use vernier_core::TrialState;
use vernier_spec::conditions::rfc3339;

/// Learning curves are thinned to at most this many points each ...
pub const MAX_CURVE_POINTS: usize = 100;
/// ... and only the best-ranked trials' curves are drawn, so 10,000 trials with hundreds of
/// values each still make a page a browser opens quickly.
pub const MAX_CURVES: usize = 200;
/// Parallel coordinates draw at most this many trials (the best-ranked), for the same reason.
pub const MAX_TRACES: usize = 1000;

/// Seconds between reloads of a page whose experiment is still running.
pub const REFRESH_SECONDS: u32 = 2;

/// Options of the HTML page.
#[derive(Debug, Clone, Copy, Default)]
pub struct HtmlOptions {
    /// Only the best `top` trials in the trial table (the plots show all).
    pub top: Option<usize>,
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}\
h1{font-size:22px}h2{font-size:17px;margin-top:28px}\
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}\
td{max-width:36em;overflow-wrap:break-word}\
th{background:#f4f4f4}tr.best td{background:#fff6c8;font-weight:600}circle.infeasible{stroke:#888;stroke-width:1.2}\
.plots{display:flex;flex-wrap:wrap;gap:12px}.plot{background:#fff;border:1px solid #eee;max-width:100%;height:auto}\
.failure{border:1px solid #d92d20;background:#fff5f4;padding:8px 12px;max-width:900px}\
.plot text{font:11px system-ui,sans-serif;fill:#333}.plot .plot-title{font-size:13px;font-weight:600}\
.note{color:#666;font-size:12px;max-width:900px}";

/// The page.
pub fn render(r: &ExperimentReport, opts: HtmlOptions) -> String {
    let mut out = String::with_capacity(64 * 1024 + r.trials.len() * 2048);
    let finished = phase_is_final(&r.row.status.phase);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">{}<title>{}</title><style>{STYLE}</style></head><body>\n",
        if finished {
            String::new()
        } else {
            format!("<meta http-equiv=\"refresh\" content=\"{REFRESH_SECONDS}\">")
        },
        esc(&format!("Vernier report: {}", r.row.name))
    );
    let _ = writeln!(out, "<h1>Experiment {}</h1>", esc(&r.row.name));
    failure(&mut out, r);
    summary(&mut out, r);
    best(&mut out, r);
    out.push_str(&super::pareto::section(r));
    out.push_str("<h2>Plots</h2>\n");
    let ranked = r.ranked();
    plots(&mut out, r, &ranked);
    curves(&mut out, r, &ranked);
    trial_table(&mut out, r, &ranked, opts.top);
    unsuccessful(&mut out, r);
    out.push_str("</body></html>\n");
    out
}

/// The charts of the objective, or, until a trial has a value of it, a line saying so:
/// empty axes would read as a plot of nothing.
fn plots(out: &mut String, r: &ExperimentReport, ranked: &[usize]) {
    if !r
        .trials
        .iter()
        .any(|t| t.objective.is_some_and(f64::is_finite))
    {
        let _ = writeln!(
            out,
            "<p class=\"no-plots\">No trial has a value of {} yet; the plots appear once one has.</p>",
            esc(&r.objective.metric)
        );
        return;
    }
    out.push_str("<div class=\"plots\">\n");
    out.push_str(&history(r));
    out.push_str(&importance(r));
    out.push_str(&parallel(r, ranked));
    for p in r.parameter_names() {
        out.push_str(&slice(r, &p));
    }
    out.push_str("</div>\n");
}

/// A failed experiment says why before anything else.
fn failure(out: &mut String, r: &ExperimentReport) {
    let s = &r.row.status;
    if let Some(note) = r.unattended_note() {
        let _ = writeln!(
            out,
            "<p id=\"unattended\" class=\"failure\"><strong>{}, but no driver</strong><br>{}</p>",
            esc(&s.phase),
            esc(&note).replace('\n', "<br>")
        );
    }
    if s.phase != "Failed" {
        return;
    }
    let _ = writeln!(
        out,
        "<p id=\"failure\" class=\"failure\"><strong>Failed: {}</strong><br>{}</p>",
        esc(if s.reason.is_empty() {
            "no reason recorded"
        } else {
            &s.reason
        }),
        esc(if s.message.is_empty() {
            "no message recorded"
        } else {
            &s.message
        })
    );
}

fn summary(out: &mut String, r: &ExperimentReport) {
    let s = &r.row.status;
    let o = &r.objective;
    let count = |st: TrialState| r.trials.iter().filter(|t| t.row.state == st).count();
    let algorithm = r
        .spec
        .spec
        .algorithm
        .as_ref()
        .and_then(|a| a.algorithm_name.clone())
        .unwrap_or_default();
    let direction = o.direction.as_str();
    let rows = [
        ("Status", format!("{} ({})", s.phase, s.reason)),
        ("Message", s.message.clone()),
        ("Algorithm", algorithm),
        (
            "Objective",
            format!(
                "{direction} {} ({}){}",
                o.metric,
                strategy_name(o.strategy),
                o.goal
                    .map(|g| format!(", goal {}", num(g)))
                    .unwrap_or_default()
            ),
        ),
        (
            "Trials",
            format!(
                "{} total: {} succeeded, {} early stopped, {} failed, {} metrics unavailable, {} killed, {} running, {} pending",
                r.trials.len(),
                count(TrialState::Succeeded),
                count(TrialState::EarlyStopped),
                count(TrialState::Failed),
                count(TrialState::MetricsUnavailable),
                count(TrialState::Killed),
                count(TrialState::Running),
                count(TrialState::Created)
            ),
        ),
        (
            "Other objectives",
            o.objectives
                .iter()
                .skip(1)
                .map(|t| format!("{} {}", t.direction.as_str(), t.metric))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        (
            "Constraints",
            o.constraints
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        ),
        ("Started", s.started_us.map(rfc3339).unwrap_or_default()),
        ("Completed", s.completed_us.map(rfc3339).unwrap_or_default()),
    ];
    out.push_str("<h2>Summary</h2>\n<table id=\"summary\">");
    for (k, v) in rows {
        // The extension rows appear only for experiments that use the extensions.
        if v.is_empty() && matches!(k, "Other objectives" | "Constraints") {
            continue;
        }
        let _ = write!(out, "<tr><th>{k}</th><td>{}</td></tr>", esc(&v));
    }
    out.push_str("</table>\n");
}

fn best(out: &mut String, r: &ExperimentReport) {
    out.push_str("<h2>Best trial</h2>\n");
    let Some(i) = r.best else {
        let note = r.no_best_note();
        let _ = writeln!(
            out,
            "<p id=\"best\">{}{}.</p>",
            note[..1].to_uppercase(),
            &note[1..]
        );
        return;
    };
    let t = &r.trials[i];
    let _ = write!(
        out,
        "<table id=\"best\"><tr><th>Trial</th><td>{} (#{})</td></tr>",
        esc(&t.row.name),
        i + 1
    );
    for (n, v) in &t.row.assignment {
        let _ = write!(out, "<tr><th>{}</th><td>{}</td></tr>", esc(n), esc(v));
    }
    for m in r.objective.metric_names() {
        let _ = write!(
            out,
            "<tr><th>{}</th><td>{}</td></tr>",
            esc(&m),
            esc(&r.metric_text(t, &m))
        );
    }
    out.push_str("</table>\n");
}

/// `1` for the best result down to `0` for the worst, by rank so outliers do not wash out the
/// colours; `None` for trials that are no result (unusable or infeasible).
fn rank_colors(r: &ExperimentReport, ranked: &[usize]) -> Vec<Option<f64>> {
    let usable: Vec<usize> = ranked
        .iter()
        .copied()
        .filter(|&i| r.is_result(&r.trials[i]))
        .collect();
    let mut out = vec![None; r.trials.len()];
    let n = usable.len();
    for (rank, &i) in usable.iter().enumerate() {
        out[i] = Some(if n <= 1 {
            1.0
        } else {
            1.0 - rank as f64 / (n - 1) as f64
        });
    }
    out
}

fn history(r: &ExperimentReport) -> String {
    // The legend sits between the title and the frame, never over the data.
    let mut c = Chart::new("plot-history", "Optimization history", 620.0, 370.0)
        .margins(64.0, 16.0, 46.0, 44.0);
    let pts: Vec<(usize, f64, bool)> = r
        .trials
        .iter()
        .enumerate()
        .filter_map(|(i, t)| Some((i, t.objective.filter(|v| v.is_finite())?, r.is_result(t))))
        .collect();
    let x = Scale::fit([1.0, r.trials.len().max(1) as f64], false);
    let y = Scale::fit(pts.iter().map(|p| p.1), false);
    c.axes(&x, "trial # (creation order)", &y, &r.objective.metric);
    for &(i, v, result) in &pts {
        let t = &r.trials[i];
        let fill = if result { "#1f77b4" } else { "#bbbbbb" };
        c.circle(
            x.unit((i + 1) as f64),
            y.unit(v),
            3.0,
            fill,
            "point",
            &format!(
                "#{} {} {}={}",
                i + 1,
                t.row.state.as_str(),
                r.objective.metric,
                num(v)
            ),
        );
    }
    let line = step_line(&r.best_so_far(), &x, &y);
    if !line.is_empty() {
        c.polyline(&line, "#d62728", "best-so-far", "stroke-width=\"2\"");
    }
    c.text(
        c.width / 2.0,
        36.0,
        "middle",
        "legend",
        if r.objective.constraints.is_empty() {
            "blue: trial, grey: failed/unfinished, red: best so far"
        } else {
            "blue: trial, grey: failed/unfinished/infeasible, red: best so far"
        },
    );
    c.finish()
}

/// Below this many finished trials, a parameter without effect can take a third of the
/// importance (in one run of ten at 25 trials, simulated on a noisy objective), so the chart
/// says how many it rests on.
const ROUGH_IMPORTANCE_BELOW: usize = 50;

fn importance(r: &ExperimentReport) -> String {
    // Shares of the explained variance (η² divided by its sum), so the bars add up to 1.
    let shares = super::dashboard::importance_shares(&r.importance());
    // What the bars divide: when the strongest parameter explains little on its own, a 100 %
    // bar means little. (A sum would not do: parameters that move together each explain the
    // same variance, and the sum passes 100 %.)
    let strongest = shares.iter().filter_map(|(_, e, _)| *e).reduce(f64::max);
    let imp: Vec<(String, Option<f64>)> = shares.into_iter().map(|(n, _, s)| (n, s)).collect();
    let height = 80.0 + 26.0 * imp.len() as f64;
    let trials = r
        .trials
        .iter()
        .filter(|t| crate::analysis::is_usable(t))
        .count();
    let mut title = if trials < ROUGH_IMPORTANCE_BELOW {
        format!(
            "Parameter importance: rough, from {trials} trials (under {ROUGH_IMPORTANCE_BELOW})"
        )
    } else {
        "Parameter importance (share of explained variance)".to_string()
    };
    if let Some(e) = strongest.filter(|e| *e > 0.0) {
        let _ = write!(title, "; the strongest alone explains {:.1}%", 100.0 * e);
    }
    let mut c = Chart::new("plot-importance", &title, 620.0, height.max(160.0))
        .margins(150.0, 60.0, 30.0, 44.0);
    let x = Scale::Numeric {
        lo: 0.0,
        hi: 1.0,
        log: false,
    };
    let names: Vec<String> = imp.iter().map(|(n, _)| n.clone()).collect();
    let y = Scale::Categories(names.iter().rev().cloned().collect());
    c.axes(&x, "share (first-order ε², normalised to sum to 1)", &y, "");
    let band = (c.py(0.0) - c.py(1.0)) / names.len().max(1) as f64;
    for (k, (name, v)) in imp.iter().enumerate() {
        let row = names.len() - 1 - k;
        let cy = c.py(y.unit(row as f64));
        let (x0, w) = (c.px(0.0), c.px(v.unwrap_or(0.0)) - c.px(0.0));
        let label = v.map_or(
            "n/a (too few trials, or nothing explained)".to_string(),
            |v| format!("{:.1}%", 100.0 * v),
        );
        c.raw(&format!(
            r##"<rect class="bar" x="{x0:.1}" y="{:.1}" width="{w:.1}" height="{:.1}" fill="#1f77b4"><title>{}: {}</title></rect>"##,
            cy - band * 0.35,
            band * 0.7,
            esc(name),
            esc(&label)
        ));
        c.text(x0 + w + 4.0, cy + 4.0, "start", "value", &label);
    }
    c.finish()
}

/// The parameter's scale: categories when a value is not a number, else numeric (log when
/// the parameter's distribution is).
fn param_scale(r: &ExperimentReport, p: &str) -> Scale {
    let values: Vec<&str> = r.trials.iter().filter_map(|t| r.assignment(t, p)).collect();
    let choices = r.parameter_choices(p);
    let nums: Option<Vec<f64>> = match choices {
        Some(_) => None,
        None => values.iter().map(|v| v.trim().parse().ok()).collect(),
    };
    match nums {
        Some(xs) => Scale::fit(xs, r.parameter_is_log(p)),
        None => {
            // Categories in the order the spec lists them, then any others as seen.
            let mut cats = choices.unwrap_or_default();
            for v in values {
                if !cats.iter().any(|c| c == v) {
                    cats.push(v.to_string());
                }
            }
            Scale::Categories(cats)
        }
    }
}

fn parallel(r: &ExperimentReport, ranked: &[usize]) -> String {
    let params = r.parameter_names();
    let axes = params.len() + 1;
    let width = (160.0 * axes as f64).clamp(620.0, 1240.0);
    let mut c = Chart::new(
        "plot-parallel",
        "Parallel coordinates (colour: objective rank, yellow = best)",
        width,
        380.0,
    )
    .margins(60.0, 80.0, 40.0, 40.0);
    let colors = rank_colors(r, ranked);
    let mut scales: Vec<Scale> = params.iter().map(|p| param_scale(r, p)).collect();
    let objective_values = r
        .trials
        .iter()
        .filter(|t| is_usable(t))
        .filter_map(|t| t.objective);
    scales.push(Scale::fit(objective_values, false));
    let ax = |k: usize| k as f64 / (axes - 1).max(1) as f64;
    // Worst first so the best lines are drawn on top.
    let shown: Vec<usize> = ranked
        .iter()
        .copied()
        .filter(|&i| colors[i].is_some())
        .take(MAX_TRACES)
        .collect();
    for &i in shown.iter().rev() {
        let t = &r.trials[i];
        let mut pts = Vec::with_capacity(axes);
        for (k, p) in params.iter().enumerate() {
            if let Some(u) = r.assignment(t, p).and_then(|v| scales[k].unit_of(v)) {
                pts.push((ax(k), u));
            }
        }
        if let Some(v) = t.objective {
            pts.push((ax(axes - 1), scales[axes - 1].unit(v)));
        }
        let col = color(colors[i].unwrap_or(0.0));
        c.polyline(&pts, &col, "trace", "stroke-opacity=\"0.7\"");
    }
    let mut labels: Vec<String> = params.clone();
    labels.push(r.objective.metric.clone());
    draw_parallel_axes(&mut c, &labels, &scales, ax);
    if shown.len() < colors.iter().filter(|c| c.is_some()).count() {
        c.text(
            c.width / 2.0,
            34.0,
            "middle",
            "legend",
            &format!("best {} trials shown", shown.len()),
        );
    }
    c.finish()
}

/// The vertical axes of a parallel-coordinates chart, at `ax(k)` for the `k`-th label, each
/// with its title below and its scale's ticks beside it.
fn draw_parallel_axes(
    c: &mut Chart,
    labels: &[String],
    scales: &[Scale],
    ax: impl Fn(usize) -> f64,
) {
    let (top, bottom) = (c.py(1.0), c.py(0.0));
    for (k, (label, scale)) in labels.iter().zip(scales).enumerate() {
        let x = c.px(ax(k));
        c.raw(&format!(
            r##"<line class="axis" x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{bottom:.1}" stroke="#333"/>"##
        ));
        // The axis title is centred on its axis: it has the room between two axes, and on the
        // outer axes no more than twice the way to the chart's edge.
        let edge = x.min(c.width - x) - 4.0;
        let title_room = (c.px(ax(1)) - c.px(ax(0)) - 8.0).min(2.0 * edge);
        c.text(
            x,
            bottom + 18.0,
            "middle",
            "axis-label",
            &fit_label(label, title_room),
        );
        // A tick label starts at its axis and must end before the next one.
        let room = c.px(ax(1)) - c.px(ax(0)) - 8.0;
        for (u, tick) in scale.ticks() {
            c.text(
                x + 4.0,
                c.py(u) + 4.0,
                "start",
                "tick",
                &fit_label(&tick, room),
            );
        }
    }
}

fn slice(r: &ExperimentReport, p: &str) -> String {
    let mut c = Chart::new(
        &format!("plot-slice-{}", id_part(p)),
        &format!("Slice: {p}"),
        400.0,
        310.0,
    )
    .margins(64.0, 16.0, 46.0, 44.0);
    c.text(
        200.0,
        36.0,
        "middle",
        "legend",
        "colour: trial order, yellow = latest",
    );
    let x = param_scale(r, p);
    let pts: Vec<(usize, f64, f64)> = r
        .trials
        .iter()
        .enumerate()
        .filter(|(_, t)| is_usable(t))
        .filter_map(|(i, t)| Some((i, x.unit_of(r.assignment(t, p)?)?, t.objective?)))
        .collect();
    let y = Scale::fit(pts.iter().map(|p| p.2), false);
    c.axes(&x, p, &y, &r.objective.metric);
    let n = r.trials.len().max(2) - 1;
    for (i, ux, v) in pts {
        let t = &r.trials[i];
        c.circle(
            ux,
            y.unit(v),
            3.0,
            &color(i as f64 / n as f64),
            "point",
            &format!(
                "#{} {p}={} {}={}",
                i + 1,
                r.assignment(t, p).unwrap_or_default(),
                r.objective.metric,
                num(v)
            ),
        );
    }
    c.finish()
}

/// At most `max` points of `curve`, evenly strided, always keeping the last (where early
/// stopping cut the trial).
fn thin(curve: &[(i64, f64)], max: usize) -> Vec<(usize, f64)> {
    if curve.len() <= max {
        return curve.iter().enumerate().map(|(i, p)| (i, p.1)).collect();
    }
    let mut out: Vec<(usize, f64)> = (0..max - 1)
        .map(|k| {
            let i = k * (curve.len() - 1) / (max - 1);
            (i, curve[i].1)
        })
        .collect();
    let last = curve.len() - 1;
    out.push((last, curve[last].1));
    out
}

fn curves(out: &mut String, r: &ExperimentReport, ranked: &[usize]) {
    out.push_str("<h2>Intermediate values</h2>\n");
    // Counted from the stored summaries; only the drawn trials' values were read
    // (`report::load_curves`).
    let with_curve: Vec<&TrialReport> = ranked
        .iter()
        .map(|&i| &r.trials[i])
        .filter(|t| t.curve_points >= 2)
        .collect();
    if !r.curves_recorded {
        out.push_str(
            "<p id=\"plot-curves\" class=\"note\">This report was read from the cluster's Experiment and Trial objects, which keep only each metric's min, max and latest value, so there are no learning curves.</p>\n",
        );
        return;
    }
    if with_curve.is_empty() {
        out.push_str(
            "<p id=\"plot-curves\" class=\"note\">No trial reported the objective metric more than once, so there are no learning curves.</p>\n",
        );
        return;
    }
    let shown: Vec<&TrialReport> = with_curve
        .iter()
        .take(MAX_CURVES)
        .filter(|t| t.curve.len() >= 2)
        .copied()
        .collect();
    let max_len = shown.iter().map(|t| t.curve.len()).max().unwrap_or(2);
    let x = Scale::fit([1.0, max_len as f64], false);
    let y = Scale::fit(
        shown.iter().flat_map(|t| t.curve.iter().map(|p| p.1)),
        false,
    );
    let mut c = Chart::new(
        "plot-curves",
        &format!(
            "Learning curves: every reported {} per trial",
            r.objective.metric
        ),
        1240.0,
        420.0,
    );
    c.axes(&x, "report (step)", &y, &r.objective.metric);
    // Stopped trials last, so they stay visible over the others.
    let (stopped, others): (Vec<&&TrialReport>, Vec<&&TrialReport>) = shown
        .iter()
        .partition(|t| t.row.state == TrialState::EarlyStopped);
    for t in others.iter().rev().chain(stopped.iter()) {
        draw_curve(&mut c, t, &x, &y);
    }
    c.text(
        c.width - 20.0,
        44.0,
        "end",
        "legend",
        "blue: ran to the end, red dashed: stopped early (dot at the cut)",
    );
    out.push_str(&c.finish());
    let thinned = shown.iter().any(|t| t.curve.len() > MAX_CURVE_POINTS);
    let _ = writeln!(
        out,
        "<p class=\"note\">{} of {} trials with intermediate values shown (best ranked first){}.</p>",
        shown.len(),
        with_curve.len(),
        if thinned {
            format!(
                "; curves longer than {MAX_CURVE_POINTS} values are thinned to {MAX_CURVE_POINTS} evenly spaced values, keeping the last"
            )
        } else {
            String::new()
        }
    );
}

/// One trial's learning curve; a stopped trial's is red and dashed, with a dot at the cut.
fn draw_curve(c: &mut Chart, t: &TrialReport, x: &Scale, y: &Scale) {
    let pts: Vec<(f64, f64)> = thin(&t.curve, MAX_CURVE_POINTS)
        .into_iter()
        .map(|(i, v)| (x.unit((i + 1) as f64), y.unit(v)))
        .collect();
    let early = t.row.state == TrialState::EarlyStopped;
    let (class, stroke, extra) = if early {
        (
            "curve early-stopped",
            "#d62728",
            "stroke-dasharray=\"4 3\" stroke-width=\"1.5\"",
        )
    } else {
        ("curve", "#1f77b4", "stroke-opacity=\"0.45\"")
    };
    c.polyline(&pts, stroke, class, extra);
    if early && let Some(&(ux, uy)) = pts.last() {
        c.circle(ux, uy, 3.5, "#d62728", "stop-mark", &t.row.name);
    }
}

fn trial_table(out: &mut String, r: &ExperimentReport, ranked: &[usize], top: Option<usize>) {
    let params = r.parameter_names();
    let metrics = r.objective.metric_names();
    let shown = top.unwrap_or(ranked.len()).min(ranked.len());
    let _ = writeln!(
        out,
        "<h2>Trials</h2>\n<p class=\"note\">Best first; {shown} of {} trials.</p>",
        ranked.len()
    );
    out.push_str("<table id=\"trials\"><thead><tr><th>rank</th><th>trial</th><th>condition</th>");
    for p in &params {
        let _ = write!(out, "<th>{}</th>", esc(p));
    }
    for m in &metrics {
        let _ = write!(out, "<th>{}</th>", esc(m));
    }
    out.push_str("<th>duration</th></tr></thead><tbody>\n");
    for (rank, &i) in ranked.iter().take(shown).enumerate() {
        let t = &r.trials[i];
        let class = if Some(i) == r.best {
            "trial best"
        } else {
            "trial"
        };
        let _ = write!(
            out,
            "<tr class=\"{class}\"><td>{}</td><td>{}</td><td>{}</td>",
            rank + 1,
            esc(&t.row.name),
            t.row.state.as_str()
        );
        for p in &params {
            let _ = write!(
                out,
                "<td>{}</td>",
                esc(r.assignment(t, p).unwrap_or_default())
            );
        }
        for m in &metrics {
            let _ = write!(out, "<td>{}</td>", esc(&r.metric_text(t, m)));
        }
        let _ = writeln!(
            out,
            "<td>{}</td></tr>",
            duration_s(&t.row)
                .map(|d| format!("{d:.1}s"))
                .unwrap_or_default()
        );
    }
    out.push_str("</tbody></table>\n");
}

/// At most this many trials are listed under "Trials that did not succeed".
const MAX_UNSUCCESSFUL: usize = 100;

/// Why each trial that did not succeed ended so, in creation order: the message `vernier run`
/// printed (the exit code, the metric never reported and its hint) and, for an early-stopped
/// trial, the rule it broke. The table says only the condition.
fn unsuccessful(out: &mut String, r: &ExperimentReport) {
    let ended: Vec<&TrialReport> = r
        .trials
        .iter()
        .filter(|t| t.row.state.is_terminal() && t.row.state != TrialState::Succeeded)
        .collect();
    if ended.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<h2>Trials that did not succeed</h2>\n<p class=\"note\">{} of {} trials{}.</p>\n<table id=\"unsuccessful\"><thead><tr><th>trial</th><th>condition</th><th>why</th></tr></thead><tbody>",
        ended.len(),
        r.trials.len(),
        if ended.len() > MAX_UNSUCCESSFUL {
            format!("; the first {MAX_UNSUCCESSFUL} shown")
        } else {
            String::new()
        }
    );
    for t in ended.iter().take(MAX_UNSUCCESSFUL) {
        let mut why = esc(&t.row.message).replace('\n', "<br>");
        if let Some(rule) = crate::analysis::broken_rule(&t.row) {
            let _ = write!(why, "<br>rule: {}", esc(&rule));
        }
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td class=\"why\">{why}</td></tr>",
            esc(&t.row.name),
            t.row.state.as_str()
        );
    }
    out.push_str("</tbody></table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinning_keeps_the_first_and_last_values() {
        let curve: Vec<(i64, f64)> = (0..1000).map(|i| (i, i as f64)).collect();
        let t = thin(&curve, 100);
        assert_eq!(t.len(), 100);
        assert_eq!(t[0], (0, 0.0));
        assert_eq!(t[99], (999, 999.0));
        assert_eq!(thin(&curve[..5], 100).len(), 5);
    }
}
