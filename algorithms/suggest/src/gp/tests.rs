//! Tests of the GP optimiser: exact seeded proposals, properties, settings, model checks.

use super::*;
use crate::test_params::texts;
use std::collections::BTreeMap;
use vernier_core::{Direction, TrialRecord, TrialState};
use vernier_testfunctions::Problem;

fn run_problem(problem: &Problem, opt: &dyn Suggester, trials: usize, seed: u64) -> f64 {
    let space = problem.space();
    let o = Objective::new("loss", Direction::Minimize);
    let mut history: Vec<TrialRecord> = Vec::new();
    let mut best = f64::INFINITY;
    for t in 0..trials {
        let req = SuggestRequest {
            space: &space,
            objective: &o,
            trials: &history,
            count: 1,
            seed: seed.wrapping_mul(1_000_003).wrapping_add(t as u64),
            state: None,
        };
        let s = opt.suggest(&req).unwrap();
        let a = s.proposals[0].assignment.clone();
        let v = problem.eval_assignment(&a);
        best = best.min(v);
        history.push(TrialRecord {
            name: format!("t{t}"),
            assignment: a,
            state: TrialState::Succeeded,
            objective: Some(v),
            labels: BTreeMap::new(),
            metrics: BTreeMap::new(),
        });
    }
    problem.regret(best)
}

/// A uniform double without a step.
fn double(name: &str, min: f64, max: f64) -> vernier_core::Parameter {
    let uniform = vernier_core::Distribution::Uniform;
    crate::test_params::double(name, (min, max), None, uniform)
}

/// A uniform integer without a step.
fn int(name: &str, min: i64, max: i64) -> vernier_core::Parameter {
    let uniform = vernier_core::Distribution::Uniform;
    crate::test_params::int(name, (min, max), None, uniform)
}

fn mixed_space() -> SearchSpace {
    use crate::test_params::{categorical, discrete, double, int};
    use vernier_core::Distribution::{LogNormal, LogUniform, Normal};
    SearchSpace::new(vec![
        double("lr", (1e-4, 0.1), None, LogUniform),
        int("layers", (1, 9), Some(2), Normal),
        double("momentum", (0.5, 0.95), Some(0.05), LogNormal),
        categorical("opt", &["sgd", "adam", "rmsprop"]),
        discrete("batch", &["16", "32", "64"]),
    ])
    .unwrap()
}

/// A smooth loss on the mixed space, best near lr=0.01, layers=5, momentum=0.9, adam, 32.
fn mixed_loss(a: &Assignment) -> f64 {
    let lr = a.get("lr").and_then(|v| v.as_f64()).unwrap();
    let layers = a.get("layers").and_then(|v| v.as_f64()).unwrap();
    let m = a.get("momentum").and_then(|v| v.as_f64()).unwrap();
    let opt = a.get("opt").unwrap().to_string();
    let batch = a.get("batch").and_then(|v| v.as_f64()).unwrap();
    (lr.log10() + 2.0).powi(2)
        + 0.1 * (layers - 5.0).powi(2)
        + 4.0 * (m - 0.9).powi(2)
        + if opt == "adam" { 0.0 } else { 1.0 }
        + 0.5 * (batch.log2() - 5.0).abs()
}

fn record(name: String, a: Assignment, state: TrialState, objective: Option<f64>) -> TrialRecord {
    TrialRecord {
        name,
        assignment: a,
        state,
        objective,
        labels: BTreeMap::new(),
        metrics: BTreeMap::new(),
    }
}

/// `n` finished random trials of `loss` on `space`.
fn history_of(
    space: &SearchSpace,
    n: usize,
    seed: u64,
    loss: impl Fn(&Assignment) -> f64,
) -> Vec<TrialRecord> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|i| {
            let a = sample_assignment(space, &mut rng);
            let v = loss(&a);
            record(format!("t{i}"), a, TrialState::Succeeded, Some(v))
        })
        .collect()
}

fn request<'a>(
    space: &'a SearchSpace,
    objective: &'a Objective,
    trials: &'a [TrialRecord],
    count: usize,
    seed: u64,
) -> SuggestRequest<'a> {
    SuggestRequest {
        space,
        objective,
        trials,
        count,
        seed,
        state: None,
    }
}

fn build_default() -> Box<dyn Suggester> {
    let space = mixed_space();
    let o = Objective::new("loss", Direction::Minimize);
    build(NAME, &[], &space, &o).unwrap()
}

