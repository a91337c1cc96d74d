//! The JSON the `vernier dashboard` web app reads: an experiment's summary for the list, the
//! experiment page's data (trials in a compact shape, best-so-far, importance shares,
//! downsampled learning curves) and a trial's page. Built from the same [`ExperimentReport`]
//! every other format renders, so the dashboard never disagrees with `vernier report`.
//! Pure: the server reads the store and logs, this module only shapes what they returned.

use super::analysis::{is_usable, phase_is_final};
use super::{ExperimentReport, TrialReport, trial_conditions};
use serde_json::{Value, json};
use vernier_core::TrialState;

/// Learning curves on the experiment page: the best-ranked trials' only ...
pub const PAGE_CURVES: usize = 50;
/// ... each thinned to at most this many points, so a page's payload stays bounded however
/// many values the trials logged.
pub const PAGE_CURVE_POINTS: usize = 200;
/// A trial page's curves keep at most this many points per metric.
pub const TRIAL_CURVE_POINTS: usize = 1000;
/// Failure messages in the experiment payload are cut to this many characters (the trial
/// page has the whole message).
const MESSAGE_CHARS: usize = 300;

/// Every trial state, in the order the pages list counts.
pub const STATES: [TrialState; 7] = [
    TrialState::Succeeded,
    TrialState::EarlyStopped,
    TrialState::Failed,
    TrialState::MetricsUnavailable,
    TrialState::Killed,
    TrialState::Running,
    TrialState::Created,
];

/// One line of the experiments list: status, progress, best value, algorithm and times.
pub fn summary_json(r: &ExperimentReport) -> Value {
    let s = &r.row.status;
    let spec = &r.spec.spec;
    let mut counts = serde_json::Map::new();
    for st in STATES {
        let n = r.trials.iter().filter(|t| t.row.state == st).count();
        counts.insert(st.as_str().into(), json!(n));
    }
    let done = r
        .trials
        .iter()
        .filter(|t| t.row.state.is_terminal())
        .count();
    let best = r.best.map(|i| {
        let t = &r.trials[i];
        // A text objective (a DARTS genotype) has no number; its value is shown as text.
        json!({
            "trial": t.row.name,
            "value": t.objective,
            "text": r.metric_text(t, &r.objective.metric),
        })
    });
    json!({
        "name": r.row.name,
        "phase": s.phase,
        "reason": s.reason,
        "message": s.message,
        "final": phase_is_final(&s.phase),
        "unattended": r.unattended_note(),
        "algorithm": spec.algorithm.as_ref().and_then(|a| a.algorithm_name.clone()),
        "objective": {"metric": r.objective.metric, "direction": r.objective.direction.as_str()},
        "maxTrials": spec.max_trial_count,
        "parallel": spec.parallel_trial_count,
        "trials": r.trials.len(),
        "done": done,
        "counts": counts,
        "best": best,
        "createdUs": r.row.created_us,
        "startedUs": s.started_us,
        "completedUs": s.completed_us,
    })
}

fn cut(text: &str, max: usize) -> String {
    match vernier_core::first_chars(text, max) {
        Some(head) => format!("{head}…"),
        None => text.to_string(),
    }
}

/// A trial as the experiment page's plots and table need it; parameter values in
/// `parameter_names` order (`null` when not assigned).
fn trial_entry(r: &ExperimentReport, t: &TrialReport, params: &[String], rank: usize) -> Value {
    // A succeeded trial's reason and message say only that; 10,000 of them would be
    // half a megabyte of the same words.
    let (reason, message) = if t.row.state == TrialState::Succeeded {
        ("", String::new())
    } else {
        (t.row.reason.as_str(), cut(&t.row.message, MESSAGE_CHARS))
    };
    json!({
        "name": t.row.name,
        "seq": t.row.seq,
        "state": t.row.state.as_str(),
        "reason": reason,
        "message": message,
        "objective": t.objective,
        "usable": is_usable(t),
        "feasible": r.is_feasible(t),
        "values": t.values,
        "params": params.iter().map(|p| r.assignment(t, p)).collect::<Vec<_>>(),
        "startedUs": t.row.started_us,
        "completedUs": t.row.completed_us,
        "rank": rank,
    })
}

/// Each parameter's share of the explained variance: the correlation ratios of
/// [`ExperimentReport::importance`] divided by their sum, so the shares add up to 1. `None`
/// for every parameter when there are too few trials or nothing is explained.
pub fn importance_shares(eta: &[(String, Option<f64>)]) -> Vec<(String, Option<f64>, Option<f64>)> {
    let total: f64 = eta.iter().filter_map(|(_, e)| *e).sum();
    eta.iter()
        .map(|(n, e)| {
            let share = e.filter(|_| total > 0.0).map(|e| e / total);
            (n.clone(), *e, share)
        })
        .collect()
}

