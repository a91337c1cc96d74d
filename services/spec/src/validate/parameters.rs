//! Rules for `spec.parameters` (and the parameters inside `nasConfig.operations`): Katib's shape
//! rules, plus the numeric checks without which no algorithm can run (numbers parse, min is
//! not above max, steps are positive). What Katib accepts and can run is accepted, with a
//! warning where it is odd (`super::warnings`).

use super::Errors;
use crate::known::{DISTRIBUTIONS, PARAMETER_TYPES};
use crate::number::{parse_f64, parse_i64};
use crate::types::{Experiment, FeasibleSpace, ParameterSpec};
use std::collections::HashMap;
use vernier_core::range::double_grid_fits;
use vernier_core::{MAX_LIST_VALUES, too_many_values};

pub(super) fn check(exp: &Experiment, errs: &mut Errors) {
    let s = &exp.spec;
    match (s.parameters.is_empty(), &s.nas_config) {
        (false, Some(_)) => errs.add(
            "spec.nasConfig",
            "must not be set together with spec.parameters; hint: keep only one of them",
        ),
        (true, None) => errs.required(
            "spec.parameters",
            "list the parameters to tune (or set spec.nasConfig)",
        ),
        _ => {}
    }
    check_list(&s.parameters, "spec.parameters", errs);
    if let Some(nas) = &s.nas_config {
        for (i, op) in nas.operations.iter().enumerate() {
            let path = format!("spec.nasConfig.operations[{i}]");
            check_list(&op.parameters, &format!("{path}.parameters"), errs);
        }
    }
}

fn check_list(params: &[ParameterSpec], list_path: &str, errs: &mut Errors) {
    // One map of first positions keeps the duplicate check linear in the list's length.
    let mut first: HashMap<&str, usize> = HashMap::with_capacity(params.len());
    for (i, p) in params.iter().enumerate() {
        let path = format!("{list_path}[{i}]");
        let j = *first.entry(p.name.as_str()).or_insert(i);
        if p.name.trim().is_empty() {
            errs.required(format!("{path}.name"), "");
        } else if p.name.contains('=') || p.name.chars().any(char::is_control) {
            errs.add(
                format!("{path}.name"),
                format!(
                    "value {:?} contains '=' or a control character, which makes every \
                     `name=value` line ambiguous; hint: use letters, digits, '-', '_' or '.'",
                    p.name
                ),
            );
        } else if j != i {
            errs.add(
                format!("{path}.name"),
                format!(
                    "value {:?} is already the name of {list_path}[{j}]; hint: parameter names must be unique",
                    p.name
                ),
            );
        }
        check_parameter(p, &path, errs);
    }
}

fn check_parameter(p: &ParameterSpec, path: &str, errs: &mut Errors) {
    let ty = match p.parameter_type.as_deref().filter(|t| !t.is_empty()) {
        None => {
            errs.required(
                format!("{path}.parameterType"),
                &format!("use one of {}", PARAMETER_TYPES.join(", ")),
            );
            None
        }
        Some(t) if !PARAMETER_TYPES.contains(&t) => {
            errs.not_one_of(format!("{path}.parameterType"), t, PARAMETER_TYPES);
            None
        }
        Some(t) => Some(t),
    };
    let fs_path = format!("{path}.feasibleSpace");
    let Some(fs) = p.feasible_space.as_ref().filter(|fs| !fs.is_empty()) else {
        errs.required(&fs_path, "give min and max, or a list of values");
        return;
    };
    if let Some(d) = fs.distribution.as_deref()
        && !d.is_empty()
        && !DISTRIBUTIONS.contains(&d)
    {
        errs.not_one_of(format!("{fs_path}.distribution"), d, DISTRIBUTIONS);
    }
    match ty {
        Some("double") => check_range(fs, &fs_path, false, errs),
        Some("int") => check_range(fs, &fs_path, true, errs),
        Some(t @ ("discrete" | "categorical")) => check_values(fs, &fs_path, t, errs),
        _ => {}
    }
}