#[test]
fn seeded_proposals_are_exact() {
    let space = mixed_space();
    let o = Objective::new("loss", Direction::Minimize);
    let trials = history_of(&space, 12, 3, mixed_loss);
    let s = build_default()
        .suggest(&request(&space, &o, &trials, 2, 42))
        .unwrap();
    // The continuous value is compared to 11 significant digits: the batched predictions use
    // a matrix product whose kernel (FMA or not) is chosen by the CPU at run time.
    let got: Vec<String> = s
        .proposals
        .iter()
        .map(|p| {
            p.assignment
                .iter()
                .map(|(n, v)| match v {
                    vernier_core::ParamValue::Double(x) if n == "lr" => format!("{n}={x:.10e}"),
                    _ => format!("{n}={v}"),
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .collect();
    assert_eq!(
        got,
        vec![
            "lr=1.6355405995e-2, layers=7, momentum=0.95, opt=rmsprop, batch=32",
            "lr=1.4637223786e-2, layers=5, momentum=0.9, opt=adam, batch=32",
        ]
    );
}

#[test]
fn startup_trials_come_from_the_prior() {
    let space = mixed_space();
    let o = Objective::new("loss", Direction::Minimize);
    let random = |trials: &[TrialRecord]| {
        RandomSearch::new()
            .suggest(&request(&space, &o, trials, 3, 9))
            .unwrap()
    };
    let trials = history_of(&space, 4, 3, mixed_loss);
    let gp = build_default()
        .suggest(&request(&space, &o, &trials, 3, 9))
        .unwrap();
    assert_eq!(gp, random(&trials));
    let trials = history_of(&space, 9, 3, mixed_loss);
    for estimator in ["RF", "ET", "GBRT"] {
        let settings = crate::test_params::pairs(&[("base_estimator", estimator)]);
        let trees = build(NAME, &settings, &space, &o).unwrap();
        let got = trees.suggest(&request(&space, &o, &trials, 3, 9)).unwrap();
        assert_eq!(got, random(&trials), "{estimator}");
    }
}

#[test]
fn batch_of_four_is_distinct_and_spread() {
    let space = Problem::by_name("branin").unwrap().space();
    let p = Problem::by_name("branin").unwrap();
    let o = Objective::new("loss", Direction::Minimize);
    let mut trials = history_of(&space, 12, 5, |a| p.eval_assignment(a));
    // A running trial counts as taken and as a pending point.
    let running = trials[3].assignment.clone();
    trials.push(record(
        "r".into(),
        sample_assignment(&space, &mut ChaCha8Rng::seed_from_u64(77)),
        TrialState::Running,
        None,
    ));
    let s = build_default_for(&space)
        .suggest(&request(&space, &o, &trials, 4, 1))
        .unwrap();
    assert_eq!(s.proposals.len(), 4);
    let keys: HashSet<String> = s.proposals.iter().map(|p| p.assignment.key()).collect();
    assert_eq!(keys.len(), 4);
    for t in &trials {
        assert!(!keys.contains(&t.assignment.key()));
    }
    assert!(!keys.contains(&running.key()));
    // Kriging believer spreads the batch: no two proposals on top of each other.
    let xs: Vec<Vec<f64>> = s
        .proposals
        .iter()
        .map(|p| crate::encode::assignment_to_unit(&space, &p.assignment))
        .collect();
    for i in 0..4 {
        for j in i + 1..4 {
            let dist: f64 = xs[i]
                .iter()
                .zip(&xs[j])
                .map(|(a, b)| (a - b).powi(2))
                .sum::<f64>()
                .sqrt();
            assert!(dist > 1e-3, "{i} {j} {dist}");
        }
    }
}

#[test]
fn only_the_latest_running_trials_are_believed() {
    let p = Problem::by_name("branin").unwrap();
    let space = p.space();
    let o = Objective::new("loss", Direction::Minimize);
    let mut trials = history_of(&space, 12, 5, |a| p.eval_assignment(a));
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    for i in 0..MAX_PENDING_BELIEVERS + 10 {
        let a = sample_assignment(&space, &mut rng);
        trials.push(record(format!("r{i}"), a, TrialState::Running, None));
    }
    let settle = |from: usize, to: usize| {
        let mut t = trials.clone();
        for r in &mut t[from..to] {
            r.state = TrialState::Failed;
        }
        t
    };
    let gp = build_default_for(&space);
    let ask = |t: &[TrialRecord]| gp.suggest(&request(&space, &o, t, 2, 3)).unwrap();
    // The ten oldest running trials are only taken, as failed ones are...
    assert_eq!(ask(&trials), ask(&settle(12, 22)));
    // ...while the latest are believed: settling them changes the proposals.
    assert_ne!(ask(&trials), ask(&settle(12, trials.len())));
}

#[test]
fn a_batch_past_the_model_proposals_is_drawn_from_the_priors() {
    let p = Problem::by_name("branin").unwrap();
    let space = p.space();
    let o = Objective::new("loss", Direction::Minimize);
    let trials = history_of(&space, 12, 5, |a| p.eval_assignment(a));
    let gp = build_default_for(&space);
    let count = MAX_MODEL_PROPOSALS + 16;
    let big = gp.suggest(&request(&space, &o, &trials, count, 4)).unwrap();
    assert_eq!(big.proposals.len(), count);
    let keys: HashSet<String> = big.proposals.iter().map(|p| p.assignment.key()).collect();
    assert_eq!(keys.len(), count);
    let model = gp
        .suggest(&request(&space, &o, &trials, MAX_MODEL_PROPOSALS, 4))
        .unwrap();
    assert_eq!(big.proposals[..MAX_MODEL_PROPOSALS], model.proposals[..]);
    for prop in &big.proposals[MAX_MODEL_PROPOSALS..] {
        assert!(space.check(&prop.assignment).is_ok(), "{}", prop.assignment);
    }
}

#[test]
fn a_finite_batch_past_the_model_proposals_still_runs_out() {
    let space = SearchSpace::new(vec![int("n", 1, 100)]).unwrap();
    let o = Objective::new("loss", Direction::Minimize);
    let trials = history_of(&space, 10, 2, |a| match a.get("n") {
        Some(vernier_core::ParamValue::Int(v)) => (*v as f64 - 40.0).abs(),
        _ => unreachable!(),
    });
    let gp = GpOptimizer::with(2, AcqFunc::Hedge);
    let s = gp.suggest(&request(&space, &o, &trials, 200, 0)).unwrap();
    let keys: HashSet<String> = s.proposals.iter().map(|p| p.assignment.key()).collect();
    let seen: HashSet<String> = trials.iter().map(|t| t.assignment.key()).collect();
    assert_eq!(keys.len() + seen.len(), 100);
    assert!(keys.is_disjoint(&seen));
    assert!(s.exhausted);
}

#[test]
fn scoring_an_enumerated_space_shrinks_with_the_model() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    assert_eq!(finite_sample(4096, 250, &mut rng).len(), 4096);
    assert_eq!(finite_sample(4096, 500, &mut rng).len(), 1024);
    assert_eq!(finite_sample(4096, 1128, &mut rng).len(), 256);
    assert_eq!(finite_sample(100, 1128, &mut rng).len(), 100);
    let picked = finite_sample(4096, 1000, &mut rng);
    let distinct: HashSet<usize> = picked.iter().copied().collect();
    assert_eq!(distinct.len(), picked.len());
    assert!(picked.iter().all(|i| *i < 4096));
}

fn build_default_for(space: &SearchSpace) -> Box<dyn Suggester> {
    let o = Objective::new("loss", Direction::Minimize);
    build(NAME, &[], space, &o).unwrap()
}

#[test]
fn maximize_and_minimize_go_opposite_ways() {
    let space = SearchSpace::new(vec![double("x", 0.0, 1.0)]).unwrap();
    let f = |a: &Assignment| {
        let x = a.get("x").and_then(|v| v.as_f64()).unwrap();
        (x - 0.3).powi(2)
    };
    let trials = history_of(&space, 12, 11, f);
    let x_of = |s: &Suggestions| {
        s.proposals[0]
            .assignment
            .get("x")
            .and_then(|v| v.as_f64())
            .unwrap()
    };
    let ei = GpOptimizer::with(10, AcqFunc::Single(Acq::Ei));
    let min = Objective::new("loss", Direction::Minimize);
    let s = ei.suggest(&request(&space, &min, &trials, 1, 2)).unwrap();
    assert!((x_of(&s) - 0.3).abs() < 0.05, "{}", x_of(&s));
    let max = Objective::new("loss", Direction::Maximize);
    let s = ei.suggest(&request(&space, &max, &trials, 1, 2)).unwrap();
    assert!(x_of(&s) > 0.9, "{}", x_of(&s));
}

#[test]
fn failed_and_metricless_trials_are_ignored() {
    let space = mixed_space();
    let o = Objective::new("loss", Direction::Minimize);
    let trials = history_of(&space, 12, 3, mixed_loss);
    let mut noisy = trials.clone();
    let mut rng = ChaCha8Rng::seed_from_u64(99);
    noisy.push(record(
        "f".into(),
        sample_assignment(&space, &mut rng),
        TrialState::Failed,
        Some(-1e9),
    ));
    noisy.push(record(
        "m".into(),
        sample_assignment(&space, &mut rng),
        TrialState::Succeeded,
        None,
    ));
    noisy.push(record(
        "n".into(),
        sample_assignment(&space, &mut rng),
        TrialState::Succeeded,
        Some(f64::NAN),
    ));
    let gp = build_default();
    let a = gp.suggest(&request(&space, &o, &trials, 1, 4)).unwrap();
    let b = gp.suggest(&request(&space, &o, &noisy, 1, 4)).unwrap();
    assert_eq!(a, b);
}

#[test]
fn categorical_choices_are_one_hot_and_learned() {
    let space = mixed_space();
    let features = Features::new(&space);
    // lr, layers, momentum, 3 one-hot, batch.
    assert_eq!(features.dim(), 7);
    let a = sample_assignment(&space, &mut ChaCha8Rng::seed_from_u64(1));
    let x = features.encode(&space, &a);
    assert_eq!(x[3..6].iter().sum::<f64>(), 1.0);
    assert_eq!(features.decode(&space, &x), a);
    assert_eq!(
        features.continuous_mask(),
        vec![true, true, true, false, false, false, true]
    );

    // After a few model-based rounds the best category dominates the proposals.
    let o = Objective::new("loss", Direction::Minimize);
    let mut trials = history_of(&space, 10, 8, mixed_loss);
    let gp = GpOptimizer::with(10, AcqFunc::Single(Acq::Ei));
    for round in 0..6 {
        let s = gp.suggest(&request(&space, &o, &trials, 1, round)).unwrap();
        let a = s.proposals[0].assignment.clone();
        let v = mixed_loss(&a);
        trials.push(record(
            format!("g{round}"),
            a,
            TrialState::Succeeded,
            Some(v),
        ));
    }
    let adam = trials[10..]
        .iter()
        .filter(|t| t.assignment.get("opt").unwrap().to_string() == "adam")
        .count();
    assert!(adam >= 4, "{adam}");
}

#[test]
fn finite_space_runs_out() {
    let space = SearchSpace::new(vec![int("n", 1, 5)]).unwrap();
    let o = Objective::new("loss", Direction::Minimize);
    let trials: Vec<TrialRecord> = [1, 2, 4]
        .iter()
        .map(|v| {
            record(
                format!("t{v}"),
                Assignment(vec![("n".into(), vernier_core::ParamValue::Int(*v))]),
                TrialState::Succeeded,
                Some(f64::from(*v as i32 - 3).powi(2)),
            )
        })
        .collect();
    let gp = GpOptimizer::with(2, AcqFunc::Hedge);
    let s = gp.suggest(&request(&space, &o, &trials, 5, 0)).unwrap();
    let mut got = texts(&s);
    got.sort();
    assert_eq!(got, vec!["n=3", "n=5"]);
    assert!(s.exhausted);
}

#[test]
fn settings_are_validated() {
    let space = mixed_space();
    let o = Objective::new("loss", Direction::Minimize);
    let pairs = crate::test_params::pairs;
    let ok = pairs(&[
        ("base_estimator", "GP"),
        ("n_initial_points", "5"),
        ("acq_func", "EIps"),
        ("acq_optimizer", "sampling"),
        ("random_state", "3"),
    ]);
    assert!(build(NAME, &ok, &space, &o).is_ok());
    for f in ["gp_hedge", "LCB", "UCB", "EI", "PI", "PIps"] {
        assert!(
            build(NAME, &pairs(&[("acq_func", f)]), &space, &o).is_ok(),
            "{f}"
        );
    }
    for opt in ["auto", "lbfgs"] {
        assert!(build(NAME, &pairs(&[("acq_optimizer", opt)]), &space, &o).is_ok());
    }
    let err = |p: &[(&str, &str)]| build(NAME, &pairs(p), &space, &o).unwrap_err().to_string();
    let e = err(&[("kappa", "2")]);
    assert!(
        e.contains("unknown setting \"kappa\" for algorithm bayesianoptimization"),
        "{e}"
    );
    for estimator in ["GP", "RF", "et", "GBRT"] {
        let settings = pairs(&[("base_estimator", estimator), ("acq_optimizer", "auto")]);
        assert!(build(NAME, &settings, &space, &o).is_ok(), "{estimator}");
    }
    let e = err(&[("base_estimator", "SVR")]);
    assert!(
        e.contains("base_estimator") && e.contains("\"SVR\"") && e.contains("GP, RF, ET, GBRT"),
        "{e}"
    );
    let e = err(&[("base_estimator", "RF"), ("acq_optimizer", "lbfgs")]);
    assert!(
        e.contains("acq_optimizer") && e.contains("\"lbfgs\"") && e.contains("hint:"),
        "{e}"
    );
    let e = err(&[("n_initial_points", "-1")]);
    assert!(
        e.contains("n_initial_points") && e.contains("\"-1\"") && e.contains("out of range"),
        "{e}"
    );
    let e = err(&[("n_initial_points", "ten")]);
    assert!(
        e.contains("n_initial_points") && e.contains("\"ten\"") && e.contains("does not parse"),
        "{e}"
    );
    let e = err(&[("acq_func", "MES")]);
    assert!(e.contains("acq_func") && e.contains("\"MES\""), "{e}");
    let e = err(&[("acq_optimizer", "adam")]);
    assert!(e.contains("acq_optimizer") && e.contains("\"adam\""), "{e}");
    let e = err(&[("random_state", "-2")]);
    assert!(e.contains("random_state") && e.contains("\"-2\""), "{e}");
}

#[test]
fn posterior_interpolates_with_tiny_noise() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let d = 2;
    let n = 15;
    let x: Vec<f64> = (0..n * d).map(|_| rng.random::<f64>()).collect();
    let y: Vec<f64> = (0..n)
        .map(|i| (3.0 * x[2 * i]).sin() + x[2 * i + 1])
        .collect();
    let y = standardize(&y);
    let hyper = model::Hyper {
        inv_ls2: vec![4.0, 4.0],
        signal: 1.0,
        noise: model::MIN_NOISE,
    };
    let post = Posterior::new(x.clone(), d, &y, hyper).unwrap();
    for i in 0..n {
        let (mu, sd) = post.predict(&x[i * d..(i + 1) * d]);
        assert!((mu - y[i]).abs() < 1e-3, "{i}: {mu} vs {}", y[i]);
        assert!(sd < 2e-3, "{i}: {sd}");
    }
    // Far from the data the prior comes back.
    let (_, sd) = post.predict(&[5.0, 5.0]);
    assert!((sd - 1.0).abs() < 1e-6);
}

#[test]
fn fitted_model_tracks_a_smooth_function() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let d = 2;
    let n = 30;
    let f = |a: f64, b: f64| (4.0 * a).sin() + 0.1 * b;
    let x: Vec<f64> = (0..n * d).map(|_| rng.random::<f64>()).collect();
    let y: Vec<f64> = (0..n).map(|i| f(x[2 * i], x[2 * i + 1])).collect();
    let hyper = fit_hyper(&x, n, d, &standardize(&y), &mut rng);
    // The irrelevant-ish second coordinate gets the longer length scale.
    assert!(hyper.inv_ls2[0] > hyper.inv_ls2[1], "{hyper:?}");
    assert!(hyper.noise < 1e-2, "{hyper:?}");
}

#[test]
fn appending_points_matches_a_full_refit() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let d = 3;
    let n = 20;
    // As many appended points as a batch may believe, so rounding has room to build up.
    let extra = MAX_MODEL_PROPOSALS;
    let x: Vec<f64> = (0..(n + extra) * d).map(|_| rng.random::<f64>()).collect();
    let y: Vec<f64> = (0..n + extra).map(|_| rng.random::<f64>() - 0.5).collect();
    let hyper = model::Hyper {
        inv_ls2: vec![3.0, 5.0, 2.0],
        signal: 1.3,
        noise: 1e-4,
    };
    let mut grown = Posterior::new(x[..n * d].to_vec(), d, &y[..n], hyper.clone()).unwrap();
    for i in n..n + extra {
        assert!(grown.append(&x[i * d..(i + 1) * d], y[i]), "point {i}");
    }
    let full = Posterior::new(x.clone(), d, &y, hyper).unwrap();
    assert_eq!(grown.len(), n + extra);
    for _ in 0..20 {
        let at: Vec<f64> = (0..d).map(|_| rng.random::<f64>()).collect();
        let (m1, s1) = grown.predict(&at);
        let (m2, s2) = full.predict(&at);
        assert!(
            (m1 - m2).abs() < 1e-7 && (s1 - s2).abs() < 1e-7,
            "{m1} {m2} {s1} {s2}"
        );
    }
}

