//! The resource parameter shared by the multi-fidelity algorithms (Hyperband, ASHA): rung
//! budgets on the parameter's domain, assignments composed around a budget, and fresh
//! configurations that avoid every one already taken.

use crate::history;
use crate::sample::{sample_param, snap, tidy};
use rand::{Rng, RngExt};
use std::collections::HashSet;
use vernier_core::{Assignment, Domain, ParamValue, Parameter, SearchSpace, Short, TrialRecord};

/// Random draws tried before a new configuration may share its non-resource part with an
/// earlier trial (continuous spaces never need a second draw).
pub(crate) const MAX_REDRAWS: usize = 100;

/// Finite spaces (without the resource parameter) up to this size are enumerated once random
/// draws stop finding unused points.
pub(crate) const ENUMERATE_LIMIT: u128 = 100_000;

/// Relative slack for budgets: they are exact quotients `r_l / eta^e`, but may have gone
/// through text (trial storage) or need `int()` of a value that is integral in exact arithmetic.
pub(crate) const BUDGET_TOLERANCE: f64 = 1e-9;

/// The parameter that carries each trial's resource (epochs, samples, ...).
#[derive(Debug, Clone)]
pub(crate) struct Resource {
    pub(crate) name: String,
}

impl Resource {
    /// Refuses a space that lost the resource parameter since the algorithm was built.
    pub(crate) fn check_in(
        &self,
        space: &SearchSpace,
        algorithm: &str,
    ) -> Result<(), vernier_core::CoreError> {
        if space.get(&self.name).is_none() {
            return Err(vernier_core::CoreError::Algorithm {
                algorithm: algorithm.to_string(),
                message: format!(
                    "resource parameter {:?} is not in the search space",
                    self.name
                ),
            });
        }
        Ok(())
    }

    /// An assignment in space order with the resource set to `budget` and every other value
    /// taken from `value_of`; `None` if `value_of` has no value for a parameter.
    pub(crate) fn compose(
        &self,
        space: &SearchSpace,
        budget: &ParamValue,
        mut value_of: impl FnMut(&Parameter) -> Option<ParamValue>,
    ) -> Option<Assignment> {
        space
            .parameters()
            .iter()
            .map(|p| {
                let v = if p.name == self.name {
                    budget.clone()
                } else {
                    value_of(p)?
                };
                Some((p.name.clone(), v))
            })
            .collect::<Option<Vec<_>>>()
            .map(Assignment)
    }

    pub(crate) fn sub_key(&self, a: &Assignment) -> String {
        Assignment(a.iter().filter(|(n, _)| *n != self.name).cloned().collect()).key()
    }

    /// Up to `want` new configurations at `budget` for a bracket's first rung.
    pub(crate) fn fresh<R: Rng + ?Sized>(
        &self,
        space: &SearchSpace,
        budget: &ParamValue,
        want: usize,
        taken: &mut Taken,
        rng: &mut R,
    ) -> Vec<Assignment> {
        let others: Vec<&Parameter> = space
            .parameters()
            .iter()
            .filter(|p| p.name != self.name)
            .collect();
        let finite = others
            .iter()
            .try_fold(1u128, |acc, p| acc.checked_mul(p.cardinality()?))
            .filter(|n| *n <= ENUMERATE_LIMIT);
        let mut out = Vec::new();
        // Once random draws miss, a finite space is listed: never-tried points first, then
        // points tried at another resource.
        let mut listed: Option<(Vec<Assignment>, Vec<Assignment>)> = None;
        while out.len() < want {
            let mut pick = None;
            if listed.is_none() {
                let mut fallback = None;
                for _ in 0..MAX_REDRAWS {
                    let Some(a) = self.compose(space, budget, |p| Some(sample_param(p, rng)))
                    else {
                        break;
                    };
                    if !taken.sub.contains(&self.sub_key(&a)) {
                        pick = Some(a);
                        break;
                    }
                    if fallback.is_none() && !taken.full.contains(&a.key()) {
                        fallback = Some(a);
                    }
                }
                if pick.is_none() {
                    match finite {
                        Some(size) => listed = Some(self.list(space, &others, size, budget, taken)),
                        None => pick = fallback,
                    }
                }
            }
            if let Some((never, reused)) = listed.as_mut() {
                let pool = if never.is_empty() { reused } else { never };
                if !pool.is_empty() {
                    let k = rng.random_range(0..pool.len());
                    pick = Some(pool.swap_remove(k));
                }
            }
            let Some(a) = pick else { break };
            taken.insert(self, &a);
            out.push(a);
        }
        out
    }

