//! Random search: independent draws from each parameter's prior, without repeating a
//! configuration already tried or proposed in the same batch (Katib's random can repeat, its
//! issue #1566).

use crate::history::{fingerprint, taken_fingerprints};
use crate::sample::sample_assignment;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::HashSet;
use vernier_core::{CoreError, Proposal, SuggestRequest, Suggester, Suggestions};

/// How many redraws a proposal gets before a duplicate is accepted (continuous spaces almost
/// never need one; small finite spaces are enumerated instead).
const MAX_REDRAWS: usize = 100;

/// Finite spaces up to this size are sampled without replacement from the unused points.
const ENUMERATE_LIMIT: u128 = 100_000;

/// Random search (`random`).
#[derive(Debug, Clone, Default)]
pub struct RandomSearch;

impl RandomSearch {
    pub fn new() -> Self {
        RandomSearch
    }
}

impl Suggester for RandomSearch {
    fn name(&self) -> &str {
        "random"
    }

    fn suggest(&self, req: &SuggestRequest<'_>) -> Result<Suggestions, CoreError> {
        let mut rng = ChaCha8Rng::seed_from_u64(req.seed);
        let mut seen: HashSet<u64> = taken_fingerprints(req.space, req.trials);
        let mut out = Suggestions::default();

        if let Some(mut unused) = unused_points(req.space, &seen) {
            while out.proposals.len() < req.count && !unused.is_empty() {
                let i = rand::RngExt::random_range(&mut rng, 0..unused.len());
                out.proposals.push(Proposal::new(unused.swap_remove(i)));
            }
            out.exhausted = unused.is_empty();
            return Ok(out);
        }

        for _ in 0..req.count {
            let mut candidate = sample_assignment(req.space, &mut rng);
            for _ in 0..MAX_REDRAWS {
                if !seen.contains(&fingerprint(req.space, &candidate)) {
                    break;
                }
                candidate = sample_assignment(req.space, &mut rng);
            }
            seen.insert(fingerprint(req.space, &candidate));
            out.proposals.push(Proposal::new(candidate));
        }
        Ok(out)
    }
}

/// The points of a finite space small enough to list that are not in `taken`; `None` for a
/// space too large (or infinite), where redrawing finds an unseen point instead.
pub(crate) fn unused_points(
    space: &vernier_core::SearchSpace,
    taken: &HashSet<u64>,
) -> Option<Vec<vernier_core::Assignment>> {
    let size = space.cardinality().filter(|n| *n <= ENUMERATE_LIMIT)?;
    Some(
        (0..size)
            .filter_map(|i| point_at(space, i))
            .filter(|a| !taken.contains(&fingerprint(space, a)))
            .collect(),
    )
}

/// The `index`-th point of a finite space in mixed-radix order.
pub(crate) fn point_at(
    space: &vernier_core::SearchSpace,
    mut index: u128,
) -> Option<vernier_core::Assignment> {
    let mut values = Vec::with_capacity(space.len());
    for p in space.parameters().iter().rev() {
        let n = p.cardinality()?;
        values.push((p.name.clone(), p.value_at(index % n)?));
        index /= n;
    }
    values.reverse();
    Some(vernier_core::Assignment(values))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use vernier_core::{
        Direction, Distribution, Domain, Objective, ParamValue, Parameter, SearchSpace,
        TrialRecord, TrialState,
    };

    fn request<'a>(
        space: &'a SearchSpace,
        objective: &'a Objective,
        trials: &'a [TrialRecord],
        count: usize,
        seed: u64,
    ) -> SuggestRequest<'a> {
        SuggestRequest {
            space,
            objective,
            trials,
            count,
            seed,
            state: None,
        }
    }

    #[test]
    fn seeded_proposals_are_exact() {
        let space = crate::test_params::mixed_space();
        let o = Objective::new("loss", Direction::Minimize);
        let s = RandomSearch
            .suggest(&request(&space, &o, &[], 2, 42))
            .unwrap();
        let got = crate::test_params::texts(&s);
        assert_eq!(
            got,
            vec![
                "lr=0.011109348145191565, layers=7, momentum=0.65, opt=sgd, batch=32",
                "lr=0.0007341446485788689, layers=3, momentum=0.6, opt=sgd, batch=64",
            ]
        );
    }

    #[test]
    fn exhausts_a_small_finite_space_without_repeats() {
        let space = SearchSpace::new(vec![Parameter {
            name: "n".into(),
            domain: Domain::Int {
                min: 1,
                max: 4,
                step: None,
            },
            distribution: Distribution::Uniform,
        }])
        .unwrap();
        let o = Objective::new("loss", Direction::Minimize);
        let trials: Vec<TrialRecord> = [1, 3]
            .iter()
            .enumerate()
            .map(|(i, v)| TrialRecord {
                name: format!("t{i}"),
                assignment: vernier_core::Assignment(vec![("n".into(), ParamValue::Int(*v))]),
                state: TrialState::Succeeded,
                objective: Some(1.0),
                labels: BTreeMap::new(),
                metrics: BTreeMap::new(),
            })
            .collect();
        let s = RandomSearch
            .suggest(&request(&space, &o, &trials, 5, 7))
            .unwrap();
        let mut got = crate::test_params::texts(&s);
        got.sort();
        assert_eq!(got, vec!["n=2", "n=4"]);
        assert!(s.exhausted);
    }

    proptest! {
        #[test]
        fn proposals_stay_in_space_and_repeat_with_the_seed(seed in any::<u64>(), count in 1usize..20) {
            let space = crate::test_params::mixed_space();
            let o = Objective::new("loss", Direction::Maximize);
            let a = RandomSearch.suggest(&request(&space, &o, &[], count, seed)).unwrap();
            let b = RandomSearch.suggest(&request(&space, &o, &[], count, seed)).unwrap();
            prop_assert_eq!(&a, &b);
            prop_assert_eq!(a.proposals.len(), count);
            let mut keys = HashSet::new();
            for p in &a.proposals {
                prop_assert!(space.check(&p.assignment).is_ok(), "{}", p.assignment);
                prop_assert!(keys.insert(p.assignment.key()));
            }
        }
    }
}
