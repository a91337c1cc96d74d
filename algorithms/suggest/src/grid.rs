//! Grid search (`grid`): every combination of the parameters' values exactly once, in a
//! seeded shuffled order, then the end of the search.
//!
//! Follows Optuna's `GridSampler`, which Katib's `grid` runs on: the grid is the full product of
//! each parameter's values and is visited in an order shuffled with the seed. The shuffle here
//! is a keyed bijection of the index space (a few invertible xor-shift / odd-multiply rounds on
//! the next power of two, with cycle walking to stay below the grid size; Black & Rogaway,
//! "Ciphers with Arbitrary Finite Domains", CT-RSA 2002), so the grid is never materialised.
//!
//! Values per parameter: ints `min, min+step, ..` up to `max` (step defaults to 1); doubles
//! must have a `step` (same rule, Katib rejects doubles without one); discrete and categorical
//! parameters take their lists. Distributions do not matter for a grid (log-uniform doubles are
//! still stepped linearly, as in Katib). The order is fixed by `random_state` (default 0) read at
//! build time, not by the per-call seed, which changes with every call.
//!
//! Configurations already taken by any trial, running ones included, are skipped; matching is
//! by grid position, so `0.30000000000000004` and `0.3` count as the same value. When nothing
//! is left the suggestions are marked `exhausted`.

use crate::encode::choice_index;
use crate::error::AlgorithmError;
use crate::history::value_of;
use crate::random::point_at;
use crate::settings::Settings;
use std::collections::HashSet;
use vernier_core::{
    Assignment, CoreError, Domain, Objective, ParamValue, Parameter, Proposal, SearchSpace,
    SuggestRequest, Suggester, Suggestions, TrialRecord,
};

/// Larger grids are refused: enumerating them could never finish within a tuning budget.
pub(crate) const MAX_GRID: u128 = 10_000_000;

pub(crate) fn build(
    name: &str,
    settings: &[(String, String)],
    space: &SearchSpace,
    objective: &Objective,
) -> Result<Box<dyn Suggester>, AlgorithmError> {
    let _ = objective;
    let s = Settings::new(name, settings, &["random_state"])?;
    let seed = s.random_state()?.unwrap_or(0);
    let unsuitable = |reason: String| AlgorithmError::UnsuitableSpace {
        algorithm: name.to_string(),
        reason,
    };
    if let Some(p) = space
        .parameters()
        .iter()
        .find(|p| matches!(p.domain, Domain::Double { step: None, .. }))
    {
        return Err(unsuitable(format!(
            "parameter {:?} is a double without step, so it has no grid\nhint: add `step` to \
             the feasibleSpace of parameter {}",
            p.name, p.name
        )));
    }
    let mut size: u128 = 1;
    for p in space.parameters() {
        let n = p.cardinality().unwrap_or(u128::MAX);
        size = size.checked_mul(n).ok_or_else(|| {
            unsuitable(
                "it has more than 2^128 combinations, too many for a grid\nhint: use larger \
                 steps or fewer parameters, or a sampling algorithm such as sobol"
                    .into(),
            )
        })?;
    }
    if size > MAX_GRID {
        return Err(unsuitable(format!(
            "its {size} combinations are more than the {MAX_GRID} a grid may enumerate\nhint: \
             use larger steps or fewer parameters, or a sampling algorithm such as sobol"
        )));
    }
    Ok(Box::new(GridSearch {
        order: Shuffle::new(size as u64, seed),
    }))
}

/// The number of grid points of a space that builds as a grid (saturating at `u64::MAX`).
pub(crate) fn combinations(space: &SearchSpace) -> u64 {
    space
        .parameters()
        .iter()
        .map(|p| p.cardinality().unwrap_or(u128::MAX))
        .try_fold(1u128, u128::checked_mul)
        .map_or(u64::MAX, |n| u64::try_from(n).unwrap_or(u64::MAX))
}

/// Grid search over a finite space in a seeded shuffled order.
#[derive(Debug, Clone)]
pub(crate) struct GridSearch {
    order: Shuffle,
}

impl Suggester for GridSearch {
    fn name(&self) -> &str {
        "grid"
    }

