//! Tests of BOHB: its brackets, the KDE proposals on the largest budget with enough results,
//! and state rebuilt from trial labels.
use super::*;
use crate::hyperband::{BRACKET_LABEL, PARENT_LABEL, RUNG_LABEL};
use crate::test_params::pairs as settings;
use proptest::prelude::*;
use rand::SeedableRng;
use std::collections::{BTreeMap, HashSet};
use vernier_core::{Direction, Distribution, Domain, Parameter, Proposal, TrialState};

fn double(name: &str) -> Parameter {
    Parameter {
        name: name.into(),
        domain: Domain::Double {
            min: 0.0,
            max: 1.0,
            step: None,
        },
        distribution: Distribution::Uniform,
    }
}

/// `x`, `y` in the unit square and the resource `epochs` 1..=9.
fn space() -> SearchSpace {
    let epochs = Parameter {
        name: "epochs".into(),
        domain: Domain::Int {
            min: 1,
            max: 9,
            step: None,
        },
        distribution: Distribution::Uniform,
    };
    SearchSpace::new(vec![double("x"), double("y"), epochs]).unwrap()
}

fn bohb(extra: &[(&str, &str)]) -> Box<dyn Suggester> {
    let mut pairs = vec![("resource_name", "epochs"), ("r_l", "9"), ("eta", "3")];
    pairs.extend_from_slice(extra);
    let o = Objective::new("loss", Direction::Minimize);
    build("bohb", &settings(&pairs), &space(), &o).unwrap()
}

fn build_err(pairs: &[(&str, &str)]) -> String {
    let o = Objective::new("loss", Direction::Minimize);
    build("bohb", &settings(pairs), &space(), &o)
        .unwrap_err()
        .to_string()
}

fn num(a: &Assignment, name: &str) -> f64 {
    a.get(name).and_then(ParamValue::as_f64).unwrap()
}

/// Best at (0.2, 0.7); more epochs always help.
fn loss(a: &Assignment) -> f64 {
    (num(a, "x") - 0.2).powi(2) + (num(a, "y") - 0.7).powi(2) + 1.0 / num(a, "epochs")
}

fn request<'a>(
    space: &'a SearchSpace,
    o: &'a Objective,
    trials: &'a [TrialRecord],
    count: usize,
    seed: u64,
) -> SuggestRequest<'a> {
    SuggestRequest {
        space,
        objective: o,
        trials,
        count,
        seed,
        state: None,
    }
}

fn finished(name: String, p: Proposal) -> TrialRecord {
    let objective = Some(loss(&p.assignment));
    TrialRecord {
        name,
        assignment: p.assignment,
        state: TrialState::Succeeded,
        objective,
        labels: p.labels,
        metrics: BTreeMap::new(),
    }
}

fn at(x: f64, y: f64, epochs: i64, state: TrialState) -> TrialRecord {
    let a = Assignment(vec![
        ("x".into(), ParamValue::Double(x)),
        ("y".into(), ParamValue::Double(y)),
        ("epochs".into(), ParamValue::Int(epochs)),
    ]);
    TrialRecord {
        name: format!("h{x}-{y}-{epochs}"),
        objective: (state == TrialState::Succeeded).then(|| loss(&a)),
        assignment: a,
        state,
        labels: BTreeMap::new(),
        metrics: BTreeMap::new(),
    }
}

/// Runs the schedule one trial at a time until the suggester reports `exhausted`.
fn run(s: &dyn Suggester, seed: u64) -> Vec<TrialRecord> {
    let space = space();
    let o = Objective::new("loss", Direction::Minimize);
    let mut trials: Vec<TrialRecord> = Vec::new();
    for _ in 0..1000 {
        let r = s
            .suggest(&request(&space, &o, &trials, 1, seed + trials.len() as u64))
            .unwrap();
        if r.exhausted {
            return trials;
        }
        let p = r
            .proposals
            .into_iter()
            .next()
            .expect("sequential runs never wait");
        let name = format!("t{}", trials.len());
        trials.push(finished(name, p));
    }
    panic!("the run did not end");
}

