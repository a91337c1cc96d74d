//! Maximising an acquisition function over the relaxed feature space: a few thousand random
//! and near-incumbent candidates scored in one batch, then L-BFGS from the best few on the
//! continuous coordinates (categorical one-hot blocks stay as sampled). Bounds are handled by
//! reflecting the unconstrained L-BFGS iterate into `[0, 1]`, which keeps gradients informative
//! at the faces of the cube.

use super::acquisition::{Acq, AcqParams};
use super::feasibility::Feasibility;
use super::features::Features;
use super::model::{Memo, Posterior};
use argmin::core::{CostFunction, Error, Executor, Gradient, State};
use argmin::solver::linesearch::MoreThuenteLineSearch;
use argmin::solver::quasinewton::LBFGS;
use rand::Rng;
use std::cell::RefCell;

/// How much work the search does.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SearchBudget {
    /// Uniform random candidates.
    pub(crate) random: usize,
    /// Candidates around each anchor (good observed points).
    pub(crate) per_anchor: usize,
    /// Local searches per acquisition.
    pub(crate) local_starts: usize,
    pub(crate) local_iters: u64,
}

/// A scored point of the relaxed space.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    pub(crate) score: f64,
    pub(crate) x: Vec<f64>,
}

/// How many of the best unrefined candidates are kept as fallbacks after the refined ones.
const KEEP: usize = 64;
const CHUNK: usize = 512;

/// For each acquisition, candidates best first (refined ones included).
#[allow(clippy::too_many_arguments)]
pub(crate) fn maximize<R: Rng + ?Sized>(
    post: &Posterior,
    features: &Features,
    acqs: &[Acq],
    params: &AcqParams,
    anchors: &[Vec<f64>],
    budget: SearchBudget,
    feas: Option<&Feasibility>,
    rng: &mut R,
) -> Vec<Vec<Candidate>> {
    let d = features.dim();
    let m = budget.random + budget.per_anchor * anchors.len();
    let mut pts = vec![0.0; m * d];
    for i in 0..budget.random {
        features.random(rng, &mut pts[i * d..(i + 1) * d]);
    }
    for (a, anchor) in anchors.iter().enumerate() {
        for j in 0..budget.per_anchor {
            let i = budget.random + a * budget.per_anchor + j;
            // Neighbours at three distances: polishing, local and wider moves.
            let scale = [0.005, 0.02, 0.1][j % 3];
            features.perturb(rng, anchor, scale, 0.2, &mut pts[i * d..(i + 1) * d]);
        }
    }
    let mut pred = Vec::with_capacity(m);
    for start in (0..m).step_by(CHUNK) {
        let end = (start + CHUNK).min(m);
        pred.extend(post.predict_batch(&pts[start * d..end * d], end - start));
    }
    let mask = features.continuous_mask();
    let log_pof = feas.map(|f| {
        let mut out = Vec::with_capacity(m);
        for start in (0..m).step_by(CHUNK) {
            let end = (start + CHUNK).min(m);
            out.extend(f.log_pof_batch(&pts[start * d..end * d], end - start));
        }
        out
    });
    acqs.iter()
        .map(|acq| {
            let mut order: Vec<(f64, usize)> = pred
                .iter()
                .enumerate()
                .map(|(i, (mu, s))| {
                    let a = acq.value(*mu, *s, params);
                    let a = match (feas, &log_pof) {
                        (Some(f), Some(lp)) => f.combine(a, lp[i]),
                        _ => a,
                    };
                    (finite_or_min(a), i)
                })
                .collect();
            order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let mut out: Vec<Candidate> = order
                .iter()
                .take(KEEP)
                .map(|(s, i)| Candidate {
                    score: *s,
                    x: pts[i * d..(i + 1) * d].to_vec(),
                })
                .collect();
            if mask.iter().any(|c| *c) {
                for c in out.clone().iter().take(budget.local_starts) {
                    if let Some(r) =
                        refine(post, *acq, params, feas, &mask, &c.x, budget.local_iters)
                        && r.score > c.score
                    {
                        out.push(r);
                    }
                }
            }
            out.sort_by(|a, b| b.score.total_cmp(&a.score));
            out
        })
        .collect()
}