    fn suggest(&self, req: &SuggestRequest<'_>) -> Result<Suggestions, CoreError> {
        let size = self.order.size;
        let mut taken = taken_indices(req.space, req.trials);
        let mut out = Suggestions::default();
        let mut position = 0;
        while out.proposals.len() < req.count && (taken.len() as u64) < size && position < size {
            let index = self.order.at(position);
            position += 1;
            if taken.insert(index as u128) {
                let assignment =
                    point_at(req.space, index as u128).ok_or_else(|| CoreError::Algorithm {
                        algorithm: "grid".into(),
                        message: format!("grid index {index} lies outside the search space"),
                    })?;
                out.proposals.push(Proposal::new(assignment));
            }
        }
        out.exhausted = taken.len() as u64 >= size;
        Ok(out)
    }
}

/// Position of one parameter's value in its list of grid values.
fn value_index(p: &Parameter, v: &ParamValue) -> Option<u128> {
    let n = p.cardinality()?;
    let k = match (&p.domain, v) {
        (Domain::Double { min, max, step }, ParamValue::Double(x)) => {
            let s = (*step)?;
            let k = ((x - min) / s).round();
            // Bounds near 1e6 written to 1e-6 put the points' float error near 1e-10, far above
            // a tolerance scaled by the span alone.
            let ulps = 8.0 * f64::EPSILON * min.abs().max(max.abs());
            let tol = (1e-9 * vernier_core::range::span(*min, *max).max(s)).max(ulps);
            if k.is_nan() || k < 0.0 || (min + k * s - x).abs() > tol {
                return None;
            }
            k as u128
        }
        (Domain::Int { min, step, .. }, ParamValue::Int(x)) => {
            u128::from(vernier_core::range::int_index(*x, *min, *step)?)
        }
        (Domain::Discrete { .. } | Domain::Categorical { .. }, _) => choice_index(p, v)? as u128,
        _ => return None,
    };
    (k < n).then_some(k)
}

/// Index of an assignment in the mixed-radix order of `point_at` (last parameter fastest), or
/// `None` when it is not a point of the finite space.
pub(crate) fn grid_index(space: &SearchSpace, a: &Assignment) -> Option<u128> {
    let mut index: u128 = 0;
    for (i, p) in space.parameters().iter().enumerate() {
        let n = p.cardinality()?;
        let k = value_index(p, value_of(a, i, &p.name)?)?;
        index = index.checked_mul(n)?.checked_add(k)?;
    }
    Some(index)
}

/// Grid indices of every configuration already explored (`history::explored`).
pub(crate) fn taken_indices(space: &SearchSpace, trials: &[TrialRecord]) -> HashSet<u128> {
    crate::history::explored(trials)
        .filter_map(|t| grid_index(space, &t.assignment))
        .collect()
}

/// A keyed permutation of `0..size`.
#[derive(Debug, Clone)]
pub(crate) struct Shuffle {
    size: u64,
    bits: u32,
    keys: [u64; 4],
}

impl Shuffle {
    pub(crate) fn new(size: u64, seed: u64) -> Self {
        let bits = (64 - size.saturating_sub(1).leading_zeros()).max(1);
        let mut state = seed ^ 0x6a09_e667_f3bc_c909;
        let keys = [0; 4].map(|_| splitmix64(&mut state));
        Shuffle { size, bits, keys }
    }

    fn mask(&self) -> u64 {
        if self.bits >= 64 {
            u64::MAX
        } else {
            (1u64 << self.bits) - 1
        }
    }

    /// One bijective scramble of `0..2^bits`: each step (xor with a right shift, multiply by
    /// an odd number, add) is invertible modulo a power of two.
    fn scramble(&self, mut x: u64) -> u64 {
        let mask = self.mask();
        let shift = self.bits / 2 + 1;
        for key in self.keys {
            x = x.wrapping_add(key) & mask;
            x ^= x >> shift;
            x = x.wrapping_mul(key | 1) & mask;
            x ^= x >> shift.div_ceil(2).max(1);
        }
        x & mask
    }

