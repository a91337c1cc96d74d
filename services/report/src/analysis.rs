//! Figures every report format derives the same way: the ranking of trials, best-so-far
//! series, durations, metric values by strategy and a parameter-importance estimate. Kept in
//! one place so the table, CSV and HTML never disagree.

use super::{ExperimentReport, TrialReport};
use std::cmp::Ordering;
use vernier_core::{Direction, TrialState};
use vernier_store::TrialRow;

/// Phases after which nothing more happens to an experiment unless it is resumed.
pub fn phase_is_final(phase: &str) -> bool {
    matches!(phase, "Succeeded" | "Failed" | "Interrupted")
}

/// A trial's wall time in seconds, when it started and completed.
pub fn duration_s(row: &TrialRow) -> Option<f64> {
    let (s, c) = (row.started_us?, row.completed_us?);
    Some((c - s) as f64 / 1e6)
}

/// Whether the trial's objective may count as a result (as `best_trial` decides).
pub fn is_usable(t: &TrialReport) -> bool {
    matches!(
        t.row.state,
        TrialState::Succeeded | TrialState::EarlyStopped
    ) && t.objective.is_some_and(f64::is_finite)
}

impl ExperimentReport {
    /// A metric's recorded value for the trial, the objective included.
    fn value_of<'a>(&'a self, t: &'a TrialReport) -> impl Fn(&str) -> Option<f64> + 'a {
        move |n| {
            t.values.get(n).copied().or(if n == self.objective.metric {
                t.objective
            } else {
                None
            })
        }
    }

    /// Every constraint holds for the trial's recorded metrics (true when unconstrained).
    pub fn is_feasible(&self, t: &TrialReport) -> bool {
        self.objective.is_feasible(self.value_of(t))
    }

    /// Whether the trial may be the experiment's result: usable, feasible and (with several
    /// objectives) reporting each, as `vernier_spec::plan::best_trial` decides, so rankings
    /// and best-so-far lines never put a trial above the best one that could not be it.
    pub fn is_result(&self, t: &TrialReport) -> bool {
        let o = &self.objective;
        is_usable(t)
            && self.is_feasible(t)
            && (!o.is_multi() || o.losses(self.value_of(t)).is_some())
    }

