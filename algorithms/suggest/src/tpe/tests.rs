//! Seeded, property and behaviour tests of both TPE variants.

use super::*;
use crate::test_params::{pairs, texts};
use proptest::prelude::*;
use std::collections::BTreeMap;
use vernier_core::{Direction, Distribution, Domain, ParamValue, TrialRecord, TrialState};
use vernier_testfunctions::Problem;

/// In these tests `tpe` is the univariate estimator (`tpe` with `multivariate: false`), so
/// both estimators are covered; `tpe`'s multivariate default has its own test.
const BOTH: [&str; 2] = ["tpe", "multivariate-tpe"];

fn build(
    name: &str,
    settings: &[(String, String)],
    space: &SearchSpace,
    objective: &Objective,
) -> Result<Box<dyn Suggester>, AlgorithmError> {
    let mut settings = settings.to_vec();
    if name == "tpe" && !settings.iter().any(|(k, _)| k == "multivariate") {
        settings.push(("multivariate".to_string(), "false".to_string()));
    }
    super::build(name, &settings, space, objective)
}

fn mixed_space() -> SearchSpace {
    use crate::test_params::{categorical, discrete, double, int};
    use Distribution::{LogNormal, LogUniform, Normal};
    SearchSpace::new(vec![
        double("lr", (1e-4, 0.1), None, LogUniform),
        int("layers", (1, 9), Some(2), Normal),
        int("width", (8, 512), None, LogUniform),
        double("momentum", (0.5, 0.95), Some(0.05), LogNormal),
        categorical("opt", &["sgd", "adam", "rmsprop"]),
        discrete("batch", &["16", "32", "64"]),
    ])
    .unwrap()
}

/// A loss on `mixed_space` with a known best region (lr near 0.01, 5 layers, adam, 32).
fn mixed_loss(a: &Assignment) -> f64 {
    let lr = a.get("lr").and_then(ParamValue::as_f64).unwrap();
    let layers = a.get("layers").and_then(ParamValue::as_f64).unwrap();
    let width = a.get("width").and_then(ParamValue::as_f64).unwrap();
    let momentum = a.get("momentum").and_then(ParamValue::as_f64).unwrap();
    let opt = if a.get("opt") == Some(&ParamValue::Choice("adam".into())) {
        0.0
    } else {
        0.5
    };
    let batch = (a.get("batch").and_then(ParamValue::as_f64).unwrap() - 32.0).abs() / 32.0;
    (lr.log10() + 2.0).powi(2)
        + (layers - 5.0).powi(2) / 8.0
        + (width.log2() - 6.0).powi(2) / 10.0
        + (momentum - 0.9).powi(2)
        + opt
        + batch
}

fn space_1d(min: f64, max: f64) -> SearchSpace {
    SearchSpace::new(vec![Parameter {
        name: "x".into(),
        domain: Domain::Double {
            min,
            max,
            step: None,
        },
        distribution: Distribution::Uniform,
    }])
    .unwrap()
}

fn trial(
    i: usize,
    assignment: Assignment,
    state: TrialState,
    objective: Option<f64>,
) -> TrialRecord {
    TrialRecord {
        name: format!("t{i}"),
        assignment,
        state,
        objective,
        labels: BTreeMap::new(),
        metrics: BTreeMap::new(),
    }
}

/// `n` finished trials at prior draws, scored by `f`.
fn history(
    space: &SearchSpace,
    n: usize,
    seed: u64,
    f: impl Fn(&Assignment) -> f64,
) -> Vec<TrialRecord> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|i| {
            let a = sample_assignment(space, &mut rng);
            let v = f(&a);
            trial(i, a, TrialState::Succeeded, Some(v))
        })
        .collect()
}

fn algorithm(name: &str, settings: &[(&str, &str)]) -> Box<dyn Suggester> {
    let space = space_1d(0.0, 1.0);
    build(
        name,
        &pairs(settings),
        &space,
        &Objective::new("loss", Direction::Minimize),
    )
    .unwrap()
}