fn check_range(fs: &FeasibleSpace, path: &str, int: bool, errs: &mut Errors) {
    let kind = if int { "int" } else { "double" };
    if !fs.list.is_empty() {
        errs.add(
            format!("{path}.list"),
            format!(
                "must not be set for a {kind} parameter; hint: use min and max, or make the parameter discrete"
            ),
        );
    }
    let read = |field: &str, value: &Option<String>, errs: &mut Errors| -> Option<f64> {
        let text = value.as_deref()?;
        let parsed = if int {
            parse_i64(text).map(|v| v as f64)
        } else {
            parse_f64(text)
        };
        if parsed.is_none() {
            let (what, quoted) = if int {
                ("an integer", "a quoted integer, e.g. \"10\"")
            } else {
                ("a number", "a quoted number, e.g. \"0.01\" or \"1e-3\"")
            };
            errs.add(
                format!("{path}.{field}"),
                format!("value {text:?} is not {what}; hint: write it as {quoted}"),
            );
        }
        parsed
    };
    let min = read("min", &fs.min, errs);
    let max = read("max", &fs.max, errs);
    let step = read("step", &fs.given_step().cloned(), errs);
    for (field, value) in [("min", &fs.min), ("max", &fs.max)] {
        if value.is_none() {
            errs.required(format!("{path}.{field}"), "");
        }
    }
    // min == max is a fixed value, as Katib accepts it (see `warnings`).
    if let (Some(lo), Some(hi)) = (min, max)
        && lo > hi
    {
        errs.add(
            format!("{path}.max"),
            format!(
                "value {:?} must not be less than min {:?}; hint: swap min and max",
                fs.max.as_deref().unwrap_or(""),
                fs.min.as_deref().unwrap_or("")
            ),
        );
    }
    if let Some(s) = step
        && s <= 0.0
    {
        errs.add(
            format!("{path}.step"),
            format!(
                "value {:?} must be greater than 0; hint: give the distance between grid points, or remove step for a continuous range",
                fs.step.as_deref().unwrap_or("")
            ),
        );
    }
    // A log distribution with min <= 0 is sampled uniformly instead (see `warnings`).
    if !int
        && let (Some(lo), Some(hi), Some(s)) = (min, max, step)
        && s > 0.0
        && lo < hi
        && !double_grid_fits(lo, hi, s)
    {
        errs.add(
            format!("{path}.step"),
            format!(
                "value {:?} over [{lo:e}, {hi:e}] makes more than 2^53 grid points, too many to \
                 tell apart; hint: remove the step for a continuous range, or use a larger step",
                fs.step.as_deref().unwrap_or("")
            ),
        );
    }
}

fn check_values(fs: &FeasibleSpace, path: &str, kind: &str, errs: &mut Errors) {
    let given = [("min", fs.min.as_ref()), ("max", fs.max.as_ref())]
        .into_iter()
        .chain([("step", fs.given_step())]);
    for (field, value) in given {
        if value.is_some() {
            errs.add(
                format!("{path}.{field}"),
                format!(
                    "must not be set for a {kind} parameter; hint: list the values in feasibleSpace.list"
                ),
            );
        }
    }
    if fs.list.is_empty() {
        errs.required(format!("{path}.list"), "list at least one value");
        return;
    }
    if fs.list.len() > MAX_LIST_VALUES {
        let why = too_many_values(fs.list.len()).replace('\n', "; ");
        errs.add(format!("{path}.list"), why);
        return;
    }
    for (k, v) in fs.list.iter().enumerate() {
        let item = format!("{path}.list[{k}]");
        if v.trim().is_empty() {
            errs.add(
                item,
                format!("value {v:?} is empty; hint: remove it, or quote the value you meant"),
            );
            continue;
        }
        // Non-numeric discrete values and duplicates run (see `warnings`).
    }
}
