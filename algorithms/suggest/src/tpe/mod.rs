//! Tree-structured Parzen Estimator search (`tpe`, and `multivariate-tpe` with joint kernels),
//! the model-based default of Katib's hyperopt and Optuna services, rebuilt on Optuna's
//! `TPESampler` design.
//!
//! Finished trials are split by loss into the best `gamma(n)` ("below") and the rest
//! ("above"); each set becomes a Parzen estimator `l(x)` resp. `g(x)`, candidates are drawn
//! from `l` and the one maximising `ln l(x) - ln g(x)` (the expected-improvement criterion) is
//! proposed (Bergstra, Bardenet, Bengio & Kégl 2011, "Algorithms for Hyper-Parameter
//! Optimization", NeurIPS; Watanabe 2023, "Tree-Structured Parzen Estimator: Understanding
//! Its Algorithm Components").
//!
//! - `multivariate-tpe`, and `tpe` by default as in Optuna 5 (whose `TPESampler` is
//!   multivariate for one objective), use one joint (product) kernel per observation over all
//!   parameters (Falkner, Klein & Hutter 2018, "BOHB", ICML; Optuna `multivariate=True`): a
//!   candidate is drawn from one observation's joint kernel and scored by the joint density
//!   ratio, so interactions between parameters are kept.
//! - `tpe` with `multivariate: false` is univariate, as Katib's hyperopt service and Optuna
//!   before 5.0: one estimator per parameter; each parameter's candidate is chosen
//!   independently.
//!
//! The estimators are Optuna 5.0's (`optuna/samplers/_tpe/parzen_estimator.py`, compared line by
//! line), except for two defaults measured on the benchmark suite: 48 candidates per proposal for
//! the joint estimator instead of 24 (the univariate one keeps 24), and a good set of `gamma(n) =
//! min(ceil(0.15 n), 25)` instead of Optuna's `min(ceil(0.1 n), 25)`. Both follow Optuna's other
//! defaults: a prior kernel of weight `prior_weight` (centre of the range, sd = the range),
//! per-dimension bandwidths from the gaps to the neighbouring observations with the outermost ones
//! not widened by the endpoints, clipped to `[range / min(100, kernels + 1), range]` (the magic
//! clip), flat weights for the newest 25 observations and a linear ramp for older ones. Current
//! Optuna uses the neighbour rule for joint kernels too; the older `0.2 · n^(-1/(d+4))` joint
//! bandwidth was measured worse here (Hartmann6, Ackley) and is not used. A `gamma` setting is a
//! plain fraction: the best `ceil(gamma · n)` trials are good.
//!
//! Parameters are modelled in the unit coordinates of [`crate::encode`], so log-uniform and
//! log-normal parameters are smoothed on the log scale. The prior *shape* (normal versus
//! uniform) only matters in the startup phase (the first `n_startup_trials` proposals, counting
//! finished and pending trials), whose proposals are prior draws (or points of the `sobol`
//! sequence with `initial_point_generator: sobol`). Integers and stepped doubles
//! use discretised kernels: each grid value gets the Gaussian mass of the interval of values
//! that round to it, on the linear or the log scale (Optuna's discrete truncated
//! (log-)normals), and draws are snapped to the grid. Categorical and discrete lists use
//! Optuna's categorical kernels, Aitchison–Aitken-style smoothing by `prior_weight`.
//!
//! Pending (created or running) trials and the earlier proposals of the same batch join the
//! "above" set, Optuna's constant liar, so a batch spreads out; no proposal repeats a
//! configuration in the history or the batch.
//!
//! Constraints (`objective.constraints`) follow Optuna's `constraints_func` handling: trials
//! are ranked feasible-first by loss, then infeasible by total violation, before the split.

mod normal;
mod parzen;

use crate::error::AlgorithmError;
use crate::history;
use crate::initial_design::InitialDesign;
use crate::random::point_at;
use crate::sample::sample_assignment;
use crate::settings::Settings;
use parzen::{Dim, Mixture, default_weights};
use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashSet;
use vernier_core::{
    Assignment, Cancel, CoreError, Objective, Parameter, Proposal, SearchSpace, SuggestRequest,
    Suggester, Suggestions,
};

