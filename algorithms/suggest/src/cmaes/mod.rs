//! CMA-ES (`cmaes`): evolution strategy that adapts a Gaussian search distribution (mean,
//! step size, covariance) to the numeric parameters, rebuilt from the trial history on every
//! call so that no state survives between calls.
//!
//! The update equations, default population size `4 + floor(3 ln n)` and learning rates are
//! those of N. Hansen, "The CMA Evolution Strategy: A Tutorial", arXiv:1604.00772 (2016),
//! including the negative (active) recombination weights; the stopping tests (tolfun, tolx,
//! no-effect axis/coordinate, condition number 1e14) follow the `cmaes` library Optuna uses.
//! Restarts: `ipop` doubles the population at each restart (A. Auger & N. Hansen, "A Restart
//! CMA Evolution Strategy With Increasing Population Size", CEC 2005); `bipop` alternates that
//! large-population regime with small populations and smaller initial steps, choosing the
//! regime that has used fewer evaluations (N. Hansen, "Benchmarking a BI-Population CMA-ES on
//! the BBOB-2009 Function Testbed", GECCO 2009): small runs take
//! `floor(lambda_def * (lambda_large / (2 lambda_def))^(U^2))` individuals and step
//! `sigma * 10^(-2U)`. Every restart starts from a uniformly random mean, drawn from
//! `random_state`. With `none` (the default) the search never restarts except to recover from
//! a numerically broken state.
//!
//! Search space: CMA-ES works in the unit cube of the double and int parameters (log scale for
//! log-uniform / log-normal, linear otherwise; a normal prior's shape is not used, the Gaussian
//! of CMA-ES takes its place). The first mean is the cube's centre and the initial step is
//! 1/6 of the cube (as Optuna's and goptuna's `min(range)/6`), or `sigma` given in the
//! parameters' own units, as Katib reads it, divided by the smallest range ([`cube_sigma`]).
//! With ten or more warm-start results (`vernier.warmstart/source` records) the first run
//! starts instead from the distribution WS-CMA-ES fits to the best 10 % of them
//! ([`warm_start`]), as Optuna's `CmaEsSampler(source_trials=...)` does; `sigma` is then not
//! used, and restarts start as without a warm start.
//! Samples outside the cube are redrawn up to 100 times, then clipped. Ints and stepped doubles
//! are sampled continuously and snapped on output (Optuna's approach); what a trial tells the
//! update is its actual (snapped) value. Discrete and categorical parameters cannot be modelled by a Gaussian and are
//! drawn independently from their priors, like Optuna's independent fallback sampler.
//!
//! Rebuilding the state: each proposal carries labels with its restart, generation and index
//! within the generation. A generation is complete when its first `lambda` individuals (by
//! index) have all finished; complete generations are replayed in order through the update.
//! Failed and metric-less trials rank as the worst of their generation; a generation in
//! which nothing succeeded leaves the distribution unchanged. A killed trial (an interrupted
//! run) holds no place: its index is the next one handed out, so a resumed search draws the
//! same individual again and goes on as the uninterrupted one would. When the driver asks for more
//! proposals than the current generation has places left (more parallel slots than `lambda`),
//! the extra individuals are drawn from the same distribution with indices past `lambda`: they
//! are evaluated and can become the best trial, but do not enter the update. Trials without
//! these labels (from another algorithm, or older runs) are not used by the update but are
//! never proposed again.
//!
//! Drawing individuals: individual `k` of a generation takes point `k` of a scrambled Sobol
//! sequence whose scramble is seeded by (`random_state`, restart, generation), pushed through
//! the normal quantile, as its standard-normal vector. These quasi-random mutations (A. Auger,
//! M. Jebalia & O. Teytaud, "Algorithms (X, sigma, eta): quasi-random mutations for Evolution
//! Strategies", EA 2005) spread a small generation more evenly than independent draws; on the
//! benchmark suite they lowered the median regret on every problem. Redraws (outside the cube,
//! or onto a configuration already taken) and list parameters use the request's seed. Since
//! the update uses the evaluated assignments rather than re-drawing them, replays agree
//! whatever the seed.

mod warm_start;

pub(crate) use warm_start::MIN_RESULTS as WARM_START_MIN_RESULTS;

use crate::encode::{from_unit, to_unit};
use crate::error::AlgorithmError;
use crate::grid::{MAX_GRID, Shuffle, splitmix64, taken_indices};
use crate::history::{fingerprint, is_explored, taken_fingerprints, value_of};
use crate::random::point_at;
use crate::sample::{sample_assignment, sample_param};
use crate::settings::Settings;
use nalgebra::{DMatrix, DVector, SymmetricEigen};
use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use std::collections::{BTreeMap, HashSet};
use vernier_core::{
    Assignment, CoreError, Domain, Objective, Proposal, SearchSpace, SuggestRequest, Suggester,
    Suggestions, TrialRecord,
};

pub(crate) const LABEL_RESTART: &str = "vernier.cmaes/restart";
pub(crate) const LABEL_GENERATION: &str = "vernier.cmaes/generation";
pub(crate) const LABEL_INDIVIDUAL: &str = "vernier.cmaes/individual";

/// Draws outside the unit cube are redrawn this often before being clipped.
const MAX_RESAMPLES: usize = 100;
/// Draws of a configuration some trial already has, before falling back to the priors.
const MAX_DUPLICATE_DRAWS: usize = 32;
/// Floor on covariance eigenvalues, against round-off making the matrix indefinite.
const EIGEN_FLOOR: f64 = 1e-16;
const TOLFUN: f64 = 1e-12;
const TOLX_FACTOR: f64 = 1e-12;
const MAX_CONDITION: f64 = 1e14;
const SIGMA_MAX: f64 = 1e32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RestartStrategy {
    None,
    Ipop,
    Bipop,
}