#[test]
fn appending_a_duplicate_without_noise_is_refused() {
    let x = vec![0.1, 0.2, 0.7, 0.9];
    let hyper = model::Hyper {
        inv_ls2: vec![1.0, 1.0],
        signal: 1.0,
        noise: 0.0,
    };
    let mut post = Posterior::new(x, 2, &[0.3, -0.3], hyper).unwrap();
    let before = post.predict(&[0.4, 0.4]);
    assert!(!post.append(&[0.1, 0.2], 0.3));
    assert_eq!(post.len(), 2);
    assert_eq!(post.predict(&[0.4, 0.4]), before);
}

#[test]
fn lower_inverse_inverts() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let n = 9;
    let mut l = nalgebra::DMatrix::<f64>::zeros(n, n);
    for j in 0..n {
        for i in 0..n {
            l[(i, j)] = if i == j {
                1.0 + rng.random::<f64>()
            } else {
                rng.random::<f64>() - 0.5
            };
        }
    }
    let inv = model::lower_inverse(&l);
    let prod = l.lower_triangle() * &inv;
    assert!((prod - nalgebra::DMatrix::<f64>::identity(n, n)).amax() < 1e-12);
    assert_eq!(inv.upper_triangle().sum() - inv.diagonal().sum(), 0.0);
}