const ACCEPTED: &[&str] = &[
    "n_startup_trials",
    "n_ei_candidates",
    "n_EI_candidates",
    "gamma",
    "prior_weight",
    "multivariate",
    "random_state",
    crate::initial_design::SETTING,
];

const DEFAULT_STARTUP: usize = 10;
/// Candidates per proposal of the joint estimator: twice Optuna's 24, since the best of more
/// draws from `l` maximises `l/g` more closely; on the benchmark suite it lowered the median
/// regret on four of six problems in both of two seed sets (higher on Branin; BENCHMARKS.md).
const DEFAULT_EI_CANDIDATES_JOINT: usize = 48;
/// Candidates per parameter of the univariate estimator: Optuna's 24. Each parameter keeps its
/// own best draw, so more draws make every coordinate greedier at once; 48 had a higher median
/// regret on five of six problems over 160 seeds (BENCHMARKS.md, "TPE's good set").
const DEFAULT_EI_CANDIDATES_UNIVARIATE: usize = 24;
const DEFAULT_PRIOR_WEIGHT: f64 = 1.0;
/// Upper bound on candidates per proposal: beyond this the search is just slower.
const MAX_EI_CANDIDATES: i64 = 100_000;
/// The default good fraction, BOHB's `top_n_percent` (Falkner et al. 2018): Optuna's 0.1
/// leaves 5 good trials at 50, so few that `l(x)` is mostly the prior kernel and the
/// magic-clipped bandwidths. 0.15 lowered the median regret on five of six benchmark problems
/// in each of two 80-seed sets (chosen on seeds 0–79, confirmed on 80–159) and was not
/// significantly worse on any (BENCHMARKS.md, "TPE's good set").
const DEFAULT_GAMMA: f64 = 0.15;
/// Optuna's default `gamma` caps the good set at this many trials.
const MAX_DEFAULT_BELOW: usize = 25;

/// Fresh candidate sets tried when every candidate is already taken (small finite spaces).
const TPE_ROUNDS: usize = 8;
/// Prior redraws before falling back to enumerating a finite space's unused points.
const MAX_REDRAWS: usize = 100;
/// Finite spaces up to this size are enumerated when redraws keep hitting taken points.
const ENUMERATE_LIMIT: u128 = 100_000;

/// The most observations one Parzen estimator is fitted to. Each proposal scores every
/// candidate against every component, and each proposal of a batch joins the "bad" model, so
/// 10,000 proposals over 10,000 trials took about 86 s; beyond this the most recent points,
/// which TPE's weights favour anyway, stand for the rest.
pub const MODEL_MAX_POINTS: usize = 1000;

/// Proposals of one batch that each refit the "bad" model with the batch's earlier proposals
/// (the constant liar). Beyond them the model is refitted every `ceil(i / LIAR_FULL)`-th
/// proposal: a batch of 64 or fewer (any realistic `parallelTrialCount`) is unchanged, and
/// 10,000 proposals fit 430 models instead of 10,000.
const LIAR_FULL: usize = 64;

/// Whether the `i`-th proposal of a batch (from 0) refits the "bad" model.
fn liar_refit_due(i: usize) -> bool {
    i < LIAR_FULL || i.is_multiple_of(i.div_ceil(LIAR_FULL))
}

