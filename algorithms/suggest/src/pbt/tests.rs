//! PBT's settings checks, generations, exploit/explore rule, retries and restarts.

use super::explore::perturb;
use super::*;
use crate::test_params::pairs as settings;
use proptest::prelude::*;
use vernier_core::{Direction, Distribution, Domain, ParamValue, Parameter, TrialState};

fn base(extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut s = settings(&[
        ("suggestion_trial_dir", "/var/log/katib/checkpoints/"),
        ("n_population", "5"),
        ("truncation_threshold", "0.2"),
        ("random_state", "7"),
    ]);
    s.retain(|(n, _)| !extra.iter().any(|(k, _)| k == n));
    s.extend(settings(extra));
    s
}

fn space() -> SearchSpace {
    SearchSpace::new(vec![
        Parameter {
            name: "lr".into(),
            domain: Domain::Double {
                min: 0.0001,
                max: 0.02,
                step: Some(0.0001),
            },
            distribution: Distribution::Uniform,
        },
        Parameter {
            name: "batch".into(),
            domain: Domain::Int {
                min: 1,
                max: 64,
                step: None,
            },
            distribution: Distribution::Uniform,
        },
    ])
    .unwrap()
}

fn err(pairs: Vec<(String, String)>) -> String {
    let o = Objective::new("acc", Direction::Maximize);
    crate::build(ALGORITHM, &pairs, &space(), &o)
        .unwrap_err()
        .to_string()
}

#[test]
fn settings_follow_katib_rules() {
    assert!(Pbt::new(ALGORITHM, &base(&[])).is_ok());
    assert!(Pbt::new(ALGORITHM, &base(&[("resample_probability", "0.5")])).is_ok());
    assert!(Pbt::new(ALGORITHM, &base(&[("truncation_threshold", "1")])).is_ok());
    type Case = (Vec<(String, String)>, &'static [&'static str]);
    let cases: &[Case] = &[
        (
            settings(&[("n_population", "10")]),
            &[
                "setting suggestion_trial_dir, truncation_threshold of algorithm pbt",
                "is not set",
                "hint:",
            ],
        ),
        (
            base(&[("n_population", "4")]),
            &["n_population", "\"4\"", "should be >= 5"],
        ),
        (
            base(&[("n_population", "1000000000")]),
            &["n_population", "\"1000000000\"", "at most 100000"],
        ),
        (
            base(&[("n_population", "5.5")]),
            &["n_population", "\"5.5\"", "does not parse"],
        ),
        (
            base(&[("truncation_threshold", "1.5")]),
            &[
                "truncation_threshold",
                "\"1.5\"",
                "between 0 and 1, inclusive",
            ],
        ),
        (
            base(&[("resample_probability", "-0.1")]),
            &["resample_probability", "\"-0.1\"", "perturb at 0.8 or 1.2"],
        ),
        (
            base(&[("suggestion_trial_dir", "checkpoints")]),
            &["suggestion_trial_dir", "\"checkpoints\"", "absolute path"],
        ),
        (
            base(&[("population_size", "5")]),
            &["unknown setting \"population_size\" for algorithm pbt"],
        ),
    ];
    for (pairs, wanted) in cases {
        let e = err(pairs.clone());
        for w in *wanted {
            assert!(e.contains(w), "{pairs:?}: {e:?} lacks {w:?}");
        }
    }
}

fn record(p: &Proposal, name: String, state: TrialState, value: Option<f64>) -> TrialRecord {
    TrialRecord {
        name,
        assignment: p.assignment.clone(),
        state,
        objective: value,
        labels: p.labels.clone(),
        metrics: BTreeMap::new(),
    }
}

fn ask(pbt: &Pbt, trials: &[TrialRecord], count: usize) -> Vec<Proposal> {
    let o = Objective::new("acc", Direction::Maximize);
    let s = space();
    pbt.suggest(&SuggestRequest {
        space: &s,
        objective: &o,
        trials,
        count,
        seed: 99,
        state: None,
    })
    .unwrap()
    .proposals
}