    /// Why there is no best trial (lowercase; the HTML page capitalises it).
    pub fn no_best_note(&self) -> &'static str {
        no_best_note(&self.objective)
    }

    /// What to tell a reader of a running experiment whose driver is gone.
    pub fn unattended_note(&self) -> Option<String> {
        self.unattended.as_ref().map(|u| {
            format!(
                "{u}: nothing runs its trials\nhint: vernier resume {}{} continues it",
                self.row.name, self.resume_flags
            )
        })
    }

    /// Parameter names in spec order (falling back to the first trial's assignment).
    pub fn parameter_names(&self) -> Vec<String> {
        let from_spec: Vec<String> = self
            .spec
            .spec
            .parameters
            .iter()
            .map(|p| p.name.clone())
            .filter(|n| !n.is_empty())
            .collect();
        if !from_spec.is_empty() {
            return from_spec;
        }
        self.trials
            .first()
            .map(|t| t.row.assignment.iter().map(|(n, _)| n.clone()).collect())
            .unwrap_or_default()
    }

    /// A categorical parameter's choices in spec order (`None` for any other type): its values
    /// are labels, never numbers, even where they read as one (`"007"`, `"1.10"`).
    pub fn parameter_choices(&self, name: &str) -> Option<Vec<String>> {
        self.spec
            .spec
            .parameters
            .iter()
            .find(|q| q.name == name)
            .filter(|q| q.parameter_type.as_deref() == Some("categorical"))
            .map(|q| {
                q.feasible_space
                    .as_ref()
                    .map(|f| f.list.clone())
                    .unwrap_or_default()
            })
    }

    /// Whether values on the parameter's axis are better drawn on a log scale.
    pub fn parameter_is_log(&self, name: &str) -> bool {
        self.spec
            .search_space()
            .ok()
            .and_then(|s| s.get(name).map(|p| p.distribution.is_log()))
            .unwrap_or(false)
    }

    /// Trial indices, best first: with several objectives the Pareto front's members first;
    /// then results (usable and feasible) by objective, then usable trials breaking a
    /// constraint, then trials with a partial objective (failed, killed, running), each by
    /// (the first) objective, then the rest. Ties keep creation order. With one objective the
    /// first row is always `self.best`, also when it is the latest of text objectives (a
    /// DARTS genotype), which have no order of their own.
    pub fn ranked(&self) -> Vec<usize> {
        let on_front = |i: usize| self.objective.is_multi() && self.front.contains(&i);
        let class = |i: usize| {
            let t = &self.trials[i];
            let best = !self.objective.is_multi() && self.best == Some(i);
            if best || (on_front(i) && self.is_result(t)) {
                0
            } else if self.is_result(t) {
                1
            } else if is_usable(t) {
                2
            } else if t.objective.is_some() {
                3
            } else {
                4
            }
        };
        let dir = self.objective.direction;
        let mut idx: Vec<usize> = (0..self.trials.len()).collect();
        idx.sort_by(|&a, &b| {
            let (ta, tb) = (&self.trials[a], &self.trials[b]);
            class(a)
                .cmp(&class(b))
                .then_with(|| match (ta.objective, tb.objective) {
                    (Some(x), Some(y)) => compare_values(dir, x, y),
                    _ => Ordering::Equal,
                })
        });
        idx
    }

    /// A metric's value as its metricStrategy selects it, else its latest text; `""` when the
    /// trial never reported it.
    pub fn metric_text(&self, t: &TrialReport, metric: &str) -> String {
        let strategy = self.objective.strategy_for(metric);
        t.metrics
            .iter()
            .find(|m| m.name == metric)
            .map(|m| match strategy.and_then(|s| m.value(s)) {
                Some(v) => vernier_core::Short(v).to_string(),
                None => m.latest.clone(),
            })
            .unwrap_or_default()
    }

    /// The best objective of a result (usable and feasible) after each trial, in creation order.
    pub fn best_so_far(&self) -> Vec<Option<f64>> {
        let dir = self.objective.direction;
        let mut best: Option<f64> = None;
        self.trials
            .iter()
            .map(|t| {
                if self.is_result(t)
                    && let Some(v) = t.objective
                    && best.is_none_or(|b| dir.is_better(v, b))
                {
                    best = Some(v);
                }
                best
            })
            .collect()
    }

    /// The parameter's value in trial `t`, as assigned.
    pub fn assignment<'a>(&self, t: &'a TrialReport, param: &str) -> Option<&'a str> {
        t.row
            .assignment
            .iter()
            .find(|(n, _)| n == param)
            .map(|(_, v)| v.as_str())
    }

    /// Importance of each parameter: the share of the objective's variance explained by
    /// groups of trials sharing a parameter bin — categories for categorical parameters,
    /// equal-count bins for numeric ones (at most ten, at least three trials a bin on
    /// average). It is the correlation ratio η² = SS_between / SS_total corrected for the
    /// number of groups (Kelley's ε², which is about 0 when the parameter does not matter:
    /// η² alone is 1 for any parameter once every bin holds one trial). This is the
    /// first-order (main-effect) share of variance that fANOVA reports, estimated by binning
    /// instead of a random forest: cheap, deterministic, and catches non-monotone effects, but
    /// blind to interactions. `None` under 4 usable trials, or when every group holds one.
    pub fn importance(&self) -> Vec<(String, Option<f64>)> {
        let usable: Vec<&TrialReport> = self.trials.iter().filter(|t| is_usable(t)).collect();
        self.parameter_names()
            .into_iter()
            .map(|p| {
                let pairs: Vec<(&str, f64)> = usable
                    .iter()
                    .filter_map(|t| Some((self.assignment(t, &p)?, t.objective?)))
                    .collect();
                let eta = (pairs.len() >= 4)
                    .then(|| explained_share(&pairs))
                    .flatten();
                (p, eta)
            })
            .collect()
    }
}

/// Orders two objective values best first.
pub fn compare_values(dir: Direction, a: f64, b: f64) -> Ordering {
    let ord = a.partial_cmp(&b).unwrap_or(Ordering::Equal);
    match dir {
        Direction::Minimize => ord,
        Direction::Maximize => ord.reverse(),
    }
}

