//! Checks of the multi-objective and constraint extensions (`objective.objectives`,
//! `objective.constraints`): each entry well-formed, the first objective agreeing with Katib's
//! primary fields, and the algorithm able to search several objectives.

use super::Errors;
use crate::known::{CONSTRAINT_OPS, MULTI_OBJECTIVE_ALGORITHMS, OBJECTIVE_TYPES};
use crate::types::{ConstraintSpec, Experiment, ObjectiveSpec, ObjectiveTermSpec};

pub(crate) fn check(exp: &Experiment, errs: &mut Errors) {
    let Some(obj) = &exp.spec.objective else {
        return;
    };
    for (i, t) in obj.objectives.iter().enumerate() {
        check_objective(i, t, &obj.objectives[..i], errs);
    }
    if let Some(first) = obj.objectives.first() {
        check_first_agrees(obj, first, errs);
    }
    for (i, c) in obj.constraints.iter().enumerate() {
        check_constraint(i, c, errs);
    }
    check_algorithm(exp, obj, errs);
}

/// `objectives[i]`, well-formed and not a repeat of an `earlier` one.
fn check_objective(
    i: usize,
    t: &ObjectiveTermSpec,
    earlier: &[ObjectiveTermSpec],
    errs: &mut Errors,
) {
    let path = format!("spec.objective.objectives[{i}]");
    if t.metric_name.trim().is_empty() {
        errs.required(
            format!("{path}.metricName"),
            "name the metric the trials report",
        );
    } else if earlier.iter().any(|o| o.metric_name == t.metric_name) {
        errs.add(
            format!("{path}.metricName"),
            format!("value {:?} appears twice", t.metric_name),
        );
    }
    match t.type_.as_deref().filter(|t| !t.is_empty()) {
        None => errs.required(format!("{path}.type"), "use minimize or maximize"),
        Some(v) if !OBJECTIVE_TYPES.contains(&v) => {
            errs.not_one_of(format!("{path}.type"), v, OBJECTIVE_TYPES)
        }
        Some(_) => {}
    }
    if let Some(goal) = t.goal
        && !goal.is_finite()
    {
        errs.add(
            format!("{path}.goal"),
            format!("value {goal} is not a finite number"),
        );
    }
}

/// The first objective is Katib's primary one: its fields must not contradict
/// `objectiveMetricName`, `type` and `goal`.
fn check_first_agrees(obj: &ObjectiveSpec, first: &ObjectiveTermSpec, errs: &mut Errors) {
    let primary = obj.objective_metric_name.as_deref().unwrap_or("");
    if !first.metric_name.is_empty() && !primary.is_empty() && first.metric_name != primary {
        errs.add(
            "spec.objective.objectives[0].metricName",
            format!(
                "value {:?} differs from spec.objective.objectiveMetricName ({primary:?}); \
                 hint: the first objective is the primary one, so list {primary:?} first or \
                 remove objectiveMetricName",
                first.metric_name
            ),
        );
    }
    if let (Some(a), Some(b)) = (first.type_.as_deref(), obj.type_.as_deref())
        && a != b
    {
        errs.add(
            "spec.objective.objectives[0].type",
            format!(
                "value {a:?} differs from spec.objective.type ({b:?}); hint: remove \
                 objective.type or make them equal"
            ),
        );
    }
    if let (Some(a), Some(b)) = (first.goal, obj.goal)
        && a != b
    {
        errs.add(
            "spec.objective.objectives[0].goal",
            format!(
                "value {a} differs from spec.objective.goal ({b}); hint: remove \
                 objective.goal or make them equal"
            ),
        );
    }
}

/// One constraint: a metric, a known comparison and a finite bound.
fn check_constraint(i: usize, c: &ConstraintSpec, errs: &mut Errors) {
    let path = format!("spec.objective.constraints[{i}]");
    if c.metric_name.trim().is_empty() {
        errs.required(
            format!("{path}.metricName"),
            "name the metric the constraint bounds, e.g. latency_ms",
        );
    }
    match c.op.as_deref().filter(|o| !o.is_empty()) {
        None => errs.required(
            format!("{path}.op"),
            &format!("use one of {}", CONSTRAINT_OPS.join(", ")),
        ),
        Some(op) if !CONSTRAINT_OPS.contains(&op) => {
            errs.not_one_of(format!("{path}.op"), op, CONSTRAINT_OPS)
        }
        Some(_) => {}
    }
    match c.value {
        None => errs.required(format!("{path}.value"), "give the bound, e.g. 20"),
        Some(v) if !v.is_finite() => errs.add(
            format!("{path}.value"),
            format!("value {v} is not a finite number"),
        ),
        Some(_) => {}
    }
}

/// Several objectives need an algorithm that searches several.
fn check_algorithm(exp: &Experiment, obj: &ObjectiveSpec, errs: &mut Errors) {
    if obj.objectives.len() > 1
        && let Some(name) = exp
            .spec
            .algorithm
            .as_ref()
            .and_then(|a| a.algorithm_name.as_deref())
            .filter(|n| !n.is_empty() && !MULTI_OBJECTIVE_ALGORITHMS.contains(n))
    {
        errs.add(
            "spec.algorithm.algorithmName",
            format!(
                "value {name:?} optimises a single objective but spec.objective.objectives \
                 lists {}; hint: use one of {}",
                obj.objectives.len(),
                MULTI_OBJECTIVE_ALGORITHMS.join(", ")
            ),
        );
    }
}
