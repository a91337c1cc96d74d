//! The multi-objective and constraint extensions: a spec with them parses, defaults and
//! converts; a Katib spec without them converts as before; each mistake names its field.

use super::{RANDOM, assert_error, mutated, parse_err, parse_ok, set};
use serde_json::json;
use vernier_core::{Constraint, ConstraintOp, Direction, MetricStrategy, ObjectiveTerm};

fn with_objectives(f: impl FnOnce(&mut serde_json::Value)) -> String {
    mutated(RANDOM, |v| {
        let obj = v.pointer_mut("/spec/objective").unwrap();
        obj.as_object_mut().unwrap().remove("objectiveMetricName");
        obj.as_object_mut().unwrap().remove("type");
        obj.as_object_mut().unwrap().remove("goal");
        set(
            v,
            "/spec/objective/objectives",
            json!([
                {"metricName": "loss", "type": "minimize"},
                {"metricName": "accuracy", "type": "maximize", "goal": 0.99}
            ]),
        );
        set(
            v,
            "/spec/objective/constraints",
            json!([{"metricName": "latency_ms", "op": "<=", "value": 20}]),
        );
        f(v);
    })
}

#[test]
fn katib_spec_keeps_one_objective_and_no_constraints() {
    let o = parse_ok(RANDOM).objective().unwrap();
    assert!(!o.is_multi());
    assert_eq!(
        o.objectives,
        vec![ObjectiveTerm {
            metric: "loss".into(),
            direction: Direction::Minimize,
            goal: Some(0.001),
        }]
    );
    assert!(o.constraints.is_empty());
    assert_eq!(o.metric_names(), vec!["loss", "accuracy"]);
}

#[test]
fn objectives_fill_katib_fields_and_strategies() {
    let exp = parse_ok(&with_objectives(|_| {}));
    let obj = exp.spec.objective.as_ref().unwrap();
    assert_eq!(obj.objective_metric_name.as_deref(), Some("loss"));
    assert_eq!(obj.type_.as_deref(), Some("minimize"));
    assert_eq!(obj.additional_metric_names, vec!["accuracy", "latency_ms"]);
    let o = exp.objective().unwrap();
    assert!(o.is_multi());
    assert_eq!(o.objectives[1].direction, Direction::Maximize);
    assert_eq!(o.objectives[1].goal, Some(0.99));
    // Each objective's strategy follows its own direction, the constraint's is latest.
    assert_eq!(o.strategy_for("accuracy"), Some(MetricStrategy::Max));
    assert_eq!(o.strategy_for("latency_ms"), Some(MetricStrategy::Latest));
    assert_eq!(
        o.constraints,
        vec![Constraint {
            metric: "latency_ms".into(),
            op: ConstraintOp::Le,
            bound: 20.0,
        }]
    );
    // Serialising and parsing again is the identity.
    let again = parse_ok(&serde_json::to_string(&exp).unwrap());
    assert_eq!(again, exp);
}

#[test]
fn first_objective_must_agree_with_katib_fields() {
    let e = parse_err(&with_objectives(|v| {
        set(v, "/spec/objective/objectiveMetricName", json!("accuracy"));
    }));
    assert_error(
        &e,
        "spec.objective.objectives[0].metricName",
        r#"value "loss" differs from spec.objective.objectiveMetricName ("accuracy")"#,
    );
    let e = parse_err(&with_objectives(|v| {
        set(v, "/spec/objective/type", json!("maximize"));
    }));
    assert_error(
        &e,
        "spec.objective.objectives[0].type",
        r#"value "minimize" differs from spec.objective.type ("maximize")"#,
    );
    let e = parse_err(&with_objectives(|v| {
        set(v, "/spec/objective/objectives/0/goal", json!(1));
        set(v, "/spec/objective/goal", json!(2));
    }));
    assert_error(
        &e,
        "spec.objective.objectives[0].goal",
        "value 1 differs from spec.objective.goal (2)",
    );
}

#[test]
fn bad_objective_entries_name_their_field() {
    let e = parse_err(&with_objectives(|v| {
        set(v, "/spec/objective/objectives/1/type", json!("maximise"));
        set(
            v,
            "/spec/objective/objectives/2",
            json!({"metricName": "loss", "type": "minimize"}),
        );
    }));
    assert_error(
        &e,
        "spec.objective.objectives[1].type",
        r#"value "maximise" is not supported; hint: did you mean "maximize"? use one of minimize, maximize"#,
    );
    assert_error(
        &e,
        "spec.objective.objectives[2].metricName",
        r#"value "loss" appears twice"#,
    );
}

#[test]
fn bad_constraints_name_their_field() {
    let e = parse_err(&with_objectives(|v| {
        set(
            v,
            "/spec/objective/constraints/0",
            json!({"metricName": "latency_ms", "op": "=<", "value": 20}),
        );
        set(
            v,
            "/spec/objective/constraints/1",
            json!({"op": "<", "metricName": "mem"}),
        );
    }));
    assert_error(
        &e,
        "spec.objective.constraints[0].op",
        r#"value "=<" is not supported; hint: use one of <=, >=, <, >"#,
    );
    assert_error(&e, "spec.objective.constraints[1].value", "is required");
    let e = parse_err(&with_objectives(|v| {
        set(v, "/spec/objective/constraints/0/bound", json!(3));
    }));
    assert_error(
        &e,
        "spec.objective.constraints[0].bound",
        r#"unknown field "bound""#,
    );
}

#[test]
fn single_objective_algorithm_is_rejected_for_several_objectives() {
    let e = parse_err(&with_objectives(|v| {
        set(v, "/spec/algorithm/algorithmName", json!("tpe"));
    }));
    assert_error(
        &e,
        "spec.algorithm.algorithmName",
        r#"value "tpe" optimises a single objective but spec.objective.objectives lists 2; hint: use one of random, grid, sobol, nsga2, bayesianoptimization"#,
    );
    // Constraints alone are fine with tpe.
    let text = mutated(RANDOM, |v| {
        set(v, "/spec/algorithm/algorithmName", json!("tpe"));
        set(
            v,
            "/spec/objective/constraints",
            json!([{"metricName": "accuracy", "op": ">", "value": 0.5}]),
        );
    });
    assert_eq!(parse_ok(&text).objective().unwrap().constraints.len(), 1);
}
