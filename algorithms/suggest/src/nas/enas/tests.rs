//! ENAS: the controller's gradient against finite differences, Katib's assignment texts, the
//! settings and `nasConfig` rules, replay after a restart, and that it learns.

use super::*;
use rand::RngExt;
use vernier_core::{NasOperation, NasParameter, NasParameterKind, TrialState};

fn shape() -> Shape {
    Shape {
        layers: 3,
        operations: 4,
        hidden: 5,
        temperature: Some(5.0),
        tanh_const: Some(2.25),
        skip_target: 0.4,
    }
}

fn loss(p: &Params, arch: &Arch, a: f64, b: f64) -> f64 {
    let t = p.forward::<ChaCha8Rng>(Choose::Forced(arch));
    a * t.neg_log_prob + b * t.skip_penalty
}

#[test]
fn gradient_matches_finite_differences() {
    for (seed, temperature, tanh_const) in [(1, Some(5.0), Some(2.25)), (2, None, None)] {
        let shape = Shape {
            temperature,
            tanh_const,
            ..shape()
        };
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut p = Params::init(shape, &mut rng);
        // Larger weights than Katib's init so every path carries a visible gradient.
        p.data
            .iter_mut()
            .for_each(|w| *w = rng.random::<f64>() - 0.5);
        let arch = p.forward(Choose::Sample(&mut rng)).arch;
        let arch = Arch {
            skips: vec![vec![], vec![true], vec![true, false]],
            ..arch
        };
        let (a, b) = (0.7, 0.3);
        let tape = p.forward::<ChaCha8Rng>(Choose::Forced(&arch));
        let grad = p.backward(&tape, a, b);
        let eps = 1e-6;
        let mut worst: f64 = 0.0;
        for (i, g) in grad.iter().enumerate() {
            let mut up = p.clone();
            up.data[i] += eps;
            let mut down = p.clone();
            down.data[i] -= eps;
            let numeric = (loss(&up, &arch, a, b) - loss(&down, &arch, a, b)) / (2.0 * eps);
            // Relative error, floored so round-off on near-zero entries (~1e-10) cannot count.
            let err = (numeric - g).abs() / (1e-4 + numeric.abs().max(g.abs()));
            worst = worst.max(err);
        }
        assert!(worst < 1e-4, "seed {seed}: worst relative error {worst}");
        assert!(grad.iter().any(|g| g.abs() > 1e-3));
    }
}

/// A seeded pass pinned to the bit: the finite-difference test above checks that the gradient
/// is right, this one that a rewrite of `forward` or `backward` keeps their arithmetic, and so
/// every seeded ENAS run, the same (a reordered sum passes the other but not this).
#[test]
fn a_seeded_pass_gives_the_same_numbers_to_the_bit() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let shape = Shape {
        layers: 4,
        hidden: 16,
        ..shape()
    };
    let mut p = Params::init(shape, &mut rng);
    p.data
        .iter_mut()
        .for_each(|w| *w = rng.random::<f64>() - 0.5);
    let sampled = p.forward(Choose::Sample(&mut rng));
    // Skips taken, so the skip input's averaging (over three inputs at the third layer) is on
    // the tape too.
    let arch = Arch {
        skips: vec![
            vec![],
            vec![true],
            vec![true, true],
            vec![true, false, true],
        ],
        ..sampled.arch.clone()
    };
    let tape = p.forward::<ChaCha8Rng>(Choose::Forced(&arch));
    let grad = p.backward(&tape, 0.7, 0.3);
    let sum: f64 = grad.iter().sum();
    let squares: f64 = grad.iter().map(|g| g * g).sum();
    // Every gradient entry's bits, folded (FNV-1a): one entry off by one bit changes it.
    let fnv = |h: u64, g: &f64| (h ^ g.to_bits()).wrapping_mul(0x0100_0000_01b3);
    let folded = grad.iter().fold(0xcbf2_9ce4_8422_2325, fnv);
    let got = [
        sampled.neg_log_prob,
        tape.neg_log_prob,
        tape.entropy,
        tape.skip_penalty,
        sum,
        squares,
        grad[0],
        grad[grad.len() - 1],
    ];
    let want = [
        9.476808912492833,
        9.830412847035275,
        3.4952742335788374,
        0.039997482495624216,
        2.2077367660034044,
        2.008023845137959,
        -0.01867123844175311,
        -0.027887398202171752,
    ];
    assert_eq!(got, want, "{:?}", sampled.arch);
    assert_eq!(folded, 1_999_853_224_817_822_413);
}