#[test]
fn predictive_gradients_match_finite_differences() {
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    let d = 3;
    let n = 10;
    let x: Vec<f64> = (0..n * d).map(|_| rng.random::<f64>()).collect();
    let y: Vec<f64> = (0..n).map(|i| x[3 * i] - x[3 * i + 2].powi(2)).collect();
    let hyper = model::Hyper {
        inv_ls2: vec![3.0, 1.0, 6.0],
        signal: 1.3,
        noise: 1e-4,
    };
    let post = Posterior::new(x, d, &standardize(&y), hyper).unwrap();
    let p = [0.3, 0.6, 0.45];
    let (_, _, dmu, dsd) = post.predict_grad(&p);
    for t in 0..d {
        let h = 1e-6;
        let mut a = p;
        let mut b = p;
        a[t] += h;
        b[t] -= h;
        let (ma, sa) = post.predict(&a);
        let (mb, sb) = post.predict(&b);
        assert!(((ma - mb) / (2.0 * h) - dmu[t]).abs() < 1e-5, "mu {t}");
        assert!(((sa - sb) / (2.0 * h) - dsd[t]).abs() < 1e-5, "sd {t}");
    }
}

#[test]
fn warp_only_touches_heavy_tails() {
    let plain = vec![1.0, 2.0, 3.0, 4.0];
    assert_eq!(warp(&plain), plain);
    let heavy = vec![0.0, 1.0, 2.0, 1000.0];
    let w = warp(&heavy);
    assert_eq!(w[0], 0.0);
    assert!(w.windows(2).all(|p| p[0] < p[1]));
    assert!(w[3] < 7.0);
}