/// Keeps at most `max` (at least 4) points of a curve (x ascending), the first and the last, and in each
/// of `(max - 2) / 2` equal runs of points its lowest and highest value in x order: spikes and the
/// curve's range survive, unlike plain striding.
pub fn downsample(points: &[(f64, f64)], max: usize) -> Vec<(f64, f64)> {
    let max = max.max(4);
    if points.len() <= max {
        return points.to_vec();
    }
    let inner = &points[1..points.len() - 1];
    let buckets = (max - 2) / 2;
    let mut out = Vec::with_capacity(max);
    out.push(points[0]);
    for b in 0..buckets {
        let run = &inner[b * inner.len() / buckets..(b + 1) * inner.len() / buckets];
        let (Some(lo), Some(hi)) = (
            run.iter()
                .enumerate()
                .min_by(|a, b| a.1.1.total_cmp(&b.1.1)),
            run.iter()
                .enumerate()
                .max_by(|a, b| a.1.1.total_cmp(&b.1.1)),
        ) else {
            continue;
        };
        let (first, second) = if lo.0 <= hi.0 { (lo, hi) } else { (hi, lo) };
        out.push(*first.1);
        if first.0 != second.0 {
            out.push(*second.1);
        }
    }
    out.push(points[points.len() - 1]);
    out
}

/// A curve as `[[step, value], ...]` with steps counted from 1, thinned to `max` points.
pub fn curve_json(values: &[f64], max: usize) -> Value {
    let points: Vec<(f64, f64)> = values
        .iter()
        .enumerate()
        .map(|(i, v)| ((i + 1) as f64, *v))
        .collect();
    Value::Array(
        downsample(&points, max)
            .into_iter()
            .map(|(x, y)| json!([x, y]))
            .collect(),
    )
}

/// The experiment page: summary, objectives, parameters, every trial (creation order),
/// best-so-far, importance shares, the front and the learning curves [`super::load_curves`]
/// filled, thinned to [`PAGE_CURVE_POINTS`].
pub fn experiment_json(r: &ExperimentReport) -> Value {
    let params = r.parameter_names();
    let ranked = r.ranked();
    let mut rank = vec![0; r.trials.len()];
    for (pos, &i) in ranked.iter().enumerate() {
        rank[i] = pos + 1;
    }
    let trials: Vec<Value> = r
        .trials
        .iter()
        .zip(&rank)
        .map(|(t, &k)| trial_entry(r, t, &params, k))
        .collect();
    let importance: Vec<Value> = importance_shares(&r.importance())
        .into_iter()
        .map(|(name, eta, share)| json!({"name": name, "eta2": eta, "share": share}))
        .collect();
    let curves: Vec<Value> = ranked
        .iter()
        .map(|&i| &r.trials[i])
        .filter(|t| t.curve.len() >= 2)
        .take(PAGE_CURVES)
        .map(|t| {
            let values: Vec<f64> = t.curve.iter().map(|(_, v)| *v).collect();
            json!({"trial": t.row.name, "points": curve_json(&values, PAGE_CURVE_POINTS), "logged": t.curve_points})
        })
        .collect();
    let o = &r.objective;
    json!({
        "summary": summary_json(r),
        "objectives": o.objectives.iter().map(|t| json!({
            "metric": t.metric, "direction": t.direction.as_str(), "goal": t.goal,
        })).collect::<Vec<_>>(),
        "constraints": o.constraints.iter().map(|c| json!({
            "metric": c.metric, "op": c.op.as_str(), "value": c.bound,
        })).collect::<Vec<_>>(),
        "metrics": o.metric_names(),
        "parameters": params.iter().map(|p| json!({
            "name": p, "log": r.parameter_is_log(p), "choices": r.parameter_choices(p),
        })).collect::<Vec<_>>(),
        "trials": trials,
        "best": r.best,
        "front": r.front,
        "bestSoFar": r.best_so_far(),
        "importance": importance,
        "curves": {
            "metric": o.metric,
            "recorded": r.curves_recorded,
            "trials": curves,
            "withCurves": r.trials.iter().filter(|t| t.curve_points >= 2).count(),
        },
    })
}

