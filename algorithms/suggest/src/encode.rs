//! The unit-cube view of a search space that model-based algorithms share: every numeric
//! parameter maps to `[0, 1]` (on the log scale for log distributions), every list parameter
//! to an index, and back again onto the step grid.

use crate::sample::snap;
use vernier_core::range;
use vernier_core::{Assignment, Domain, ParamValue, Parameter, SearchSpace};

/// Position of a numeric value in `[0, 1]`, or of a list value's bucket centre
/// `(i + 0.5) / n`. Values outside the domain are clamped.
pub fn to_unit(p: &Parameter, v: &ParamValue) -> f64 {
    match &p.domain {
        Domain::Double { min, max, .. } => {
            numeric_to_unit(p, v.as_f64().unwrap_or(*min), *min, *max)
        }
        Domain::Int { min, max, .. } => numeric_to_unit(
            p,
            v.as_f64().unwrap_or(*min as f64),
            *min as f64,
            *max as f64,
        ),
        Domain::Discrete { values } | Domain::Categorical { values } => {
            let i = choice_index(p, v).unwrap_or(0);
            (i as f64 + 0.5) / values.len() as f64
        }
    }
}

fn numeric_to_unit(p: &Parameter, x: f64, min: f64, max: f64) -> f64 {
    let u = if p.distribution.is_log() && min > 0.0 {
        (x.max(min).ln() - min.ln()) / (max.ln() - min.ln())
    } else {
        range::fraction(x, min, max)
    };
    if u.is_nan() { 0.5 } else { u.clamp(0.0, 1.0) }
}

/// The value at position `u` (clamped to `[0, 1]`), snapped to the step grid; list parameters
/// take bucket `floor(u * n)`.
pub fn from_unit(p: &Parameter, u: f64) -> ParamValue {
    let u = if u.is_finite() {
        u.clamp(0.0, 1.0)
    } else {
        0.5
    };
    match &p.domain {
        Domain::Double { min, max, step } => {
            let x = unit_to_numeric(p, u, *min, *max);
            match step {
                Some(s) => ParamValue::Double(snap(x, *min, *max, *s)),
                None => ParamValue::Double(x.clamp(*min, *max)),
            }
        }
        Domain::Int { min, max, step } => {
            let x = unit_to_numeric(p, u, *min as f64, *max as f64);
            let last = range::int_last(*min, *max, *step);
            let k = range::int_nearest(x, *min, *step, last);
            ParamValue::Int(range::int_at(*min, *step, k))
        }
        Domain::Discrete { values } | Domain::Categorical { values } => {
            let i = ((u * values.len() as f64) as usize).min(values.len() - 1);
            ParamValue::Choice(values[i].clone())
        }
    }
}

fn unit_to_numeric(p: &Parameter, u: f64, min: f64, max: f64) -> f64 {
    if p.distribution.is_log() && min > 0.0 {
        (min.ln() + u * (max.ln() - min.ln())).exp()
    } else {
        range::lerp(min, max, u)
    }
}

/// Index of a list parameter's value (discrete values also match numerically).
pub fn choice_index(p: &Parameter, v: &ParamValue) -> Option<usize> {
    let values = match &p.domain {
        Domain::Discrete { values } | Domain::Categorical { values } => values,
        _ => return None,
    };
    let text = v.to_string();
    values.iter().position(|x| *x == text).or_else(|| {
        let n = v.as_f64()?;
        values
            .iter()
            .position(|x| x.trim().parse::<f64>().ok() == Some(n))
    })
}

/// Number of choices of a list parameter, `None` for numeric ones.
pub fn choice_count(p: &Parameter) -> Option<usize> {
    match &p.domain {
        Domain::Discrete { values } | Domain::Categorical { values } => Some(values.len()),
        _ => None,
    }
}

/// The whole assignment as a point in `[0, 1]^d`, in space order.
pub fn assignment_to_unit(space: &SearchSpace, a: &Assignment) -> Vec<f64> {
    space
        .parameters()
        .iter()
        .map(|p| a.get(&p.name).map_or(0.5, |v| to_unit(p, v)))
        .collect()
}

/// The assignment at a point of `[0, 1]^d`.
pub fn unit_to_assignment(space: &SearchSpace, u: &[f64]) -> Assignment {
    Assignment(
        space
            .parameters()
            .iter()
            .zip(u)
            .map(|(p, x)| (p.name.clone(), from_unit(p, *x)))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use vernier_core::Distribution;

    fn param(domain: Domain, distribution: Distribution) -> Parameter {
        Parameter {
            name: "p".into(),
            domain,
            distribution,
        }
    }

    #[test]
    fn round_trips_numeric_and_list_values() {
        let lr = param(
            Domain::Double {
                min: 1e-4,
                max: 1.0,
                step: None,
            },
            Distribution::LogUniform,
        );
        assert!((to_unit(&lr, &ParamValue::Double(1e-2)) - 0.5).abs() < 1e-12);
        let mid = from_unit(&lr, 0.5).as_f64().unwrap();
        assert!((mid - 0.01).abs() < 1e-15, "{mid}");
        let n = param(
            Domain::Int {
                min: 2,
                max: 10,
                step: Some(4),
            },
            Distribution::Uniform,
        );
        assert_eq!(from_unit(&n, 0.4), ParamValue::Int(6));
        assert_eq!(from_unit(&n, 1.7), ParamValue::Int(10));
        let c = param(
            Domain::Categorical {
                values: vec!["a".into(), "b".into(), "c".into()],
            },
            Distribution::Uniform,
        );
        assert_eq!(to_unit(&c, &ParamValue::Choice("b".into())), 0.5);
        assert_eq!(from_unit(&c, 0.99), ParamValue::Choice("c".into()));
        let d = param(
            Domain::Discrete {
                values: vec!["1.0".into(), "2.5".into()],
            },
            Distribution::Uniform,
        );
        assert_eq!(
            choice_index(&d, &ParamValue::Choice("2.50".into())),
            Some(1)
        );
    }
}