/// Most bins a numeric parameter's trials are split into.
const IMPORTANCE_BINS: usize = 10;
/// Fewest trials a numeric bin holds on average, so each bin's mean means something.
const TRIALS_PER_BIN: usize = 3;

/// The group of each pair: its category, or its equal-count bin by rank for numbers.
fn groups_of(pairs: &[(&str, f64)]) -> Vec<usize> {
    let numeric: Option<Vec<f64>> = pairs.iter().map(|(v, _)| v.trim().parse().ok()).collect();
    match numeric {
        Some(xs) => {
            let bins = (xs.len() / TRIALS_PER_BIN).clamp(2, IMPORTANCE_BINS);
            // Equal values share a bin so ties are not split.
            let mut order: Vec<usize> = (0..xs.len()).collect();
            order.sort_by(|&a, &b| xs[a].partial_cmp(&xs[b]).unwrap_or(Ordering::Equal));
            let mut g = vec![0; xs.len()];
            let mut bin = 0;
            for (rank, &i) in order.iter().enumerate() {
                let want = rank * bins / xs.len();
                if want > bin && rank > 0 && xs[order[rank - 1]] != xs[i] {
                    bin = want;
                }
                g[i] = bin;
            }
            g
        }
        None => {
            let mut labels: Vec<&str> = pairs.iter().map(|(v, _)| *v).collect();
            labels.sort_unstable();
            labels.dedup();
            pairs
                .iter()
                .map(|(v, _)| labels.binary_search(v).unwrap_or(0))
                .collect()
        }
    }
}

/// Kelley's ε² of the objective over the pairs' groups, in [0, 1]; `None` when no group
/// holds two trials (nothing to compare a group's spread with).
fn explained_share(pairs: &[(&str, f64)]) -> Option<f64> {
    let groups = groups_of(pairs);
    let k = groups.iter().max().map_or(0, |m| m + 1);
    let n = pairs.len();
    if n <= k {
        return None;
    }
    // Scaled first: the squares of objectives near 1e160 would overflow, and a share does
    // not depend on the objective's unit.
    let scale = pairs.iter().map(|(_, y)| y.abs()).fold(0.0, f64::max);
    if scale == 0.0 || !scale.is_finite() {
        return Some(0.0);
    }
    let ys: Vec<f64> = pairs.iter().map(|(_, y)| y / scale).collect();
    let mean = ys.iter().sum::<f64>() / n as f64;
    let total: f64 = ys.iter().map(|y| (y - mean).powi(2)).sum();
    if total <= 0.0 {
        return Some(0.0);
    }
    let mut sum = vec![0.0; k];
    let mut count = vec![0.0; k];
    for (g, y) in groups.iter().zip(&ys) {
        sum[*g] += y;
        count[*g] += 1.0;
    }
    let between: f64 = sum
        .iter()
        .zip(&count)
        .filter(|(_, c)| **c > 0.0)
        .map(|(s, c)| c * (s / c - mean).powi(2))
        .sum();
    let within_mean_square = (total - between).max(0.0) / (n - k) as f64;
    let corrected = between - (k - 1) as f64 * within_mean_square;
    Some((corrected / total).clamp(0.0, 1.0))
}

/// Why an experiment with `objective` has no best trial (lowercase), for reports and the end
/// of `vernier run` alike.
pub fn no_best_note(objective: &vernier_core::Objective) -> &'static str {
    if objective.constraints.is_empty() {
        "no succeeded or early-stopped trial has reported the objective metric (failed trials are never best)"
    } else {
        "no succeeded or early-stopped trial has reported the objective metric and met every constraint (failed trials are never best)"
    }
}

/// The rule that stopped an early-stopped trial, in words ([`rule_text`]); none for a trial
/// that ended otherwise, whose frozen rule did not end it.
pub fn broken_rule(t: &TrialRow) -> Option<String> {
    (t.state == TrialState::EarlyStopped)
        .then(|| rule_text(t.early_stopping_rules.as_deref()?))
        .flatten()
}