/// What the trial page shows besides the store's raw values: the trial, its conditions and
/// reduced metrics. `curves` are the metric curves the caller read, `log` its log tail.
pub fn trial_json(
    r: &ExperimentReport,
    index: usize,
    curves: &[(String, Vec<f64>)],
    log: Value,
) -> Value {
    let t = &r.trials[index];
    let params = r.parameter_names();
    let rank = r
        .ranked()
        .iter()
        .position(|&i| i == index)
        .map_or(0, |p| p + 1);
    let mut entry = trial_entry(r, t, &params, rank);
    entry["reason"] = json!(t.row.reason);
    entry["message"] = json!(t.row.message);
    entry["rule"] = json!(crate::analysis::broken_rule(&t.row));
    json!({
        "experiment": summary_json(r),
        "parameters": params,
        "trial": entry,
        "attempt": t.row.attempt,
        "labels": t.row.labels,
        "best": r.best == Some(index),
        "conditions": trial_conditions(&t.row),
        "metrics": t.metrics.iter().map(|m| json!({
            "name": m.name, "min": m.min_text(), "max": m.max_text(), "latest": m.latest,
        })).collect::<Vec<_>>(),
        "curves": curves.iter().map(|(name, values)| json!({
            "metric": name, "logged": values.len(), "points": curve_json(values, TRIAL_CURVE_POINTS),
        })).collect::<Vec<_>>(),
        "log": log,
    })
}

/// The last `max_lines` lines of a log's tail `bytes` (read from the end of the file), and
/// whether earlier lines were left out. A line redrawn with carriage returns (a progress bar)
/// shows what a terminal would: its last redraw.
pub fn log_tail(bytes: &[u8], whole_file: bool, max_lines: usize) -> (Vec<String>, bool) {
    let text = String::from_utf8_lossy(bytes);
    let mut lines: Vec<&str> = text.lines().map(last_redraw).collect();
    // A tail cut mid-file starts mid-line: drop that partial first line, unless it is all
    // there is (a long progress bar without a newline is still the log's end).
    let mut truncated = !whole_file;
    if truncated && lines.len() > 1 {
        lines.remove(0);
    }
    if lines.len() > max_lines {
        lines.drain(..lines.len() - max_lines);
        truncated = true;
    }
    (lines.into_iter().map(str::to_string).collect(), truncated)
}

/// The text after a line's last carriage return that is followed by something.
fn last_redraw(line: &str) -> &str {
    let line = line.trim_end_matches('\r');
    line.rsplit('\r').next().unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn importance_shares_sum_to_one_and_stay_empty_without_data() {
        let eta = vec![
            ("a".to_string(), Some(0.6)),
            ("b".to_string(), Some(0.2)),
            ("c".to_string(), Some(0.0)),
        ];
        let shares = importance_shares(&eta);
        let sum: f64 = shares.iter().filter_map(|s| s.2).sum();
        assert!((sum - 1.0).abs() < 1e-12);
        assert!((shares[0].2.unwrap() - 0.75).abs() < 1e-12);
        assert_eq!(shares[1].1, Some(0.2));
        let none = importance_shares(&[("a".into(), None), ("b".into(), Some(0.0))]);
        assert_eq!(none[0].2, None);
        assert_eq!(none[1].2, None);
    }

    #[test]
    fn downsample_keeps_ends_extremes_and_the_bound() {
        let pts: Vec<(f64, f64)> = (0..10_000)
            .map(|i| (i as f64, if i == 5_003 { 99.0 } else { (i % 7) as f64 }))
            .collect();
        for max in [4, 10, 200, 1000] {
            let out = downsample(&pts, max);
            assert!(out.len() <= max, "{max}: {}", out.len());
            assert_eq!(out[0], pts[0]);
            assert_eq!(out.last(), pts.last());
            assert!(out.contains(&(5003.0, 99.0)), "{max} lost the spike");
            assert!(out.windows(2).all(|w| w[0].0 < w[1].0), "x order kept");
        }
        let short = [(1.0, 2.0), (2.0, 3.0)];
        assert_eq!(downsample(&short, 200), short.to_vec());
    }

    #[test]
    fn curve_steps_count_from_one() {
        assert_eq!(
            curve_json(&[0.5, 0.25], 10),
            json!([[1.0, 0.5], [2.0, 0.25]])
        );
    }

    #[test]
    fn log_tail_drops_a_partial_first_line_and_keeps_the_last_lines() {
        // (tail bytes, whole file, max lines, lines kept, truncated)
        type Case<'a> = (&'a [u8], bool, usize, Vec<&'a str>, bool);
        let cases: [Case; 7] = [
            (b"a\nb\nc\n", true, 10, vec!["a", "b", "c"], false),
            (b"\r 1/9\r 2/9\r 3/9", false, 10, vec![" 3/9"], true),
            (
                b"x\n\r1/2\r2/2\r\ndone\n",
                true,
                10,
                vec!["x", "2/2", "done"],
                false,
            ),
            (b"a\r\nb\r\n", true, 10, vec!["a", "b"], false),
            (b"a\nb\nc\n", true, 2, vec!["b", "c"], true),
            (b"tial\nb\nc", false, 10, vec!["b", "c"], true),
            (b"", true, 10, vec![], false),
        ];
        for (bytes, whole, max, want, truncated) in cases {
            let (lines, t) = log_tail(bytes, whole, max);
            assert_eq!(lines, want);
            assert_eq!(t, truncated);
        }
    }
}