#[test]
fn the_model_is_fitted_on_the_largest_budget_with_enough_results() {
    let resource = Resource {
        name: "epochs".into(),
    };
    let s = TrialState::Succeeded;
    let mut trials = vec![at(0.1, 0.1, 1, s), at(0.2, 0.1, 1, s), at(0.3, 0.1, 1, s)];
    let cases: &[(usize, Option<f64>)] = &[(3, Some(1.0)), (4, None)];
    for (min_points, want) in cases {
        assert_eq!(model_budget(&resource, &trials, *min_points), *want);
    }
    // Two results at 3 epochs, one of them failed or running: 3 epochs qualifies only with
    // min_points 1, and then beats 1 epoch.
    trials.push(at(0.4, 0.1, 3, s));
    trials.push(at(0.5, 0.1, 3, TrialState::Running));
    trials.push(at(0.6, 0.1, 3, TrialState::Failed));
    let cases: &[(usize, Option<f64>)] = &[(1, Some(3.0)), (2, Some(1.0)), (3, Some(1.0))];
    for (min_points, want) in cases {
        assert_eq!(
            model_budget(&resource, &trials, *min_points),
            *want,
            "min_points {min_points}"
        );
    }
    let stripped = at_budget(&resource, &trials[3], 3.0).unwrap();
    assert_eq!(stripped.assignment.to_string(), "x=0.4, y=0.1");
    assert!(at_budget(&resource, &trials[0], 3.0).is_none());
}

#[test]
fn settings_errors_name_the_setting_and_value() {
    let base = [("resource_name", "epochs"), ("r_l", "9")];
    let with = |extra: (&str, &str)| {
        let mut p = base.to_vec();
        p.push(extra);
        build_err(&p)
    };
    let e = with(("random_fraction", "1.5"));
    assert!(
        e.contains("bohb") && e.contains("random_fraction") && e.contains("1.5"),
        "{e}"
    );
    let e = with(("min_points_in_model", "0"));
    assert!(
        e.contains("min_points_in_model") && e.contains("\"0\""),
        "{e}"
    );
    let e = with(("min_points_in_model", "two"));
    assert!(e.contains("does not parse"), "{e}");
    // Without a budget, both of BOHB's names for it are offered.
    let e = build_err(&[("resource_name", "epochs")]);
    assert!(
        e.contains("is not set: r_l (or max_resource) and resource_name must be set"),
        "{e}"
    );
    let e = with(("top_n_percent", "15"));
    assert!(e.contains("unknown setting \"top_n_percent\""), "{e}");
    let e = with(("max_resource", "27"));
    assert!(
        e.contains("max_resource") && e.contains("27") && e.contains("hint:"),
        "{e}"
    );
    let e = build_err(&[("resource_name", "epochs")]);
    assert!(e.contains("bohb") && e.contains("r_l"), "{e}");
    let e = build_err(&[("resource_name", "lr"), ("max_resource", "9")]);
    assert!(e.contains("resource_name") && e.contains("\"lr\""), "{e}");
    // Promotions continue from their parent's checkpoint directory, as Hyperband's do.
    let o = Objective::new("loss", Direction::Minimize);
    let dir = ("suggestion_trial_dir", "/var/log/katib/checkpoints/");
    assert!(build("bohb", &settings(&[base[0], base[1], dir]), &space(), &o).is_ok());
    let e = with(("suggestion_trial_dir", "checkpoints"));
    assert!(
        e.contains("suggestion_trial_dir") && e.contains("absolute path"),
        "{e}"
    );
}

#[test]
fn max_resource_is_an_alias_of_r_l() {
    let space = space();
    let o = Objective::new("loss", Direction::Minimize);
    let a = bohb(&[]);
    let b = build(
        "bohb",
        &settings(&[("resource_name", "epochs"), ("max_resource", "9")]),
        &space,
        &o,
    )
    .unwrap();
    let ra = a.suggest(&request(&space, &o, &[], 3, 5)).unwrap();
    let rb = b.suggest(&request(&space, &o, &[], 3, 5)).unwrap();
    assert_eq!(ra, rb);
    assert_eq!(a.name(), "bohb");
}

