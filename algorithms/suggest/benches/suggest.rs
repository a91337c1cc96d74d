//! Time per suggestion of every algorithm on a 6-D space with 50/100/200/500 finished trials
//! (`cargo bench -p vernier-algorithms`), and of PBT on a labelled population history.
//! Figures go to BENCHMARKS.md, never into tests.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::hint::black_box;
use vernier_core::{
    Direction, Distribution, Domain, Objective, Parameter, SearchSpace, SuggestRequest,
    TrialRecord, TrialState,
};
use vernier_testfunctions::Problem;

const HISTORY_SIZES: [usize; 4] = [50, 100, 200, 500];
/// Each algorithm with its defaults, then TPE as it was before its defaults changed (issue
/// 19's limit: no more than twice the time per suggestion at 100 trials): `tpe` univariate with
/// Optuna's 24 candidates and 10 % good set, and the multivariate estimator with those two.
const ALGORITHMS: [(&str, &[(&str, &str)]); 12] = [
    ("random", &[]),
    ("grid", &[]),
    ("sobol", &[]),
    ("tpe", &[]),
    ("multivariate-tpe", &[]),
    (
        "tpe",
        &[
            ("multivariate", "false"),
            ("n_ei_candidates", "24"),
            ("gamma", "0.1"),
        ],
    ),
    (
        "multivariate-tpe",
        &[("n_ei_candidates", "24"), ("gamma", "0.1")],
    ),
    ("cmaes", &[]),
    ("bayesianoptimization", &[]),
    ("bayesianoptimization", &[("base_estimator", "RF")]),
    ("bayesianoptimization", &[("base_estimator", "ET")]),
    ("bayesianoptimization", &[("base_estimator", "GBRT")]),
];

/// Hartmann6's box; grid gets a step so that it can enumerate (11^6 points).
fn space_for(algorithm: &str) -> SearchSpace {
    let step = (algorithm == "grid").then_some(0.1);
    let params = (1..=6)
        .map(|i| Parameter {
            name: format!("x{i}"),
            domain: Domain::Double {
                min: 0.0,
                max: 1.0,
                step,
            },
            distribution: Distribution::Uniform,
        })
        .collect();
    SearchSpace::new(params).expect("valid space")
}

/// `n` finished trials at prior draws, scored by Hartmann6.
fn history(space: &SearchSpace, n: usize) -> Vec<TrialRecord> {
    let problem = Problem::by_name("hartmann6").expect("hartmann6");
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    (0..n)
        .map(|i| {
            let assignment = vernier_algorithms::sample::sample_assignment(space, &mut rng);
            let value = problem.eval_assignment(&assignment);
            TrialRecord {
                name: format!("t{i}"),
                assignment,
                state: TrialState::Succeeded,
                objective: Some(value),
                labels: BTreeMap::new(),
                metrics: BTreeMap::new(),
            }
        })
        .collect()
}

fn bench_suggest(c: &mut Criterion) {
    let objective = Objective::new("value", Direction::Minimize);
    for (algorithm, settings) in ALGORITHMS {
        let space = space_for(algorithm);
        let owned: Vec<(String, String)> = settings
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let label = std::iter::once(algorithm.to_string())
            .chain(settings.iter().map(|(k, v)| format!("{k}={v}")))
            .collect::<Vec<_>>()
            .join(";");
        let suggester = vernier_algorithms::build(algorithm, &owned, &space, &objective)
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        let mut group = c.benchmark_group(format!("suggest/{label}"));
        group.sample_size(10);
        for n in HISTORY_SIZES {
            let trials = history(&space, n);
            group.bench_with_input(BenchmarkId::from_parameter(n), &trials, |b, trials| {
                b.iter(|| {
                    let request = SuggestRequest {
                        space: &space,
                        objective: &objective,
                        trials,
                        count: 1,
                        seed: 42,
                        state: None,
                    };
                    black_box(suggester.suggest(&request))
                })
            });
        }
        group.finish();
    }
}

/// PBT reads its population from trial labels: `n` finished trials as `n / 10` generations of
/// a population of 10, so each call ranks the last generation and proposes its successor.
fn bench_pbt(c: &mut Criterion) {
    use vernier_algorithms::pbt::{GENERATION_LABEL, MEMBER_LABEL};
    let objective = Objective::new("value", Direction::Minimize);
    let space = space_for("pbt");
    let settings: Vec<(String, String)> = [
        ("suggestion_trial_dir", "/var/log/katib/checkpoints/"),
        ("n_population", "10"),
        ("truncation_threshold", "0.2"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let suggester =
        vernier_algorithms::build("pbt", &settings, &space, &objective).expect("pbt builds");
    let mut group = c.benchmark_group("suggest/pbt");
    group.sample_size(10);
    for n in HISTORY_SIZES {
        let mut trials = history(&space, n);
        for (i, t) in trials.iter_mut().enumerate() {
            t.labels
                .insert(GENERATION_LABEL.to_string(), (i / 10).to_string());
            t.labels
                .insert(MEMBER_LABEL.to_string(), (i % 10).to_string());
        }
        group.bench_with_input(BenchmarkId::from_parameter(n), &trials, |b, trials| {
            b.iter(|| {
                let request = SuggestRequest {
                    space: &space,
                    objective: &objective,
                    trials,
                    count: 1,
                    seed: 42,
                    state: None,
                };
                black_box(suggester.suggest(&request))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_suggest, bench_pbt);
criterion_main!(benches);
