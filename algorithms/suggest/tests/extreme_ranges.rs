//! Every algorithm over the widest spaces a spec can express (the whole `i64` range, doubles
//! near `f64::MAX`): no panic, every proposal inside the space, and priors that do not collapse
//! onto one point. An adversary wrote such a space once and wedged the operator.

use proptest::prelude::*;
use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use vernier_core::{
    Assignment, Direction, Distribution, Domain, Objective, ParamValue, Parameter, SearchSpace,
    SuggestRequest, TrialRecord, TrialState,
};

const ALGORITHMS: &[(&str, &[(&str, &str)])] = &[
    ("random", &[]),
    ("grid", &[]),
    ("sobol", &[]),
    ("tpe", &[("n_startup_trials", "3")]),
    ("multivariate-tpe", &[("n_startup_trials", "3")]),
    ("bayesianoptimization", &[("n_initial_points", "3")]),
    ("cmaes", &[]),
    ("nsga2", &[]),
];

fn param(name: &str, domain: Domain, distribution: Distribution) -> Parameter {
    Parameter {
        name: name.into(),
        domain,
        distribution,
    }
}

/// A resource parameter Hyperband and ASHA can drive, beside the extreme one.
fn epochs() -> Parameter {
    param(
        "epochs",
        Domain::Int {
            min: 1,
            max: 27,
            step: None,
        },
        Distribution::Uniform,
    )
}

fn objective() -> Objective {
    Objective::new("loss", Direction::Minimize).with_primary_term()
}

/// Trials at the space's corners and middle, so model-based algorithms fit on extremes.
fn history(space: &SearchSpace, seed: u64) -> Vec<TrialRecord> {
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(seed);
    (0..12)
        .map(|i| {
            let a = vernier_algorithms::sample::sample_assignment(space, &mut rng);
            TrialRecord {
                name: format!("t{i}"),
                assignment: a,
                state: TrialState::Succeeded,
                objective: Some(i as f64 * 0.5 - 3.0),
                labels: BTreeMap::new(),
                metrics: BTreeMap::from([("loss".to_string(), i as f64 * 0.5 - 3.0)]),
            }
        })
        .collect()
}

/// Runs one algorithm for a few rounds; panics become test failures naming the algorithm.
fn exercise(name: &str, settings: &[(&str, &str)], space: &SearchSpace, seed: u64) {
    let settings: Vec<(String, String)> = settings
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let o = objective();
    let result = catch_unwind(AssertUnwindSafe(|| {
        let Ok(s) = vernier_algorithms::build(name, &settings, space, &o) else {
            return Ok(());
        };
        let mut trials = Vec::new();
        let mut state: Option<String> = None;
        for round in 0..3u64 {
            if round == 1 {
                trials = history(space, seed);
            }
            let req = SuggestRequest {
                space,
                objective: &o,
                trials: &trials,
                count: 4,
                seed: seed + round,
                state: state.as_deref(),
            };
            let out = match s.suggest(&req) {
                Ok(out) => out,
                Err(_) => return Ok(()),
            };
            for p in &out.proposals {
                if let Err(e) = space.check(&p.assignment) {
                    return Err(format!("{name}: proposal {} outside: {e}", p.assignment));
                }
            }
            state = out.state.clone();
        }
        Ok(())
    }));
    match result {
        Ok(Ok(())) => {}
        Ok(Err(e)) => panic!("{e}"),
        Err(_) => panic!("{name} panicked on {space:?}"),
    }
}

fn extreme_domains() -> Vec<Domain> {
    vec![
        Domain::Int {
            min: i64::MIN,
            max: i64::MAX,
            step: None,
        },
        Domain::Int {
            min: i64::MIN,
            max: i64::MAX,
            step: Some(i64::MAX),
        },
        Domain::Int {
            min: i64::MIN + 1,
            max: i64::MAX,
            step: Some(3),
        },
        Domain::Int {
            min: 1,
            max: i64::MAX,
            step: None,
        },
        Domain::Double {
            min: -1.7e308,
            max: 1.7e308,
            step: None,
        },
        Domain::Double {
            min: -f64::MAX,
            max: f64::MAX,
            step: None,
        },
        Domain::Double {
            min: 5e-324,
            max: f64::MAX,
            step: None,
        },
        Domain::Double {
            min: -1e300,
            max: 1e300,
            step: Some(1e299),
        },
    ]
}

const DISTRIBUTIONS: [Distribution; 4] = [
    Distribution::Uniform,
    Distribution::LogUniform,
    Distribution::Normal,
    Distribution::LogNormal,
];