#[test]
fn beats_random_search_on_branin() {
    let p = Problem::by_name("branin").unwrap();
    let gp = GpOptimizer::with(8, AcqFunc::Single(Acq::Ei));
    for seed in 0..2 {
        let space = p.space();
        let mut random_best = f64::INFINITY;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        for _ in 0..25 {
            random_best = random_best.min(p.eval_assignment(&sample_assignment(&space, &mut rng)));
        }
        let gp_regret = run_problem(&p, &gp, 25, seed);
        assert!(gp_regret < p.regret(random_best), "{seed}: {gp_regret}");
        assert!(gp_regret < 0.05, "{seed}: {gp_regret}");
    }
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]
        #[test]
        fn proposals_stay_in_space_distinct_and_repeat_with_the_seed(
            seed in any::<u64>(),
            count in 1usize..4,
            maximize in any::<bool>(),
            running in any::<bool>(),
            estimator in prop::sample::select(vec!["GP", "RF", "ET", "GBRT"]),
        ) {
            let space = mixed_space();
            let dir = if maximize { Direction::Maximize } else { Direction::Minimize };
            let o = Objective::new("loss", dir);
            let mut trials = history_of(&space, 11, seed, mixed_loss);
            if running {
                trials[0].state = TrialState::Running;
                trials[0].objective = None;
            }
            let settings = crate::test_params::pairs(&[("base_estimator", estimator)]);
            let opt = build(NAME, &settings, &space, &o).unwrap();
            let a = opt.suggest(&request(&space, &o, &trials, count, seed)).unwrap();
            let b = opt.suggest(&request(&space, &o, &trials, count, seed)).unwrap();
            prop_assert_eq!(&a, &b);
            prop_assert_eq!(a.proposals.len(), count);
            let mut keys: HashSet<String> = trials.iter().map(|t| t.assignment.key()).collect();
            for p in &a.proposals {
                prop_assert!(space.check(&p.assignment).is_ok(), "{}", p.assignment);
                prop_assert!(keys.insert(p.assignment.key()));
            }
        }
    }
}