pub(crate) fn build(
    name: &str,
    settings: &[(String, String)],
    space: &SearchSpace,
    objective: &Objective,
) -> Result<Box<dyn Suggester>, AlgorithmError> {
    let _ = objective;
    let s = Settings::new(
        name,
        settings,
        &["sigma", "restart_strategy", "random_state"],
    )?;
    let seed = s.random_state()?.unwrap_or(0);
    let sigma = s.get::<f64>(
        "sigma",
        |v| !v.is_infinite(),
        "a number, the initial step in the parameters' own units",
    )?;
    let restart = s
        .one_of(
            "restart_strategy",
            &[
                ("none", RestartStrategy::None),
                ("ipop", RestartStrategy::Ipop),
                ("bipop", RestartStrategy::Bipop),
            ],
            "",
        )?
        .unwrap_or(RestartStrategy::None);
    let numeric = numeric_params(space);
    if numeric.len() < 2 {
        return Err(AlgorithmError::UnsuitableSpace {
            algorithm: name.to_string(),
            reason: format!(
                "it has {} tunable double or int parameter(s) (min below max), and cmaes needs \
                 two or more (a continuous search space of two or more dimensions)\nhint: use \
                 tpe or bayesianoptimization for this space",
                numeric.len()
            ),
        });
    }
    Ok(Box::new(CmaEs {
        sigma0: cube_sigma(sigma, space, &numeric),
        restart,
        seed,
    }))
}

/// The initial step in cube units. Katib's CMA-ES (goptuna) takes `sigma` in the parameters'
/// own units, one step for every dimension, and uses its default `min(range) / 6` for a value
/// that is not above zero; this search works in the unit cube, so the step becomes
/// `sigma / min(range)`: Katib's step exactly along the dimensions of the smallest range (all
/// of them when the ranges are equal), and the same fraction of the range along the others.
fn cube_sigma(sigma: Option<f64>, space: &SearchSpace, numeric: &[usize]) -> f64 {
    let default = 1.0 / 6.0;
    let Some(sigma) = sigma.filter(|v| *v > 0.0) else {
        return default;
    };
    let ranges = numeric
        .iter()
        .filter_map(|&i| match space.parameters()[i].domain {
            Domain::Double { min, max, .. } => Some(max - min),
            Domain::Int { min, max, .. } => Some(max as f64 - min as f64),
            _ => None,
        });
    let smallest = ranges.fold(f64::INFINITY, f64::min);
    if smallest.is_finite() && smallest > 0.0 {
        (sigma / smallest).min(SIGMA_MAX)
    } else {
        default
    }
}

/// Positions of the double and int parameters, the dimensions CMA-ES models.
fn numeric_params(space: &SearchSpace) -> Vec<usize> {
    space
        .parameters()
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p.domain, Domain::Double { .. } | Domain::Int { .. }))
        .map(|(i, _)| i)
        .collect()
}

/// CMA-ES with optional IPOP / BIPOP restarts.
#[derive(Debug, Clone)]
pub(crate) struct CmaEs {
    sigma0: f64,
    restart: RestartStrategy,
    seed: u64,
}

/// Constants of one population size, Hansen's tutorial, Table 1.
#[derive(Debug, Clone)]
struct Strategy {
    n: usize,
    lambda: usize,
    mu: usize,
    weights: Vec<f64>,
    mu_eff: f64,
    c_sigma: f64,
    d_sigma: f64,
    c_c: f64,
    c1: f64,
    c_mu: f64,
    chi_n: f64,
}

impl Strategy {
    fn new(n: usize, lambda: usize) -> Self {
        let nf = n as f64;
        let lambda = lambda.max(2);
        let mu = lambda / 2;
        let raw: Vec<f64> = (1..=lambda)
            .map(|i| ((lambda as f64 + 1.0) / 2.0).ln() - (i as f64).ln())
            .collect();
        let positive: f64 = raw.iter().filter(|w| **w > 0.0).sum();
        let positive_sq: f64 = raw.iter().filter(|w| **w > 0.0).map(|w| w * w).sum();
        let negative: f64 = -raw.iter().filter(|w| **w < 0.0).sum::<f64>();
        let negative_sq: f64 = raw.iter().filter(|w| **w < 0.0).map(|w| w * w).sum();
        let mu_eff = positive * positive / positive_sq;
        let mu_eff_minus = if negative_sq > 0.0 {
            negative * negative / negative_sq
        } else {
            0.0
        };
        let alpha_cov = 2.0;
        let c1 = alpha_cov / ((nf + 1.3).powi(2) + mu_eff);
        let c_mu = (1.0 - c1).min(
            alpha_cov * (mu_eff - 2.0 + 1.0 / mu_eff)
                / ((nf + 2.0).powi(2) + alpha_cov * mu_eff / 2.0),
        );
        let alpha_minus = (1.0 + c1 / c_mu)
            .min(1.0 + 2.0 * mu_eff_minus / (mu_eff + 2.0))
            .min((1.0 - c1 - c_mu) / (nf * c_mu));
        let weights = raw
            .iter()
            .map(|w| {
                if *w >= 0.0 {
                    w / positive
                } else {
                    alpha_minus * w / negative
                }
            })
            .collect();
        let c_sigma = (mu_eff + 2.0) / (nf + mu_eff + 5.0);
        Strategy {
            n,
            lambda,
            mu,
            weights,
            mu_eff,
            c_sigma,
            d_sigma: 1.0 + 2.0 * (((mu_eff - 1.0) / (nf + 1.0)).sqrt() - 1.0).max(0.0) + c_sigma,
            c_c: (4.0 + mu_eff / nf) / (nf + 4.0 + 2.0 * mu_eff / nf),
            c1,
            c_mu,
            chi_n: nf.sqrt() * (1.0 - 1.0 / (4.0 * nf) + 1.0 / (21.0 * nf * nf)),
        }
    }

    fn default_lambda(n: usize) -> usize {
        4 + (3.0 * (n as f64).ln()).floor() as usize
    }
}

/// The search distribution of one run and its evolution paths.
#[derive(Debug, Clone)]
struct Cma {
    s: Strategy,
    mean: DVector<f64>,
    sigma: f64,
    tolx: f64,
    cov: DMatrix<f64>,
    /// Eigenvectors of `cov` (columns) and square roots of its eigenvalues.
    b: DMatrix<f64>,
    d: DVector<f64>,
    p_sigma: DVector<f64>,
    p_c: DVector<f64>,
    generation: usize,
    /// Best and worst loss of recent generations, for the tolfun test.
    fun_history: Vec<(f64, f64)>,
    /// Grid spacing of each dimension in cube units, `None` for continuous ones.
    spacing: Vec<Option<f64>>,
}