    /// The element at `position` (< size) of the shuffled order. Cycle walking keeps the
    /// power-of-two bijection inside `0..size`; at most half the range lies outside, so this
    /// takes two scrambles on average.
    pub(crate) fn at(&self, position: u64) -> u64 {
        let mut x = self.scramble(position);
        while x >= self.size {
            x = self.scramble(x);
        }
        x
    }
}

/// SplitMix64 step (Steele, Lea & Flood, "Fast splittable pseudorandom number generators",
/// OOPSLA 2014): a cheap way to spread a seed into independent-looking words.
pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_params::{pairs, texts};
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use vernier_core::{Direction, Distribution, TrialState};

    fn param(name: &str, domain: Domain, distribution: Distribution) -> Parameter {
        Parameter {
            name: name.into(),
            domain,
            distribution,
        }
    }

    fn mixed_space() -> SearchSpace {
        SearchSpace::new(vec![
            param(
                "lr",
                Domain::Double {
                    min: 0.01,
                    max: 0.05,
                    step: Some(0.01),
                },
                Distribution::LogUniform,
            ),
            param(
                "layers",
                Domain::Int {
                    min: 1,
                    max: 9,
                    step: Some(2),
                },
                Distribution::Normal,
            ),
            param(
                "opt",
                Domain::Categorical {
                    values: vec!["sgd".into(), "adam".into()],
                },
                Distribution::Uniform,
            ),
            param(
                "batch",
                Domain::Discrete {
                    values: vec!["16".into(), "32".into(), "64".into()],
                },
                Distribution::Uniform,
            ),
        ])
        .unwrap()
    }

    /// 2 x 3 = 6 combinations.
    fn small_space() -> SearchSpace {
        SearchSpace::new(vec![
            param(
                "a",
                Domain::Categorical {
                    values: vec!["x".into(), "y".into()],
                },
                Distribution::Uniform,
            ),
            param(
                "n",
                Domain::Int {
                    min: 1,
                    max: 3,
                    step: None,
                },
                Distribution::Uniform,
            ),
        ])
        .unwrap()
    }

    fn grid(space: &SearchSpace, settings: &[(&str, &str)]) -> Box<dyn Suggester> {
        let o = Objective::new("loss", Direction::Minimize);
        build("grid", &pairs(settings), space, &o).unwrap()
    }

    fn ask(
        g: &dyn Suggester,
        space: &SearchSpace,
        trials: &[TrialRecord],
        count: usize,
        seed: u64,
    ) -> Suggestions {
        let o = Objective::new("loss", Direction::Maximize);
        g.suggest(&SuggestRequest {
            space,
            objective: &o,
            trials,
            count,
            seed,
            state: None,
        })
        .unwrap()
    }

    fn record(i: usize, a: Assignment, state: TrialState) -> TrialRecord {
        TrialRecord {
            name: format!("t{i}"),
            assignment: a,
            state,
            objective: Some(i as f64),
            labels: BTreeMap::new(),
            metrics: BTreeMap::new(),
        }
    }

    #[test]
    fn seeded_order_is_exact() {
        let space = mixed_space();
        let g = grid(&space, &[("random_state", "3")]);
        let s = ask(g.as_ref(), &space, &[], 3, 99);
        assert_eq!(
            texts(&s),
            vec![
                "lr=0.04, layers=5, opt=sgd, batch=16",
                "lr=0.01, layers=3, opt=adam, batch=32",
                "lr=0.01, layers=7, opt=sgd, batch=64",
            ]
        );
        // The per-call seed does not change the order; random_state does.
        assert_eq!(s, ask(g.as_ref(), &space, &[], 3, 1));
        let other = grid(&space, &[]);
        assert_ne!(texts(&s), texts(&ask(other.as_ref(), &space, &[], 3, 99)));
    }

    /// Bounds whose last digits carry the grid (13 significant digits): nine distinct points,
    /// each inside the bounds, each recognised as taken once it ran.
    #[test]
    fn a_grid_in_the_last_digits_of_large_bounds_visits_each_point_once() {
        let space = SearchSpace::new(vec![param(
            "x",
            Domain::Double {
                min: 1000000.000001,
                max: 1000000.000009,
                step: Some(0.000001),
            },
            Distribution::Uniform,
        )])
        .unwrap();
        let g = grid(&space, &[]);
        let mut trials = Vec::new();
        for i in 0..9 {
            let s = ask(g.as_ref(), &space, &trials, 1, i);
            assert_eq!(s.proposals.len(), 1, "point {i}");
            trials.push(record(
                i as usize,
                s.proposals[0].assignment.clone(),
                TrialState::Succeeded,
            ));
        }
        let mut seen: Vec<String> = trials.iter().map(|t| t.assignment.to_string()).collect();
        seen.sort();
        let want: Vec<String> = (1..=9).map(|k| format!("x=1000000.00000{k}")).collect();
        assert_eq!(seen, want);
        let last = ask(g.as_ref(), &space, &trials, 1, 9);
        assert!(last.proposals.is_empty() && last.exhausted);
    }

    #[test]
    fn visits_every_combination_once_then_reports_exhausted() {
        let space = small_space();
        let g = grid(&space, &[]);
        let first = ask(g.as_ref(), &space, &[], 4, 0);
        assert_eq!(first.proposals.len(), 4);
        assert!(!first.exhausted);
        // Two finished, two still running: all four count as taken.
        let trials: Vec<TrialRecord> = first
            .proposals
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let state = if i < 2 {
                    TrialState::Succeeded
                } else {
                    TrialState::Running
                };
                record(i, p.assignment.clone(), state)
            })
            .collect();
        let second = ask(g.as_ref(), &space, &trials, 4, 1);
        assert_eq!(second.proposals.len(), 2);
        assert!(second.exhausted);
        let mut all: Vec<String> = texts(&first);
        all.extend(texts(&second));
        all.sort();
        assert_eq!(
            all,
            vec![
                "a=x, n=1", "a=x, n=2", "a=x, n=3", "a=y, n=1", "a=y, n=2", "a=y, n=3"
            ]
        );
        let mut done = trials;
        done.extend(
            second
                .proposals
                .iter()
                .enumerate()
                .map(|(i, p)| record(i + 4, p.assignment.clone(), TrialState::Failed)),
        );
        let third = ask(g.as_ref(), &space, &done, 4, 2);
        assert!(third.proposals.is_empty());
        assert!(third.exhausted);
    }

    /// A trial killed by an interruption gave no verdict: after a resume its combination is
    /// proposed again, and the grid is not exhausted until it has one.
    #[test]
    fn a_killed_combination_is_proposed_again() {
        let space = small_space();
        let g = grid(&space, &[]);
        let all = ask(g.as_ref(), &space, &[], 6, 0);
        let mut trials: Vec<TrialRecord> = all
            .proposals
            .iter()
            .enumerate()
            .map(|(i, p)| record(i, p.assignment.clone(), TrialState::Succeeded))
            .collect();
        trials[3].state = TrialState::Killed;
        let again = ask(g.as_ref(), &space, &trials, 4, 1);
        assert_eq!(texts(&again), vec![trials[3].assignment.to_string()]);
        assert!(again.exhausted);
        trials.push(record(
            6,
            trials[3].assignment.clone(),
            TrialState::Succeeded,
        ));
        let done = ask(g.as_ref(), &space, &trials, 4, 2);
        assert!(done.proposals.is_empty() && done.exhausted);
    }

    #[test]
    fn taken_values_match_by_grid_position() {
        let space = SearchSpace::new(vec![param(
            "x",
            Domain::Double {
                min: 0.0,
                max: 0.3,
                step: Some(0.1),
            },
            Distribution::Uniform,
        )])
        .unwrap();
        let noisy = Assignment(vec![("x".into(), ParamValue::Double(0.1 + 0.2))]);
        let trials = vec![record(0, noisy, TrialState::Succeeded)];
        let g = grid(&space, &[]);
        let s = ask(g.as_ref(), &space, &trials, 10, 0);
        let mut got = texts(&s);
        got.sort();
        assert_eq!(got, vec!["x=0", "x=0.1", "x=0.2"]);
        assert!(s.exhausted);
    }

    #[test]
    fn rejects_a_double_without_step() {
        let space = SearchSpace::new(vec![
            param(
                "lr",
                Domain::Double {
                    min: 0.01,
                    max: 0.1,
                    step: None,
                },
                Distribution::Uniform,
            ),
            param(
                "n",
                Domain::Int {
                    min: 1,
                    max: 3,
                    step: None,
                },
                Distribution::Uniform,
            ),
        ])
        .unwrap();
        let o = Objective::new("loss", Direction::Minimize);
        let err = build("grid", &[], &space, &o).unwrap_err().to_string();
        assert!(err.contains("\"lr\" is a double without step"), "{err}");
        assert!(err.contains("hint: add `step`"), "{err}");
    }

    #[test]
    fn trial_limit_is_the_number_of_combinations() {
        let space = small_space();
        assert_eq!(combinations(&space), 6);
        assert_eq!(crate::trial_limit("grid", &[], &space).unwrap(), Some(6));
        assert_eq!(crate::trial_limit("random", &[], &space).unwrap(), None);
    }

    #[test]
    fn rejects_a_grid_too_large_with_its_size() {
        let big = |name: &str| {
            param(
                name,
                Domain::Int {
                    min: 0,
                    max: 999,
                    step: None,
                },
                Distribution::Uniform,
            )
        };
        let o = Objective::new("loss", Direction::Minimize);
        let space = SearchSpace::new(vec![big("a"), big("b"), big("c")]).unwrap();
        let err = build("grid", &[], &space, &o).unwrap_err().to_string();
        assert!(
            err.contains("its 1000000000 combinations are more than the 10000000"),
            "{err}"
        );
        let huge = SearchSpace::new(
            (0..14)
                .map(|i| {
                    param(
                        &format!("p{i}"),
                        Domain::Int {
                            min: 0,
                            max: i64::MAX - 1,
                            step: None,
                        },
                        Distribution::Uniform,
                    )
                })
                .collect(),
        )
        .unwrap();
        let err = build("grid", &[], &huge, &o).unwrap_err().to_string();
        assert!(err.contains("more than 2^128 combinations"), "{err}");
    }

    #[test]
    fn validates_settings() {
        let space = small_space();
        let o = Objective::new("loss", Direction::Minimize);
        let err = build("grid", &pairs(&[("sigma", "1")]), &space, &o)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown setting \"sigma\""), "{err}");
        for bad in ["-1", "x"] {
            let err = build("grid", &pairs(&[("random_state", bad)]), &space, &o)
                .unwrap_err()
                .to_string();
            assert!(err.contains("random_state"), "{err}");
            assert!(err.contains(&format!("{bad:?}")), "{err}");
        }
    }

    proptest! {
        #[test]
        fn shuffle_is_a_permutation(size in 1u64..3000, seed in any::<u64>()) {
            let s = Shuffle::new(size, seed);
            let seen: HashSet<u64> = (0..size).map(|i| s.at(i)).collect();
            prop_assert_eq!(seen.len() as u64, size);
            prop_assert!(seen.iter().all(|x| *x < size));
        }

        #[test]
        fn proposals_are_in_space_distinct_and_deterministic(
            seed in 0i64..1000, count in 1usize..40, done in 0usize..150
        ) {
            let space = mixed_space();
            let g = grid(&space, &[("random_state", &seed.to_string())]);
            let history: Vec<TrialRecord> = ask(g.as_ref(), &space, &[], done, 0)
                .proposals
                .into_iter()
                .enumerate()
                .map(|(i, p)| record(i, p.assignment, TrialState::Succeeded))
                .collect();
            let a = ask(g.as_ref(), &space, &history, count, 5);
            prop_assert_eq!(&a, &ask(g.as_ref(), &space, &history, count, 6));
            prop_assert_eq!(a.proposals.len(), count.min(150 - done));
            prop_assert_eq!(a.exhausted, done + count >= 150);
            let mut keys: HashSet<String> =
                history.iter().map(|t| t.assignment.key()).collect();
            for p in &a.proposals {
                prop_assert!(space.check(&p.assignment).is_ok(), "{}", p.assignment);
                prop_assert!(keys.insert(p.assignment.key()));
            }
        }
    }
}