    /// Every unused point of a finite space at `budget`, split into those whose non-resource
    /// part was never tried and those tried at another resource.
    pub(crate) fn list(
        &self,
        space: &SearchSpace,
        others: &[&Parameter],
        size: u128,
        budget: &ParamValue,
        taken: &Taken,
    ) -> (Vec<Assignment>, Vec<Assignment>) {
        let mut never = Vec::new();
        let mut reused = Vec::new();
        for index in 0..size {
            let Some(values) = point_at(others, index) else {
                continue;
            };
            let Some(a) = self.compose(space, budget, |p| {
                others
                    .iter()
                    .position(|q| q.name == p.name)
                    .map(|j| values[j].clone())
            }) else {
                continue;
            };
            if !taken.sub.contains(&self.sub_key(&a)) {
                never.push(a);
            } else if !taken.full.contains(&a.key()) {
                reused.push(a);
            }
        }
        (never, reused)
    }
}

/// Keys of every configuration proposed so far, whole and without the resource value.
pub(crate) struct Taken {
    pub(crate) full: HashSet<String>,
    pub(crate) sub: HashSet<String>,
}

impl Taken {
    pub(crate) fn new(resource: &Resource, trials: &[TrialRecord]) -> Self {
        Taken {
            full: history::taken(trials),
            sub: history::explored(trials)
                .map(|t| resource.sub_key(&t.assignment))
                .collect(),
        }
    }

    pub(crate) fn insert(&mut self, resource: &Resource, a: &Assignment) {
        self.full.insert(a.key());
        self.sub.insert(resource.sub_key(a));
    }
}

/// The `index`-th point of the product of finite parameters, in mixed-radix order.
pub(crate) fn point_at(params: &[&Parameter], mut index: u128) -> Option<Vec<ParamValue>> {
    let mut values = vec![ParamValue::Int(0); params.len()];
    for (j, p) in params.iter().enumerate().rev() {
        let n = p.cardinality()?;
        values[j] = p.value_at(index % n)?;
        index /= n;
    }
    Some(values)
}

/// `floor(log_eta(r_l))` in exact arithmetic (0 when `r_l < eta`).
pub(crate) fn s_max(eta: u64, r_l: f64) -> usize {
    let eta = eta as f64;
    let mut s = 0;
    let mut next = eta;
    // Powers of eta are exact in f64 far beyond any sensible r_l; the slack only forgives an
    // r_l that went through text.
    while next <= r_l * (1.0 + BUDGET_TOLERANCE) {
        s += 1;
        next *= eta;
    }
    s
}

/// The resource parameter's value for budget `r`, or why the domain cannot hold it.
pub(crate) fn budget_value(p: &Parameter, r: f64) -> Result<ParamValue, String> {
    let value = match &p.domain {
        Domain::Int { .. } => ParamValue::Int(int_budget(r)),
        Domain::Double { min, max, step } => {
            let v = ParamValue::Double(tidy(r));
            p.check(&v).map_err(|why| format!("{r} is {why}"))?;
            match step {
                Some(st) => ParamValue::Double(snap(r, *min, *max, *st)),
                None => v,
            }
        }
        // A list of budgets: the element equal to Katib's `int(r)` (or to `r` itself).
        Domain::Discrete { .. } => p
            .parse_value(&int_budget(r).to_string())
            .or_else(|_| p.parse_value(&tidy(r).to_string()))
            .map_err(|_| format!("{} is not in its list", show_budget(p, r)))?,
        Domain::Categorical { .. } => {
            return Err(
                "the resource parameter must be an int, a double or a discrete list".to_string(),
            );
        }
    };
    p.check(&value).map_err(|why| format!("{value} is {why}"))?;
    Ok(value)
}