impl Cma {
    fn new(
        n: usize,
        lambda: usize,
        mean: DVector<f64>,
        sigma: f64,
        spacing: Vec<Option<f64>>,
    ) -> Self {
        Cma {
            s: Strategy::new(n, lambda),
            mean,
            sigma,
            tolx: TOLX_FACTOR * sigma,
            cov: DMatrix::identity(n, n),
            b: DMatrix::identity(n, n),
            d: DVector::from_element(n, 1.0),
            p_sigma: DVector::zeros(n),
            p_c: DVector::zeros(n),
            generation: 0,
            fun_history: Vec::new(),
            spacing,
        }
    }

    /// One point of the cube drawn from `N(mean, sigma^2 C)`.
    fn sample<R: Rng + ?Sized>(&self, first: Option<&[f64]>, rng: &mut R) -> DVector<f64> {
        let n = self.s.n;
        if let Some(z) = first.filter(|z| z.len() == n) {
            let z = DVector::from_fn(n, |i, _| self.d[i] * z[i]);
            let x = &self.mean + (&self.b * z) * self.sigma;
            if x.iter().all(|v| (0.0..=1.0).contains(v)) {
                return x;
            }
        }
        let mut draw = || {
            let z = DVector::from_fn(n, |i, _| self.d[i] * rng.sample::<f64, _>(StandardNormal));
            &self.mean + (&self.b * z) * self.sigma
        };
        for _ in 0..MAX_RESAMPLES {
            let x = draw();
            if x.iter().all(|v| (0.0..=1.0).contains(v)) {
                return x;
            }
        }
        draw().map(|v| v.clamp(0.0, 1.0))
    }

    /// Updates the distribution from one generation of `(point, loss)`, losses possibly
    /// infinite for failed individuals.
    fn tell(&mut self, mut solutions: Vec<(DVector<f64>, f64)>) {
        let s = self.s.clone();
        let n = s.n as f64;
        self.generation += 1;
        solutions.sort_by(|a, b| a.1.total_cmp(&b.1));
        let finite: Vec<f64> = solutions
            .iter()
            .map(|x| x.1)
            .filter(|v| v.is_finite())
            .collect();
        if let (Some(best), Some(worst)) = (finite.first(), finite.last()) {
            self.fun_history.push((*best, *worst));
            let keep = 10 + (30.0 * n / s.lambda as f64).ceil() as usize;
            if self.fun_history.len() > keep {
                self.fun_history.remove(0);
            }
        }

        let ys: Vec<DVector<f64>> = solutions
            .iter()
            .map(|(x, _)| (x - &self.mean) / self.sigma)
            .collect();
        let inv_sqrt =
            &self.b * DMatrix::from_diagonal(&self.d.map(|v| 1.0 / v)) * self.b.transpose();
        let mut y_w = DVector::zeros(s.n);
        for (w, y) in s.weights.iter().zip(&ys).take(s.mu) {
            y_w += y * *w;
        }
        self.mean += &y_w * self.sigma;

        let c_y = &inv_sqrt * &y_w;
        self.p_sigma = &self.p_sigma * (1.0 - s.c_sigma)
            + c_y * (s.c_sigma * (2.0 - s.c_sigma) * s.mu_eff).sqrt();
        let norm = self.p_sigma.norm();
        self.sigma =
            (self.sigma * ((s.c_sigma / s.d_sigma) * (norm / s.chi_n - 1.0)).exp()).min(SIGMA_MAX);

        let correction = (1.0 - (1.0 - s.c_sigma).powi(2 * (self.generation as i32 + 1))).sqrt();
        let h_sigma = norm / correction < (1.4 + 2.0 / (n + 1.0)) * s.chi_n;
        let h = if h_sigma { 1.0 } else { 0.0 };
        self.p_c =
            &self.p_c * (1.0 - s.c_c) + &y_w * (h * (s.c_c * (2.0 - s.c_c) * s.mu_eff).sqrt());

        let mut rank_mu = DMatrix::zeros(s.n, s.n);
        for (w, y) in s.weights.iter().zip(&ys) {
            let w = if *w >= 0.0 {
                *w
            } else {
                w * n / ((&inv_sqrt * y).norm_squared() + 1e-300)
            };
            rank_mu += (y * y.transpose()) * w;
        }
        let delta = (1.0 - h) * s.c_c * (2.0 - s.c_c);
        let weight_sum: f64 = s.weights.iter().sum();
        self.cov = &self.cov * (1.0 + s.c1 * delta - s.c1 - s.c_mu * weight_sum)
            + (&self.p_c * self.p_c.transpose()) * s.c1
            + rank_mu * s.c_mu;
        self.decompose();
    }

    /// The same run started with covariance `cov` instead of the identity.
    fn with_cov(mut self, cov: DMatrix<f64>) -> Self {
        self.cov = cov;
        self.decompose();
        self
    }

    fn decompose(&mut self) {
        let sym = (&self.cov + self.cov.transpose()) * 0.5;
        let eig = SymmetricEigen::new(sym);
        let values = eig.eigenvalues.map(|v| v.max(EIGEN_FLOOR));
        self.cov =
            &eig.eigenvectors * DMatrix::from_diagonal(&values) * eig.eigenvectors.transpose();
        self.b = eig.eigenvectors;
        self.d = values.map(f64::sqrt);
    }

    /// The numbers went non-finite: the run cannot continue.
    fn broken(&self) -> bool {
        !(self.sigma.is_finite()
            && self.sigma > 0.0
            && self.mean.iter().all(|v| v.is_finite())
            && self.cov.iter().all(|v| v.is_finite()))
    }