fn lr(p: &Proposal) -> f64 {
    p.assignment.get("lr").unwrap().as_f64().unwrap()
}

#[test]
fn seeded_first_generation_has_exact_values() {
    let pbt = Pbt::new(ALGORITHM, &base(&[])).unwrap();
    let first = ask(&pbt, &[], 10);
    assert_eq!(first.len(), 5, "one generation at a time");
    let shown: Vec<String> = first.iter().map(|p| p.assignment.to_string()).collect();
    assert_eq!(shown, EXPECTED_FIRST);
    for (i, p) in first.iter().enumerate() {
        assert_eq!(p.labels[GENERATION_LABEL], "0");
        assert_eq!(p.labels[MEMBER_LABEL], i.to_string());
        assert!(!p.labels.contains_key(PARENT_LABEL));
    }
}

const EXPECTED_FIRST: [&str; 5] = [
    "lr=0.0111, batch=13",
    "lr=0.0179, batch=57",
    "lr=0.0114, batch=57",
    "lr=0.02, batch=55",
    "lr=0.0028, batch=46",
];

/// Generation 0 finished with accuracy = member index (member 0 worst, member 4 best).
fn finished_generation(pbt: &Pbt) -> Vec<TrialRecord> {
    ask(pbt, &[], 5)
        .iter()
        .enumerate()
        .map(|(i, p)| record(p, format!("t{i}"), TrialState::Succeeded, Some(i as f64)))
        .collect()
}

#[test]
fn the_worst_member_exploits_the_best_and_the_rest_continue() {
    let pbt = Pbt::new(ALGORITHM, &base(&[])).unwrap();
    let gen0 = finished_generation(&pbt);
    let next = ask(&pbt, &gen0, 5);
    assert_eq!(next.len(), 5);
    // floor(5 · 0.2) = 1: member 0 (worst) takes member 4's (best) checkpoint.
    assert_eq!(next[0].labels[PARENT_LABEL], "t4");
    let best = lr(&Proposal::new(gen0[4].assignment.clone()));
    let scaled = lr(&next[0]);
    assert!(
        [0.8, 1.2]
            .iter()
            .any(|f| (crate::sample::snap(best * f, 0.0001, 0.02, 0.0001) - scaled).abs() < 1e-12),
        "{best} -> {scaled}"
    );
    // lr 0.0028 · 1.2 on the 0.0001 grid, batch 46 · 1.2 rounded.
    assert_eq!(next[0].assignment.to_string(), "lr=0.0034, batch=55");
    for (i, p) in next.iter().enumerate().skip(1) {
        assert_eq!(p.labels[PARENT_LABEL], format!("t{i}"));
        assert_eq!(p.assignment, gen0[i].assignment);
        assert_eq!(p.labels[GENERATION_LABEL], "1");
    }
}

#[test]
fn resample_probability_one_draws_from_the_prior() {
    let pbt = Pbt::new(
        ALGORITHM,
        &base(&[
            ("resample_probability", "1"),
            ("truncation_threshold", "0.4"),
        ]),
    )
    .unwrap();
    let gen0 = finished_generation(&pbt);
    let next = ask(&pbt, &gen0, 5);
    // floor(5 · 0.4) = 2: members 0 and 1 take from members 4 and 3, resampled.
    for p in &next[..2] {
        assert!(["t3", "t4"].contains(&p.labels[PARENT_LABEL].as_str()));
        assert!(gen0.iter().all(|t| t.assignment != p.assignment));
    }
}

#[test]
fn waits_for_the_generation_and_retries_failures() {
    let pbt = Pbt::new(ALGORITHM, &base(&[])).unwrap();
    let mut trials = finished_generation(&pbt);
    trials[2].state = TrialState::Running;
    assert!(ask(&pbt, &trials, 5).is_empty(), "member 2 still runs");
    trials[2].state = TrialState::Failed;
    trials[2].objective = None;
    let retry = ask(&pbt, &trials, 5);
    assert_eq!(retry.len(), 1);
    assert_eq!(retry[0].assignment, trials[2].assignment);
    assert_eq!(retry[0].labels, trials[2].labels);
}

