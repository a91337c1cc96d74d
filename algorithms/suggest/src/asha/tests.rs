//! ASHA's rungs, settings errors, promotion rule, restarts and the pruner's decisions.

use super::*;
use crate::test_params::pairs as settings;
use proptest::prelude::*;
use vernier_core::{
    Assignment, Direction, Distribution, Domain, EarlyStopper, EarlyStoppingRequest, Parameter,
    TrialProgress, TrialState,
};

fn param(name: &str, domain: Domain) -> Parameter {
    Parameter {
        name: name.into(),
        domain,
        distribution: Distribution::Uniform,
    }
}

fn space_with(resource: Domain) -> SearchSpace {
    SearchSpace::new(vec![
        Parameter {
            name: "lr".into(),
            domain: Domain::Double {
                min: 1e-4,
                max: 0.1,
                step: None,
            },
            distribution: Distribution::LogUniform,
        },
        param("epochs", resource),
        param(
            "opt",
            Domain::Categorical {
                values: vec!["sgd".into(), "adam".into()],
            },
        ),
    ])
    .unwrap()
}

fn epochs(min: i64, max: i64) -> Domain {
    Domain::Int {
        min,
        max,
        step: None,
    }
}

fn asha(pairs: &[(&str, &str)], space: &SearchSpace) -> Asha {
    let mut all = settings(&[("resource_name", "epochs")]);
    all.extend(settings(pairs));
    Asha::new(ALGORITHM, &all, space).unwrap()
}

