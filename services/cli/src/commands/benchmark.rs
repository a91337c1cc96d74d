//! `vernier benchmark`: runs suggestion algorithms on analytic problems with known optima,
//! in-process and sequentially (one proposal per call, as a tuning service with
//! parallelTrialCount 1), over many seeds, and reports the final score (simple regret; for multi-objective problems the hypervolume gap to
//! the true front; for constrained ones the best feasible regret) and the time each
//! suggestion took — a kurobako-style comparison for users choosing an algorithm. The harness
//! is `vernier_bench`; this command parses, times and prints.

use crate::Exit;
use crate::out::{err, errln, outln};
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use std::time::Instant;
use vernier_bench::{AlgorithmSpec, BenchError, CellSummary, Stopwatch};

/// What to run.
#[derive(Debug, Clone)]
pub struct BenchmarkArgs {
    pub algorithms: Vec<String>,
    pub problems: Vec<String>,
    /// Trials per run; `None` uses each problem's default budget.
    pub trials: Option<usize>,
    pub seeds: usize,
    pub first_seed: u64,
    pub json: bool,
}

/// The wall clock the harness times suggestions with.
#[derive(Debug, Default)]
struct WallClock(Option<Instant>);

impl Stopwatch for WallClock {
    fn start(&mut self) {
        self.0 = Some(Instant::now());
    }
    fn stop_ms(&mut self) -> f64 {
        self.0
            .take()
            .map_or(0.0, |started| started.elapsed().as_secs_f64() * 1e3)
    }
}

/// Algorithms the analytic problems cannot drive: what they need, the problems do not have.
const NOT_FOR_THESE_PROBLEMS: &[&str] =
    &["grid", "hyperband", "asha", "bohb", "pbt", "darts", "enas"];

/// Errors about an algorithm or its settings are errors in `--algorithms`.
fn algorithms_flag(e: BenchError) -> anyhow::Error {
    match e {
        BenchError::Algorithm(_)
        | BenchError::SettingWithoutValue { .. }
        | BenchError::SeedInSettings { .. } => {
            anyhow::anyhow!("--algorithms: {e}")
        }
        other => other.into(),
    }
}

pub fn benchmark(args: BenchmarkArgs) -> anyhow::Result<Exit> {
    let problems =
        vernier_bench::problems(&args.problems).map_err(|e| anyhow::anyhow!("--problems: {e}"))?;
    if args.seeds == 0 {
        anyhow::bail!(
            "--seeds: value 0 is not allowed\nhint: use at least 1 seed (10 or more for stable medians)"
        );
    }
    if args.trials == Some(0) {
        anyhow::bail!("--trials: value 0 is not allowed\nhint: use at least 1 trial");
    }
    let algorithms: Vec<AlgorithmSpec> = args
        .algorithms
        .iter()
        .map(|a| AlgorithmSpec::parse(a).map_err(algorithms_flag))
        .collect::<anyhow::Result<_>>()?;
    if let Some(a) = algorithms
        .iter()
        .find(|a| NOT_FOR_THESE_PROBLEMS.contains(&a.name.as_str()))
    {
        anyhow::bail!(
            "--algorithms: value {:?}: {} cannot search the benchmark problems, which are \
             continuous functions evaluated once per trial (grid needs a step on every double; \
             hyperband, asha, bohb and pbt a resource parameter and a learning curve; darts and \
             enas a nasConfig)\nhint: benchmark random, sobol, tpe, multivariate-tpe, cmaes, \
             bayesianoptimization or nsga2; `bench/asha` measures the budget algorithms on a \
             learning curve",
            a.label,
            a.name
        );
    }
    let seeds = args.first_seed..args.first_seed + args.seeds as u64;
    let mut clock = WallClock::default();
    let mut cells = Vec::new();
    for algorithm in &algorithms {
        for problem in &problems {
            let budget = args
                .trials
                .unwrap_or_else(|| vernier_bench::default_budget(&problem.name()));
            let cell = vernier_bench::run_cell(
                algorithm,
                problem,
                budget,
                seeds.clone(),
                &mut clock,
                &mut |_| {
                    if !args.json {
                        err!(".");
                    }
                },
            )
            .map_err(algorithms_flag)?;
            cells.push(cell);
        }
    }
    if !args.json {
        errln!();
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&cells)?);
    } else {
        print_table(&cells);
    }
    Ok(Exit::Succeeded)
}

fn print_table(cells: &[CellSummary]) {
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    table.set_header(vec![
        "algorithm",
        "problem",
        "trials",
        "seeds",
        "regret median",
        "q1",
        "q3",
        "ms@25",
        "ms@50",
        "ms@100",
    ]);
    let g = |v: f64| format!("{v:.4e}");
    for c in cells {
        let ms = |p: &str| {
            c.suggest_ms_at
                .get(p)
                .map_or("-".to_string(), |v| format!("{v:.3}"))
        };
        table.add_row(vec![
            c.algorithm.clone(),
            c.problem.clone(),
            c.trials.to_string(),
            c.seeds.to_string(),
            g(c.regret_median),
            g(c.regret_q1),
            g(c.regret_q3),
            ms("25"),
            ms("50"),
            ms("100"),
        ]);
    }
    outln!("{table}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_flag_they_come_from() {
        let args = |algorithms: &str, problems: &str| BenchmarkArgs {
            algorithms: vec![algorithms.to_string()],
            problems: vec![problems.to_string()],
            trials: Some(2),
            seeds: 1,
            first_seed: 0,
            json: true,
        };
        let e = benchmark(args("random", "nope")).unwrap_err().to_string();
        assert!(e.starts_with("--problems: unknown problem \"nope\""), "{e}");
        let e = benchmark(args("tpe;gamma", "branin"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--algorithms: setting \"gamma\""), "{e}");
        for budgeted in ["grid", "hyperband;eta=3"] {
            let e = benchmark(args(budgeted, "branin")).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("--algorithms: value {budgeted:?}"))
                    && e.contains("cannot search the benchmark problems")
                    && e.contains("\nhint: benchmark random"),
                "{e}"
            );
        }
        let e = benchmark(args("tpe;nope=1", "branin"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--algorithms: unknown setting \"nope\""),
            "{e}"
        );
        let e = benchmark(args("tpe;random_state=1", "branin"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--algorithms: setting random_state of \"tpe\" cannot be given")
                && e.contains("--first-seed")
                && e.contains("\nhint: remove random_state"),
            "{e}"
        );
        let e = benchmark(BenchmarkArgs {
            seeds: 0,
            ..args("random", "branin")
        })
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("--seeds: value 0 is not allowed\nhint: use at least 1 seed"),
            "{e}"
        );
        let e = benchmark(BenchmarkArgs {
            trials: Some(0),
            ..args("random", "branin")
        })
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("--trials: value 0 is not allowed\nhint: use at least 1 trial"),
            "{e}"
        );
    }
}