#[test]
fn no_algorithm_panics_on_extreme_ranges() {
    for domain in extreme_domains() {
        for distribution in DISTRIBUTIONS {
            let p = param("x", domain.clone(), distribution);
            if p.validate().is_err() {
                continue;
            }
            let space = SearchSpace::new(vec![p, epochs()]).unwrap();
            for (name, settings) in ALGORITHMS {
                exercise(name, settings, &space, 7);
            }
            for name in ["hyperband", "asha"] {
                let settings: &[(&str, &str)] = if name == "hyperband" {
                    &[("resource_name", "epochs"), ("r_l", "27"), ("eta", "3")]
                } else {
                    &[
                        ("resource_name", "epochs"),
                        ("max_resource", "27"),
                        ("min_resource", "1"),
                    ]
                };
                exercise(name, settings, &space, 7);
            }
        }
    }
}

/// Draws of one parameter from its prior.
fn draws(p: &Parameter, n: usize) -> Vec<f64> {
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(3);
    (0..n)
        .map(|_| {
            vernier_algorithms::sample::sample_param(p, &mut rng)
                .as_f64()
                .expect("numeric parameters draw numbers")
        })
        .collect()
}

#[test]
fn priors_over_the_widest_doubles_do_not_collapse() {
    for distribution in [Distribution::Uniform, Distribution::Normal] {
        let p = param(
            "x",
            Domain::Double {
                min: -1.7e308,
                max: 1.7e308,
                step: None,
            },
            distribution,
        );
        let xs = draws(&p, 200);
        let negative = xs.iter().filter(|x| **x < 0.0).count();
        assert!(
            (50..150).contains(&negative),
            "{distribution:?}: {negative} of 200 negative"
        );
        assert!(xs.iter().all(|x| x.is_finite() && x.abs() <= 1.7e308));
        assert!(
            xs.iter().filter(|x| x.abs() > 1e307).count() > 20,
            "{distribution:?} draws crowd onto 0"
        );
    }
}

#[test]
fn priors_over_the_whole_i64_range_cover_both_signs() {
    for distribution in [Distribution::Uniform, Distribution::Normal] {
        let p = param(
            "n",
            Domain::Int {
                min: i64::MIN,
                max: i64::MAX,
                step: None,
            },
            distribution,
        );
        let xs = draws(&p, 200);
        let negative = xs.iter().filter(|x| **x < 0.0).count();
        assert!(
            (50..150).contains(&negative),
            "{distribution:?}: {negative}"
        );
    }
}

fn wide_int() -> impl Strategy<Value = Domain> {
    (any::<i64>(), any::<i64>(), prop::option::of(1..=i64::MAX)).prop_filter_map(
        "min < max",
        |(a, b, step)| {
            (a != b).then(|| Domain::Int {
                min: a.min(b),
                max: a.max(b),
                step,
            })
        },
    )
}

fn wide_double() -> impl Strategy<Value = Domain> {
    let finite = prop::num::f64::NORMAL | prop::num::f64::ZERO | prop::num::f64::SUBNORMAL;
    (finite, finite).prop_filter_map("min < max", |(a, b)| {
        (a < b).then_some(Domain::Double {
            min: a,
            max: b,
            step: None,
        })
    })
}

fn distribution() -> impl Strategy<Value = Distribution> {
    prop::sample::select(DISTRIBUTIONS.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn any_valid_extreme_space_gets_proposals_inside_it(
        a in wide_int(),
        b in wide_double(),
        da in distribution(),
        db in distribution(),
        seed in any::<u64>(),
    ) {
        let params = vec![param("a", a, da), param("b", b, db), epochs()];
        prop_assume!(params.iter().all(|p| p.validate().is_ok()));
        let space = SearchSpace::new(params).unwrap();
        for (name, settings) in ALGORITHMS {
            exercise(name, settings, &space, seed);
        }
        exercise(
            "hyperband",
            &[("resource_name", "epochs"), ("r_l", "27"), ("eta", "3")],
            &space,
            seed,
        );
    }

    #[test]
    fn sampled_values_stay_in_extreme_domains(a in wide_int(), b in wide_double(), d in distribution(), seed in any::<u64>()) {
        let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(seed);
        for domain in [a, b] {
            let p = param("x", domain, d);
            if p.validate().is_err() {
                continue;
            }
            let v = vernier_algorithms::sample::sample_param(&p, &mut rng);
            prop_assert!(p.check(&v).is_ok(), "{v} outside {:?}", p.domain);
            let u = vernier_algorithms::encode::to_unit(&p, &v);
            prop_assert!((0.0..=1.0).contains(&u));
            let back = vernier_algorithms::encode::from_unit(&p, u);
            prop_assert!(p.check(&back).is_ok(), "{back} outside {:?}", p.domain);
        }
    }
}

#[test]
fn an_assignment_of_extremes_is_in_the_space() {
    let p = param(
        "n",
        Domain::Int {
            min: i64::MIN,
            max: i64::MAX,
            step: Some(1),
        },
        Distribution::Uniform,
    );
    let space = SearchSpace::new(vec![p]).unwrap();
    for v in [i64::MIN, i64::MAX, 0] {
        let a = Assignment(vec![("n".into(), ParamValue::Int(v))]);
        assert!(space.check(&a).is_ok(), "{v}");
    }
}