fn suggest(
    alg: &dyn Suggester,
    space: &SearchSpace,
    objective: &Objective,
    trials: &[TrialRecord],
    count: usize,
    seed: u64,
) -> Suggestions {
    alg.suggest(&SuggestRequest {
        space,
        objective,
        trials,
        count,
        seed,
        state: None,
    })
    .unwrap()
}

fn x_of(s: &Suggestions) -> Vec<f64> {
    s.proposals
        .iter()
        .map(|p| p.assignment.get("x").and_then(ParamValue::as_f64).unwrap())
        .collect()
}

#[test]
fn seeded_proposals_are_exact() {
    let space = mixed_space();
    let o = Objective::new("loss", Direction::Minimize);
    let trials = history(&space, 15, 1, mixed_loss);
    let got: Vec<Vec<String>> = BOTH
        .iter()
        .map(|name| {
            texts(&suggest(
                algorithm(name, &[]).as_ref(),
                &space,
                &o,
                &trials,
                2,
                42,
            ))
        })
        .collect();
    assert_eq!(
        got,
        vec![
            vec![
                "lr=0.00013716640191234873, layers=9, width=9, momentum=0.5, opt=adam, batch=32",
                "lr=0.039420722860710695, layers=1, width=196, momentum=0.95, opt=adam, batch=32",
            ],
            vec![
                "lr=0.03775502345494692, layers=7, width=34, momentum=0.65, opt=adam, batch=32",
                "lr=0.06407226280259566, layers=7, width=138, momentum=0.65, opt=adam, batch=32",
            ],
        ]
    );
}

#[test]
fn the_good_set_is_fifteen_percent_capped_at_25_unless_gamma_is_set() {
    // (gamma setting, finished trials, good trials)
    let table = [
        (None, 0, 0),
        (None, 1, 1),
        (None, 10, 2),
        (None, 15, 3),
        (None, 50, 8),
        (None, 100, 15),
        (None, 166, 25),
        (None, 1000, 25),
        (Some(0.1), 50, 5),
        (Some(0.1), 1000, 100),
        (Some(0.5), 3, 2),
    ];
    for (gamma, n, want) in table {
        assert_eq!(
            super::good_set_size(gamma, n),
            want,
            "gamma {gamma:?}, n {n}"
        );
    }
}

/// Two seeded proposals of `name` with `settings` (Vernier's own defaults: not the
/// module's univariate `build`) after 15 trials on the mixed space.
fn two_seeded_proposals(name: &str, settings: &[(&str, &str)]) -> Vec<String> {
    let space = mixed_space();
    let o = Objective::new("loss", Direction::Minimize);
    let trials = history(&space, 15, 1, mixed_loss);
    let alg = super::build(name, &pairs(settings), &space, &o).unwrap();
    texts(&suggest(alg.as_ref(), &space, &o, &trials, 2, 42))
}

#[test]
fn candidates_default_to_48_joint_and_24_per_parameter() {
    let run = two_seeded_proposals;
    let univariate = [("multivariate", "false")];
    let (u24, u48) = (
        [("multivariate", "false"), ("n_ei_candidates", "24")],
        [("multivariate", "false"), ("n_ei_candidates", "48")],
    );
    assert_eq!(run("tpe", &univariate), run("tpe", &u24));
    assert_ne!(run("tpe", &univariate), run("tpe", &u48));
    let j48 = [("n_ei_candidates", "48")];
    assert_eq!(run("multivariate-tpe", &[]), run("multivariate-tpe", &j48));
    assert_ne!(
        run("multivariate-tpe", &[]),
        run("multivariate-tpe", &[("n_ei_candidates", "24")])
    );
}