/// Builds `tpe` or `multivariate-tpe` after checking every setting.
pub(crate) fn build(
    name: &str,
    settings: &[(String, String)],
    space: &SearchSpace,
    objective: &Objective,
) -> Result<Box<dyn Suggester>, AlgorithmError> {
    let _ = (space, objective);
    let s = Settings::new(name, settings, ACCEPTED)?;
    let n_startup = s
        .get::<i64>("n_startup_trials", |v| v >= 0, "an integer >= 0")?
        .map_or(DEFAULT_STARTUP, |v| v as usize);
    let ei_valid = |v: i64| (1..=MAX_EI_CANDIDATES).contains(&v);
    let ei_wanted = "an integer from 1 to 100000";
    let n_ei = match s.get::<i64>("n_ei_candidates", ei_valid, ei_wanted)? {
        Some(v) => Some(v),
        None => s.get::<i64>("n_EI_candidates", ei_valid, ei_wanted)?,
    };
    let gamma = s.get::<f64>(
        "gamma",
        |v| v > 0.0 && v < 1.0,
        "a fraction strictly between 0 and 1",
    )?;
    let prior_weight = s
        .get::<f64>(
            "prior_weight",
            |v| v > 0.0 && v.is_finite(),
            "a finite number > 0",
        )?
        .unwrap_or(DEFAULT_PRIOR_WEIGHT);
    let initial = InitialDesign::from_settings(&s)?;
    let multivariate = match (
        name,
        s.one_of("multivariate", &[("true", true), ("false", false)], "")?,
    ) {
        ("multivariate-tpe", Some(false)) => {
            return Err(AlgorithmError::InvalidSetting {
                algorithm: name.to_string(),
                setting: "multivariate".to_string(),
                value: "false".to_string(),
                reason: "contradicts the algorithm: multivariate-tpe always models parameters \
                         jointly\nhint: use algorithm tpe with multivariate false for the \
                         univariate estimator"
                    .to_string(),
            });
        }
        (_, Some(m)) => m,
        // Optuna 5's default: multivariate for a single objective.
        (_, None) => true,
    };
    let n_ei = n_ei.map_or(
        if multivariate {
            DEFAULT_EI_CANDIDATES_JOINT
        } else {
            DEFAULT_EI_CANDIDATES_UNIVARIATE
        },
        |v| v as usize,
    );
    Ok(Box::new(Tpe {
        name: if name == "multivariate-tpe" {
            "multivariate-tpe"
        } else {
            "tpe"
        },
        multivariate,
        n_startup,
        n_ei,
        gamma,
        prior_weight,
        initial,
    }))
}

/// TPE with validated settings.
#[derive(Debug, Clone, PartialEq)]
struct Tpe {
    name: &'static str,
    multivariate: bool,
    n_startup: usize,
    n_ei: usize,
    /// Fraction of finished trials counted as good; `None` is the default rule.
    gamma: Option<f64>,
    prior_weight: f64,
    /// How the start-up trials are chosen.
    initial: InitialDesign,
}

/// The fitted estimator of one trial set: one joint mixture, or one mixture per parameter.
#[derive(Debug)]
struct Model(Vec<Mixture>);

impl Tpe {
    /// `rows` are encoded observations in chronological order; only the latest
    /// [`MODEL_MAX_POINTS`] are used.
    fn fit(&self, dims: &[Dim], rows: &[&[f64]]) -> Model {
        let rows = &rows[rows.len().saturating_sub(MODEL_MAX_POINTS)..];
        let weights = default_weights(rows.len());
        let cols: Vec<Vec<f64>> = (0..dims.len())
            .map(|j| rows.iter().map(|r| r[j]).collect())
            .collect();
        if self.multivariate {
            Model(vec![Mixture::new(dims, &cols, &weights, self.prior_weight)])
        } else {
            Model(
                dims.iter()
                    .zip(&cols)
                    .map(|(d, c)| {
                        Mixture::new(
                            std::slice::from_ref(d),
                            std::slice::from_ref(c),
                            &weights,
                            self.prior_weight,
                        )
                    })
                    .collect(),
            )
        }
    }