    /// The run has stagnated or become ill-conditioned, a reason to restart.
    fn stagnated(&self) -> bool {
        let n = self.s.n;
        let diag: Vec<f64> = (0..n).map(|i| self.cov[(i, i)]).collect();
        let keep = 10 + (30.0 * n as f64 / self.s.lambda as f64).ceil() as usize;
        if self.generation > keep && self.fun_history.len() >= keep {
            let lo = self
                .fun_history
                .iter()
                .map(|h| h.0)
                .fold(f64::INFINITY, f64::min);
            let hi = self
                .fun_history
                .iter()
                .map(|h| h.1)
                .fold(f64::NEG_INFINITY, f64::max);
            if hi - lo < TOLFUN {
                return true;
            }
        }
        if diag
            .iter()
            .zip(self.p_c.iter())
            .all(|(c, p)| self.sigma * c.sqrt() < self.tolx && (self.sigma * p).abs() < self.tolx)
        {
            return true;
        }
        let axis = self.generation % n;
        let shift = self.b.column(axis) * (0.1 * self.sigma * self.d[axis]);
        if self.mean.iter().zip(shift.iter()).all(|(m, s)| *m == m + s) {
            return true;
        }
        if self
            .mean
            .iter()
            .zip(&diag)
            .any(|(m, c)| *m == m + 0.2 * self.sigma * c.sqrt())
        {
            return true;
        }
        let (dmax, dmin) = (self.d.max(), self.d.min());
        if dmax * dmax / (dmin * dmin) > MAX_CONDITION {
            return true;
        }
        // Every dimension is a grid and the distribution sits well inside one cell of it:
        // further draws would all land on the same configuration.
        self.spacing
            .iter()
            .zip(&diag)
            .all(|(h, c)| h.is_some_and(|h| self.sigma * c.sqrt() < 0.05 * h))
    }
}

/// Budget bookkeeping across restarts (BIPOP needs it; IPOP only counts).
#[derive(Debug, Clone, Default)]
struct Restarts {
    large_runs: u32,
    large_budget: usize,
    small_budget: usize,
    current_is_small: bool,
}

/// The state reached by replaying the history.
#[derive(Debug, Clone)]
struct Replay {
    cma: Cma,
    restart: usize,
    generation: usize,
    /// The current generation's individual indices held by a trial, ascending.
    held: Vec<usize>,
}

impl Replay {
    /// The first `count` individual indices of the current generation no trial holds: those
    /// a killed trial left, then those past every held one.
    fn free_indices(&self, count: usize) -> Vec<usize> {
        (0..)
            .filter(|k| self.held.binary_search(k).is_err())
            .take(count)
            .collect()
    }
}

/// A trial's double and int values as a point of the unit cube (a missing value at the centre).
fn cube_point(space: &SearchSpace, numeric: &[usize], t: &TrialRecord) -> DVector<f64> {
    DVector::from_iterator(
        numeric.len(),
        numeric.iter().map(|i| {
            let p = &space.parameters()[*i];
            value_of(&t.assignment, *i, &p.name).map_or(0.5, |v| to_unit(p, v))
        }),
    )
}

fn label(t: &TrialRecord, key: &str) -> Option<usize> {
    t.labels.get(key)?.trim().parse().ok()
}

impl CmaEs {
    fn spacing(space: &SearchSpace, numeric: &[usize]) -> Vec<Option<f64>> {
        numeric
            .iter()
            .map(|i| {
                let p = &space.parameters()[*i];
                let n = p.cardinality()?;
                Some(1.0 / (n.max(2) - 1) as f64)
            })
            .collect()
    }

    /// Parameters of restart `index` (> 0), and the updated bookkeeping.
    fn restart_run(
        &self,
        n: usize,
        index: usize,
        book: &mut Restarts,
    ) -> (usize, f64, DVector<f64>) {
        let mut state = self.seed ^ (index as u64).wrapping_mul(0xa076_1d64_78bd_642f);
        let mut rng = ChaCha8Rng::seed_from_u64(splitmix64(&mut state));
        let mean = DVector::from_fn(n, |_, _| rng.random::<f64>());
        let default = Strategy::default_lambda(n);
        match self.restart {
            RestartStrategy::None => (default, self.sigma0, DVector::from_element(n, 0.5)),
            RestartStrategy::Ipop => (default << index.min(20), self.sigma0, mean),
            RestartStrategy::Bipop => {
                if book.small_budget < book.large_budget {
                    book.current_is_small = true;
                    let u: f64 = rng.random();
                    let large = (default << book.large_runs.min(20)) as f64;
                    let ratio = (large / (2.0 * default as f64)).max(1.0);
                    let lambda = (default as f64 * ratio.powf(u * u)).floor() as usize;
                    (lambda.max(2), self.sigma0 * 10f64.powf(-2.0 * u), mean)
                } else {
                    book.current_is_small = false;
                    book.large_runs += 1;
                    (default << book.large_runs.min(20), self.sigma0, mean)
                }
            }
        }
    }

    /// The distribution of the first run: fitted to the warm-start results when there are
    /// enough of them ([`warm_start`]), otherwise the cube's centre with the initial step.
    fn first_run(
        &self,
        space: &SearchSpace,
        numeric: &[usize],
        objective: &Objective,
        trials: &[TrialRecord],
        spacing: Vec<Option<f64>>,
    ) -> Cma {
        let n = numeric.len();
        let lambda = Strategy::default_lambda(n);
        let earlier = trials
            .iter()
            .filter(|t| t.is_warm_start())
            .filter_map(|t| {
                let loss = objective.direction.to_loss(t.usable_objective()?);
                Some((cube_point(space, numeric, t), loss))
            })
            .collect();
        match warm_start::starting_point(earlier) {
            Some(start) => {
                Cma::new(n, lambda, start.mean, start.sigma, spacing).with_cov(start.cov)
            }
            None => Cma::new(
                n,
                lambda,
                DVector::from_element(n, 0.5),
                self.sigma0,
                spacing,
            ),
        }
    }