#[test]
fn tpe_is_multivariate_unless_told_otherwise() {
    let (space, o) = (mixed_space(), Objective::new("loss", Direction::Minimize));
    let run = two_seeded_proposals;
    let joint = run("multivariate-tpe", &[]);
    assert_eq!(run("tpe", &[]), joint);
    assert_eq!(run("tpe", &[("multivariate", "true")]), joint);
    assert_ne!(run("tpe", &[("multivariate", "false")]), joint);
    assert_eq!(run("multivariate-tpe", &[("multivariate", "true")]), joint);
    assert_eq!(
        run("multivariate-tpe", &[("multivariate", " True ")]),
        joint
    );
    let err = |name: &str, v: &str| {
        super::build(name, &pairs(&[("multivariate", v)]), &space, &o)
            .unwrap_err()
            .to_string()
    };
    let e = err("tpe", "yes");
    assert!(
        e.contains("multivariate") && e.contains("\"yes\"") && e.contains("true, false"),
        "{e}"
    );
    let e = err("multivariate-tpe", "false");
    assert!(
        e.contains("multivariate") && e.contains("\"false\"") && e.contains("hint:"),
        "{e}"
    );
}

#[test]
fn startup_proposals_are_prior_draws() {
    let space = mixed_space();
    let o = Objective::new("loss", Direction::Minimize);
    for name in BOTH {
        let alg = algorithm(name, &[("n_startup_trials", "4")]);
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let prior: Vec<String> = (0..4)
            .map(|_| sample_assignment(&space, &mut rng).to_string())
            .collect();
        let s = suggest(alg.as_ref(), &space, &o, &[], 6, 9);
        assert_eq!(s.proposals.len(), 6);
        assert_eq!(texts(&s)[..4], prior[..], "{name}");
        assert_eq!(texts(&suggest(alg.as_ref(), &space, &o, &[], 4, 9)), prior);

        // Finished and pending trials both use up the startup budget; failed ones do not.
        let mut trials = history(&space, 4, 3, mixed_loss);
        trials[2].state = TrialState::Running;
        trials[3].state = TrialState::Failed;
        let s = suggest(alg.as_ref(), &space, &o, &trials, 1, 9);
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        assert_eq!(
            texts(&s),
            vec![sample_assignment(&space, &mut rng).to_string()]
        );
    }
}

#[test]
fn concentrates_near_the_minimiser_or_the_maximiser() {
    let space = space_1d(-5.0, 5.0);
    let trials = history(&space, 30, 5, |a| {
        (a.get("x").and_then(ParamValue::as_f64).unwrap() - 2.0).powi(2)
    });
    for name in BOTH {
        let alg = algorithm(name, &[]);
        let min = Objective::new("loss", Direction::Minimize);
        let max = Objective::new("loss", Direction::Maximize);
        let near_min = (0..20)
            .flat_map(|seed| x_of(&suggest(alg.as_ref(), &space, &min, &trials, 1, seed)))
            .filter(|x| (x - 2.0).abs() < 1.0)
            .count();
        // Maximising (x-2)² on [-5, 5] pulls towards the far end, -5.
        let near_max = (0..20)
            .flat_map(|seed| x_of(&suggest(alg.as_ref(), &space, &max, &trials, 1, seed)))
            .filter(|x| *x < -3.5)
            .count();
        assert!(near_min >= 15, "{name}: {near_min}/20 near the minimiser");
        assert!(near_max >= 15, "{name}: {near_max}/20 near the maximiser");
    }
}

#[test]
fn learns_a_categorical_preference() {
    let space = SearchSpace::new(vec![
        Parameter {
            name: "x".into(),
            domain: Domain::Double {
                min: 0.0,
                max: 1.0,
                step: None,
            },
            distribution: Distribution::Uniform,
        },
        Parameter {
            name: "c".into(),
            domain: Domain::Categorical {
                values: vec!["a".into(), "b".into(), "c".into()],
            },
            distribution: Distribution::Uniform,
        },
    ])
    .unwrap();
    let o = Objective::new("loss", Direction::Minimize);
    let trials = history(&space, 30, 8, |a| {
        let x = a.get("x").and_then(ParamValue::as_f64).unwrap();
        let penalty = if a.get("c") == Some(&ParamValue::Choice("b".into())) {
            0.0
        } else {
            1.0
        };
        (x - 0.5).powi(2) + penalty
    });
    for name in BOTH {
        let alg = algorithm(name, &[]);
        let b = (0..20)
            .map(|seed| suggest(alg.as_ref(), &space, &o, &trials, 1, seed))
            .filter(|s| s.proposals[0].assignment.get("c") == Some(&ParamValue::Choice("b".into())))
            .count();
        assert!(b >= 16, "{name}: b proposed {b}/20 times");
    }
}