/// A trial's frozen early-stopping rules (Katib's `[{name, value, comparison, startStep}]`) in
/// words: the condition that stops it.
pub fn rule_text(json: &str) -> Option<String> {
    let rules: Vec<serde_json::Value> = serde_json::from_str(json).ok()?;
    let words: Vec<String> = rules
        .iter()
        .map(|rule| {
            let op = match rule["comparison"].as_str() {
                Some("less") => "<",
                Some("greater") => ">",
                _ => "=",
            };
            let from = match rule["startStep"].as_i64() {
                Some(n) if n > 0 => format!(" from its value {n} on"),
                _ => String::new(),
            };
            let value = rule["value"].as_str().unwrap_or_default();
            format!(
                "stop when {} {op} {value}{from}",
                rule["name"].as_str().unwrap_or("?")
            )
        })
        .collect();
    (!words.is_empty()).then(|| words.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frozen_rule_reads_as_the_condition_that_stops() {
        let json = r#"[{"name":"loss","value":"8.75","comparison":"greater","startStep":3}]"#;
        assert_eq!(
            rule_text(json).as_deref(),
            Some("stop when loss > 8.75 from its value 3 on")
        );
        let json = r#"[{"name":"acc","value":"0.5","comparison":"less","startStep":0}]"#;
        assert_eq!(rule_text(json).as_deref(), Some("stop when acc < 0.5"));
        assert_eq!(rule_text("[]"), None);
        assert_eq!(rule_text("not json"), None);
    }

    #[test]
    fn explained_share_sees_a_non_monotone_effect_and_ignores_noise_free_constants() {
        // y = (x - 0.5)^2 is invisible to linear correlation but fully explained by x.
        let xs: Vec<String> = (0..100).map(|i| format!("{}", i as f64 / 99.0)).collect();
        let pairs: Vec<(&str, f64)> = xs
            .iter()
            .map(|x| (x.as_str(), (x.parse::<f64>().unwrap() - 0.5).powi(2)))
            .collect();
        let share = explained_share(&pairs).unwrap();
        assert!(share > 0.9, "{share}");
        // A parameter with one value explains nothing.
        let flat: Vec<(&str, f64)> = (0..20).map(|i| ("a", i as f64)).collect();
        assert_eq!(explained_share(&flat), Some(0.0));
        // Categories that split the objective cleanly explain all of it.
        let cats: Vec<(&str, f64)> = (0..20)
            .map(|i| {
                if i % 2 == 0 {
                    ("sgd", 1.0)
                } else {
                    ("adam", 3.0)
                }
            })
            .collect();
        assert!((explained_share(&cats).unwrap() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn explained_share_does_not_depend_on_the_objectives_unit() {
        let xs: Vec<String> = (0..12).map(|i| format!("{}", i as f64 / 11.0)).collect();
        let y = |x: &str| (x.parse::<f64>().unwrap() - 0.3).powi(2) + 0.05;
        let plain: Vec<(&str, f64)> = xs.iter().map(|x| (x.as_str(), y(x))).collect();
        let huge: Vec<(&str, f64)> = plain.iter().map(|(x, y)| (*x, y * 1e160)).collect();
        let (a, b) = (
            explained_share(&plain).unwrap(),
            explained_share(&huge).unwrap(),
        );
        assert!(a > 0.5, "{a}");
        assert!((a - b).abs() < 1e-12, "{a} against {b}");
    }

    #[test]
    fn a_parameter_the_objective_ignores_explains_little_with_few_trials() {
        // Eight trials whose objective does not depend on x: uncorrected, one trial a bin
        // would make η² exactly 1.
        let xs = ["0.1", "0.9", "0.4", "0.6", "0.2", "0.8", "0.3", "0.7"];
        let ys = [0.5, 0.1, 0.9, 0.3, 0.7, 0.2, 0.4, 0.8];
        let pairs: Vec<(&str, f64)> = xs.iter().copied().zip(ys).collect();
        let share = explained_share(&pairs).unwrap();
        assert!(share < 0.2, "{share}");
        // One trial per category: no spread within any group to compare with.
        let lone: Vec<(&str, f64)> = vec![("a", 1.0), ("b", 2.0), ("c", 3.0), ("d", 4.0)];
        assert_eq!(explained_share(&lone), None);
    }
}