/// Katib's `int(r)`, forgiving values a hair below an integer, and never below 1. Only a
/// value within the slack of an integer snaps to it: scaling `r` up by the slack instead
/// would carry an integral `r` near 1e9 past the next integer.
pub(crate) fn int_budget(r: f64) -> i64 {
    let nearest = r.round();
    let snapped = if (r - nearest).abs() <= r.abs() * BUDGET_TOLERANCE {
        nearest
    } else {
        r.floor()
    };
    (snapped as i64).max(1)
}

/// The hint of a resource parameter that cannot hold every budget from `lowest` to `top`:
/// remove a step that misses one inside the range, widen its space (or change `settings`),
/// or, for a categorical list, whose labels hold no budget whatever they say, make it one
/// that can.
pub(crate) fn budget_hint(p: &Parameter, lowest: f64, top: f64, settings: &str) -> String {
    let covered = |min: f64, max: f64| min <= lowest && top <= max;
    // The range holds every budget: the step is what misses one.
    let step_misses = match p.domain {
        Domain::Int {
            min,
            max,
            step: Some(_),
        } => covered(min as f64, max as f64),
        Domain::Double {
            min,
            max,
            step: Some(_),
        } => covered(min, max),
        _ => false,
    };
    if step_misses {
        return format!(
            "hint: remove the step of {:?}, or write it as a placeholder (min == max), or \
             change {settings}",
            p.name
        );
    }
    match p.domain {
        Domain::Categorical { .. } => format!(
            "hint: make {:?} a discrete list of the budgets, an int or a double",
            p.name
        ),
        _ => format!(
            "hint: widen the feasible space of {:?} to cover [{}, {}] (or change {settings})",
            p.name,
            show_budget(p, lowest),
            show_budget(p, top)
        ),
    }
}

pub(crate) fn show_budget(p: &Parameter, r: f64) -> String {
    match p.domain {
        Domain::Int { .. } => int_budget(r).to_string(),
        _ => tidy(r).to_string(),
    }
}

pub(crate) fn kind(p: &Parameter) -> &'static str {
    match p.domain {
        Domain::Double { .. } => "double",
        Domain::Int { .. } => "int",
        Domain::Discrete { .. } => "discrete",
        Domain::Categorical { .. } => "categorical",
    }
}

pub(crate) fn describe_domain(d: &Domain) -> String {
    match d {
        Domain::Double { min, max, step } => {
            let (min, max) = (Short(*min), Short(*max));
            match step {
                Some(s) => format!("min {min}, max {max}, step {}", Short(*s)),
                None => format!("min {min}, max {max}"),
            }
        }
        Domain::Int { min, max, step } => match step {
            Some(s) => format!("min {min}, max {max}, step {s}"),
            None => format!("min {min}, max {max}"),
        },
        // A list may hold 200,000 values; the first few say which parameter it is.
        Domain::Discrete { values } | Domain::Categorical { values } if values.len() > 10 => {
            format!("values {:?} and {} more", &values[..10], values.len() - 10)
        }
        Domain::Discrete { values } | Domain::Categorical { values } => {
            format!("values {values:?}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_budgets_forgive_a_hair_below_an_integer_and_nothing_more() {
        for (r, want) in [
            (9.0, 9),
            (8.999_999_999_9, 9),
            (2.581_174_425, 2),
            (0.3, 1),
            (999_999_858.0, 999_999_858),
            (1e9, 1_000_000_000),
            (3f64.powi(19), 1_162_261_467),
            (999_999_858.0 / 3.0, 333_333_286),
        ] {
            assert_eq!(int_budget(r), want, "{r}");
        }
    }
}