#[test]
fn failed_and_unscored_trials_are_ignored() {
    let space = mixed_space();
    let o = Objective::new("loss", Direction::Maximize);
    let clean = history(&space, 14, 2, mixed_loss);
    let mut noisy = clean.clone();
    let extra = history(&space, 4, 77, |_| -1e9);
    for (i, mut t) in extra.into_iter().enumerate() {
        t.name = format!("bad{i}");
        t.state = [
            TrialState::Failed,
            TrialState::Killed,
            TrialState::MetricsUnavailable,
            TrialState::Succeeded,
        ][i];
        if i == 3 {
            t.objective = None;
        }
        noisy.insert(3 * i, t);
    }
    for name in BOTH {
        let alg = algorithm(name, &[]);
        assert_eq!(
            suggest(alg.as_ref(), &space, &o, &clean, 3, 5),
            suggest(alg.as_ref(), &space, &o, &noisy, 3, 5),
            "{name}"
        );
    }
}

#[test]
fn exhausts_a_small_finite_space_without_repeats() {
    let space = SearchSpace::new(vec![
        Parameter {
            name: "n".into(),
            domain: Domain::Int {
                min: 1,
                max: 3,
                step: None,
            },
            distribution: Distribution::Uniform,
        },
        Parameter {
            name: "c".into(),
            domain: Domain::Categorical {
                values: vec!["a".into(), "b".into()],
            },
            distribution: Distribution::Uniform,
        },
    ])
    .unwrap();
    let o = Objective::new("loss", Direction::Minimize);
    let trials = history(&space, 2, 4, |a| {
        a.get("n").and_then(ParamValue::as_f64).unwrap()
    });
    for name in BOTH {
        let alg = algorithm(name, &[("n_startup_trials", "0")]);
        let s = suggest(alg.as_ref(), &space, &o, &trials, 10, 1);
        let mut keys: HashSet<String> = trials.iter().map(|t| t.assignment.key()).collect();
        for p in &s.proposals {
            assert!(
                keys.insert(p.assignment.key()),
                "{name}: {} repeated",
                p.assignment
            );
        }
        assert_eq!(keys.len(), 6, "{name}");
        assert!(s.exhausted, "{name}");
    }
}

#[test]
fn rejects_bad_settings_naming_setting_and_value() {
    let space = space_1d(0.0, 1.0);
    let o = Objective::new("loss", Direction::Minimize);
    let err = |name: &str, k: &str, v: &str| {
        build(name, &pairs(&[(k, v)]), &space, &o)
            .unwrap_err()
            .to_string()
    };
    for name in BOTH {
        let e = err(name, "n_ei_candidate", "24");
        assert!(e.contains("unknown setting \"n_ei_candidate\""), "{e}");
        for (k, v, why) in [
            ("gamma", "abc", "does not parse"),
            ("gamma", "1.5", "out of range"),
            ("gamma", "0", "out of range"),
            ("prior_weight", "0", "out of range"),
            ("prior_weight", "inf", "out of range"),
            ("n_ei_candidates", "0", "out of range"),
            ("n_EI_candidates", "-3", "out of range"),
            ("n_startup_trials", "-1", "out of range"),
            ("n_startup_trials", "2.5", "does not parse"),
            ("random_state", "-1", "out of range"),
        ] {
            let e = err(name, k, v);
            assert!(
                e.contains(k) && e.contains(&format!("{v:?}")) && e.contains(why),
                "{e}"
            );
        }
        let ok = pairs(&[
            ("n_startup_trials", "0"),
            ("n_EI_candidates", "48"),
            ("gamma", "0.25"),
            ("prior_weight", "2.0"),
            ("random_state", "7"),
        ]);
        assert!(build(name, &ok, &space, &o).is_ok());
    }
}