/// ZDT1 in 4-D, its space, and an objective minimising both `f1` and `f2`.
fn zdt1_minimising_both() -> (vernier_testfunctions::MultiProblem, SearchSpace, Objective) {
    let p = vernier_testfunctions::MultiProblem::by_name("zdt1-4").unwrap();
    let space = p.space();
    let mut o = Objective::new("f1", Direction::Minimize);
    o.objectives.push(vernier_core::ObjectiveTerm {
        metric: "f2".into(),
        direction: Direction::Minimize,
        goal: None,
    });
    (p, space, o)
}

#[test]
fn parego_improves_on_random_search_for_two_objectives() {
    use std::collections::BTreeMap;
    use vernier_core::pareto::hypervolume;
    use vernier_core::{TrialRecord, TrialState};
    let (p, space, o) = zdt1_minimising_both();
    let run = |s: &dyn Suggester| {
        let mut trials: Vec<TrialRecord> = Vec::new();
        for t in 0..30u64 {
            let req = SuggestRequest {
                space: &space,
                objective: &o,
                trials: &trials,
                count: 1,
                seed: 100 + t,
                state: None,
            };
            let a = s.suggest(&req).unwrap().proposals.remove(0).assignment;
            let f = p.eval_assignment(&a);
            trials.push(TrialRecord {
                name: format!("t{t}"),
                assignment: a,
                state: TrialState::Succeeded,
                objective: Some(f[0]),
                labels: Default::default(),
                metrics: BTreeMap::from([("f1".into(), f[0]), ("f2".into(), f[1])]),
            });
        }
        let pts: Vec<Vec<f64>> = trials.iter().filter_map(|t| t.usable_losses(&o)).collect();
        (hypervolume(&pts, &p.reference).unwrap(), trials)
    };
    let (hv_gp, trials) = run(&GpOptimizer::with(10, AcqFunc::Single(Acq::Ei)));
    let (hv_random, _) = run(&crate::RandomSearch::new());
    assert!(hv_gp > hv_random, "parego {hv_gp} vs random {hv_random}");
    // Seeded: the run is a function of its seeds.
    let (again, trials2) = run(&GpOptimizer::with(10, AcqFunc::Single(Acq::Ei)));
    assert_eq!((hv_gp, &trials), (again, &trials2));
}

#[test]
fn a_parego_batch_past_the_model_proposals_is_drawn_from_the_priors() {
    let (p, space, o) = zdt1_minimising_both();
    let mut trials = history_of(&space, 12, 6, |a| p.eval_assignment(a)[0]);
    for t in &mut trials {
        let f = p.eval_assignment(&t.assignment);
        t.metrics = BTreeMap::from([("f1".into(), f[0]), ("f2".into(), f[1])]);
    }
    let gp = GpOptimizer::with(10, AcqFunc::Single(Acq::Ei));
    let count = MAX_MODEL_PROPOSALS + 10;
    let s = gp.suggest(&request(&space, &o, &trials, count, 2)).unwrap();
    let keys: HashSet<String> = s.proposals.iter().map(|p| p.assignment.key()).collect();
    assert_eq!(keys.len(), count);
    for prop in &s.proposals {
        assert!(space.check(&prop.assignment).is_ok(), "{}", prop.assignment);
    }
}

