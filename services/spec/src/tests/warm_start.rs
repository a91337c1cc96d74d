//! The warm-start and enqueued-trial extensions: accepted when right, reported with their
//! path when wrong, absent from a Katib spec that does not use them; and ASHA early stopping.

use super::{RANDOM, assert_error, mutated, parse_err, parse_ok, set};
use crate::enqueue::{enqueued_assignment, pairs_of};
use serde_json::json;

fn with_extensions(warm: serde_json::Value, enqueued: serde_json::Value) -> String {
    mutated(RANDOM, |v| {
        set(v, "/spec/warmStart", warm);
        set(v, "/spec/enqueuedTrials", enqueued);
    })
}

#[test]
fn warm_start_and_enqueued_trials_parse_and_round_trip() {
    let text = with_extensions(
        json!({"experiments": ["first-run", "second-run"], "file": "known.csv"}),
        json!([{"parameterAssignments": [
            {"name": "lr", "value": "0.02"},
            {"name": "momentum", "value": 0.6},
            {"name": "optimizer", "value": "adam"}
        ]}]),
    );
    let exp = parse_ok(&text);
    let ws = exp.spec.warm_start.as_ref().unwrap();
    assert_eq!(ws.experiments, ["first-run", "second-run"]);
    assert_eq!(ws.file.as_deref(), Some("known.csv"));
    let space = exp.search_space().unwrap();
    let a = enqueued_assignment(&space, &pairs_of(&exp.spec.enqueued_trials[0])).unwrap();
    assert_eq!(a.to_string(), "lr=0.02, momentum=0.6, optimizer=adam");
    let again = parse_ok(&serde_json::to_string(&exp).unwrap());
    assert_eq!(again, exp);

    // A Katib spec without the extensions writes neither field back.
    let plain = serde_json::to_value(parse_ok(RANDOM)).unwrap();
    assert!(plain["spec"].get("warmStart").is_none());
    assert!(plain["spec"].get("enqueuedTrials").is_none());
}

/// A value the space's rounding tolerance lets in a hair outside a bound runs at the bound;
/// one clearly outside is refused.
#[test]
fn an_enqueued_double_a_hair_outside_its_bounds_runs_at_the_bound() {
    let space = parse_ok(RANDOM).search_space().unwrap();
    let pairs = |lr: &str, momentum: &str| {
        [("lr", lr), ("momentum", momentum), ("optimizer", "adam")]
            .map(|(n, v)| (n.to_string(), v.to_string()))
    };
    let a = enqueued_assignment(&space, &pairs("0.0099999999999", "0.9000000000001")).unwrap();
    assert_eq!(a.to_string(), "lr=0.01, momentum=0.9, optimizer=adam");
    let inside = enqueued_assignment(&space, &pairs("0.02", "0.6")).unwrap();
    assert_eq!(inside.to_string(), "lr=0.02, momentum=0.6, optimizer=adam");
    assert!(enqueued_assignment(&space, &pairs("0.0099", "0.6")).is_err());
}

#[test]
fn warm_start_errors_name_the_field() {
    let e = parse_err(&with_extensions(json!({}), json!([])));
    assert_error(
        &e,
        "spec.warmStart",
        "is required; hint: name earlier experiments",
    );
    let e = parse_err(&with_extensions(
        json!({"experiments": ["random", "Old_Run", "a", "a"], "file": " "}),
        json!([]),
    ));
    assert_error(
        &e,
        "spec.warmStart.experiments[0]",
        r#"value "random" is this experiment"#,
    );
    assert_error(
        &e,
        "spec.warmStart.experiments[1]",
        r#"value "Old_Run" is not a valid experiment name"#,
    );
    assert_error(
        &e,
        "spec.warmStart.experiments[3]",
        r#"value "a" is listed twice"#,
    );
    assert_error(&e, "spec.warmStart.file", "is empty; hint:");
    let e = parse_err(&mutated(RANDOM, |v| {
        set(v, "/spec/warmStart", json!({"experiment": ["a"]}))
    }));
    assert_error(&e, "spec.warmStart.experiment", "unknown field");
}

