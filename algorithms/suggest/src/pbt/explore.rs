//! PBT's explore step: perturb every parameter by a factor of 0.8 or 1.2 (Katib's rule when
//! `resample_probability` is unset), or resample each from its prior with that probability.
//! Results always stay in the parameter's domain and on its step grid.

use crate::sample::{sample_param, snap};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use vernier_core::{Assignment, Domain, ParamValue, Parameter, SearchSpace};

/// A new assignment explored from `from`.
pub fn explore(
    space: &SearchSpace,
    from: &Assignment,
    resample: Option<f64>,
    rng: &mut ChaCha8Rng,
) -> Assignment {
    Assignment(
        space
            .parameters()
            .iter()
            .map(|p| {
                let value = match (from.get(&p.name), resample) {
                    (None, _) => sample_param(p, rng),
                    (Some(_), Some(prob)) if rng.random::<f64>() < prob => sample_param(p, rng),
                    (Some(v), Some(_)) => v.clone(),
                    (Some(v), None) => {
                        let up = rng.random::<bool>();
                        perturb(p, v, up)
                    }
                };
                (p.name.clone(), value)
            })
            .collect(),
    )
}

/// One perturbation: numbers scaled by 1.2 (`up`) or 0.8, lists moved one entry. An int, or a
/// double on a `step` grid, that scaling would leave on the same grid point (small values)
/// moves one step instead, so it never sticks;
/// discrete lists stop at their ends, categorical ones wrap around (Katib wraps both).
pub fn perturb(p: &Parameter, value: &ParamValue, up: bool) -> ParamValue {
    let factor = if up { 1.2 } else { 0.8 };
    match (&p.domain, value) {
        (Domain::Double { min, max, step }, v) => {
            let old = v.as_f64().unwrap_or(*min);
            let x = (old * factor).clamp(*min, *max);
            ParamValue::Double(match step {
                Some(s) => {
                    let (here, new) = (snap(old, *min, *max, *s), snap(x, *min, *max, *s));
                    match new == here {
                        true => snap(here + if up { *s } else { -*s }, *min, *max, *s),
                        false => new,
                    }
                }
                None => x,
            })
        }
        (Domain::Int { min, max, step }, v) => {
            // In i128: a range may span all of i64, whose width overflows it.
            let (lo, hi) = (i128::from(*min), i128::from(*max));
            let step = i128::from(step.unwrap_or(1));
            let old = v.as_f64().unwrap_or(*min as f64) as i128;
            let last = lo + (hi - lo) / step * step;
            // Scaled, then snapped to the grid in integers (an f64 offset from a far-away
            // `min` would lose the low digits).
            let target = (old as f64 * factor).round() as i128;
            let k = (target - lo + step / 2).div_euclid(step);
            let mut new = (lo + k * step).clamp(lo, last);
            if new == old {
                new = (old + if up { step } else { -step }).clamp(lo, last);
            }
            // Inside [min, max], so it fits.
            ParamValue::Int(i64::try_from(new).unwrap_or(*max))
        }
        (Domain::Discrete { values }, v) => {
            let i = position(values, v);
            let j = if up {
                (i + 1).min(values.len() - 1)
            } else {
                i.saturating_sub(1)
            };
            ParamValue::Choice(values[j].clone())
        }
        (Domain::Categorical { values }, v) => {
            let i = position(values, v);
            let n = values.len();
            let j = if up { (i + 1) % n } else { (i + n - 1) % n };
            ParamValue::Choice(values[j].clone())
        }
    }
}

fn position(values: &[String], v: &ParamValue) -> usize {
    let text = v.to_string();
    values.iter().position(|x| *x == text).unwrap_or(0)
}
