//! `vernier compare A B ...`: experiments side by side — best value, when it was reached, and
//! best-so-far after 10/25/50/100 trials — as a table, JSON, or an HTML page with the
//! convergence curves overlaid.

use super::ExperimentReport;
use super::svg::{Chart, PALETTE, Scale, esc, num, step_line};
use super::table::strategy_name;
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use serde_json::{Value, json};
use std::fmt::Write;
use vernier_core::{Direction, MetricStrategy};

/// Trial counts at which the best-so-far value is reported.
pub const CHECKPOINTS: [usize; 4] = [10, 25, 50, 100];

/// One experiment's convergence.
#[derive(Debug, Clone)]
pub struct Convergence {
    pub name: String,
    pub algorithm: String,
    pub metric: String,
    pub direction: Direction,
    /// Which of a trial's values of the metric is its objective (Katib's metricStrategies).
    pub strategy: MetricStrategy,
    pub phase: String,
    /// Best usable objective after each trial, in creation order.
    pub best_so_far: Vec<Option<f64>>,
    /// When the objective is text (a DARTS genotype), which has no order: the report's best
    /// trial (the latest that succeeded) as its 1-based index and its value.
    pub text_best: Option<(usize, String)>,
}

impl Convergence {
    pub fn of(r: &ExperimentReport) -> Convergence {
        Convergence {
            name: r.row.name.clone(),
            algorithm: r
                .spec
                .spec
                .algorithm
                .as_ref()
                .and_then(|a| a.algorithm_name.clone())
                .unwrap_or_default(),
            metric: r.objective.metric.clone(),
            direction: r.objective.direction,
            strategy: r.objective.strategy,
            phase: r.row.status.phase.clone(),
            best_so_far: r.best_so_far(),
            text_best: r
                .best
                .filter(|&i| r.trials[i].objective.is_none())
                .map(|i| (i + 1, r.metric_text(&r.trials[i], &r.objective.metric))),
        }
    }

    /// The best value as shown: the number, else the text objective's value, else `-`.
    pub fn best_shown(&self) -> String {
        match (self.best(), &self.text_best) {
            (None, Some((_, text))) => text.clone(),
            (best, _) => cell(best),
        }
    }

    /// 1-based index of the trial that holds the result shown as best, number or text.
    pub fn best_at_shown(&self) -> Option<usize> {
        self.best_at()
            .or_else(|| self.text_best.as_ref().map(|(i, _)| *i))
    }

    pub fn best(&self) -> Option<f64> {
        self.best_so_far.last().copied().flatten()
    }

    /// 1-based index of the trial that reached the final best value.
    pub fn best_at(&self) -> Option<usize> {
        let best = self.best()?;
        self.best_so_far
            .iter()
            .position(|v| *v == Some(best))
            .map(|i| i + 1)
    }

    /// Best so far after `n` trials; `None` when fewer trials ran or none succeeded by then.
    pub fn at(&self, n: usize) -> Option<f64> {
        self.best_so_far.get(n.checked_sub(1)?).copied().flatten()
    }
}

/// A warning when the experiments do not optimise the same metric the same way: the same
/// metric reduced by another strategy (a trial's latest loss against its lowest) is another
/// quantity too.
pub fn mismatch(cs: &[Convergence]) -> Option<String> {
    let first = cs.first()?;
    // Said only where it tells two aims at one metric apart, not for every metric's default.
    let strategies_differ = cs.iter().any(|a| {
        cs.iter()
            .any(|b| a.metric == b.metric && a.strategy != b.strategy)
    });
    let aim = |c: &Convergence| {
        let mut aim = format!("{} {}s {}", c.name, c.direction.as_str(), c.metric);
        if strategies_differ {
            let _ = write!(aim, " ({})", strategy_name(c.strategy));
        }
        aim
    };
    let others: Vec<String> = cs
        .iter()
        .filter(|c| {
            c.metric != first.metric
                || c.direction != first.direction
                || c.strategy != first.strategy
        })
        .map(aim)
        .collect();
    (!others.is_empty()).then(|| {
        format!(
            "note: {} but {}; their values are not comparable",
            aim(first),
            others.join(", ")
        )
    })
}