fn cpu_example() -> NasConfig {
    let cat = NasParameter::categorical;
    NasConfig {
        num_layers: 2,
        input_sizes: vec![32, 32, 3],
        output_sizes: vec![10],
        operations: vec![
            NasOperation {
                operation_type: "convolution".into(),
                parameters: vec![cat("filter_size", &["3", "5"]), cat("stride", &["1", "2"])],
            },
            NasOperation {
                operation_type: "reduction".into(),
                parameters: vec![
                    cat("reduction_type", &["max_pooling"]),
                    NasParameter {
                        name: "pool_size".into(),
                        kind: NasParameterKind::Int,
                        min: "2".into(),
                        max: "3".into(),
                        step: "1".into(),
                        list: vec![],
                    },
                ],
            },
        ],
    }
}

fn enas(nas: NasConfig, settings: &[(&str, &str)], direction: Direction) -> Enas {
    let owned: Vec<(String, String)> = settings
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    build(
        "enas",
        &owned,
        &SearchSpace::for_nas(nas),
        &Objective::new("Validation-Accuracy", direction),
    )
    .unwrap()
}

#[test]
fn assignments_are_katibs_texts() {
    let e = enas(cpu_example(), &[], Direction::Maximize);
    assert_eq!(e.candidates.len(), 6);
    assert_eq!(
        e.candidates[5].params[1],
        ("pool_size".into(), PyJson::Int(3))
    );
    let arch = Arch {
        ops: vec![4, 1],
        skips: vec![vec![], vec![true]],
    };
    let a = e.assignment(&arch).to_strings();
    assert_eq!(a[0], ("architecture".into(), "[[4], [1, 1]]".into()));
    assert_eq!(
        a[1].1,
        "{'num_layers': 2, 'input_sizes': [32, 32, 3], 'output_sizes': [10], 'embedding': \
         {'4': {'opt_id': 4, 'opt_type': 'reduction', 'opt_params': {'reduction_type': \
         'max_pooling', 'pool_size': 2}}, '1': {'opt_id': 1, 'opt_type': 'convolution', \
         'opt_params': {'filter_size': '3', 'stride': '2'}}}}"
    );
    assert_eq!(parse_architecture(&a[0].1, e.shape()), Some(arch));
    assert_eq!(parse_architecture("[[9], [1, 1]]", e.shape()), None);
    assert_eq!(parse_architecture("[[1]]", e.shape()), None);
}

#[test]
fn nas_rules_for_enas_name_the_field() {
    let mut nas = cpu_example();
    nas.input_sizes.clear();
    let space = SearchSpace::for_nas(nas);
    let o = Objective::new("acc", Direction::Maximize);
    let err = build("enas", &[], &space, &o).unwrap_err().to_string();
    assert!(
        err.starts_with("algorithm enas: spec.nasConfig.graphConfig.inputSizes is required"),
        "{err}"
    );
    let mut nas = cpu_example();
    nas.operations[1].parameters[1].step = "0".into();
    let err = build("enas", &[], &SearchSpace::for_nas(nas), &o)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("spec.nasConfig.operations[1].parameters[1].feasibleSpace"),
        "{err}"
    );
    // A layer count no network has is refused before the controller allocates for it.
    for (layers, refused) in [(1000, false), (1001, true), (i32::MAX, true)] {
        let mut nas = cpu_example();
        nas.num_layers = layers;
        let built = build("enas", &[], &SearchSpace::for_nas(nas), &o);
        assert_eq!(built.is_err(), refused, "{layers}");
        if let Err(e) = built {
            assert!(
                e.to_string()
                    .contains("spec.nasConfig.graphConfig.numLayers value"),
                "{e}"
            );
        }
    }
}

fn trial(i: usize, assignment: Assignment, value: f64) -> TrialRecord {
    TrialRecord {
        name: format!("t-{i}"),
        assignment,
        state: TrialState::Succeeded,
        objective: Some(value),
        labels: Default::default(),
        metrics: Default::default(),
    }
}

