//! One cell of the comparison: an algorithm on a problem over a range of seeds, summarised.

use crate::error::BenchError;
use crate::problem::BenchProblem;
use crate::run::{AlgorithmSpec, RunResult, Stopwatch, run_once};
use crate::summary::{CellSummary, summarize};
use std::ops::Range;

/// Runs every seed of `seeds` and summarises them; `on_run` sees each run as it finishes
/// (for progress output).
pub fn run_cell(
    algorithm: &AlgorithmSpec,
    problem: &BenchProblem,
    budget: usize,
    seeds: Range<u64>,
    stopwatch: &mut dyn Stopwatch,
    on_run: &mut dyn FnMut(&RunResult),
) -> Result<CellSummary, BenchError> {
    if seeds.is_empty() {
        return Err(BenchError::NoSeeds {
            first: seeds.start,
            end: seeds.end,
        });
    }
    if budget == 0 {
        return Err(BenchError::NoTrials);
    }
    let mut runs = Vec::with_capacity(seeds.clone().count());
    for seed in seeds {
        let run = run_once(algorithm, problem, budget, seed, stopwatch)?;
        on_run(&run);
        runs.push(run);
    }
    Ok(summarize(&algorithm.label, problem, budget, runs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::tests::{Ticks, spec};

    #[test]
    fn a_cell_runs_each_seed_once_in_order() {
        let p = BenchProblem::by_name("branin").unwrap();
        let mut seen = Vec::new();
        let cell = run_cell(
            &spec("random"),
            &p,
            30,
            3..5,
            &mut Ticks::default(),
            &mut |r| seen.push(r.seed),
        )
        .unwrap();
        assert_eq!(seen, vec![3, 4]);
        assert_eq!(cell.trials, 30);
        // The clock runs on across seeds: trial 25 is the 25th and the 55th call.
        assert_eq!(cell.suggest_ms_at["25"], 40.0);
        let alone = run_once(&spec("random"), &p, 30, 4, &mut Ticks::default()).unwrap();
        assert_eq!(cell.runs[1].final_regret, alone.final_regret);
        let e = run_cell(
            &spec("random"),
            &p,
            30,
            5..5,
            &mut Ticks::default(),
            &mut |_| {},
        );
        assert_eq!(e.unwrap_err(), BenchError::NoSeeds { first: 5, end: 5 });
        let e = run_cell(
            &spec("random"),
            &p,
            0,
            0..1,
            &mut Ticks::default(),
            &mut |_| {},
        );
        assert_eq!(e.unwrap_err(), BenchError::NoTrials);
    }
}
