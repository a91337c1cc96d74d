//! Constrained expected improvement (Gardner, Kusner, Xu, Weinberger & Cunningham 2014,
//! "Bayesian optimization with inequality constraints", ICML): one GP per constraint models
//! its slack `g(x) <= 0`, and the acquisition becomes `log EI(x) + Σ_j log P(g_j(x) <= 0)`,
//! EI's incumbent being the best feasible trial. Until some trial is feasible the
//! acquisition is the probability of feasibility alone, which leads the search into the
//! feasible region first.

use super::acquisition::log_ndtr;
use super::model::{self, FitBudget, Posterior};
use super::standardize;
use rand::Rng;
use std::f64::consts::PI;

/// The constraint models of one suggestion.
#[derive(Debug, Clone)]
pub(crate) struct Feasibility {
    /// Each constraint's posterior on standardised slack, with the standardised threshold.
    models: Vec<(Posterior, f64)>,
    /// No trial is feasible yet: score by feasibility alone.
    pub(crate) only: bool,
}

impl Feasibility {
    /// Fits one GP per constraint; `rows` are `(encoded x, slack of each constraint)` with
    /// `None` where the trial did not report that metric.
    pub(crate) fn fit<R: Rng + ?Sized>(
        rows: &[(Vec<f64>, Vec<Option<f64>>)],
        d: usize,
        constraints: usize,
        any_feasible: bool,
        rng: &mut R,
    ) -> Feasibility {
        let mut models = Vec::new();
        for j in 0..constraints {
            let (xs, slack): (Vec<&Vec<f64>>, Vec<f64>) = rows
                .iter()
                .filter_map(|(x, s)| Some((x, s[j].filter(|v| v.is_finite())?)))
                .unzip();
            if xs.len() < 2 {
                continue;
            }
            let n = xs.len();
            let flat: Vec<f64> = xs.iter().flat_map(|x| x.iter().copied()).collect();
            let mean = slack.iter().sum::<f64>() / n as f64;
            let sd = (slack.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
            let sd = if sd > 0.0 && sd.is_finite() { sd } else { 1.0 };
            let y = standardize(&slack);
            let budget = FitBudget {
                max_iters: 25,
                random_starts: 0,
            };
            let hyper = model::fit(&flat, n, d, &y, budget, rng);
            if let Some(post) = Posterior::new(flat, d, &y, hyper) {
                models.push((post, -mean / sd));
            }
        }
        Feasibility {
            models,
            only: !any_feasible,
        }
    }

    /// `Σ_j log P(g_j(x) <= 0)`.
    pub(crate) fn log_pof(&self, x: &[f64]) -> f64 {
        self.models
            .iter()
            .map(|(post, t)| {
                let (mu, sigma) = post.predict(x);
                log_ndtr((t - mu) / sigma.max(1e-12))
            })
            .sum()
    }

    /// `log_pof` and its gradient in `x`.
    pub(crate) fn log_pof_grad(&self, x: &[f64]) -> (f64, Vec<f64>) {
        let mut total = 0.0;
        let mut grad = vec![0.0; x.len()];
        for (post, t) in &self.models {
            let (mu, sigma, dmu, dsigma) = post.predict_grad(x);
            let sigma = sigma.max(1e-12);
            let z = (t - mu) / sigma;
            let lp = log_ndtr(z);
            total += lp;
            // d log Φ(z)/dz = φ(z)/Φ(z), formed in logs so it survives underflow.
            let ratio = (-0.5 * z * z - 0.5 * (2.0 * PI).ln() - lp).exp();
            for k in 0..x.len() {
                let dz = -dmu[k] / sigma - z * dsigma[k] / sigma;
                grad[k] += ratio * dz;
            }
        }
        (total, grad)
    }

    /// The constrained score from an acquisition value (log EI) and `log_pof`.
    pub(crate) fn combine(&self, acq: f64, log_pof: f64) -> f64 {
        if self.only { log_pof } else { acq + log_pof }
    }
}

impl Feasibility {
    /// `log_pof` of `m` row-major points.
    pub(crate) fn log_pof_batch(&self, xs: &[f64], m: usize) -> Vec<f64> {
        let mut out = vec![0.0; m];
        for (post, t) in &self.models {
            for (o, (mu, sigma)) in out.iter_mut().zip(post.predict_batch(xs, m)) {
                *o += log_ndtr((t - mu) / sigma.max(1e-12));
            }
        }
        out
    }
}
