//! A caller's cancel flag: set before the call, every algorithm answers `Cancelled` naming
//! itself; never set, the cancellable call proposes exactly what `suggest` does.

// Helpers outside #[test] functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use vernier_core::{
    Assignment, Cancel, CoreError, Direction, Distribution, Domain, Objective, ParamValue,
    Parameter, SearchSpace, SuggestRequest, TrialRecord, TrialState,
};

fn space() -> SearchSpace {
    let unit = |name: &str| Parameter {
        name: name.into(),
        domain: Domain::Double {
            min: 0.0,
            max: 1.0,
            step: None,
        },
        distribution: Distribution::Uniform,
    };
    SearchSpace::new(vec![unit("x"), unit("y")]).unwrap()
}

fn history(n: usize) -> Vec<TrialRecord> {
    (0..n)
        .map(|i| {
            let (x, y) = ((i % 7) as f64 / 7.0, (i % 5) as f64 / 5.0);
            let loss = (x - 0.3).powi(2) + (y - 0.6).powi(2);
            TrialRecord {
                name: format!("t{i}"),
                assignment: Assignment(vec![
                    ("x".into(), ParamValue::Double(x)),
                    ("y".into(), ParamValue::Double(y)),
                ]),
                state: TrialState::Succeeded,
                objective: Some(loss),
                labels: BTreeMap::new(),
                metrics: BTreeMap::from([("loss".to_string(), loss)]),
            }
        })
        .collect()
}

#[test]
fn a_cancelled_call_stops_and_an_uncancelled_one_matches_suggest() {
    let space = space();
    let objective = Objective::new("loss", Direction::Minimize).with_primary_term();
    let trials = history(30);
    let req = SuggestRequest {
        space: &space,
        objective: &objective,
        trials: &trials,
        count: 3,
        seed: 11,
        state: None,
    };
    for name in [
        "random",
        "tpe",
        "multivariate-tpe",
        "bayesianoptimization",
        "cmaes",
    ] {
        let s = vernier_algorithms::build(name, &[], &space, &objective).unwrap();
        let cancelled = Cancel::new();
        cancelled.cancel();
        match s.suggest_cancellable(&req, &cancelled) {
            Err(CoreError::Cancelled(algorithm)) => assert_eq!(algorithm, name),
            other => panic!("{name}: {other:?}"),
        }
        let fresh = s.suggest_cancellable(&req, &Cancel::new()).unwrap();
        assert_eq!(fresh, s.suggest(&req).unwrap(), "{name}");
        assert_eq!(fresh.proposals.len(), 3, "{name}");
    }
}
