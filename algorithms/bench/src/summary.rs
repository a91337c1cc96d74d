//! The summary of one cell (an algorithm on a problem over seeds): median and quartiles of the
//! final scores, and the mean suggestion time at fixed trial counts.

use crate::problem::BenchProblem;
use crate::run::RunResult;
use serde::Serialize;
use std::collections::BTreeMap;

/// Trial counts at which suggestion times are reported.
pub const TIME_POINTS: [usize; 3] = [25, 50, 100];

/// One algorithm on one problem over seeds; field order is the JSON output's.
#[derive(Debug, Clone, Serialize)]
pub struct CellSummary {
    pub algorithm: String,
    pub problem: String,
    pub trials: usize,
    pub seeds: usize,
    pub regret_median: f64,
    pub regret_q1: f64,
    pub regret_q3: f64,
    /// Mean over seeds of the time of the suggestion at trial 25, 50, 100 (when reached).
    pub suggest_ms_at: BTreeMap<String, f64>,
    pub mean_suggest_ms: f64,
    pub runs: Vec<RunResult>,
}

/// The `q`-quantile by linear interpolation (numpy's default) of a sorted slice; NaN when it
/// is empty.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

pub fn summarize(
    algorithm: &str,
    problem: &BenchProblem,
    budget: usize,
    runs: Vec<RunResult>,
) -> CellSummary {
    let mut regrets: Vec<f64> = runs.iter().map(|r| r.final_regret).collect();
    regrets.sort_by(f64::total_cmp);
    let mut at = BTreeMap::new();
    for point in TIME_POINTS {
        let times: Vec<f64> = runs
            .iter()
            .filter_map(|r| r.suggest_ms.get(point - 1).copied())
            .collect();
        if !times.is_empty() {
            at.insert(
                point.to_string(),
                times.iter().sum::<f64>() / times.len() as f64,
            );
        }
    }
    let all: Vec<f64> = runs
        .iter()
        .flat_map(|r| r.suggest_ms.iter().copied())
        .collect();
    CellSummary {
        algorithm: algorithm.to_string(),
        problem: problem.name(),
        trials: budget,
        seeds: runs.len(),
        regret_median: quantile(&regrets, 0.5),
        regret_q1: quantile(&regrets, 0.25),
        regret_q3: quantile(&regrets, 0.75),
        suggest_ms_at: at,
        mean_suggest_ms: if all.is_empty() {
            0.0
        } else {
            all.iter().sum::<f64>() / all.len() as f64
        },
        runs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_like_numpy() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.5), 2.5);
        assert_eq!(quantile(&v, 0.25), 1.75);
        assert_eq!(quantile(&[7.0], 0.75), 7.0);
        assert!(quantile(&[], 0.5).is_nan());
    }

    #[test]
    fn a_summary_has_quartiles_and_times_where_reached() {
        let run = |seed, final_regret, n: usize| RunResult {
            seed,
            final_regret,
            suggest_ms: (1..=n).map(|i| i as f64).collect(),
        };
        let p = BenchProblem::by_name("branin").unwrap();
        let runs = vec![run(0, 4.0, 20), run(1, 1.0, 30), run(2, 2.0, 30)];
        let c = summarize("random", &p, 30, runs);
        assert_eq!((c.seeds, c.trials, c.problem.as_str()), (3, 30, "branin"));
        assert_eq!((c.regret_median, c.regret_q1, c.regret_q3), (2.0, 1.5, 3.0));
        // Trial 25 was reached by two runs, trial 50 by none.
        assert_eq!(c.suggest_ms_at.len(), 1);
        assert_eq!(c.suggest_ms_at["25"], 25.0);
        assert_eq!(c.mean_suggest_ms, (210.0 + 2.0 * 465.0) / 80.0);
    }
}
