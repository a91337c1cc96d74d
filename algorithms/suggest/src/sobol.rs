//! Quasi-random search (`sobol`): the points of a scrambled Sobol sequence, which cover the
//! search space more evenly than independent random draws.
//!
//! The sequence is Sobol's (I. M. Sobol', "On the distribution of points in a cube and the
//! approximate evaluation of integrals", USSR Comput. Math. & Math. Phys. 7(4), 1967) with the
//! Joe–Kuo direction numbers, Owen-scrambled with Burley's hash-based scheme (B. Burley,
//! "Practical Hash-based Owen Scrambling", JCGT 9(4), 2020), as computed by the `sobol_burley`
//! crate. Every power-of-two prefix stays stratified: the first 2^k points put one point in each
//! of 2^k elementary boxes of the cube. The crate supports 2^16 points and 256 dimensions per
//! seed; further blocks of points and dimensions use derived seeds (Burley's padding), so they
//! are random rather than stratified relative to the first block.
//!
//! The scramble is fixed by `random_state` (default 0) read at build time: the per-call seed
//! changes with every call by design, and the sequence must stay the same sequence. Point `i`
//! of the sequence is proposed as the `i`-th trial, so proposals are a function of the history
//! length alone.
//!
//! Mapping the unit coordinate `u` of each parameter:
//! - uniform ints and stepped uniform doubles take value `floor(u * n)` of their `n` grid
//!   values, so every value gets the same share of points;
//! - continuous uniform / log-uniform parameters go through `encode::from_unit` (log-uniform on
//!   the log scale; stepped log-uniform values are then snapped to the step grid);
//! - normal / log-normal parameters keep their prior shape: `u` goes through the inverse CDF of
//!   the truncated normal the prior describes (mean at the middle of the range, sd a sixth of
//!   it, on the log scale for log-normal), then onto the range as above;
//! - discrete and categorical parameters take bucket `floor(u * n)` of their list.
//!
//! In a finite space points that land on a configuration some trial already has (running ones
//! included) are skipped; when the sequence keeps hitting taken points near the end of a small
//! space, the remaining configurations are taken in a shuffled grid order, and the suggestions
//! are marked `exhausted` once every configuration is taken.

use crate::encode::from_unit;
use crate::error::AlgorithmError;
use crate::grid::{MAX_GRID, Shuffle, grid_index, splitmix64, taken_indices};
use crate::history::{fingerprint, taken_fingerprints};
use crate::random::point_at;
use crate::settings::Settings;
use vernier_core::{
    Assignment, CoreError, Distribution, Domain, Objective, ParamValue, Parameter, Proposal,
    SearchSpace, SuggestRequest, Suggester, Suggestions,
};

/// Points per seed block supported by `sobol_burley`.
const BLOCK: u64 = 1 << 16;

/// Consecutive already-taken points tolerated before the rest of a finite space is filled from
/// a shuffled grid instead.
const MAX_SKIPS: usize = 1000;

pub(crate) fn build(
    name: &str,
    settings: &[(String, String)],
    space: &SearchSpace,
    objective: &Objective,
) -> Result<Box<dyn Suggester>, AlgorithmError> {
    let _ = (space, objective);
    let s = Settings::new(name, settings, &["random_state"])?;
    let seed = s.random_state()?.unwrap_or(0);
    Ok(Box::new(SobolSearch { seed }))
}

/// Scrambled-Sobol search.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SobolSearch {
    seed: u64,
}

impl SobolSearch {
    /// The sequence scrambled by `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        SobolSearch { seed }
    }

    /// Coordinate `dim` of point `index` in `[0, 1)`.
    fn coordinate(&self, index: u64, dim: usize) -> f64 {
        let block = index / BLOCK;
        let dims = sobol_burley::NUM_DIMENSIONS as usize;
        let (dim_block, d) = (dim / dims, dim % dims);
        let seed = if block == 0 && dim_block == 0 {
            (self.seed ^ (self.seed >> 32)) as u32
        } else {
            let mut s = self.seed ^ block.wrapping_mul(0x9e37_79b9) ^ ((dim_block as u64) << 48);
            splitmix64(&mut s) as u32
        };
        f64::from(sobol_burley::sample((index % BLOCK) as u32, d as u32, seed))
    }

    /// The configuration at point `index` of the sequence.
    pub(crate) fn assignment_at(&self, space: &SearchSpace, index: u64) -> Assignment {
        Assignment(
            space
                .parameters()
                .iter()
                .enumerate()
                .map(|(d, p)| (p.name.clone(), value_at(p, self.coordinate(index, d))))
                .collect(),
        )
    }
}