/// A Katib controller leaves trials without metrics out of its requests: a slot whose previous
/// trial is missing continues a top member instead of waiting for a result that never comes.
#[test]
fn a_slot_whose_previous_trial_is_left_out_continues_a_top_member() {
    let pbt = Pbt::new(ALGORITHM, &base(&[])).unwrap();
    let gen0 = finished_generation(&pbt);
    let mut next = ask(&pbt, &gen0, 5);
    // Generation 1: members 0, 1 and 4 finished; member 2's trial is left out of the request;
    // member 3's generation-0 trial is left out too, so only generation 1's slots are asked.
    let mut trials: Vec<TrialRecord> = gen0.iter().filter(|t| t.name != "t3").cloned().collect();
    for (i, p) in next.drain(..).enumerate() {
        if [0, 1, 4].contains(&i) {
            trials.push(record(
                &p,
                format!("g1-{i}"),
                TrialState::Succeeded,
                Some(i as f64),
            ));
        }
    }
    let again = ask(&pbt, &trials, 5);
    let members: Vec<&str> = again
        .iter()
        .map(|p| p.labels[MEMBER_LABEL].as_str())
        .collect();
    assert_eq!(members, ["2", "3"]);
    // Member 3 has no generation-0 result, so it continues the best of the others (t4).
    assert_eq!(again[1].labels[PARENT_LABEL], "t4");
    assert_eq!(again[1].labels[GENERATION_LABEL], "1");
}

/// Runs `rounds` trials, asking `batch` at a time, scoring accuracy = 1 − |lr − 0.01|·50 plus
/// the parent's accuracy (a trainer that resumes), optionally from a fresh `Pbt` each call.
fn simulate(batch: usize, rounds: usize, rebuild: bool) -> Vec<TrialRecord> {
    let mut pbt = Pbt::new(ALGORITHM, &base(&[])).unwrap();
    let mut trials: Vec<TrialRecord> = Vec::new();
    while trials.len() < rounds {
        if rebuild {
            pbt = Pbt::new(ALGORITHM, &base(&[])).unwrap();
        }
        let ps = ask(&pbt, &trials, batch);
        assert!(!ps.is_empty());
        for p in ps {
            let inherited = p
                .labels
                .get(PARENT_LABEL)
                .and_then(|n| trials.iter().find(|t| &t.name == n))
                .and_then(|t| t.objective)
                .unwrap_or(0.0);
            let gain = 1.0 - (lr(&p) - 0.01).abs() * 50.0;
            let name = format!("t{}", trials.len());
            trials.push(record(
                &p,
                name,
                TrialState::Succeeded,
                Some(inherited + gain),
            ));
        }
    }
    trials
}

#[test]
fn a_rebuilt_population_proposes_what_an_uninterrupted_one_does() {
    let whole = simulate(5, 30, false);
    let pieces = simulate(2, 30, true);
    let key = |ts: &[TrialRecord]| -> Vec<(String, BTreeMap<String, String>)> {
        ts.iter()
            .take(30)
            .map(|t| (t.assignment.key(), t.labels.clone()))
            .collect()
    };
    assert_eq!(key(&whole), key(&pieces));
    // Later generations converge on good learning rates: the best member improves.
    let best = |g: &str| {
        whole
            .iter()
            .filter(|t| t.labels[GENERATION_LABEL] == g)
            .map(|t| t.objective.unwrap())
            .fold(f64::MIN, f64::max)
    };
    assert!(best("5") > best("0") + 4.0, "{} {}", best("5"), best("0"));
}

