//! One algorithm on one problem for one seed: the loop a service with parallelTrialCount 1
//! runs, in-process, with the service's seed rule.

use crate::error::BenchError;
use crate::problem::BenchProblem;
use serde::Serialize;
use vernier_core::{SuggestRequest, TrialRecord, suggest_seed};

/// Times each suggestion. The caller owns the clock so that this crate, like the algorithms,
/// reads none (and a test can hand in a fake one).
pub trait Stopwatch {
    /// Called right before a suggestion.
    fn start(&mut self);
    /// Milliseconds since the last `start`, called right after the suggestion.
    fn stop_ms(&mut self) -> f64;
}

/// The default budget: Hartmann6 gets 100 trials, the rest 50 (the comparison).
pub fn default_budget(problem: &str) -> usize {
    if problem == "hartmann6" { 100 } else { 50 }
}

/// `name;key=value;...`: an algorithm with settings other than its defaults, so one run can
/// compare a setting (e.g. `bayesianoptimization;acq_func=EI`).
#[derive(Debug, Clone, PartialEq)]
pub struct AlgorithmSpec {
    /// The text as given, which names the algorithm in the summary.
    pub label: String,
    pub name: String,
    pub settings: Vec<(String, String)>,
}

impl AlgorithmSpec {
    pub fn parse(text: &str) -> Result<AlgorithmSpec, BenchError> {
        let mut parts = text.split(';');
        let name = parts.next().unwrap_or_default().to_string();
        let settings = parts
            .map(|kv| {
                kv.split_once('=')
                    .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                    .ok_or_else(|| BenchError::SettingWithoutValue {
                        algorithm: name.clone(),
                        setting: kv.to_string(),
                    })
            })
            .collect::<Result<Vec<(String, String)>, _>>()?;
        // Each run's seed is the benchmark's; a fixed one here would be overridden unseen.
        if settings.iter().any(|(k, _)| k == "random_state") {
            return Err(BenchError::SeedInSettings { algorithm: name });
        }
        Ok(AlgorithmSpec {
            label: text.to_string(),
            name,
            settings,
        })
    }
}

/// The outcome of one run.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    pub seed: u64,
    pub final_regret: f64,
    /// Milliseconds per suggestion, in trial order.
    pub suggest_ms: Vec<f64>,
}

/// Runs `algorithm` on `problem` for `budget` trials (fewer if the algorithm runs out), one
/// proposal per call, the algorithm seeded with `seed` as the service seeds it.
pub fn run_once(
    algorithm: &AlgorithmSpec,
    problem: &BenchProblem,
    budget: usize,
    seed: u64,
    stopwatch: &mut dyn Stopwatch,
) -> Result<RunResult, BenchError> {
    let space = problem.space();
    let objective = problem.objective();
    let suggester = vernier_algorithms::build(
        &algorithm.name,
        &vernier_algorithms::with_random_state(&algorithm.settings, seed),
        &space,
        &objective,
    )?;
    let mut trials: Vec<TrialRecord> = Vec::with_capacity(budget);
    let mut state: Option<String> = None;
    let mut times = Vec::with_capacity(budget);
    for t in 0..budget {
        let request = SuggestRequest {
            space: &space,
            objective: &objective,
            trials: &trials,
            count: 1,
            seed: suggest_seed(seed, t),
            state: state.as_deref(),
        };
        stopwatch.start();
        let suggested = suggester.suggest(&request);
        times.push(stopwatch.stop_ms());
        let suggestions = suggested.map_err(|source| BenchError::Suggest {
            algorithm: algorithm.label.clone(),
            problem: problem.name(),
            seed,
            source: Box::new(source),
        })?;
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Each suggestion "takes" one millisecond more than the one before.
    #[derive(Debug, Default)]
    pub(crate) struct Ticks(f64);

    impl Stopwatch for Ticks {
        fn start(&mut self) {
            self.0 += 1.0;
        }
        fn stop_ms(&mut self) -> f64 {
            self.0
        }
    }

    pub(crate) fn spec(text: &str) -> AlgorithmSpec {
        AlgorithmSpec::parse(text).unwrap()
    }

    #[test]
    fn random_search_runs_and_reports_regret() {
        let p = BenchProblem::by_name("branin").unwrap();
        let r = run_once(&spec("random"), &p, 20, 1, &mut Ticks::default()).unwrap();
        assert_eq!(r.suggest_ms.len(), 20);
        assert_eq!(r.suggest_ms[19], 20.0);
        assert!(r.final_regret >= 0.0 && r.final_regret.is_finite());
        let again = run_once(&spec("random"), &p, 20, 1, &mut Ticks::default()).unwrap();
        assert_eq!(r.final_regret, again.final_regret);
        assert_ne!(
            r.final_regret,
            run_once(&spec("random"), &p, 20, 2, &mut Ticks::default())
                .unwrap()
                .final_regret
        );
    }

    #[test]
    fn algorithm_settings_follow_semicolons() {
        let s = spec("tpe; gamma=0.2;n_ei_candidates=48");
        assert_eq!(s.name, "tpe");
        assert_eq!(s.label, "tpe; gamma=0.2;n_ei_candidates=48");
        assert_eq!(
            s.settings,
            vec![
                ("gamma".to_string(), "0.2".to_string()),
                ("n_ei_candidates".to_string(), "48".to_string())
            ]
        );
        assert_eq!(spec("random").settings, vec![]);
        let e = AlgorithmSpec::parse("tpe;gamma").unwrap_err().to_string();
        assert!(e.contains("\"gamma\"") && e.contains("hint:"), "{e}");
        let e = AlgorithmSpec::parse("random;random_state=3")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("random_state") && e.contains("--first-seed"),
            "{e}"
        );
        let p = BenchProblem::by_name("branin").unwrap();
        let e = run_once(&spec("tpe;nope=1"), &p, 2, 0, &mut Ticks::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("nope"), "{e}");
    }
}