fn propose(e: &Enas, trials: &[TrialRecord], count: usize, seed: u64) -> Vec<Assignment> {
    let space = SearchSpace::for_nas(e.nas.clone());
    let o = Objective::new("Validation-Accuracy", Direction::Maximize);
    e.suggest(&SuggestRequest {
        space: &space,
        objective: &o,
        trials,
        count,
        seed,
        state: None,
    })
    .unwrap()
    .proposals
    .into_iter()
    .map(|p| p.assignment)
    .collect()
}

/// A synthetic task: operation 0 is best, higher ids worse; every skip helps a little.
fn synthetic_reward(e: &Enas, a: &Assignment) -> f64 {
    let arch = parse_architecture(&a.get("architecture").unwrap().to_string(), e.shape()).unwrap();
    let ops: f64 =
        arch.ops.iter().map(|&o| 1.0 - o as f64 / 5.0).sum::<f64>() / arch.ops.len() as f64;
    let skips: Vec<bool> = arch.skips.iter().flatten().copied().collect();
    let skip = skips.iter().filter(|b| **b).count() as f64 / skips.len().max(1) as f64;
    0.8 * ops + 0.2 * skip
}

/// Mean synthetic reward of each round's proposals, the controller learning between rounds.
pub(crate) fn learning_curve(seed: u64, rounds: usize, per_round: usize) -> Vec<f64> {
    let settings = [
        ("controller_hidden_size", "16"),
        ("controller_learning_rate", "0.02"),
        ("controller_train_steps", "5"),
        ("controller_baseline_decay", "0.9"),
        ("random_state", &seed.to_string()),
    ];
    let mut nas = cpu_example();
    nas.num_layers = 4;
    let e = enas(nas, &settings, Direction::Maximize);
    let mut trials = Vec::new();
    let mut curve = Vec::new();
    for round in 0..rounds {
        let proposals = propose(&e, &trials, per_round, seed * 1000 + round as u64);
        let rewards: Vec<f64> = proposals.iter().map(|a| synthetic_reward(&e, a)).collect();
        curve.push(rewards.iter().sum::<f64>() / rewards.len() as f64);
        for (a, r) in proposals.into_iter().zip(rewards) {
            trials.push(trial(trials.len(), a, r));
        }
    }
    curve
}

#[test]
fn mean_reward_of_proposals_rises_across_seeds() {
    let (rounds, per_round) = (10, 6);
    let mut first = 0.0;
    let mut last = 0.0;
    for seed in 1..=3 {
        let curve = learning_curve(seed, rounds, per_round);
        first += curve[..2].iter().sum::<f64>() / 2.0;
        last += curve[rounds - 2..].iter().sum::<f64>() / 2.0;
    }
    let (first, last) = (first / 3.0, last / 3.0);
    assert!(
        last > first + 0.1,
        "first rounds {first:.3}, last rounds {last:.3}"
    );
}

#[test]
fn replay_rebuilds_the_same_controller_after_a_restart() {
    let e = enas(
        cpu_example(),
        &[("controller_train_steps", "3")],
        Direction::Maximize,
    );
    let first = propose(&e, &[], 3, 1);
    let trials: Vec<TrialRecord> = first
        .iter()
        .enumerate()
        .map(|(i, a)| trial(i, a.clone(), 0.5 + i as f64 / 10.0))
        .collect();
    let restarted = enas(
        cpu_example(),
        &[("controller_train_steps", "3")],
        Direction::Maximize,
    );
    assert_eq!(
        propose(&e, &trials, 4, 9),
        propose(&restarted, &trials, 4, 9)
    );
    let before = e.trained_controller(&[]);
    let after = e.trained_controller(&trials);
    assert_ne!(before, after, "completed trials train the controller");
    // A trial whose architecture does not fit the space is left out, not fatal.
    let mut odd = trials.clone();
    odd.push(trial(
        9,
        Assignment(vec![(
            "architecture".into(),
            ParamValue::Choice("[[99]]".into()),
        )]),
        1.0,
    ));
    assert_eq!(e.trained_controller(&odd), after);
}