#[test]
fn beats_random_search_on_branin() {
    let problem = Problem::by_name("branin").unwrap();
    let random = crate::random::RandomSearch::new();
    let random_runs: Vec<f64> = (0..9)
        .map(|seed| run(&random, &problem, 50, seed))
        .collect();
    for name in BOTH {
        let alg = algorithm(name, &[]);
        let runs: Vec<f64> = (0..9)
            .map(|seed| run(alg.as_ref(), &problem, 50, seed))
            .collect();
        assert!(
            median(runs.clone()) < median(random_runs.clone()),
            "{name}: {runs:?} vs random {random_runs:?}"
        );
    }
}

/// Runs `trials` sequential suggestions on a problem; returns the final simple regret.
fn run(alg: &dyn Suggester, problem: &Problem, trials: usize, seed: u64) -> f64 {
    let space = problem.space();
    let o = Objective::new("loss", Direction::Minimize);
    let mut history: Vec<TrialRecord> = Vec::with_capacity(trials);
    for i in 0..trials {
        let s = suggest(
            alg,
            &space,
            &o,
            &history,
            1,
            seed.wrapping_mul(1_000_003) + i as u64,
        );
        let a = s.proposals[0].assignment.clone();
        let v = problem.eval_assignment(&a);
        history.push(trial(i, a, TrialState::Succeeded, Some(v)));
    }
    let best = history
        .iter()
        .filter_map(|t| t.objective)
        .fold(f64::INFINITY, f64::min);
    problem.regret(best)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

fn any_history() -> impl Strategy<Value = (Vec<TrialRecord>, u64)> {
    (0usize..30, any::<u64>(), 0usize..4).prop_map(|(n, seed, pending)| {
        let space = mixed_space();
        let mut trials = history(&space, n, seed, mixed_loss);
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 1);
        for i in 0..pending {
            let state = if i % 2 == 0 {
                TrialState::Running
            } else {
                TrialState::Created
            };
            trials.push(trial(
                n + i,
                sample_assignment(&space, &mut rng),
                state,
                None,
            ));
        }
        (trials, seed)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn proposals_are_valid_distinct_and_repeatable(
        (trials, seed) in any_history(),
        count in 1usize..8,
        multivariate in any::<bool>(),
        maximize in any::<bool>(),
    ) {
        let space = mixed_space();
        let direction = if maximize { Direction::Maximize } else { Direction::Minimize };
        let o = Objective::new("loss", direction);
        let alg = algorithm(BOTH[usize::from(multivariate)], &[("n_startup_trials", "3")]);
        let a = suggest(alg.as_ref(), &space, &o, &trials, count, seed);
        let b = suggest(alg.as_ref(), &space, &o, &trials, count, seed);
        prop_assert_eq!(&a, &b);
        prop_assert_eq!(a.proposals.len(), count);
        let mut keys: HashSet<String> = trials.iter().map(|t| t.assignment.key()).collect();
        for p in &a.proposals {
            prop_assert!(space.check(&p.assignment).is_ok(), "{}", p.assignment);
            prop_assert!(keys.insert(p.assignment.key()), "{} repeated", p.assignment);
        }
    }
}

#[test]
fn constrained_tpe_puts_infeasible_trials_in_the_bad_group() {
    use vernier_core::{Constraint, ConstraintOp, Objective};
    // Loss falls with x, but x <= 0.5 is required: the best feasible region is just below 0.5.
    let space = space_1d(0.0, 1.0);
    let trials: Vec<TrialRecord> = (0..40)
        .map(|i| {
            let x = (i as f64 + 0.5) / 40.0;
            TrialRecord {
                name: format!("t{i}"),
                assignment: Assignment(vec![("x".into(), ParamValue::Double(x))]),
                state: TrialState::Succeeded,
                objective: Some(-x),
                labels: Default::default(),
                metrics: [("loss".to_string(), -x), ("c".to_string(), x)].into(),
            }
        })
        .collect();
    let mean_proposal = |o: &Objective| {
        let req = SuggestRequest {
            space: &space,
            objective: o,
            trials: &trials,
            count: 8,
            seed: 5,
            state: None,
        };
        let xs = x_of(&algorithm("tpe", &[]).suggest(&req).unwrap());
        xs.iter().sum::<f64>() / xs.len() as f64
    };
    let plain = Objective::new("loss", Direction::Minimize);
    let mut constrained = plain.clone();
    constrained.constraints.push(Constraint {
        metric: "c".into(),
        op: ConstraintOp::Le,
        bound: 0.5,
    });
    let (free, bounded) = (mean_proposal(&plain), mean_proposal(&constrained));
    assert!(free > 0.8, "{free}");
    assert!(bounded < 0.6, "{bounded}");
}

/// The estimators see at most the latest `MODEL_MAX_POINTS` rows: a longer history fits the
/// same model as its tail, so a batch of 10,000 over 10,000 trials stays bounded.
#[test]
fn a_model_is_fitted_on_the_latest_points_only() {
    let space = mixed_space();
    let dims: Vec<Dim> = space.parameters().iter().map(Dim::new).collect();
    let rows: Vec<Vec<f64>> = (0..MODEL_MAX_POINTS + 500)
        .map(|i| dims.iter().map(|_| (i % 37) as f64 / 37.0).collect())
        .collect();
    let all: Vec<&[f64]> = rows.iter().map(Vec::as_slice).collect();
    for multivariate in [false, true] {
        let tpe = Tpe {
            name: "tpe",
            multivariate,
            n_startup: 10,
            n_ei: 24,
            gamma: None,
            prior_weight: 1.0,
            initial: crate::initial_design::InitialDesign::Random,
        };
        let whole = format!("{:?}", tpe.fit(&dims, &all));
        let tail = format!("{:?}", tpe.fit(&dims, &all[500..]));
        let shorter = format!("{:?}", tpe.fit(&dims, &all[501..]));
        assert_eq!(whole, tail);
        assert_ne!(whole, shorter, "the cap is MODEL_MAX_POINTS, not less");
    }
}

#[test]
fn a_large_batch_refits_the_liar_model_on_a_thinning_schedule() {
    for (i, due) in [
        (0, true),
        (63, true),
        (64, true),
        (65, false),
        (66, true),
        (127, false),
        (128, true),
        (130, false),
        (6400, true),
        (6401, false),
    ] {
        assert_eq!(liar_refit_due(i), due, "proposal {i}");
    }
    assert_eq!((0..64).filter(|i| liar_refit_due(*i)).count(), 64);
    assert_eq!((0..10_000).filter(|i| liar_refit_due(*i)).count(), 430);
}

#[test]
fn a_batch_beyond_the_full_liar_stays_valid_and_distinct() {
    let space = mixed_space();
    let o = Objective::new("loss", Direction::Minimize);
    let trials = history(&space, 30, 5, |a| a.key().len() as f64);
    for name in BOTH {
        let s = suggest(algorithm(name, &[]).as_ref(), &space, &o, &trials, 300, 9);
        assert_eq!(s.proposals.len(), 300, "{name}");
        let mut keys: HashSet<String> = trials.iter().map(|t| t.assignment.key()).collect();
        for p in &s.proposals {
            assert!(
                space.check(&p.assignment).is_ok(),
                "{name}: {}",
                p.assignment
            );
            assert!(
                keys.insert(p.assignment.key()),
                "{name}: {} repeated",
                p.assignment
            );
        }
    }
}