    /// Replays every complete generation of the history through the CMA-ES update.
    fn replay(&self, space: &SearchSpace, objective: &Objective, trials: &[TrialRecord]) -> Replay {
        let numeric = numeric_params(space);
        let n = numeric.len();
        let spacing = Self::spacing(space, &numeric);
        let mut groups: BTreeMap<(usize, usize), Vec<(usize, &TrialRecord)>> = BTreeMap::new();
        for t in trials {
            if t.labels.is_empty() || !is_explored(t) {
                continue;
            }
            if let (Some(r), Some(g), Some(k)) = (
                label(t, LABEL_RESTART),
                label(t, LABEL_GENERATION),
                label(t, LABEL_INDIVIDUAL),
            ) {
                groups.entry((r, g)).or_default().push((k, t));
            }
        }
        let mut book = Restarts::default();
        let mut cma = self.first_run(space, &numeric, objective, trials, spacing.clone());
        let (mut restart, mut generation) = (0, 0);
        while let Some(members) = groups.get_mut(&(restart, generation)) {
            members.sort_by_key(|(k, _)| *k);
            let lambda = cma.s.lambda;
            if members.len() < lambda || members[..lambda].iter().any(|(_, t)| t.state.is_active())
            {
                break;
            }
            let solutions: Vec<(DVector<f64>, f64)> = members[..lambda]
                .iter()
                .map(|(_, t)| {
                    let loss = t
                        .usable_objective()
                        .map_or(f64::INFINITY, |v| objective.direction.to_loss(v));
                    (cube_point(space, &numeric, t), loss)
                })
                .collect();
            if solutions.iter().any(|(_, l)| l.is_finite()) {
                cma.tell(solutions);
            } else {
                cma.generation += 1;
            }
            generation += 1;
            let restart_now =
                cma.broken() || (self.restart != RestartStrategy::None && cma.stagnated());
            if restart_now {
                let used = cma.s.lambda * cma.generation;
                if book.current_is_small {
                    book.small_budget += used;
                } else if restart > 0 {
                    book.large_budget += used;
                }
                restart += 1;
                generation = 0;
                let (lambda, sigma, mean) = self.restart_run(n, restart, &mut book);
                cma = Cma::new(n, lambda, mean, sigma, spacing.clone());
            }
        }
        let mut held: Vec<usize> = groups
            .get(&(restart, generation))
            .map(|m| m.iter().map(|(k, _)| *k).collect())
            .unwrap_or_default();
        held.sort_unstable();
        Replay {
            cma,
            restart,
            generation,
            held,
        }
    }

    /// Standard-normal vector of individual `k` of a generation: a scrambled Sobol point per
    /// generation pushed through the normal quantile.
    fn quasi_normal(&self, restart: usize, generation: usize, k: usize, n: usize) -> Vec<f64> {
        let mut state = self.seed
            ^ (restart as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            ^ (generation as u64).wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
        let seed = splitmix64(&mut state);
        (0..n)
            .map(|i| {
                let s = (seed ^ ((i / 256) as u64).wrapping_mul(0x1656_67b1_9e37_79f9)) as u32;
                let u = f64::from(sobol_burley::sample(
                    (k % 65536) as u32,
                    (i % 256) as u32,
                    s,
                ));
                crate::sobol::normal_quantile(u.clamp(1e-9, 1.0 - 1e-9))
            })
            .collect()
    }

    /// A configuration from the current distribution (numeric part) and the priors (lists).
    fn draw<R: Rng + ?Sized>(
        &self,
        cma: &Cma,
        space: &SearchSpace,
        numeric: &[usize],
        first: Option<&[f64]>,
        rng: &mut R,
    ) -> Assignment {
        let x = cma.sample(first, rng);
        let mut values = Vec::with_capacity(space.len());
        let mut dim = 0;
        for (i, p) in space.parameters().iter().enumerate() {
            let v = if numeric.get(dim) == Some(&i) {
                dim += 1;
                from_unit(p, x[dim - 1])
            } else {
                sample_param(p, rng)
            };
            values.push((p.name.clone(), v));
        }
        Assignment(values)
    }
}

impl Suggester for CmaEs {
    fn name(&self) -> &str {
        "cmaes"
    }

