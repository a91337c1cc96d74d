//! `vernier benchmark`: runs suggestion algorithms on analytic problems with known optima,
//! in-process and sequentially (one proposal per call, as a tuning service with
//! parallelTrialCount 1), over many seeds, and reports the final score (simple regret; for multi-objective problems the hypervolume gap to
//! the true front; for constrained ones the best feasible regret, see `benchmark_problems`) and the time each
//! suggestion took — a kurobako-style comparison for users choosing an algorithm.

use super::benchmark_problems::BenchProblem;
use crate::Exit;
use crate::out::{err, errln, outln};
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Instant;
use vernier_core::{SuggestRequest, TrialRecord};

/// Trial counts at which suggestion times are reported.
const TIME_POINTS: [usize; 3] = [25, 50, 100];

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

/// The default budget: Hartmann6 gets 100 trials, the rest 50 (the comparison).
fn default_budget(problem: &str) -> usize {
    if problem == "hartmann6" { 100 } else { 50 }
}

#[derive(Debug, Clone, Serialize)]
struct RunResult {
    seed: u64,
    final_regret: f64,
    /// Milliseconds per suggestion, in trial order.
    suggest_ms: Vec<f64>,
}

#[derive(Debug, Clone, Serialize)]
struct CellSummary {
    algorithm: String,
    problem: String,
    trials: usize,
    seeds: usize,
    regret_median: f64,
    regret_q1: f64,
    regret_q3: f64,
    /// Mean over seeds of the time of the suggestion at trial 25, 50, 100 (when reached).
    suggest_ms_at: BTreeMap<String, f64>,
    mean_suggest_ms: f64,
    runs: Vec<RunResult>,
}

pub fn benchmark(args: BenchmarkArgs) -> anyhow::Result<Exit> {
    let problems: Vec<BenchProblem> = args
        .problems
        .iter()
        .map(|name| {
            BenchProblem::by_name(name).ok_or_else(|| {
                anyhow::anyhow!(
                    "--problems: unknown problem {name:?}\nhint: known problems are branin, hartmann3, hartmann6, rosenbrock4, ackley5, styblinski-tang (and rosenbrockN, ackleyN, styblinski-tangN); multi-objective zdt1, zdt2, dtlz2 (zdt1-N... for N variables); constrained rosenbrock-disk (rosenbrock-disk:blind hides the constraint)"
                )
            })
        })
        .collect::<Result<_, _>>()?;
    if args.seeds == 0 {
        anyhow::bail!(
            "--seeds: value 0 is not allowed\nhint: use at least 1 seed (10 or more for stable medians)"
        );
    }
    if args.trials == Some(0) {
        anyhow::bail!("--trials: value 0 is not allowed\nhint: use at least 1 trial");
    }
    let mut cells = Vec::new();
    for algorithm in &args.algorithms {
        for problem in &problems {
            let budget = args
                .trials
                .unwrap_or_else(|| default_budget(&problem.name()));
            let mut runs = Vec::new();
            for seed in args.first_seed..args.first_seed + args.seeds as u64 {
                runs.push(run_once(algorithm, problem, budget, seed)?);
                if !args.json {
                    err!(".");
                }
            }
            cells.push(summarize(algorithm, problem, budget, runs));
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

fn run_once(
    algorithm: &str,
    problem: &BenchProblem,
    budget: usize,
    seed: u64,
) -> anyhow::Result<RunResult> {
    let space = problem.space();
    let objective = problem.objective();
    let (name, settings) = split_settings(algorithm)?;
    let suggester = vernier_algorithms::build(
        name,
        &vernier_algorithms::with_random_state(&settings, seed),
        &space,
        &objective,
    )
    .map_err(|e| anyhow::anyhow!("--algorithms: {e}"))?;
    let mut trials: Vec<TrialRecord> = Vec::with_capacity(budget);
    let mut state: Option<String> = None;
    let mut times = Vec::with_capacity(budget);
    for t in 0..budget {
        let request = SuggestRequest {
            space: &space,
            objective: &objective,
            trials: &trials,
            count: 1,
            seed: vernier_runner::names::suggest_seed(seed, t),
            state: state.as_deref(),
        };
        let started = Instant::now();
        let suggestions = suggester.suggest(&request)?;
        times.push(started.elapsed().as_secs_f64() * 1e3);
        state = suggestions.state;
        let Some(proposal) = suggestions.proposals.into_iter().next() else {
            break;
        };
        let mut trial = problem.trial(format!("trial-{t}"), proposal.assignment);
        trial.labels = proposal.labels;
        trials.push(trial);
    }
    Ok(RunResult {
        seed,
        final_regret: problem.score(&trials),
        suggest_ms: times,
    })
}

/// `name;key=value;...`: an algorithm with settings other than its defaults, so one run can
/// compare a setting (e.g. `bayesianoptimization;acq_func=EI`).
fn split_settings(algorithm: &str) -> anyhow::Result<(&str, Vec<(String, String)>)> {
    let mut parts = algorithm.split(';');
    let name = parts.next().unwrap_or_default();
    let settings = parts
        .map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "--algorithms: setting {kv:?} of {name:?} has no '='\nhint: write \
                         name;key=value;key=value"
                    )
                })
        })
        .collect::<anyhow::Result<_>>()?;
    Ok((name, settings))
}

/// The `q`-quantile by linear interpolation (numpy's default), of a non-empty slice.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

fn summarize(
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
    fn quantiles_interpolate_like_numpy() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.5), 2.5);
        assert_eq!(quantile(&v, 0.25), 1.75);
        assert_eq!(quantile(&[7.0], 0.75), 7.0);
    }

    #[test]
    fn random_search_runs_and_reports_regret() {
        let p = BenchProblem::by_name("branin").unwrap();
        let r = run_once("random", &p, 20, 1).unwrap();
        assert_eq!(r.suggest_ms.len(), 20);
        assert!(r.final_regret >= 0.0 && r.final_regret.is_finite());
        let again = run_once("random", &p, 20, 1).unwrap();
        assert_eq!(r.final_regret, again.final_regret);
        let cell = summarize("random", &p, 20, vec![r, again]);
        assert!(!cell.suggest_ms_at.contains_key("25"));
        assert_eq!(cell.seeds, 2);
    }

    #[test]
    fn algorithm_settings_follow_semicolons() {
        let (name, settings) = split_settings("tpe; gamma=0.2;n_ei_candidates=48").unwrap();
        assert_eq!(name, "tpe");
        assert_eq!(
            settings,
            vec![
                ("gamma".to_string(), "0.2".to_string()),
                ("n_ei_candidates".to_string(), "48".to_string())
            ]
        );
        assert_eq!(split_settings("random").unwrap().1, vec![]);
        let e = split_settings("tpe;gamma").unwrap_err().to_string();
        assert!(e.contains("\"gamma\"") && e.contains("hint:"), "{e}");
        let p = BenchProblem::by_name("branin").unwrap();
        let e = run_once("tpe;nope=1", &p, 2, 0).unwrap_err().to_string();
        assert!(e.contains("nope"), "{e}");
    }
}