#[test]
fn seeded_proposals_are_exact() {
    let space = space();
    let o = Objective::new("loss", Direction::Minimize);
    let r = bohb(&[]).suggest(&request(&space, &o, &[], 2, 42)).unwrap();
    let got = crate::test_params::texts(&r);
    assert_eq!(
        got,
        vec![
            "x=0.4275164028565197, y=0.6273605211973403, epochs=1",
            "x=0.2885938791411826, y=0.14995887029032495, epochs=1",
        ]
    );
    for p in &r.proposals {
        assert_eq!(p.labels[BRACKET_LABEL], "2");
        assert_eq!(p.labels[RUNG_LABEL], "0");
    }
}

#[test]
fn model_proposals_concentrate_where_the_good_results_are() {
    let space = space();
    let o = Objective::new("loss", Direction::Minimize);
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let history: Vec<TrialRecord> = (0..30)
        .map(|_| {
            at(
                rng.random::<f64>(),
                rng.random::<f64>(),
                9,
                TrialState::Succeeded,
            )
        })
        .collect();
    let distance = |a: &Assignment| (num(a, "x") - 0.2).hypot(num(a, "y") - 0.7);
    let mean_distance = |s: &dyn Suggester| {
        let r = s.suggest(&request(&space, &o, &history, 9, 3)).unwrap();
        assert_eq!(r.proposals.len(), 9);
        for p in &r.proposals {
            assert_eq!(
                num(&p.assignment, "epochs"),
                1.0,
                "bracket 2 starts at 1 epoch"
            );
        }
        r.proposals
            .iter()
            .map(|p| distance(&p.assignment))
            .sum::<f64>()
            / 9.0
    };
    let modelled = mean_distance(&*bohb(&[("random_fraction", "0")]));
    let random = mean_distance(&*bohb(&[("random_fraction", "1")]));
    // Uniform draws average about 0.4 from (0.2, 0.7).
    assert!(random > 0.3, "random proposals: mean distance {random}");
    assert!(
        modelled < 0.6 * random,
        "model proposals: mean distance {modelled} against {random} for random ones"
    );
    // Too few results at any budget: every configuration is random, whatever the fraction.
    let too_few = bohb(&[("random_fraction", "0"), ("min_points_in_model", "31")]);
    let r = too_few
        .suggest(&request(&space, &o, &history, 9, 3))
        .unwrap();
    let spread = r
        .proposals
        .iter()
        .map(|p| distance(&p.assignment))
        .sum::<f64>()
        / 9.0;
    assert!(spread > 0.3, "{spread}");
}

#[test]
fn a_run_follows_hyperbands_schedule_and_ends() {
    let trials = run(&*bohb(&[]), 11);
    // eta 3, r_l 9: bracket 2 is 9-3-1 trials, bracket 1 is 5-1, bracket 0 is 3.
    assert_eq!(trials.len(), 22);
    let per_bracket = |s: &str| {
        trials
            .iter()
            .filter(|t| t.labels[BRACKET_LABEL] == s)
            .count()
    };
    assert_eq!(
        (per_bracket("2"), per_bracket("1"), per_bracket("0")),
        (13, 6, 3)
    );
    let promoted = trials
        .iter()
        .filter(|t| t.labels.contains_key(PARENT_LABEL))
        .count();
    assert_eq!(promoted, 5);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]
    #[test]
    fn runs_stay_in_space_distinct_and_deterministic(seed in 0u64..1000, fraction in 0.0f64..=1.0) {
        let f = fraction.to_string();
        let s = bohb(&[("random_fraction", &f), ("min_points_in_model", "2")]);
        let trials = run(&*s, seed);
        let space = space();
        let mut keys = HashSet::new();
        for t in &trials {
            prop_assert!(space.check(&t.assignment).is_ok(), "{}", t.assignment);
            prop_assert!(keys.insert(t.assignment.key()), "{}", t.assignment);
        }
        let again = run(&*s, seed);
        let a: Vec<String> = trials.iter().map(|t| t.assignment.key()).collect();
        let b: Vec<String> = again.iter().map(|t| t.assignment.key()).collect();
        prop_assert_eq!(a, b);
    }
}