fn finite_or_min(v: f64) -> f64 {
    if v.is_nan() { f64::MIN } else { v }
}

/// Maps an unconstrained coordinate into `[0, 1]` by reflection; returns value and slope.
fn reflect(z: f64) -> (f64, f64) {
    let t = z.rem_euclid(2.0);
    if t <= 1.0 { (t, 1.0) } else { (2.0 - t, -1.0) }
}

#[derive(Debug)]
struct Local<'a> {
    post: &'a Posterior,
    acq: Acq,
    params: &'a AcqParams,
    feas: Option<&'a Feasibility>,
    dims: Vec<usize>,
    base: Vec<f64>,
    memo: Memo,
}

/// The full point for local coordinates `z`, and the slope of each reflected coordinate.
fn point(base: &[f64], dims: &[usize], z: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let mut x = base.to_vec();
    let mut slope = Vec::with_capacity(z.len());
    for (k, &dim) in dims.iter().enumerate() {
        let (v, s) = reflect(z[k]);
        x[dim] = v;
        slope.push(s);
    }
    (x, slope)
}

impl Local<'_> {
    fn eval(&self, z: &[f64]) -> (f64, Vec<f64>) {
        if let Some((t, c, g)) = self.memo.borrow().as_ref()
            && t.as_slice() == z
        {
            return (*c, g.clone());
        }
        let (x, slope) = point(&self.base, &self.dims, z);
        let (mu, sigma, dmu, dsigma) = self.post.predict_grad(&x);
        let (a, da_mu, da_sigma) = self.acq.eval(mu, sigma, self.params);
        let mut dx: Vec<f64> = (0..x.len())
            .map(|k| da_mu * dmu[k] + da_sigma * dsigma[k])
            .collect();
        let a = match self.feas {
            None => a,
            Some(f) => {
                let (lp, dlp) = f.log_pof_grad(&x);
                if f.only {
                    dx = dlp;
                } else {
                    dx.iter_mut().zip(&dlp).for_each(|(g, h)| *g += h);
                }
                f.combine(a, lp)
            }
        };
        let grad: Vec<f64> = self
            .dims
            .iter()
            .zip(&slope)
            .map(|(&dim, s)| -dx[dim] * s)
            .collect();
        let out = if a.is_finite() && grad.iter().all(|g| g.is_finite()) {
            (-a, grad)
        } else {
            (f64::MAX, vec![0.0; z.len()])
        };
        *self.memo.borrow_mut() = Some((z.to_vec(), out.0, out.1.clone()));
        out
    }
}

impl CostFunction for Local<'_> {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, z: &Self::Param) -> Result<f64, Error> {
        Ok(self.eval(z).0)
    }
}

impl Gradient for Local<'_> {
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;
    fn gradient(&self, z: &Self::Param) -> Result<Vec<f64>, Error> {
        Ok(self.eval(z).1)
    }
}

fn refine(
    post: &Posterior,
    acq: Acq,
    params: &AcqParams,
    feas: Option<&Feasibility>,
    mask: &[bool],
    start: &[f64],
    iters: u64,
) -> Option<Candidate> {
    let dims: Vec<usize> = (0..mask.len()).filter(|i| mask[*i]).collect();
    let z0: Vec<f64> = dims.iter().map(|i| start[*i]).collect();
    let problem = Local {
        post,
        acq,
        params,
        feas,
        dims: dims.clone(),
        base: start.to_vec(),
        memo: RefCell::new(None),
    };
    let solver = LBFGS::new(MoreThuenteLineSearch::new(), 5)
        .with_tolerance_grad(1e-7)
        .ok()?
        .with_tolerance_cost(1e-10)
        .ok()?;
    let result = Executor::new(problem, solver)
        .configure(|s| s.param(z0).max_iters(iters))
        .timer(false)
        .run()
        .ok()?;
    let z = result.state().get_best_param()?;
    let cost = result.state().get_best_cost();
    if !cost.is_finite() || cost == f64::MAX {
        return None;
    }
    Some(Candidate {
        score: -cost,
        x: point(start, &dims, z).0,
    })
}