/// Loss falls with x while the constraint demands `x <= bound`; returns the batch's mean x.
fn constrained_mean_proposal(bound: Option<f64>, xs: &[f64]) -> f64 {
    use vernier_core::{Constraint, ConstraintOp, ParamValue};
    let space = SearchSpace::new(vec![vernier_core::Parameter {
        name: "x".into(),
        domain: vernier_core::Domain::Double {
            min: 0.0,
            max: 1.0,
            step: None,
        },
        distribution: vernier_core::Distribution::Uniform,
    }])
    .unwrap();
    let trials: Vec<TrialRecord> = xs
        .iter()
        .enumerate()
        .map(|(i, &x)| TrialRecord {
            name: format!("t{i}"),
            assignment: Assignment(vec![("x".into(), ParamValue::Double(x))]),
            state: TrialState::Succeeded,
            objective: Some(-x),
            labels: Default::default(),
            metrics: BTreeMap::from([("loss".into(), -x), ("c".into(), x)]),
        })
        .collect();
    let mut o = Objective::new("loss", Direction::Minimize);
    if let Some(bound) = bound {
        o.constraints.push(Constraint {
            metric: "c".into(),
            op: ConstraintOp::Le,
            bound,
        });
    }
    let req = SuggestRequest {
        space: &space,
        objective: &o,
        trials: &trials,
        count: 4,
        seed: 3,
        state: None,
    };
    let out = GpOptimizer::with(5, AcqFunc::Hedge).suggest(&req).unwrap();
    let v: Vec<f64> = out
        .proposals
        .iter()
        .map(|p| p.assignment.get("x").and_then(|v| v.as_f64()).unwrap())
        .collect();
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn constrained_ei_stays_in_the_feasible_region() {
    let xs: Vec<f64> = (0..12).map(|i| (i as f64 + 0.5) / 12.0).collect();
    let free = constrained_mean_proposal(None, &xs);
    let bounded = constrained_mean_proposal(Some(0.5), &xs);
    assert!(free > 0.8, "{free}");
    assert!(bounded < 0.55 && bounded > 0.3, "{bounded}");
}

#[test]
fn without_a_feasible_trial_feasibility_leads() {
    // Every trial so far breaks x <= 0.2: proposals move towards small x.
    let xs: Vec<f64> = (0..8).map(|i| 0.3 + 0.7 * i as f64 / 7.0).collect();
    let bounded = constrained_mean_proposal(Some(0.2), &xs);
    assert!(bounded < 0.3, "{bounded}");
}

#[test]
fn history_beyond_the_model_cap_keeps_the_best_and_a_sample_in_order() {
    let a = Assignment(vec![]);
    let n = MODEL_MAX_POINTS * 10;
    let observed: Vec<(&Assignment, f64)> = (0..n).map(|i| (&a, (n - i) as f64)).collect();
    let violations = vec![0.0; n];
    let (kept, v) = cap_history(observed.clone(), violations.clone(), 9);
    assert_eq!((kept.len(), v.len()), (MODEL_MAX_POINTS, MODEL_MAX_POINTS));
    // The best quarter (lowest losses, created last) is all there, in creation order.
    let losses: Vec<f64> = kept.iter().map(|(_, l)| *l).collect();
    assert!(losses.windows(2).all(|w| w[0] > w[1]));
    let best: Vec<f64> = (1..=MODEL_MAX_POINTS / 4).map(|l| l as f64).collect();
    assert!(best.iter().all(|b| losses.contains(b)));
    let (small, _) = cap_history(observed[..10].to_vec(), violations[..10].to_vec(), 9);
    assert_eq!(small.len(), 10);
}

/// Objectives near the ends of f64 (their squares overflow) still give a proposal inside the
/// space, as the same losses scaled down would.
#[test]
fn huge_objectives_still_give_a_proposal() {
    let space = mixed_space();
    let o = Objective::new("loss", Direction::Minimize);
    for scale in [1e154, 1e200, 1e300, -1e300] {
        let trials = history_of(&space, 12, 3, |a| scale * mixed_loss(a));
        let gp = build_default();
        let s = gp.suggest(&request(&space, &o, &trials, 1, 4)).unwrap();
        assert_eq!(s.proposals.len(), 1, "{scale}");
        space.check(&s.proposals[0].assignment).unwrap();
    }
}

/// `bayesianoptimization` with the tree surrogates of `base_estimator`.
mod trees {
    use super::*;

    fn build_with(estimator: &str, space: &SearchSpace, o: &Objective) -> Box<dyn Suggester> {
        let settings = crate::test_params::pairs(&[("base_estimator", estimator)]);
        build(NAME, &settings, space, o).unwrap()
    }

    #[test]
    fn seeded_proposals_are_exact() {
        let space = mixed_space();
        let o = Objective::new("loss", Direction::Minimize);
        let trials = history_of(&space, 12, 3, mixed_loss);
        let got: Vec<Vec<String>> = ["RF", "ET", "GBRT"]
            .iter()
            .map(|e| {
                let s = build_with(e, &space, &o);
                texts(&s.suggest(&request(&space, &o, &trials, 2, 42)).unwrap())
            })
            .collect();
        let rows = [
            [
                "lr=0.005523222795196098, layers=5, momentum=0.55, opt=rmsprop, batch=64",
                "lr=0.005329561007938564, layers=5, momentum=0.55, opt=rmsprop, batch=64",
            ],
            [
                "lr=0.006945671564310847, layers=5, momentum=0.7, opt=sgd, batch=32",
                "lr=0.005702064513164914, layers=3, momentum=0.7, opt=sgd, batch=32",
            ],
            [
                "lr=0.00011116081182300261, layers=3, momentum=0.75, opt=rmsprop, batch=16",
                "lr=0.0001309290515843135, layers=3, momentum=0.75, opt=rmsprop, batch=16",
            ],
        ];
        assert_eq!(got, rows.map(|r| r.map(String::from).to_vec()).to_vec());
    }

    #[test]
    fn every_surrogate_beats_random_search_on_branin() {
        let p = Problem::by_name("branin").unwrap();
        let space = p.space();
        let o = Objective::new("loss", Direction::Minimize);
        for estimator in ["RF", "ET", "GBRT"] {
            let opt = build_with(estimator, &space, &o);
            let (mut ours, mut random) = (Vec::new(), Vec::new());
            for seed in 0..5 {
                ours.push(run_problem(&p, opt.as_ref(), 30, seed));
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                let best = (0..30)
                    .map(|_| p.eval_assignment(&sample_assignment(&space, &mut rng)))
                    .fold(f64::INFINITY, f64::min);
                random.push(p.regret(best));
            }
            let (ours, random) = (median(&mut ours), median(&mut random));
            assert!(ours < random, "{estimator}: {ours} against random {random}");
        }
    }

    fn median(v: &mut [f64]) -> f64 {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }

    #[test]
    fn a_history_past_the_model_cap_is_cut_as_for_the_gp() {
        let space = mixed_space();
        let o = Objective::new("loss", Direction::Minimize);
        let trials = history_of(&space, MODEL_MAX_POINTS + 100, 5, mixed_loss);
        let observed = history::observed(&o, &trials);
        let (kept, _) = cap_history(observed, Vec::new(), 11);
        let kept: Vec<TrialRecord> = kept
            .into_iter()
            .map(|(a, _)| {
                let t = trials.iter().find(|t| &t.assignment == a).unwrap();
                t.clone()
            })
            .collect();
        assert_eq!(kept.len(), MODEL_MAX_POINTS);
        let opt = build_with("GBRT", &space, &o);
        let all = opt.suggest(&request(&space, &o, &trials, 1, 11)).unwrap();
        let cut = opt.suggest(&request(&space, &o, &kept, 1, 11)).unwrap();
        assert_eq!(all, cut);
    }

    #[test]
    fn a_finite_space_is_tried_once_then_exhausted() {
        let space = SearchSpace::new(vec![int("n", 1, 6)]).unwrap();
        let o = Objective::new("loss", Direction::Minimize);
        let loss = |a: &Assignment| (a.get("n").and_then(|v| v.as_f64()).unwrap() - 4.0).abs();
        let trials = history_of(&space, 0, 0, loss);
        let opt = build_with("ET", &space, &o);
        let mut history = trials;
        let mut seen = HashSet::new();
        for t in 0..6 {
            let s = opt.suggest(&request(&space, &o, &history, 1, t)).unwrap();
            let a = s.proposals[0].assignment.clone();
            assert!(seen.insert(a.key()), "{a} proposed twice");
            let v = loss(&a);
            history.push(record(format!("t{t}"), a, TrialState::Succeeded, Some(v)));
        }
        let s = opt.suggest(&request(&space, &o, &history, 1, 7)).unwrap();
        assert!(s.proposals.is_empty() && s.exhausted);
    }

    #[test]
    fn several_objectives_and_constraints_are_refused_naming_the_estimator() {
        let space = mixed_space();
        let (_, _, two) = zdt1_minimising_both();
        let mut constrained = Objective::new("loss", Direction::Minimize);
        constrained.constraints.push(vernier_core::Constraint {
            metric: "mem".into(),
            op: vernier_core::ConstraintOp::Le,
            bound: 4.0,
        });
        for (o, what) in [(two, "several objectives"), (constrained, "constraints")] {
            let settings = crate::test_params::pairs(&[("base_estimator", "GBRT")]);
            let e = build(NAME, &settings, &space, &o).unwrap_err().to_string();
            assert!(
                e.contains("base_estimator") && e.contains("\"GBRT\"") && e.contains(what),
                "{e}"
            );
            assert!(e.contains("hint: use base_estimator GP"), "{e}");
        }
    }
}

/// A noisy objective whose optimum is a corner of the box: the local search ends a hair inside
/// the faces, and those points must not be proposed beside a trial at the corner.
#[test]
fn a_noisy_corner_optimum_gets_no_near_duplicates() {
    let space = SearchSpace::new(vec![double("x", -3.0, 3.0), double("y", -3.0, 3.0)]).unwrap();
    let o = Objective::new("score", Direction::Maximize);
    let opt = build(NAME, &[], &space, &o).unwrap();
    let mut noise = ChaCha8Rng::seed_from_u64(7);
    let mut history: Vec<TrialRecord> = Vec::new();
    for t in 0..30 {
        let s = opt
            .suggest(&request(&space, &o, &history, 1, 2 + t))
            .unwrap();
        let a = s.proposals[0].assignment.clone();
        let (x, y) = (
            a.get("x").and_then(|v| v.as_f64()).unwrap(),
            a.get("y").and_then(|v| v.as_f64()).unwrap(),
        );
        let score = -x + y - 0.1 * x * x + 0.3 * (noise.random::<f64>() - 0.5) * 3.4;
        history.push(record(
            format!("t{t}"),
            a,
            TrialState::Succeeded,
            Some(score),
        ));
    }
    let points: Vec<(f64, f64)> = history
        .iter()
        .map(|t| {
            let v = |n: &str| t.assignment.get(n).and_then(|v| v.as_f64()).unwrap();
            (v("x"), v("y"))
        })
        .collect();
    for (i, p) in points.iter().enumerate() {
        for q in &points[..i] {
            let apart = (p.0 - q.0).abs().max((p.1 - q.1).abs());
            assert!(apart > 1e-8, "{p:?} is a hair from {q:?}: {points:?}");
        }
    }
}