    /// The best untaken candidate by `ln l(x) - ln g(x)`, or `None` when every candidate of
    /// several rounds was taken.
    fn propose<R: Rng + ?Sized>(
        &self,
        params: &[Parameter],
        dims: &[Dim],
        below: &Model,
        above: &Model,
        seen: &HashSet<String>,
        rng: &mut R,
    ) -> Option<Assignment> {
        let snap = |x: Vec<f64>| -> Vec<f64> {
            params
                .iter()
                .zip(dims)
                .zip(x)
                .map(|((p, d), xi)| d.snap(p, xi))
                .collect()
        };
        for _ in 0..TPE_ROUNDS {
            if let ([l], [g], true) = (&below.0[..], &above.0[..], self.multivariate) {
                let mut scored: Vec<(f64, Vec<f64>)> = (0..self.n_ei)
                    .map(|_| {
                        let x = snap(l.sample(rng));
                        (finite_or_worst(l.ln_pdf(&x) - g.ln_pdf(&x)), x)
                    })
                    .collect();
                scored.sort_by(|a, b| b.0.total_cmp(&a.0));
                if let Some(a) = scored
                    .into_iter()
                    .map(|(_, x)| decode(params, dims, &x))
                    .find(|a| !seen.contains(&a.key()))
                {
                    return Some(a);
                }
            } else {
                // Each parameter independently: its best of n_ei draws from its own l.
                let x: Vec<f64> = params
                    .iter()
                    .zip(dims)
                    .zip(below.0.iter().zip(&above.0))
                    .map(|((p, d), (l, g))| {
                        let mut best = (f64::NEG_INFINITY, f64::NAN);
                        for _ in 0..self.n_ei {
                            let xi = [d.snap(p, l.sample(rng)[0])];
                            let score = finite_or_worst(l.ln_pdf(&xi) - g.ln_pdf(&xi));
                            if best.1.is_nan() || score > best.0 {
                                best = (score, xi[0]);
                            }
                        }
                        best.1
                    })
                    .collect();
                let a = decode(params, dims, &x);
                if !seen.contains(&a.key()) {
                    return Some(a);
                }
            }
        }
        None
    }
}

/// Size of the good set among `n` finished trials: a `gamma` setting is a plain fraction, the
/// default rule is capped as Optuna's is.
fn good_set_size(gamma: Option<f64>, n: usize) -> usize {
    let k = match gamma {
        Some(g) => (g * n as f64).ceil() as usize,
        None => ((DEFAULT_GAMMA * n as f64).ceil() as usize).min(MAX_DEFAULT_BELOW),
    };
    k.min(n)
}

/// NaN (both densities vanishing) ranks last.
fn finite_or_worst(score: f64) -> f64 {
    if score.is_nan() {
        f64::NEG_INFINITY
    } else {
        score
    }
}

fn encode(params: &[Parameter], dims: &[Dim], a: &Assignment) -> Vec<f64> {
    params
        .iter()
        .zip(dims)
        .map(|(p, d)| match a.get(&p.name) {
            Some(v) => d.encode(p, v),
            None => d.snap(p, 0.5 * (d.lo + d.hi)),
        })
        .collect()
}

fn decode(params: &[Parameter], dims: &[Dim], x: &[f64]) -> Assignment {
    Assignment(
        params
            .iter()
            .zip(dims)
            .zip(x)
            .map(|((p, d), xi)| (p.name.clone(), d.decode(p, *xi)))
            .collect(),
    )
}

/// A prior draw not yet taken; `Err(true)` when a finite space has no unused point left,
/// `Err(false)` when none was found without proving that.
fn random_untaken<R: Rng + ?Sized>(
    space: &SearchSpace,
    seen: &HashSet<String>,
    rng: &mut R,
) -> Result<Assignment, bool> {
    for _ in 0..MAX_REDRAWS {
        let a = sample_assignment(space, rng);
        if !seen.contains(&a.key()) {
            return Ok(a);
        }
    }
    let Some(size) = space.cardinality().filter(|n| *n <= ENUMERATE_LIMIT) else {
        return Err(false);
    };
    let mut unused: Vec<Assignment> = (0..size)
        .filter_map(|i| point_at(space, i))
        .filter(|a| !seen.contains(&a.key()))
        .collect();
    if unused.is_empty() {
        return Err(true);
    }
    let i = rng.random_range(0..unused.len());
    Ok(unused.swap_remove(i))
}