impl Suggester for SobolSearch {
    fn name(&self) -> &str {
        "sobol"
    }

    fn suggest(&self, req: &SuggestRequest<'_>) -> Result<Suggestions, CoreError> {
        let mut out = Suggestions::default();
        let mut index = req.trials.len() as u64;
        let mut misses = 0;
        let Some(size) = req.space.cardinality() else {
            let mut seen = taken_fingerprints(req.space, req.trials);
            // Continuous coordinates practically never repeat; the cap only guards the loop.
            while out.proposals.len() < req.count && misses < MAX_SKIPS {
                let a = self.assignment_at(req.space, index);
                index += 1;
                if seen.insert(fingerprint(req.space, &a)) {
                    out.proposals.push(Proposal::new(a));
                } else {
                    misses += 1;
                }
            }
            return Ok(out);
        };

        let mut used = taken_indices(req.space, req.trials);
        while out.proposals.len() < req.count && (used.len() as u128) < size && misses < MAX_SKIPS {
            let a = self.assignment_at(req.space, index);
            index += 1;
            match grid_index(req.space, &a) {
                Some(g) if used.insert(g) => {
                    out.proposals.push(Proposal::new(a));
                    misses = 0;
                }
                _ => misses += 1,
            }
        }
        if out.proposals.len() < req.count && (used.len() as u128) < size && size <= MAX_GRID {
            let order = Shuffle::new(size as u64, self.seed);
            for position in 0..size as u64 {
                if out.proposals.len() >= req.count {
                    break;
                }
                let g = u128::from(order.at(position));
                if used.insert(g)
                    && let Some(a) = point_at(req.space, g)
                {
                    out.proposals.push(Proposal::new(a));
                }
            }
        }
        out.exhausted = used.len() as u128 >= size;
        Ok(out)
    }
}

/// The value of one parameter at unit coordinate `u`.
fn value_at(p: &Parameter, u: f64) -> ParamValue {
    let stepped = matches!(
        p.domain,
        Domain::Int { .. } | Domain::Double { step: Some(_), .. }
    );
    match p.distribution {
        Distribution::Uniform if stepped => p
            .cardinality()
            .and_then(|n| p.value_at(((u * n as f64) as u128).min(n.saturating_sub(1))))
            .unwrap_or_else(|| from_unit(p, u)),
        Distribution::Normal | Distribution::LogNormal if p.cardinality() != Some(1) => {
            match p.domain {
                Domain::Discrete { .. } | Domain::Categorical { .. } => from_unit(p, u),
                _ => from_unit(p, truncated_normal_unit(u)),
            }
        }
        _ => from_unit(p, u),
    }
}

/// Standard normal CDF at ±3, where the priors' truncation lies (sd = range / 6).
const PHI_MINUS_3: f64 = 0.001_349_898_031_630_094_6;
const PHI_PLUS_3: f64 = 0.998_650_101_968_369_9;

/// Maps a uniform `u` to the position in `[0, 1]` of the matching quantile of a normal centred
/// on the range with sd a sixth of it, truncated to the range.
fn truncated_normal_unit(u: f64) -> f64 {
    let p = PHI_MINUS_3 + u.clamp(0.0, 1.0) * (PHI_PLUS_3 - PHI_MINUS_3);
    ((normal_quantile(p) + 3.0) / 6.0).clamp(0.0, 1.0)
}