/// The convergence chart's y label: the metric when every experiment optimises the same one.
fn y_label(cs: &[Convergence]) -> String {
    match cs.first() {
        Some(first) if cs.iter().all(|c| c.metric == first.metric) => {
            format!("best {} so far", first.metric)
        }
        _ => "best objective so far (each experiment's own metric)".to_string(),
    }
}

fn cell(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| vernier_core::Short(v).to_string())
}

/// The comparison as a text table (plus a mismatch note), ending with a newline.
pub fn table(cs: &[Convergence]) -> String {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).force_no_tty();
    let mut header: Vec<String> = [
        "EXPERIMENT",
        "ALGORITHM",
        "OBJECTIVE",
        "STATUS",
        "TRIALS",
        "BEST",
        "BEST AT",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    header.extend(CHECKPOINTS.iter().map(|n| format!("@{n}")));
    t.set_header(header);
    for c in cs {
        let mut row = vec![
            c.name.clone(),
            c.algorithm.clone(),
            format!("{} {}", c.direction.as_str(), c.metric),
            c.phase.clone(),
            c.best_so_far.len().to_string(),
            c.best_shown(),
            c.best_at_shown().map_or("-".to_string(), |i| i.to_string()),
        ];
        row.extend(CHECKPOINTS.iter().map(|&n| cell(c.at(n))));
        t.add_row(row);
    }
    let mut out = format!("{t}\n");
    if let Some(note) = mismatch(cs) {
        out.push_str(&note);
        out.push('\n');
    }
    out
}

/// The comparison as JSON: one object per experiment, with the full best-so-far series.
pub fn json(cs: &[Convergence]) -> Value {
    Value::Array(
        cs.iter()
            .map(|c| {
                let at: serde_json::Map<String, Value> = CHECKPOINTS
                    .iter()
                    .map(|n| (n.to_string(), json!(c.at(*n))))
                    .chain(std::iter::once(("all".to_string(), json!(c.best()))))
                    .collect();
                json!({
                    "name": c.name,
                    "algorithm": c.algorithm,
                    "objectiveMetricName": c.metric,
                    "type": c.direction.as_str(),
                    "phase": c.phase,
                    "trials": c.best_so_far.len(),
                    "best": c.best(),
                    "bestText": c.text_best.as_ref().map(|(_, text)| text),
                    "bestAtTrial": c.best_at_shown(),
                    "bestSoFarAt": at,
                    "bestSoFar": c.best_so_far,
                })
            })
            .collect(),
    )
}