/// The finished trials' encoded rows, in history order, split into the good set (the best
/// `good_set_size` by loss) and the rest; and how many finished trials there are. Constrained
/// TPE as Optuna's `constraints_func`: feasible trials rank by loss ahead of every infeasible
/// one, infeasible ones by total violation, so breaking a constraint puts a trial in the "bad"
/// group unless too few trials are feasible.
fn good_and_bad_rows(
    req: &SuggestRequest<'_>,
    dims: &[Dim],
    gamma: Option<f64>,
) -> (Vec<Vec<f64>>, Vec<Vec<f64>>, usize) {
    let params = req.space.parameters();
    let observed = history::observed(req.objective, req.trials);
    let n = observed.len();
    let violation = history::observed_violations(req.objective, req.trials);
    let mut by_loss: Vec<usize> = (0..n).collect();
    by_loss.sort_by(|i, j| {
        violation[*i]
            .total_cmp(&violation[*j])
            .then(observed[*i].1.total_cmp(&observed[*j].1))
    });
    let mut good = vec![false; n];
    for i in by_loss.iter().take(good_set_size(gamma, n)) {
        good[*i] = true;
    }
    let (mut below, mut above) = (Vec::new(), Vec::new());
    for ((a, _), is_good) in observed.iter().zip(good) {
        let row = encode(params, dims, a);
        if is_good {
            below.push(row)
        } else {
            above.push(row)
        }
    }
    (below, above, n)
}

impl Suggester for Tpe {
    fn name(&self) -> &str {
        self.name
    }

    fn suggest(&self, req: &SuggestRequest<'_>) -> Result<Suggestions, CoreError> {
        self.suggest_cancellable(req, &Cancel::new())
    }

    fn suggest_cancellable(
        &self,
        req: &SuggestRequest<'_>,
        cancel: &Cancel,
    ) -> Result<Suggestions, CoreError> {
        cancel.check(self.name)?;
        let mut rng = ChaCha8Rng::seed_from_u64(req.seed);
        let params = req.space.parameters();
        let dims: Vec<Dim> = params.iter().map(Dim::new).collect();

        let (below, above, n) = good_and_bad_rows(req, &dims, self.gamma);
        let below_rows: Vec<&[f64]> = below.iter().map(Vec::as_slice).collect();
        // Constant liar: pending trials count as bad, after the finished ones in time.
        let pending = history::pending(req.trials);
        let mut above_rows: Vec<Vec<f64>> = above
            .into_iter()
            .chain(pending.iter().map(|a| encode(params, &dims, a)))
            .collect();
        let mut in_flight = pending.len();

        let below_model = self.fit(&dims, &below_rows);
        let mut above_model = None;
        let mut seen = history::taken(req.trials);
        let mut out = Suggestions::default();
        for i in 0..req.count {
            // Each proposal is the unit of work between polls.
            cancel.check(self.name)?;
            let tpe = if n + in_flight < self.n_startup {
                None
            } else {
                if above_model.is_none() || liar_refit_due(i) {
                    // Only the tail `fit` keeps, so a batch stays linear in its size.
                    let tail = above_rows.len().saturating_sub(MODEL_MAX_POINTS);
                    let above: Vec<&[f64]> = above_rows[tail..].iter().map(Vec::as_slice).collect();
                    above_model = Some(self.fit(&dims, &above));
                }
                let above_model = above_model.as_ref().unwrap_or_else(|| unreachable!());
                self.propose(params, &dims, &below_model, above_model, &seen, &mut rng)
            };
            let next = match tpe {
                Some(a) => Ok(a),
                None => match self.initial.point(req.space, (req.trials.len() + i) as u64) {
                    Some(a) if !seen.contains(&a.key()) => Ok(a),
                    _ => random_untaken(req.space, &seen, &mut rng),
                },
            };
            match next {
                Ok(a) => {
                    seen.insert(a.key());
                    above_rows.push(encode(params, &dims, &a));
                    in_flight += 1;
                    out.proposals.push(Proposal::new(a));
                }
                Err(exhausted) => {
                    out.exhausted = exhausted;
                    break;
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
