//! A thin command line over the harness, for measuring algorithm quality: building this
//! example in release is far cheaper than building the whole `vernier` binary in release,
//! and it runs the same code as `vernier benchmark` (same regrets for the same arguments).
//!
//! cargo run --release -p vernier-bench --example regret -- \
//!     --algorithms bayesianoptimization --problems branin,hartmann6 --seeds 10 --first-seed 0
//!
//! Flags: --algorithms a,b (`name;key=value` sets a setting), --problems p,q, --seeds N
//! (default 10), --first-seed S (default 0), --trials N (default: each problem's budget),
//! --per-seed FILE (also write every run's final regret, one `algorithm problem seed regret`
//! line each, for comparisons that need more than quartiles: `bench/peers/compare.py`).
//! Prints one line per algorithm and problem: median, q1, q3 of the final regret and the mean
//! milliseconds of the suggestion at trials 25, 50 and 100.

use std::error::Error;
use std::io::Write;
use std::time::Instant;
use vernier_bench::{AlgorithmSpec, Stopwatch};

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

fn main() -> Result<(), Box<dyn Error>> {
    let mut algorithms = vec!["random".to_string()];
    let mut problems = vec!["branin".to_string()];
    let (mut seeds, mut first_seed, mut trials) = (10_u64, 0_u64, None::<usize>);
    let mut per_seed: Option<std::fs::File> = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .ok_or_else(|| format!("{flag}: missing value\nhint: write {flag} VALUE"))?;
        let list = || value.split(',').map(str::to_string).collect::<Vec<_>>();
        match flag.as_str() {
            "--algorithms" => algorithms = list(),
            "--problems" => problems = list(),
            "--seeds" => seeds = value.parse()?,
            "--first-seed" => first_seed = value.parse()?,
            "--trials" => trials = Some(value.parse()?),
            "--per-seed" => {
                let mut file = std::fs::File::create(&value)
                    .map_err(|e| format!("--per-seed {value:?}: {e}"))?;
                writeln!(file, "algorithm\tproblem\tseed\tregret")?;
                per_seed = Some(file);
            }
            _ => {
                return Err(format!(
                    "unknown flag {flag:?}\nhint: use --algorithms, --problems, --seeds, \
                     --first-seed, --trials, --per-seed"
                )
                .into());
            }
        }
    }
    let problems = vernier_bench::problems(&problems)?;
    let mut clock = WallClock::default();
    println!("algorithm\tproblem\ttrials\tseeds\tmedian\tq1\tq3\tms@25\tms@50\tms@100");
    for algorithm in &algorithms {
        let algorithm = AlgorithmSpec::parse(algorithm)?;
        for problem in &problems {
            let budget = trials.unwrap_or_else(|| vernier_bench::default_budget(&problem.name()));
            let c = vernier_bench::run_cell(
                &algorithm,
                problem,
                budget,
                first_seed..first_seed + seeds,
                &mut clock,
                &mut |_| {},
            )?;
            if let Some(file) = per_seed.as_mut() {
                for run in &c.runs {
                    let (a, p) = (&c.algorithm, &c.problem);
                    writeln!(file, "{a}\t{p}\t{}\t{:e}", run.seed, run.final_regret)?;
                }
            }
            let ms = |p: &str| {
                c.suggest_ms_at
                    .get(p)
                    .map_or("-".into(), |v| format!("{v:.3}"))
            };
            println!(
                "{}\t{}\t{}\t{}\t{:.4e}\t{:.4e}\t{:.4e}\t{}\t{}\t{}",
                c.algorithm,
                c.problem,
                c.trials,
                c.seeds,
                c.regret_median,
                c.regret_q1,
                c.regret_q3,
                ms("25"),
                ms("50"),
                ms("100")
            );
        }
    }
    Ok(())
}