/// A self-contained page with the table and the overlaid convergence curves.
pub fn html(cs: &[Convergence]) -> String {
    let mut out = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Vernier comparison</title><style>body{font:14px/1.4 system-ui,sans-serif;margin:24px}table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:3px 8px}th{background:#f4f4f4}.plot text{font:11px system-ui,sans-serif}.note{color:#666}</style></head><body>\n<h1>Experiment comparison</h1>\n",
    );
    if let Some(note) = mismatch(cs) {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(&note));
    }
    out.push_str("<table id=\"comparison\"><tr><th>experiment</th><th>algorithm</th><th>objective</th><th>status</th><th>trials</th><th>best</th><th>best at</th>");
    for n in CHECKPOINTS {
        let _ = write!(out, "<th>@{n}</th>");
    }
    out.push_str("</tr>\n");
    for c in cs {
        let _ = write!(
            out,
            "<tr class=\"experiment\"><td>{}</td><td>{}</td><td>{} {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            esc(&c.name),
            esc(&c.algorithm),
            c.direction.as_str(),
            esc(&c.metric),
            esc(&c.phase),
            c.best_so_far.len(),
            esc(&c.best_shown()),
            c.best_at_shown().map_or("-".to_string(), |i| i.to_string())
        );
        for n in CHECKPOINTS {
            let _ = write!(out, "<td>{}</td>", cell(c.at(n)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    let longest = cs.iter().map(|c| c.best_so_far.len()).max().unwrap_or(1);
    let x = Scale::fit([1.0, longest.max(1) as f64], false);
    let y = Scale::fit(
        cs.iter()
            .flat_map(|c| c.best_so_far.iter().flatten().copied()),
        false,
    );
    let mut chart = Chart::new("plot-convergence", "Best so far per trial", 900.0, 440.0);
    chart.axes(&x, "trial", &y, &y_label(cs));
    for (k, c) in cs.iter().enumerate() {
        let colour = PALETTE[k % PALETTE.len()];
        let pts = step_line(&c.best_so_far, &x, &y);
        chart.polyline(&pts, colour, "series", "stroke-width=\"2\"");
        if let (Some(at), Some(best)) = (c.best_at(), c.best()) {
            chart.circle(
                x.unit(at as f64),
                y.unit(best),
                4.0,
                colour,
                "point",
                &format!("{}: best {} at trial {at}", c.name, num(best)),
            );
        }
        let ly = 48.0 + 16.0 * k as f64;
        chart.raw(&format!(
            r#"<rect x="{:.1}" y="{:.1}" width="12" height="3" fill="{colour}"/>"#,
            chart.width - 200.0,
            ly - 4.0
        ));
        chart.text(chart.width - 184.0, ly, "start", "legend", &c.name);
    }
    out.push_str(&chart.finish());
    out.push_str("\n</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convergence(name: &str, metric: &str, direction: Direction) -> Convergence {
        Convergence {
            name: name.into(),
            algorithm: "random".into(),
            metric: metric.into(),
            direction,
            strategy: direction.default_strategy(),
            phase: "Succeeded".into(),
            best_so_far: vec![Some(1.0)],
            text_best: None,
        }
    }

    /// A text objective has no best-so-far numbers, but its best trial (the report's) is
    /// shown with its value and place in every format.
    #[test]
    fn a_text_objectives_best_trial_is_shown() {
        let mut text = convergence("darts", "genotype", Direction::Maximize);
        text.best_so_far = vec![None, None, None];
        text.text_best = Some((3, "Genotype(normal=[])".into()));
        let numeric = convergence("tpe", "loss", Direction::Minimize);
        assert_eq!(text.best_shown(), "Genotype(normal=[])");
        assert_eq!(text.best_at_shown(), Some(3));
        assert_eq!(numeric.best_shown(), "1");
        let j = json(&[text.clone(), numeric]);
        assert_eq!(j[0]["bestText"], "Genotype(normal=[])");
        assert_eq!(j[0]["bestAtTrial"], 3);
        assert_eq!(j[0]["best"], Value::Null);
        assert_eq!(j[1]["bestText"], Value::Null);
        assert_eq!(j[1]["bestAtTrial"], 1);
        let t = table(&[text.clone()]);
        assert!(t.contains("Genotype(normal=[])"), "{t}");
        assert!(html(&[text]).contains("<td>Genotype(normal=[])</td><td>3</td>"));
    }

    #[test]
    fn every_experiment_aiming_elsewhere_is_named_and_the_axis_stays_neutral() {
        use Direction::{Maximize, Minimize};
        let same = [
            convergence("a", "loss", Minimize),
            convergence("b", "loss", Minimize),
        ];
        assert_eq!(mismatch(&same), None);
        assert_eq!(y_label(&same), "best loss so far");
        let mixed = [
            convergence("a", "loss", Minimize),
            convergence("b", "acc", Maximize),
            convergence("c", "loss", Minimize),
            convergence("d", "score", Maximize),
        ];
        assert_eq!(
            mismatch(&mixed).unwrap(),
            "note: a minimizes loss but b maximizes acc, d maximizes score; their values are not comparable"
        );
        assert_eq!(
            y_label(&mixed),
            "best objective so far (each experiment's own metric)"
        );
        let mut latest = convergence("b", "loss", Minimize);
        latest.strategy = MetricStrategy::Latest;
        assert_eq!(
            mismatch(&[same[0].clone(), latest]).unwrap(),
            "note: a minimizes loss (min) but b minimizes loss (latest); their values are not comparable"
        );
    }
}