    fn suggest(&self, req: &SuggestRequest<'_>) -> Result<Suggestions, CoreError> {
        let numeric = numeric_params(req.space);
        if numeric.len() < 2 {
            return Err(CoreError::Algorithm {
                algorithm: "cmaes".into(),
                message: format!(
                    "the space has {} tunable double or int parameter(s), and cmaes needs two \
                     or more\nhint: use tpe or bayesianoptimization for this space",
                    numeric.len()
                ),
            });
        }
        let state = self.replay(req.space, req.objective, req.trials);
        let mut rng = ChaCha8Rng::seed_from_u64(req.seed);
        let mut seen = taken_fingerprints(req.space, req.trials);
        let size = req.space.cardinality();
        let mut used = match size {
            Some(_) => taken_indices(req.space, req.trials),
            None => HashSet::new(),
        };
        let mut out = Suggestions::default();
        for individual in state.free_indices(req.count) {
            if size.is_some_and(|s| used.len() as u128 >= s) {
                break;
            }
            let mut candidate = None;
            let quasi =
                self.quasi_normal(state.restart, state.generation, individual, numeric.len());
            for attempt in 0..MAX_DUPLICATE_DRAWS {
                let first = (attempt == 0).then_some(quasi.as_slice());
                let a = self.draw(&state.cma, req.space, &numeric, first, &mut rng);
                if !seen.contains(&fingerprint(req.space, &a)) {
                    candidate = Some(a);
                    break;
                }
            }
            // The distribution has collapsed onto configurations already tried (ints, small
            // grids): fall back to the priors, then to whatever the grid has left.
            if candidate.is_none() {
                for _ in 0..MAX_DUPLICATE_DRAWS {
                    let a = sample_assignment(req.space, &mut rng);
                    if !seen.contains(&fingerprint(req.space, &a)) {
                        candidate = Some(a);
                        break;
                    }
                }
            }
            if candidate.is_none()
                && let Some(s) = size.filter(|s| *s <= MAX_GRID)
            {
                let order = Shuffle::new(s as u64, req.seed);
                candidate = (0..s as u64)
                    .map(|pos| u128::from(order.at(pos)))
                    .find(|g| !used.contains(g))
                    .and_then(|g| point_at(req.space, g));
            }
            let Some(a) = candidate else {
                break;
            };
            seen.insert(fingerprint(req.space, &a));
            if size.is_some()
                && let Some(g) = crate::grid::grid_index(req.space, &a)
            {
                used.insert(g);
            }
            let mut p = Proposal::new(a);
            p.labels
                .insert(LABEL_RESTART.into(), state.restart.to_string());
            p.labels
                .insert(LABEL_GENERATION.into(), state.generation.to_string());
            p.labels
                .insert(LABEL_INDIVIDUAL.into(), individual.to_string());
            out.proposals.push(p);
        }
        out.exhausted = size.is_some_and(|s| used.len() as u128 >= s);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_params::{pairs, param, unit};
    use proptest::prelude::*;
    use vernier_core::{Direction, Distribution, ParamValue, TrialState};

    fn square() -> SearchSpace {
        SearchSpace::new(vec![unit("x"), unit("y")]).unwrap()
    }

    fn cmaes(space: &SearchSpace, settings: &[(&str, &str)]) -> CmaEs {
        let o = Objective::new("loss", Direction::Minimize);
        // Through the registry signature first, so the settings are validated as in use.
        build("cmaes", &pairs(settings), space, &o).unwrap();
        let get = |n: &str| settings.iter().find(|(k, _)| *k == n).map(|(_, v)| *v);
        CmaEs {
            sigma0: get("sigma").map_or(1.0 / 6.0, |v| v.parse().unwrap()),
            restart: match get("restart_strategy") {
                Some("ipop") => RestartStrategy::Ipop,
                Some("bipop") => RestartStrategy::Bipop,
                _ => RestartStrategy::None,
            },
            seed: get("random_state").map_or(0, |v| v.parse().unwrap()),
        }
    }

    fn ask(
        c: &CmaEs,
        space: &SearchSpace,
        objective: &Objective,
        trials: &[TrialRecord],
        count: usize,
        seed: u64,
    ) -> Suggestions {
        c.suggest(&SuggestRequest {
            space,
            objective,
            trials,
            count,
            seed,
            state: None,
        })
        .unwrap()
    }

    fn xy(a: &Assignment) -> (f64, f64) {
        let get = |n: &str| a.get(n).and_then(ParamValue::as_f64).unwrap();
        (get("x"), get("y"))
    }

    /// Runs `trials` evaluations in batches of `batch`, trial `i` failing when `fail(i)`.
    #[allow(clippy::too_many_arguments)]
    fn run(
        c: &CmaEs,
        space: &SearchSpace,
        direction: Direction,
        trials: usize,
        batch: usize,
        seed: u64,
        f: impl Fn(&Assignment) -> f64,
        fail: impl Fn(usize) -> bool,
    ) -> Vec<TrialRecord> {
        let o = Objective::new("loss", direction);
        let mut history: Vec<TrialRecord> = Vec::new();
        while history.len() < trials {
            let s = ask(c, space, &o, &history, batch, seed + history.len() as u64);
            for p in s.proposals {
                let i = history.len();
                let failed = fail(i);
                history.push(TrialRecord {
                    name: format!("t{i}"),
                    objective: (!failed).then(|| f(&p.assignment)),
                    state: if failed {
                        TrialState::Failed
                    } else {
                        TrialState::Succeeded
                    },
                    assignment: p.assignment,
                    labels: p.labels,
                    metrics: BTreeMap::new(),
                });
            }
        }
        history
    }

    fn quadratic(a: &Assignment) -> f64 {
        let (x, y) = xy(a);
        (x - 0.3).powi(2) + 4.0 * (y - 0.8).powi(2)
    }

    #[test]
    fn seeded_proposals_are_exact() {
        let space = crate::test_params::mixed_space();
        let c = cmaes(&space, &[("random_state", "1")]);
        let o = Objective::new("loss", Direction::Minimize);
        let s = ask(&c, &space, &o, &[], 2, 42);
        let got = crate::test_params::texts(&s);
        assert_eq!(
            got,
            vec![
                "lr=0.0024116535836015765, layers=7, momentum=0.65, opt=sgd, batch=64",
                "lr=0.0037774587485511573, layers=5, momentum=0.75, opt=sgd, batch=64",
            ]
        );
        let labels: Vec<String> = s.proposals[1]
            .labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        assert_eq!(
            labels,
            vec![
                "vernier.cmaes/generation=0",
                "vernier.cmaes/individual=1",
                "vernier.cmaes/restart=0"
            ]
        );
    }

    /// Warm-start records at (x, 0.9 - x) whose best tenth lies near (0.85, 0.05): ten or more
    /// of them move the whole first generation there (mean of the best, step about 0.1); nine
    /// are too few to select one, and the first generation is exactly the cold start's.
    #[test]
    fn a_warm_start_of_ten_or_more_results_moves_the_first_generation_to_the_best() {
        let space = square();
        let c = cmaes(&space, &[("random_state", "3")]);
        let o = Objective::new("loss", Direction::Minimize);
        let warm = |count: usize| -> Vec<TrialRecord> {
            (0..count)
                .map(|i| {
                    let x = 0.9 * i as f64 / (count - 1) as f64;
                    let mut labels = BTreeMap::new();
                    labels.insert(
                        vernier_core::WARM_START_SOURCE_LABEL.into(),
                        "file/k".into(),
                    );
                    TrialRecord {
                        name: format!("warmstart-{i}"),
                        assignment: Assignment(vec![
                            ("x".into(), ParamValue::Double(x)),
                            ("y".into(), ParamValue::Double(0.9 - x)),
                        ]),
                        state: TrialState::Succeeded,
                        objective: Some(1.0 - x),
                        labels,
                        metrics: BTreeMap::new(),
                    }
                })
                .collect()
        };
        let lambda = super::Strategy::default_lambda(2);
        let cold = ask(&c, &space, &o, &[], lambda, 7);
        let nine = ask(&c, &space, &o, &warm(9), lambda, 7);
        assert_eq!(
            crate::test_params::texts(&nine),
            crate::test_params::texts(&cold)
        );
        for count in [10, 20, 40] {
            let warmed = ask(&c, &space, &o, &warm(count), lambda, 7);
            for p in &warmed.proposals {
                let (x, y) = xy(&p.assignment);
                assert!(x > 0.5 && y < 0.4, "{count} results: ({x}, {y})");
            }
        }
    }

    #[test]
    fn converges_on_a_quadratic() {
        let space = square();
        let c = cmaes(&space, &[]);
        let history = run(
            &c,
            &space,
            Direction::Minimize,
            6 * 30,
            1,
            7,
            quadratic,
            |_| false,
        );
        let state = c.replay(
            &space,
            &Objective::new("loss", Direction::Minimize),
            &history,
        );
        assert_eq!(state.restart, 0);
        assert_eq!(state.generation, 30);
        let m = &state.cma.mean;
        assert!(
            (m[0] - 0.3).abs() < 0.01 && (m[1] - 0.8).abs() < 0.01,
            "{m}"
        );
        assert!(state.cma.sigma < 0.05, "{}", state.cma.sigma);
    }

    #[test]
    fn batches_larger_than_a_generation_still_converge() {
        let space = square();
        let c = cmaes(&space, &[]);
        // Ten parallel slots, six individuals per generation: extra individuals fill the slots.
        let history = run(
            &c,
            &space,
            Direction::Minimize,
            200,
            10,
            7,
            quadratic,
            |_| false,
        );
        let best = history
            .iter()
            .filter_map(|t| t.objective)
            .fold(f64::INFINITY, f64::min);
        assert!(best < 1e-3, "{best}");
        let state = c.replay(
            &space,
            &Objective::new("loss", Direction::Minimize),
            &history,
        );
        assert!(state.generation >= 10, "{}", state.generation);
    }

    #[test]
    fn maximising_and_minimising_go_opposite_ways() {
        let space = square();
        let c = cmaes(&space, &[]);
        for (direction, target) in [
            (Direction::Minimize, (0.3, 0.8)),
            (Direction::Maximize, (1.0, 0.0)),
        ] {
            let history = run(&c, &space, direction, 90, 1, 7, quadratic, |_| false);
            let o = Objective::new("loss", direction);
            let late = ask(&c, &space, &o, &history, 6, 5);
            for p in &late.proposals {
                let (x, y) = xy(&p.assignment);
                let dist = ((x - target.0).powi(2) + (y - target.1).powi(2)).sqrt();
                assert!(dist < 0.25, "{direction:?}: ({x}, {y})");
            }
        }
    }

    #[test]
    fn failed_trials_rank_worst_and_do_not_stop_the_search() {
        let space = square();
        let c = cmaes(&space, &[]);
        let history = run(&c, &space, Direction::Minimize, 150, 1, 7, quadratic, |i| {
            i % 3 == 0
        });
        let state = c.replay(
            &space,
            &Objective::new("loss", Direction::Minimize),
            &history,
        );
        let m = &state.cma.mean;
        assert!(
            (m[0] - 0.3).abs() < 0.05 && (m[1] - 0.8).abs() < 0.05,
            "{m}"
        );
        // A history in which everything failed leaves the distribution where it started.
        let all_failed = run(&c, &space, Direction::Minimize, 12, 3, 7, quadratic, |_| {
            true
        });
        let state = c.replay(
            &space,
            &Objective::new("loss", Direction::Minimize),
            &all_failed,
        );
        assert_eq!(state.generation, 2);
        assert_eq!(state.cma.mean, DVector::from_element(2, 0.5));
    }

    /// A run interrupted with a member of generation 0 killed, then resumed: the killed
    /// member is drawn again at its place, and the search goes on as the uninterrupted one.
    #[test]
    fn a_killed_member_is_drawn_again_and_the_search_goes_on_unchanged() {
        let space = square();
        let c = cmaes(&space, &[("random_state", "3")]);
        let o = Objective::new("loss", Direction::Minimize);
        let whole = run(&c, &space, Direction::Minimize, 12, 1, 7, quadratic, |_| {
            false
        });
        let mut interrupted = whole[..3].to_vec();
        interrupted[1].state = TrialState::Killed;
        interrupted[1].objective = None;
        let again = ask(&c, &space, &o, &interrupted, 1, 99).proposals;
        assert_eq!(again[0].assignment, whole[1].assignment);
        assert_eq!(again[0].labels, whole[1].labels);
        // Resumed from there: the killed trial stays in the history, its place taken again.
        let mut resumed = interrupted;
        resumed.push(whole[1].clone());
        for t in &whole[3..] {
            let next = ask(&c, &space, &o, &resumed, 1, 99).proposals;
            assert_eq!(next[0].assignment, t.assignment, "{:?}", t.labels);
            resumed.push(t.clone());
        }
        let held = Replay {
            held: vec![0, 2, 3, 5],
            ..c.replay(&space, &o, &[])
        };
        assert_eq!(held.free_indices(4), [1, 4, 6, 7]);
    }

    #[test]
    fn ipop_restart_doubles_the_population() {
        let space = square();
        for (strategy, restarts) in [("ipop", true), ("none", false)] {
            let c = cmaes(&space, &[("restart_strategy", strategy)]);
            // A flat objective stagnates: tolfun fires after 10 + ceil(30 * 2 / 6) generations.
            let history = run(
                &c,
                &space,
                Direction::Minimize,
                6 * 22,
                6,
                7,
                |_| 1.0,
                |_| false,
            );
            let state = c.replay(
                &space,
                &Objective::new("loss", Direction::Minimize),
                &history,
            );
            if restarts {
                assert_eq!(state.restart, 1, "{strategy}");
                assert_eq!(state.cma.s.lambda, 12);
                let o = Objective::new("loss", Direction::Minimize);
                let next = ask(&c, &space, &o, &history, 1, 0);
                assert_eq!(next.proposals[0].labels[LABEL_RESTART], "1");
            } else {
                assert_eq!(state.restart, 0, "{strategy}");
                assert_eq!(state.cma.s.lambda, 6);
            }
        }
    }

    #[test]
    fn bipop_alternates_large_and_small_populations() {
        let c = CmaEs {
            sigma0: 0.2,
            restart: RestartStrategy::Bipop,
            seed: 3,
        };
        let mut book = Restarts::default();
        let (large, sigma, _) = c.restart_run(2, 1, &mut book);
        assert_eq!((large, sigma), (12, 0.2));
        book.large_budget += 12 * 30;
        let (small, sigma, mean) = c.restart_run(2, 2, &mut book);
        // The first small run lies between the default and half the last large population.
        assert_eq!(small, 6);
        assert!((0.002..=0.2).contains(&sigma), "{sigma}");
        assert!(mean.iter().all(|v| (0.0..=1.0).contains(v)));
        assert!(book.current_is_small);
        book.small_budget += 6 * 70;
        let (large, _, _) = c.restart_run(2, 3, &mut book);
        assert_eq!(large, 24);
        assert!(!book.current_is_small);
        book.large_budget += 24 * 20;
        let (small, _, _) = c.restart_run(2, 4, &mut book);
        assert!((6..=12).contains(&small), "{small}");
    }

    #[test]
    fn int_only_spaces_are_exhausted_without_repeats() {
        let int = |name: &str| {
            param(
                name,
                Domain::Int {
                    min: 0,
                    max: 2,
                    step: None,
                },
                Distribution::Uniform,
            )
        };
        let space = SearchSpace::new(vec![int("a"), int("b")]).unwrap();
        let c = cmaes(&space, &[]);
        let o = Objective::new("loss", Direction::Minimize);
        let mut history: Vec<TrialRecord> = Vec::new();
        let mut ended = false;
        for round in 0..10 {
            let s = ask(&c, &space, &o, &history, 4, round);
            for p in s.proposals {
                history.push(TrialRecord {
                    name: format!("t{}", history.len()),
                    objective: Some(1.0),
                    state: TrialState::Succeeded,
                    assignment: p.assignment,
                    labels: p.labels,
                    metrics: BTreeMap::new(),
                });
            }
            if s.exhausted {
                ended = true;
                break;
            }
        }
        assert!(ended);
        let keys: HashSet<String> = history.iter().map(|t| t.assignment.key()).collect();
        assert_eq!((keys.len(), history.len()), (9, 9));
    }

    /// `sigma` is in the parameters' units, as goptuna reads it, over the smallest range.
    #[test]
    fn sigma_is_read_in_the_parameters_units() {
        let wide = |name: &str, max: f64| {
            param(
                name,
                Domain::Double {
                    min: 0.0,
                    max,
                    step: None,
                },
                Distribution::Uniform,
            )
        };
        let space = SearchSpace::new(vec![wide("x", 100.0), wide("y", 50.0)]).unwrap();
        let numeric = numeric_params(&space);
        // (sigma setting, initial step in cube units)
        let table = [
            (None, 1.0 / 6.0),
            (Some(1.0), 0.02),
            (Some(25.0), 0.5),
            (Some(0.0), 1.0 / 6.0),
            (Some(-3.0), 1.0 / 6.0),
            (Some(f64::NAN), 1.0 / 6.0),
        ];
        for (sigma, want) in table {
            assert_eq!(cube_sigma(sigma, &space, &numeric), want, "{sigma:?}");
        }
    }

    #[test]
    fn validates_settings_and_space() {
        let o = Objective::new("loss", Direction::Minimize);
        let space = square();
        let err = |settings: &[(&str, &str)], space: &SearchSpace| {
            build("cmaes", &pairs(settings), space, &o)
                .unwrap_err()
                .to_string()
        };
        assert!(
            build(
                "cmaes",
                &pairs(&[("sigma", "0.05"), ("restart_strategy", "None")]),
                &space,
                &o
            )
            .is_ok()
        );
        let e = err(&[("popsize", "8")], &space);
        assert!(e.contains("unknown setting \"popsize\""), "{e}");
        // Katib's goptuna runs a sigma of 0 or below with its default, and any integer seed.
        for odd in [("sigma", "0"), ("sigma", "-0.1"), ("random_state", "-2")] {
            assert!(
                build("cmaes", &pairs(&[odd]), &space, &o).is_ok(),
                "{odd:?}"
            );
        }
        for bad in ["abc", "inf"] {
            let e = err(&[("sigma", bad)], &space);
            assert!(
                e.contains("sigma") && e.contains(&format!("{bad:?}")),
                "{e}"
            );
        }
        let e = err(&[("restart_strategy", "lpop")], &space);
        assert!(
            e.contains("restart_strategy") && e.contains("\"lpop\""),
            "{e}"
        );
        let e = err(&[("random_state", "1.5")], &space);
        assert!(e.contains("random_state") && e.contains("\"1.5\""), "{e}");
        let one = SearchSpace::new(vec![
            unit("x"),
            param(
                "c",
                Domain::Categorical {
                    values: vec!["a".into(), "b".into()],
                },
                Distribution::Uniform,
            ),
        ])
        .unwrap();
        let e = err(&[], &one);
        assert!(
            e.starts_with(
                "algorithm cmaes cannot search this space: it has 1 tunable double or int parameter(s)"
            ),
            "{e}"
        );
    }

    #[test]
    fn beats_random_search_on_branin() {
        let problem = vernier_testfunctions::Problem::by_name("branin").unwrap();
        let space = problem.space();
        let (mut cma_total, mut random_total) = (0.0, 0.0);
        for seed in 0..5u64 {
            let c = cmaes(&space, &[("random_state", &seed.to_string())]);
            let history = run(
                &c,
                &space,
                Direction::Minimize,
                60,
                1,
                seed * 1000,
                |a| problem.eval_assignment(a),
                |_| false,
            );
            let best = history
                .iter()
                .filter_map(|t| t.objective)
                .fold(f64::INFINITY, f64::min);
            cma_total += problem.regret(best);
            let r = crate::random::RandomSearch::new();
            let o = Objective::new("loss", Direction::Minimize);
            let points = r
                .suggest(&SuggestRequest {
                    space: &space,
                    objective: &o,
                    trials: &[],
                    count: 60,
                    seed,
                    state: None,
                })
                .unwrap();
            let best = points
                .proposals
                .iter()
                .map(|p| problem.eval_assignment(&p.assignment))
                .fold(f64::INFINITY, f64::min);
            random_total += problem.regret(best);
        }
        assert!(cma_total < random_total, "{cma_total} vs {random_total}");
    }

    proptest! {
        #[test]
        fn proposals_are_in_space_distinct_and_deterministic(
            seed in any::<u64>(), count in 1usize..12, done in 0usize..20, maximize in any::<bool>()
        ) {
            let space = crate::test_params::mixed_space();
            let c = cmaes(&space, &[]);
            let direction = if maximize { Direction::Maximize } else { Direction::Minimize };
            let history = run(&c, &space, direction, done, 3, seed, |a| {
                a.get("lr").and_then(ParamValue::as_f64).unwrap_or(0.0)
            }, |i| i % 5 == 4);
            let o = Objective::new("loss", direction);
            let a = ask(&c, &space, &o, &history, count, seed);
            prop_assert_eq!(&a, &ask(&c, &space, &o, &history, count, seed));
            prop_assert_eq!(a.proposals.len(), count);
            let mut keys: HashSet<String> = history.iter().map(|t| t.assignment.key()).collect();
            for p in &a.proposals {
                prop_assert!(space.check(&p.assignment).is_ok(), "{}", p.assignment);
                prop_assert!(keys.insert(p.assignment.key()));
            }
        }
    }
}