fn build_err(pairs: &[(&str, &str)], space: &SearchSpace) -> String {
    let o = Objective::new("loss", Direction::Minimize);
    crate::build(ALGORITHM, &settings(pairs), space, &o)
        .unwrap_err()
        .to_string()
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

fn from_proposal(name: String, p: Proposal) -> TrialRecord {
    TrialRecord {
        name,
        assignment: p.assignment,
        state: TrialState::Running,
        objective: None,
        labels: p.labels,
        metrics: Default::default(),
    }
}

fn ints(values: &[i64]) -> Vec<ParamValue> {
    values.iter().map(|v| ParamValue::Int(*v)).collect()
}

#[test]
fn rungs_run_from_max_resource_down() {
    let space = space_with(epochs(1, 100));
    assert_eq!(
        asha(&[("max_resource", "81")], &space).budgets(),
        ints(&[1, 3, 9, 27, 81])
    );
    // 10/9 and 10/3 take Katib's int(): 1 and 3; the top rung is max_resource itself.
    assert_eq!(
        asha(&[("max_resource", "10")], &space).budgets(),
        ints(&[1, 3, 10])
    );
    assert_eq!(
        asha(
            &[("max_resource", "81"), ("min_early_stopping_rate", "1")],
            &space
        )
        .budgets(),
        ints(&[3, 9, 27, 81])
    );
    assert_eq!(
        asha(
            &[("max_resource", "64"), ("min_resource", "4"), ("eta", "2")],
            &space
        )
        .budgets(),
        ints(&[4, 8, 16, 32, 64])
    );
    let doubles = space_with(Domain::Double {
        min: 0.1,
        max: 1.0,
        step: None,
    });
    // Doubles keep 12 significant digits (`tidy`), as hyperband's do.
    assert_eq!(
        asha(
            &[("max_resource", "1"), ("min_resource", "0.1"), ("eta", "3")],
            &doubles
        )
        .budgets(),
        vec![
            ParamValue::Double(0.111111111111),
            ParamValue::Double(0.333333333333),
            ParamValue::Double(1.0)
        ]
    );
}

#[test]
fn settings_errors_name_the_setting_and_value() {
    let space = space_with(epochs(1, 100));
    let e = build_err(&[("max_resource", "81")], &space);
    assert!(e.contains("setting resource_name of algorithm asha"), "{e}");
    assert!(e.contains("is not set\nhint:"), "{e}");
    let e = build_err(&[("resource_name", "epochs")], &space);
    assert!(
        e.contains("setting max_resource") && e.contains("is not set"),
        "{e}"
    );
    for bad in ["0", "-3", "abc", "inf"] {
        let e = build_err(
            &[("resource_name", "epochs"), ("max_resource", bad)],
            &space,
        );
        assert!(
            e.contains(&format!("max_resource of algorithm asha: value {bad:?}")),
            "{e}"
        );
    }
    for bad in ["1", "2.5", "x", "-2"] {
        let e = build_err(
            &[
                ("resource_name", "epochs"),
                ("max_resource", "81"),
                ("eta", bad),
            ],
            &space,
        );
        assert!(
            e.contains(&format!("eta of algorithm asha: value {bad:?}")),
            "{e}"
        );
        assert!(e.contains("eta must be an integer >= 2"), "{e}");
    }
    let e = build_err(
        &[
            ("resource_name", "epochs"),
            ("max_resource", "81"),
            ("min_resource", "0"),
        ],
        &space,
    );
    assert!(e.contains("min_resource must be a positive number"), "{e}");
    let e = build_err(
        &[
            ("resource_name", "epochs"),
            ("max_resource", "81"),
            ("min_early_stopping_rate", "-1"),
        ],
        &space,
    );
    assert!(e.contains("min_early_stopping_rate"), "{e}");
    let e = build_err(&[("resource_name", "nope"), ("max_resource", "81")], &space);
    assert!(
        e.contains("value \"nope\" is not a parameter\nhint: the parameters are lr, epochs, opt"),
        "{e}"
    );
    let e = build_err(&[("resource_name", "opt"), ("max_resource", "81")], &space);
    assert!(
        e.contains("must be an int, a double or a discrete list"),
        "{e}"
    );
    assert!(
        e.contains("hint: make \"opt\" a discrete list of the budgets, an int or a double"),
        "{e}"
    );
    // One rung is not successive halving.
    let e = build_err(
        &[("resource_name", "epochs"), ("max_resource", "2")],
        &space,
    );
    assert!(e.contains("at least two rungs"), "{e}");
    assert!(e.contains("value \"2\""), "{e}");
    let e = build_err(
        &[
            ("resource_name", "epochs"),
            ("max_resource", "9"),
            ("min_early_stopping_rate", "2"),
        ],
        &space,
    );
    assert!(e.contains("eta^(min_early_stopping_rate + 1) = 3^3"), "{e}");
    // Every rung must fit the resource's feasible space.
    let narrow = space_with(epochs(2, 81));
    let e = build_err(
        &[("resource_name", "epochs"), ("max_resource", "81")],
        &narrow,
    );
    assert!(e.contains("cannot hold every rung's resource"), "{e}");
    assert!(e.contains("cover [1, 81]"), "{e}");
    let e = build_err(
        &[
            ("resource_name", "epochs"),
            ("max_resource", "81"),
            ("rungs", "3"),
        ],
        &space,
    );
    assert!(
        e.contains("unknown setting \"rungs\" for algorithm asha"),
        "{e}"
    );
    assert!(
        e.contains("hint: asha accepts resource_name, max_resource"),
        "{e}"
    );
}

/// Nine finished rung-0 trials with losses 9, 1, 8, 2, 7, 3, 6, 4, 5 (t0..t8).
fn rung0(space: &SearchSpace, o: &Objective, a: &Asha) -> Vec<TrialRecord> {
    let s = a.suggest(&request(space, o, &[], 9, 3)).unwrap();
    assert_eq!(s.proposals.len(), 9);
    let losses = [9.0, 1.0, 8.0, 2.0, 7.0, 3.0, 6.0, 4.0, 5.0];
    s.proposals
        .into_iter()
        .enumerate()
        .map(|(k, p)| {
            assert_eq!(p.labels[RUNG_LABEL], "0");
            assert_eq!(p.assignment.get("epochs"), Some(&ParamValue::Int(1)));
            let mut t = from_proposal(format!("t{k}"), p);
            t.state = TrialState::Succeeded;
            t.objective = Some(losses[k]);
            t
        })
        .collect()
}

#[test]
fn seeded_first_proposals_are_exact() {
    let space = space_with(epochs(1, 100));
    let o = Objective::new("loss", Direction::Minimize);
    let a = asha(&[("max_resource", "9")], &space);
    let s = a.suggest(&request(&space, &o, &[], 2, 42)).unwrap();
    let shown = crate::test_params::texts(&s);
    assert_eq!(shown, EXPECTED_SEED_42);
    assert_eq!(s.state.as_deref(), Some("rung sizes 0/0/0 at epochs=1/3/9"));
    assert!(!s.exhausted);
}

const EXPECTED_SEED_42: [&str; 2] = [
    "lr=0.011109348145191565, epochs=1, opt=sgd",
    "lr=0.020746268240354377, epochs=1, opt=sgd",
];

#[test]
fn promotes_the_top_third_best_first_as_soon_as_results_allow() {
    let space = space_with(epochs(1, 100));
    let o = Objective::new("loss", Direction::Minimize);
    let a = asha(&[("max_resource", "9")], &space);
    let mut trials = rung0(&space, &o, &a);
    // Only three results so far: the best of them already earns a promotion (Hyperband
    // would wait for all nine).
    for t in &mut trials[3..] {
        t.state = TrialState::Running;
        t.objective = None;
    }
    let s = a.suggest(&request(&space, &o, &trials, 2, 5)).unwrap();
    assert_eq!(s.proposals[0].labels[PARENT_LABEL], "t1");
    assert_eq!(s.proposals[0].labels[RUNG_LABEL], "1");
    assert_eq!(
        s.proposals[0].assignment.get("epochs"),
        Some(&ParamValue::Int(3))
    );
    assert_eq!(
        s.proposals[0].assignment.get("lr"),
        trials[1].assignment.get("lr")
    );
    // The second slot gets a new configuration: t0 and t2 are not in the top third.
    assert_eq!(s.proposals[1].labels[RUNG_LABEL], "0");
    assert!(!s.proposals[1].labels.contains_key(PARENT_LABEL));

    // All nine finished: top floor(9/3) = 3 are t1, t3, t5 in that order.
    let trials = rung0(&space, &o, &a);
    let s = a.suggest(&request(&space, &o, &trials, 4, 5)).unwrap();
    let parents: Vec<Option<&str>> = s
        .proposals
        .iter()
        .map(|p| p.labels.get(PARENT_LABEL).map(String::as_str))
        .collect();
    assert_eq!(parents, [Some("t1"), Some("t3"), Some("t5"), None]);

    // Maximising the negated objective promotes the same trials.
    let mut negated = trials.clone();
    for t in &mut negated {
        t.objective = t.objective.map(|v| -v);
    }
    let max = Objective::new("loss", Direction::Maximize);
    let again = a.suggest(&request(&space, &max, &negated, 4, 5)).unwrap();
    assert_eq!(again, s);
}

#[test]
fn higher_rungs_promote_first_and_no_trial_twice() {
    let space = space_with(epochs(1, 100));
    let o = Objective::new("loss", Direction::Minimize);
    let a = asha(&[("max_resource", "9")], &space);
    let mut trials = rung0(&space, &o, &a);
    let s = a.suggest(&request(&space, &o, &trials, 3, 5)).unwrap();
    for (k, p) in s.proposals.into_iter().enumerate() {
        let mut t = from_proposal(format!("p{k}"), p);
        t.state = TrialState::Succeeded;
        t.objective = Some([0.5, 0.2, 0.9][k]);
        trials.push(t);
    }
    // Rung 1 has three results: p1 (0.2) goes to rung 2 before anything else.
    let s = a.suggest(&request(&space, &o, &trials, 2, 6)).unwrap();
    assert_eq!(s.proposals[0].labels[PARENT_LABEL], "p1");
    assert_eq!(s.proposals[0].labels[RUNG_LABEL], "2");
    assert_eq!(
        s.proposals[0].assignment.get("epochs"),
        Some(&ParamValue::Int(9))
    );
    assert!(!s.proposals[1].labels.contains_key(PARENT_LABEL));
    trials.push(from_proposal("q0".into(), s.proposals[0].clone()));
    let s = a.suggest(&request(&space, &o, &trials, 1, 7)).unwrap();
    assert!(!s.proposals[0].labels.contains_key(PARENT_LABEL));
}

#[test]
fn failed_trials_neither_count_nor_get_promoted() {
    let space = space_with(epochs(1, 100));
    let o = Objective::new("loss", Direction::Minimize);
    let a = asha(&[("max_resource", "9")], &space);
    let mut trials = rung0(&space, &o, &a);
    // t1 (the best) failed, and t3, t5 never reported: six results, two promotions.
    trials[1].state = TrialState::Failed;
    trials[3].state = TrialState::MetricsUnavailable;
    trials[3].objective = None;
    trials[5].objective = Some(f64::NAN);
    let s = a.suggest(&request(&space, &o, &trials, 3, 5)).unwrap();
    let parents: Vec<Option<&str>> = s
        .proposals
        .iter()
        .map(|p| p.labels.get(PARENT_LABEL).map(String::as_str))
        .collect();
    assert_eq!(parents, [Some("t7"), Some("t8"), None]);
}

/// Drives the suggester as the local driver does: fill free slots, let one running trial
/// finish, repeat; `loss` gives each finished trial its objective (None: it fails).
fn simulate(
    a: &Asha,
    space: &SearchSpace,
    o: &Objective,
    parallel: usize,
    seed: u64,
    max_trials: usize,
    loss: impl Fn(usize, &Assignment) -> Option<f64>,
) -> Vec<(Vec<TrialRecord>, usize, u64, Suggestions)> {
    let mut calls = Vec::new();
    let mut trials: Vec<TrialRecord> = Vec::new();
    for step in 0..100_000usize {
        let active = trials.iter().filter(|t| t.state.is_active()).count();
        let count = (parallel - active).min(max_trials - trials.len().min(max_trials));
        if count > 0 {
            let call_seed = seed.wrapping_add(trials.len() as u64);
            let s = a
                .suggest(&request(space, o, &trials, count, call_seed))
                .unwrap();
            calls.push((trials.clone(), count, call_seed, s.clone()));
            assert!(s.proposals.len() <= count);
            if s.exhausted {
                assert!(s.proposals.is_empty() && active == 0);
                return calls;
            }
            let mut keys = history::taken(&trials);
            for p in s.proposals {
                space.check(&p.assignment).unwrap();
                assert!(keys.insert(p.assignment.key()), "{}", p.assignment);
                let name = format!("t{}", trials.len());
                trials.push(from_proposal(name, p));
            }
        }
        let active: Vec<usize> = (0..trials.len())
            .filter(|&k| trials[k].state.is_active())
            .collect();
        if active.is_empty() {
            calls.push((trials.clone(), 0, 0, Suggestions::default()));
            return calls;
        }
        let k = active[(step * 7 + 3) % active.len()];
        let value = loss(k, &trials[k].assignment);
        let t = &mut trials[k];
        match value {
            Some(v) => {
                t.state = TrialState::Succeeded;
                t.objective = Some(match o.direction {
                    Direction::Minimize => v,
                    Direction::Maximize => -v,
                });
            }
            None => t.state = TrialState::Failed,
        }
    }
    panic!("the run did not end");
}

fn toy_loss(a: &Assignment) -> f64 {
    let lr = a.get("lr").and_then(ParamValue::as_f64).unwrap_or(0.01);
    let epochs = a.get("epochs").and_then(ParamValue::as_f64).unwrap_or(1.0);
    let adam = matches!(a.get("opt"), Some(ParamValue::Choice(c)) if c == "adam");
    (lr.log10() + 2.0).powi(2) + if adam { 0.0 } else { 0.1 } + 1.0 / epochs
}

/// Every promotion was earned when it was made: its parent sat in the top `floor(n/eta)` of
/// its rung's usable results in the history the suggester saw, one rung down, same
/// configuration; every rung label matches the resource value.
fn check_calls(a: &Asha, o: &Objective, calls: &[(Vec<TrialRecord>, usize, u64, Suggestions)]) {
    for (trials, _, _, reply) in calls {
        for p in &reply.proposals {
            let k: usize = p.labels[RUNG_LABEL].parse().unwrap();
            assert_eq!(p.assignment.get("epochs"), Some(&a.budgets()[k]));
            let Some(parent) = p.labels.get(PARENT_LABEL) else {
                assert_eq!(k, 0);
                continue;
            };
            let parent = trials.iter().find(|t| &t.name == parent).unwrap();
            assert_eq!(a.rung_of(parent), Some(k - 1));
            assert_eq!(
                a.resource.sub_key(&parent.assignment),
                a.resource.sub_key(&p.assignment)
            );
            let mut rung: Vec<f64> = trials
                .iter()
                .filter(|t| a.rung_of(t) == Some(k - 1))
                .filter_map(|t| t.usable_objective().map(|v| o.direction.to_loss(v)))
                .collect();
            rung.sort_by(f64::total_cmp);
            let keep = rung.len() / a.eta as usize;
            let mine = o.direction.to_loss(parent.usable_objective().unwrap());
            assert!(
                keep >= 1 && mine <= rung[keep - 1],
                "{} not in the top {keep}",
                parent.name
            );
        }
    }
}

#[test]
fn simulation_promotes_only_earned_trials_and_replays_exactly() {
    let space = space_with(epochs(1, 100));
    let o = Objective::new("loss", Direction::Minimize);
    let a = asha(&[("max_resource", "27")], &space);
    let calls = simulate(&a, &space, &o, 4, 11, 120, |k, x| {
        (k % 9 != 4).then(|| toy_loss(x))
    });
    check_calls(&a, &o, &calls);
    let last = &calls.last().unwrap().0;
    // Every rung up to the top was reached.
    let top = last.iter().filter(|t| a.rung_of(t) == Some(3)).count();
    assert!(top >= 1, "nothing reached the top rung");
    // A restart from any point replays the same reply.
    for (trials, count, seed, reply) in calls.iter().filter(|c| c.1 > 0) {
        let again = a
            .suggest(&request(&space, &o, trials, *count, *seed))
            .unwrap();
        assert_eq!(&again, reply);
    }
}

#[test]
fn a_finite_space_ends_exhausted() {
    let space = SearchSpace::new(vec![
        param(
            "opt",
            Domain::Categorical {
                values: vec!["a".into(), "b".into(), "c".into()],
            },
        ),
        param("epochs", epochs(1, 9)),
    ])
    .unwrap();
    let o = Objective::new("loss", Direction::Minimize);
    let a = asha(&[("max_resource", "9")], &space);
    let calls = simulate(&a, &space, &o, 2, 5, 1000, |_, x| Some(toy_loss(x)));
    check_calls(&a, &o, &calls);
    let (trials, _, _, last) = calls.last().unwrap();
    assert!(last.exhausted);
    // Three configurations at rung 0; only floor(3/3) = 1 is promoted at each rung.
    let per_rung: Vec<usize> = (0..3)
        .map(|k| trials.iter().filter(|t| a.rung_of(t) == Some(k)).count())
        .collect();
    assert_eq!(per_rung, [3, 1, 0]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn runs_stay_in_space_with_consistent_labels(
        seed in any::<u64>(),
        parallel in 1usize..9,
        fail_mod in 2usize..9,
        maximize in any::<bool>(),
        eta in 2u64..5,
    ) {
        let space = space_with(epochs(1, 100));
        let direction = if maximize { Direction::Maximize } else { Direction::Minimize };
        let o = Objective::new("loss", direction);
        let a = asha(&[("max_resource", "64"), ("eta", &eta.to_string())], &space);
        // `simulate` asserts space and distinctness; `check_calls` the labels and promotions.
        let calls = simulate(&a, &space, &o, parallel, seed, 60, |k, x| {
            (k % fail_mod != 1).then(|| toy_loss(x))
        });
        check_calls(&a, &o, &calls);
        for (trials, count, call_seed, reply) in calls.iter().filter(|c| c.1 > 0) {
            let again = a.suggest(&request(&space, &o, trials, *count, *call_seed)).unwrap();
            prop_assert_eq!(&again, reply);
        }
    }
}

// ---- the pruner ----

fn pruner(pairs: &[(&str, &str)]) -> AshaPruner {
    AshaPruner::from_settings(&settings(pairs)).unwrap()
}

fn decide(p: &AshaPruner, o: &Objective, trials: &[(&str, TrialState, &[f64])]) -> Vec<String> {
    let progress: Vec<TrialProgress<'_>> = trials
        .iter()
        .map(|(name, state, values)| TrialProgress {
            name,
            state: *state,
            values,
            judged: values.len(),
        })
        .collect();
    p.trials_to_stop(&EarlyStoppingRequest {
        objective: o,
        trials: &progress,
    })
    .unwrap()
}

#[test]
fn pruner_keeps_the_top_third_at_each_rung() {
    use TrialState::{Running, Succeeded};
    let p = pruner(&[("eta", "3")]);
    assert_eq!(p.rung_step(0), Some(1));
    assert_eq!(p.rung_step(2), Some(9));
    let o = Objective::new("loss", Direction::Minimize);
    // Rung at step 1: six competitors, keep the best two (0.1 and 0.2).
    let trials: [(&str, TrialState, &[f64]); 6] = [
        ("a", Succeeded, &[0.1, 0.05, 0.04, 0.03]),
        ("b", Running, &[0.5, 0.4]),
        ("c", Running, &[0.2, 0.1]),
        ("d", Running, &[0.9]),
        ("e", Running, &[0.3, 0.2]),
        ("f", Running, &[0.8]),
    ];
    assert_eq!(decide(&p, &o, &trials), ["b", "d", "e", "f"]);
    // At step 3 the second rung: only "a" and "g" reached it; with fewer than eta
    // competitors only the best continues.
    let trials: [(&str, TrialState, &[f64]); 2] = [
        ("a", Succeeded, &[0.1, 0.05, 0.04, 0.03]),
        ("g", Running, &[0.1, 0.05, 0.06]),
    ];
    assert_eq!(decide(&p, &o, &trials), ["g"]);
    // Maximising reverses the ranking.
    let max = Objective::new("acc", Direction::Maximize);
    let trials: [(&str, TrialState, &[f64]); 3] = [
        ("a", Succeeded, &[0.9]),
        ("b", Running, &[0.5]),
        ("c", Running, &[f64::NAN]),
    ];
    assert_eq!(decide(&p, &max, &trials), ["b", "c"]);
    // A trial that has not reached the first rung, or is not running, is never named.
    let trials: [(&str, TrialState, &[f64]); 2] =
        [("a", Succeeded, &[0.1]), ("b", TrialState::Failed, &[0.9])];
    assert!(decide(&p, &o, &trials).is_empty());
    let trials: [(&str, TrialState, &[f64]); 2] = [("a", Succeeded, &[0.1]), ("b", Running, &[])];
    assert!(decide(&p, &o, &trials).is_empty());
}

/// A rung a trial passed between two asks is judged all the same, lowest first: how often a
/// driver asks does not change the verdict (the helper's fast-printing trainer: worst at step
/// 1, best by step 3).
#[test]
fn pruner_judges_the_rungs_passed_since_it_last_asked() {
    use TrialState::{Running, Succeeded};
    let p = pruner(&[("eta", "3")]);
    let o = Objective::new("loss", Direction::Minimize);
    let earlier: [(&str, &[f64]); 3] = [
        ("a", &[1.5, 1.0, 1.0, 1.0]),
        ("b", &[2.0, 2.0, 2.0]),
        ("c", &[3.0]),
    ];
    let fast: &[f64] = &[5.0, 0.1, 0.1, 0.1];
    // (values of "fast" the rule saw before, verdict on "fast", the rung it names)
    let table: [(usize, bool, Option<&str>); 6] = [
        (0, true, Some("its loss 5 at step 1 ranked 4 of the 4")),
        (1, false, None), // step 1 was judged already (and passed, when it was asked then)
        (2, false, None),
        (3, false, None),
        (4, false, None), // nothing new: judged at its highest rung, step 3, where it leads
        (9, false, None), // a count above the values is read as all of them
    ];
    for (judged, stopped, why) in table {
        let mut progress: Vec<TrialProgress<'_>> = earlier
            .iter()
            .map(|&(name, values)| TrialProgress {
                name,
                state: Succeeded,
                values,
                judged: values.len(),
            })
            .collect();
        progress.push(TrialProgress {
            name: "fast",
            state: Running,
            values: fast,
            judged: judged.min(fast.len()),
        });
        let request = EarlyStoppingRequest {
            objective: &o,
            trials: &progress,
        };
        let stops = p.trials_to_stop(&request).unwrap();
        assert_eq!(
            stops.contains(&"fast".to_string()),
            stopped,
            "judged {judged}"
        );
        let explained = p.explain(&request, "fast");
        match why {
            Some(text) => assert!(explained.unwrap().starts_with(text), "judged {judged}"),
            None => assert_eq!(explained, None, "judged {judged}"),
        }
        // Stopped at step 1: the driver shows the rule that one value of it from now on.
        let step = p.stop_step(&request, "fast");
        assert_eq!(step, stopped.then_some(1), "judged {judged}");
    }
}

/// A stopped trial's explanation says the rung, its value and place, and how many go on;
/// a trial the rule keeps, or one not running, has none.
#[test]
fn pruner_explains_each_stop_in_words() {
    use TrialState::{Running, Succeeded};
    let p = pruner(&[("eta", "3")]);
    let o = Objective::new("loss", Direction::Minimize);
    let progress: Vec<TrialProgress<'_>> = [
        ("a", Succeeded, &[0.1, 0.05, 0.04][..]),
        ("b", Running, &[0.5, 0.4, 0.3]),
        ("c", Running, &[0.05]),
        ("d", Running, &[0.9]),
    ]
    .iter()
    .map(|&(name, state, values)| TrialProgress {
        name,
        state,
        values,
        judged: values.len(),
    })
    .collect();
    let request = EarlyStoppingRequest {
        objective: &o,
        trials: &progress,
    };
    assert_eq!(p.trials_to_stop(&request).unwrap(), ["b", "d"]);
    assert_eq!(
        p.explain(&request, "b").as_deref(),
        Some(
            "its loss 0.3 at step 3 ranked 2 of the 2 trials that reached that rung, \
             where asha keeps the best 1 (eta 3)"
        )
    );
    assert_eq!(
        p.explain(&request, "d").as_deref(),
        Some(
            "its loss 0.9 at step 1 ranked 4 of the 4 trials that reached that rung, \
             where asha keeps the best 1 (eta 3)"
        )
    );
    assert_eq!(p.explain(&request, "c"), None);
    assert_eq!(p.explain(&request, "a"), None);
    assert_eq!(p.explain(&request, "nobody"), None);
}

#[test]
fn pruner_min_resource_rate_and_bootstrap() {
    use TrialState::{Running, Succeeded};
    let o = Objective::new("loss", Direction::Minimize);
    // Rungs at 2·2^1 = 4, 8, 16.
    let p = pruner(&[
        ("min_resource", "2"),
        ("eta", "2"),
        ("min_early_stopping_rate", "1"),
    ]);
    assert_eq!((p.rung_step(0), p.rung_step(1)), (Some(4), Some(8)));
    let trials: [(&str, TrialState, &[f64]); 2] = [
        ("a", Succeeded, &[1.0, 1.0, 1.0, 0.1]),
        ("b", Running, &[0.0, 0.0, 0.0]),
    ];
    assert!(
        decide(&p, &o, &trials).is_empty(),
        "b has not reached step 4"
    );
    let trials: [(&str, TrialState, &[f64]); 2] = [
        ("a", Succeeded, &[1.0, 1.0, 1.0, 0.1]),
        ("b", Running, &[0.0, 0.0, 0.0, 0.2]),
    ];
    assert_eq!(decide(&p, &o, &trials), ["b"]);
    let p = pruner(&[("eta", "2"), ("bootstrap_count", "3")]);
    let trials: [(&str, TrialState, &[f64]); 2] =
        [("a", Succeeded, &[0.1]), ("b", Running, &[0.2])];
    assert!(
        decide(&p, &o, &trials).is_empty(),
        "only two trials reached step 1"
    );
}

#[test]
fn pruner_settings_errors() {
    let err = |pairs: &[(&str, &str)]| {
        AshaPruner::from_settings(&settings(pairs))
            .unwrap_err()
            .to_string()
    };
    let e = err(&[("eta", "1")]);
    assert!(
        e.contains("setting eta of algorithm asha: value \"1\""),
        "{e}"
    );
    let e = err(&[("min_resource", "0")]);
    assert!(e.contains("min_resource must be an integer >= 1"), "{e}");
    let e = err(&[("bootstrap_count", "-1")]);
    assert!(e.contains("bootstrap_count") && e.contains("\"-1\""), "{e}");
    let e = err(&[("min_early_stopping_rate", "64"), ("eta", "9")]);
    assert!(e.contains("overflows"), "{e}");
    let e = err(&[("max_resource", "9")]);
    assert!(
        e.contains("unknown setting \"max_resource\" for algorithm asha"),
        "{e}"
    );
    assert_eq!(
        AshaPruner::from_settings(&[]).unwrap(),
        pruner(&[
            ("min_resource", "1"),
            ("eta", "3"),
            ("min_early_stopping_rate", "0")
        ])
    );
}

/// A promotion killed by an interruption ran to no verdict: its parent is promoted again.
#[test]
fn a_killed_promotion_is_made_again() {
    let space = space_with(epochs(1, 100));
    let o = Objective::new("loss", Direction::Minimize);
    let a = asha(&[("max_resource", "9")], &space);
    let mut trials = rung0(&space, &o, &a);
    let s = a.suggest(&request(&space, &o, &trials, 1, 5)).unwrap();
    assert_eq!(s.proposals[0].labels[PARENT_LABEL], "t1");
    let mut killed = from_proposal("k".into(), s.proposals[0].clone());
    killed.state = TrialState::Killed;
    trials.push(killed);
    let s = a.suggest(&request(&space, &o, &trials, 1, 5)).unwrap();
    assert_eq!(s.proposals[0].labels[PARENT_LABEL], "t1");
    assert_eq!(s.proposals[0].labels[RUNG_LABEL], "1");
}