#[test]
fn enqueued_trials_are_checked_against_the_space() {
    let entry = |pairs: serde_json::Value| json!([{"parameterAssignments": pairs}]);
    let cases = [
        (
            json!([{"name": "lr", "value": "0.02"}, {"name": "momentum", "value": "0.6"},
                   {"name": "optimizer", "value": "adam"}, {"name": "epochs", "value": "3"}]),
            r#"parameter "epochs" is not in the search space; hint: the parameters are lr, momentum, optimizer"#,
        ),
        (
            json!([{"name": "lr", "value": "0.5"}, {"name": "momentum", "value": "0.6"},
                   {"name": "optimizer", "value": "adam"}]),
            r#"parameter lr: value "0.5" is not valid"#,
        ),
        (
            json!([{"name": "lr", "value": "0.02"}, {"name": "momentum", "value": "0.6"},
                   {"name": "optimizer", "value": "rmsprop"}]),
            r#"parameter optimizer: value "rmsprop" is not valid"#,
        ),
        (
            json!([{"name": "lr", "value": "0.02"}, {"name": "lr", "value": "0.03"},
                   {"name": "momentum", "value": "0.6"}, {"name": "optimizer", "value": "adam"}]),
            r#"parameter "lr" is given more than once"#,
        ),
    ];
    for (pairs, needle) in cases {
        let e = parse_err(&mutated(RANDOM, |v| {
            set(v, "/spec/enqueuedTrials", entry(pairs))
        }));
        assert_error(&e, "spec.enqueuedTrials[0].parameterAssignments", needle);
    }
    // Parameters left out are drawn when the trial is made, as Optuna's enqueue_trial does.
    let partial = parse_ok(&mutated(RANDOM, |v| {
        set(
            v,
            "/spec/enqueuedTrials",
            entry(json!([{"name": "momentum", "value": "0.6"}])),
        )
    }));
    let space = partial.search_space().unwrap();
    let values =
        crate::enqueue::enqueued_values(&space, &pairs_of(&partial.spec.enqueued_trials[0]));
    assert_eq!(
        crate::enqueue::describe_values(&values.unwrap()),
        "lr=(drawn), momentum=0.6, optimizer=(drawn)"
    );
    let e = enqueued_assignment(&space, &pairs_of(&partial.spec.enqueued_trials[0]));
    assert!(
        e.unwrap_err()
            .starts_with("parameter(s) lr, optimizer missing; hint:")
    );
    // A NAS experiment has no parameters to give values to.
    let nas = vernier_core::SearchSpace::for_nas(vernier_core::NasConfig::default());
    let pairs = [("num-layers".to_string(), "3".to_string())];
    let e = enqueued_assignment(&nas, &pairs).unwrap_err();
    assert!(
        e.contains("has no spec.parameters")
            && e.contains("hint: configurations cannot be enqueued"),
        "{e}"
    );
}

#[test]
fn asha_is_an_early_stopping_algorithm() {
    let exp = parse_ok(&mutated(RANDOM, |v| {
        set(v, "/spec/earlyStopping", json!({"algorithmName": "asha"}))
    }));
    assert_eq!(
        exp.spec.early_stopping.unwrap().algorithm_name.as_deref(),
        Some("asha")
    );
}

/// A configuration enqueued again, or one a trial already ran, is found by value.
#[test]
fn repeated_configurations_are_found_by_value() {
    use crate::enqueue::repeated_by;
    let text = with_extensions(
        json!({"experiments": ["first-run"]}),
        json!([{"parameterAssignments": [
            {"name": "lr", "value": "0.02"},
            {"name": "momentum", "value": "0.6"},
            {"name": "optimizer", "value": "adam"}
        ]}]),
    );
    let exp = parse_ok(&text);
    let space = exp.search_space().unwrap();
    let pairs = |lr: &str, opt: &str| -> Vec<(String, String)> {
        vec![
            ("lr".into(), lr.into()),
            ("momentum".into(), "0.60".into()),
            ("optimizer".into(), opt.into()),
        ]
    };
    let ran = vec![("t-1".to_string(), pairs("0.03", "sgd"))];
    let queued = &exp.spec.enqueued_trials;
    let found = |lr: &str, opt: &str| {
        let a = enqueued_assignment(&space, &pairs(lr, opt)).unwrap();
        repeated_by(&space, &a, queued, &ran)
    };
    assert_eq!(
        found("0.020", "adam").as_deref(),
        Some("spec.enqueuedTrials[0]")
    );
    assert_eq!(found("3e-2", "sgd").as_deref(), Some("trial t-1"));
    assert_eq!(found("0.02", "sgd"), None);
}