/// Inverse standard normal CDF by Acklam's rational approximation (relative error below
/// 1.15e-9, ample for placing a hyperparameter), P. J. Acklam, "An algorithm for computing the
/// inverse normal cumulative distribution function", 2003.
pub(crate) fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    const LOW: f64 = 0.02425;
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < LOW {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - LOW {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_params::{pairs, param, texts, unit};
    use proptest::prelude::*;
    use std::collections::{BTreeMap, HashSet};
    use vernier_core::{Direction, TrialRecord, TrialState};

    fn mixed_space() -> SearchSpace {
        use crate::test_params::{categorical, discrete, double, int};
        SearchSpace::new(vec![
            double("lr", (1e-4, 0.1), None, Distribution::LogUniform),
            int("layers", (1, 9), Some(2), Distribution::Uniform),
            double("momentum", (0.5, 0.95), None, Distribution::Normal),
            categorical("opt", &["sgd", "adam"]),
            discrete("batch", &["16", "32", "64"]),
        ])
        .unwrap()
    }

    fn sobol(settings: &[(&str, &str)]) -> Box<dyn Suggester> {
        let o = Objective::new("loss", Direction::Minimize);
        build("sobol", &pairs(settings), &mixed_space(), &o).unwrap()
    }

    fn ask(
        s: &dyn Suggester,
        space: &SearchSpace,
        direction: Direction,
        trials: &[TrialRecord],
        count: usize,
        seed: u64,
    ) -> Suggestions {
        let o = Objective::new("loss", direction);
        s.suggest(&SuggestRequest {
            space,
            objective: &o,
            trials,
            count,
            seed,
            state: None,
        })
        .unwrap()
    }

    fn record(i: usize, a: Assignment, state: TrialState, value: Option<f64>) -> TrialRecord {
        TrialRecord {
            name: format!("t{i}"),
            assignment: a,
            state,
            objective: value,
            labels: BTreeMap::new(),
            metrics: BTreeMap::new(),
        }
    }

    #[test]
    fn seeded_proposals_are_exact() {
        let space = mixed_space();
        let s = sobol(&[("random_state", "7")]);
        let got = ask(s.as_ref(), &space, Direction::Minimize, &[], 3, 1);
        assert_eq!(
            texts(&got),
            vec![
                "lr=0.011031461576439356, layers=5, momentum=0.866886572925138, opt=adam, batch=16",
                "lr=0.00012217245741979058, layers=1, momentum=0.5905742914304177, opt=sgd, batch=64",
                "lr=0.02780555023231486, layers=3, momentum=0.6793460628246538, opt=sgd, batch=32",
            ]
        );
        // The per-call seed does not matter, and the direction does not either.
        assert_eq!(got, ask(s.as_ref(), &space, Direction::Maximize, &[], 3, 2));
    }

    #[test]
    fn the_first_sixteen_points_fill_the_quadrants_evenly() {
        let space = SearchSpace::new(vec![unit("x"), unit("y")]).unwrap();
        for seed in ["0", "1", "12345"] {
            let s = sobol(&[("random_state", seed)]);
            let got = ask(s.as_ref(), &space, Direction::Minimize, &[], 16, 0);
            let mut quadrants = [0; 4];
            let mut sixteenths = HashSet::new();
            for p in &got.proposals {
                let x = p.assignment.get("x").and_then(ParamValue::as_f64).unwrap();
                let y = p.assignment.get("y").and_then(ParamValue::as_f64).unwrap();
                quadrants[usize::from(x >= 0.5) * 2 + usize::from(y >= 0.5)] += 1;
                sixteenths.insert(((x * 4.0) as usize, (y * 4.0) as usize));
            }
            assert_eq!(quadrants, [4, 4, 4, 4], "seed {seed}");
            // The points form a (0, 4, 2)-net: exactly one in each 1/4 x 1/4 cell too.
            assert_eq!(sixteenths.len(), 16, "seed {seed}");
        }
    }

    #[test]
    fn continues_the_sequence_after_the_history() {
        let space = mixed_space();
        let s = sobol(&[]);
        let all = ask(s.as_ref(), &space, Direction::Minimize, &[], 6, 0);
        // Failed and running trials count as points used, whatever their outcome.
        let trials: Vec<TrialRecord> = all.proposals[..4]
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let state = [TrialState::Failed, TrialState::Running][i % 2];
                record(i, p.assignment.clone(), state, None)
            })
            .collect();
        let next = ask(s.as_ref(), &space, Direction::Maximize, &trials, 2, 9);
        assert_eq!(texts(&next), texts(&all)[4..].to_vec());
    }

    #[test]
    fn exhausts_a_small_finite_space_without_repeats() {
        let space = SearchSpace::new(vec![
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
                Distribution::Normal,
            ),
        ])
        .unwrap();
        let s = sobol(&[]);
        let mut trials = Vec::new();
        for round in 0..4 {
            let got = ask(s.as_ref(), &space, Direction::Minimize, &trials, 4, round);
            assert_eq!(got.exhausted, round >= 1, "round {round}");
            assert_eq!(got.proposals.len(), [4, 2, 0, 0][round as usize]);
            for p in got.proposals {
                trials.push(record(
                    trials.len(),
                    p.assignment,
                    TrialState::Succeeded,
                    Some(1.0),
                ));
            }
        }
        let keys: HashSet<String> = trials.iter().map(|t| t.assignment.key()).collect();
        assert_eq!(keys.len(), 6);
    }

    #[test]
    fn normal_priors_keep_their_shape() {
        let p = param(
            "m",
            Domain::Double {
                min: 0.0,
                max: 6.0,
                step: None,
            },
            Distribution::Normal,
        );
        let n = 1024;
        let inner = (0..n)
            .map(|i| value_at(&p, (i as f64 + 0.5) / n as f64).as_f64().unwrap())
            .filter(|x| (2.0..=4.0).contains(x))
            .count();
        // One sd either side of the mean holds about 68% of the (barely) truncated normal.
        assert!((680..=720).contains(&inner), "{inner}");
        assert!((normal_quantile(0.975) - 1.959_963_985).abs() < 1e-8);
        assert!((normal_quantile(0.001) + 3.090_232_306).abs() < 1e-8);
    }

    #[test]
    fn validates_settings() {
        let o = Objective::new("loss", Direction::Minimize);
        let pairs = |n: &str, v: &str| vec![(n.to_string(), v.to_string())];
        let err = build("sobol", &pairs("scramble", "1"), &mixed_space(), &o)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown setting \"scramble\""), "{err}");
        // Katib's Sobol (goptuna) never reads random_state: any value runs, and an integer
        // still seeds the scramble.
        for odd in ["-3", "1.5", "abc"] {
            assert!(build("sobol", &pairs("random_state", odd), &mixed_space(), &o).is_ok());
        }
    }

    #[test]
    fn beats_random_search_on_branin() {
        let problem = vernier_testfunctions::Problem::by_name("branin").unwrap();
        let space = problem.space();
        let (mut sobol_total, mut random_total) = (0.0, 0.0);
        for seed in 0..5u64 {
            let s = sobol(&[("random_state", &seed.to_string())]);
            let points = ask(s.as_ref(), &space, Direction::Minimize, &[], 32, 0);
            let best = points
                .proposals
                .iter()
                .map(|p| problem.eval_assignment(&p.assignment))
                .fold(f64::INFINITY, f64::min);
            sobol_total += problem.regret(best);
            let r = crate::random::RandomSearch::new();
            let points = ask(&r, &space, Direction::Minimize, &[], 32, seed);
            let best = points
                .proposals
                .iter()
                .map(|p| problem.eval_assignment(&p.assignment))
                .fold(f64::INFINITY, f64::min);
            random_total += problem.regret(best);
        }
        assert!(
            sobol_total < random_total,
            "{sobol_total} vs {random_total}"
        );
    }

    proptest! {
        #[test]
        fn proposals_are_in_space_distinct_and_deterministic(
            seed in 0u32..1000, count in 1usize..20, done in 0usize..30
        ) {
            let space = mixed_space();
            let s = sobol(&[("random_state", &seed.to_string())]);
            let history: Vec<TrialRecord> =
                ask(s.as_ref(), &space, Direction::Minimize, &[], done, 0)
                    .proposals
                    .into_iter()
                    .enumerate()
                    .map(|(i, p)| record(i, p.assignment, TrialState::Succeeded, Some(i as f64)))
                    .collect();
            let a = ask(s.as_ref(), &space, Direction::Minimize, &history, count, 3);
            prop_assert_eq!(&a, &ask(s.as_ref(), &space, Direction::Minimize, &history, count, 3));
            prop_assert_eq!(a.proposals.len(), count);
            let mut keys: HashSet<String> =
                history.iter().map(|t| t.assignment.key()).collect();
            for p in &a.proposals {
                prop_assert!(space.check(&p.assignment).is_ok(), "{}", p.assignment);
                prop_assert!(keys.insert(p.assignment.key()));
            }
        }
    }
}