#[test]
fn perturbation_table() {
    let p = |domain: Domain| Parameter {
        name: "p".into(),
        domain,
        distribution: Distribution::Uniform,
    };
    let int = p(Domain::Int {
        min: 1,
        max: 10,
        step: None,
    });
    let stepped = p(Domain::Double {
        min: 0.0,
        max: 1.0,
        step: Some(0.25),
    });
    let discrete = p(Domain::Discrete {
        values: vec!["1".into(), "2".into(), "4".into()],
    });
    let cat = p(Domain::Categorical {
        values: vec!["a".into(), "b".into(), "c".into()],
    });
    let wide = p(Domain::Int {
        min: i64::MIN,
        max: i64::MAX,
        step: None,
    });
    let c = |s: &str| ParamValue::Choice(s.into());
    let cases = [
        (&int, ParamValue::Int(1), true, ParamValue::Int(2)),
        // The whole of i64: no overflow, and the ends hold.
        (
            &wide,
            ParamValue::Int(i64::MAX),
            true,
            ParamValue::Int(i64::MAX),
        ),
        (&wide, ParamValue::Int(1000), true, ParamValue::Int(1200)),
        (&wide, ParamValue::Int(-1000), true, ParamValue::Int(-1200)),
        (&int, ParamValue::Int(1), false, ParamValue::Int(1)),
        (&int, ParamValue::Int(10), true, ParamValue::Int(10)),
        (&int, ParamValue::Int(10), false, ParamValue::Int(8)),
        // 0.6 and 0.4 round back to 0.5 on the grid: one step instead, as for ints.
        (
            &stepped,
            ParamValue::Double(0.5),
            true,
            ParamValue::Double(0.75),
        ),
        (
            &stepped,
            ParamValue::Double(0.5),
            false,
            ParamValue::Double(0.25),
        ),
        (
            &stepped,
            ParamValue::Double(0.0),
            false,
            ParamValue::Double(0.0),
        ),
        (
            &stepped,
            ParamValue::Double(1.0),
            true,
            ParamValue::Double(1.0),
        ),
        (
            &stepped,
            ParamValue::Double(1.0),
            false,
            ParamValue::Double(0.75),
        ),
        (&discrete, c("4"), true, c("4")),
        (&discrete, c("2"), false, c("1")),
        (&cat, c("c"), true, c("a")),
        (&cat, c("a"), false, c("c")),
    ];
    for (param, from, up, want) in cases {
        assert_eq!(
            perturb(param, &from, up),
            want,
            "{:?} {from:?} up={up}",
            param.domain
        );
    }
}

proptest! {
    #[test]
    fn proposals_stay_in_the_space(
        seed in 0u64..1000,
        resample in prop::option::of(0.0f64..=1.0),
        values in prop::collection::vec(-5.0f64..5.0, 10),
    ) {
        let mut pairs = base(&[("truncation_threshold", "0.4"), ("random_state", &seed.to_string())]);
        if let Some(r) = resample {
            pairs.push(("resample_probability".into(), r.to_string()));
        }
        let pbt = Pbt::new(ALGORITHM, &pairs).unwrap();
        let s = space();
        let mut trials: Vec<TrialRecord> = Vec::new();
        for v in values {
            for p in ask(&pbt, &trials, 5) {
                prop_assert!(s.check(&p.assignment).is_ok(), "{}", p.assignment);
                let name = format!("t{}", trials.len());
                trials.push(record(&p, name, TrialState::Succeeded, Some(v + trials.len() as f64 * 0.1)));
            }
        }
    }
}

#[test]
fn the_trial_dir_setting_is_the_checkpoint_mechanisms() {
    assert_eq!(
        crate::checkpoint::trial_dir_setting(&base(&[])),
        Some("/var/log/katib/checkpoints/")
    );
    let mut labels = BTreeMap::new();
    labels.insert(PARENT_LABEL.to_string(), "t4".to_string());
    assert_eq!(crate::checkpoint::parent_trial(&labels), Some("t4"));
}

/// `floor(n·truncation)` members are replaced, at least one above a threshold of 0 and at
/// most half the population.
#[test]
fn truncation_replaces_at_least_one_and_at_most_half() {
    // (members, truncation, replaced)
    let cases = [
        (5, 0.1, 1),
        (8, 0.1, 1),
        (5, 0.0, 0),
        (5, 0.2, 1),
        (10, 0.25, 2),
        (10, 1.0, 5),
        (1, 0.5, 0),
    ];
    for (members, truncation, replaced) in cases {
        assert_eq!(
            super::truncated(members, truncation),
            replaced,
            "{members} members at {truncation}"
        );
    }
}
