//! Parzen estimators: weighted mixtures of one kernel per observation plus a broad prior
//! kernel, in the coordinates the rest of TPE works in (the unit scale of `encode`, log-scaled
//! for log distributions; list parameters by index).

use super::normal::{LN_SQRT_2PI, ln_mass, sample_truncated};
use crate::encode::{choice_index, from_unit, to_unit};
use rand::{Rng, RngExt};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use vernier_core::{Domain, ParamValue, Parameter};

/// Above this many kernels the magic clip stops shrinking the smallest bandwidth.
const MAGIC_CLIP_KERNELS: f64 = 100.0;

/// Log-sum-exp ignores terms this far (in log units) below the largest: e^-40 ≈ 4e-18.
const LSE_CUTOFF: f64 = 40.0;

/// Optuna's forgetting ramp starts after this many observations.
const FLAT_WEIGHTS: usize = 25;

/// How one parameter is represented and smoothed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Kind {
    /// A real value on `[0, 1]` (log-scaled for log distributions).
    Continuous,
    /// A linear grid `k * h`, `k = 0..=last`: kernels give each grid point the Gaussian mass of
    /// its bin of width `h`.
    Grid { h: f64, last: f64 },
    /// The grid `min + k * step` of a log-scaled parameter at its log-scale positions: each
    /// value gets the kernel mass of the log-scale interval of values that round to it.
    LogGrid {
        min: f64,
        step: f64,
        last: f64,
        ln_min: f64,
        ln_span: f64,
    },
    /// A list value by index `0..n` with categorical kernels.
    Choice { n: usize },
}

/// One parameter's coordinate system: its kind and the support `[lo, hi]` of its kernels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Dim {
    pub kind: Kind,
    pub lo: f64,
    pub hi: f64,
}

/// Where a density is evaluated: a point, a bin `[a, b]`, or a list index.
#[derive(Debug, Clone, Copy)]
enum At {
    Value(f64),
    Bin(f64, f64),
    Index(usize),
}

impl Dim {
    pub fn new(p: &Parameter) -> Dim {
        let (min, max, step) = match &p.domain {
            Domain::Discrete { values } | Domain::Categorical { values } => {
                return Dim {
                    kind: Kind::Choice { n: values.len() },
                    lo: 0.0,
                    hi: values.len() as f64,
                };
            }
            Domain::Double { min, max, step } => (*min, *max, *step),
            Domain::Int { min, max, step } => {
                (*min as f64, *max as f64, Some(step.unwrap_or(1) as f64))
            }
        };
        let Some(step) = step else {
            return Dim {
                kind: Kind::Continuous,
                lo: 0.0,
                hi: 1.0,
            };
        };
        let last = vernier_core::range::double_last(min, max, step).max(0.0);
        if p.distribution.is_log() && min > 0.0 {
            let ln_min = min.ln();
            let kind = Kind::LogGrid {
                min,
                step,
                last,
                ln_min,
                ln_span: max.ln() - ln_min,
            };
            let mut dim = Dim {
                kind,
                lo: 0.0,
                hi: 1.0,
            };
            dim.lo = dim.log_edge(-0.5).unwrap_or(0.0);
            dim.hi = dim.log_edge(last + 0.5).unwrap_or(1.0);
            dim
        } else {
            let h = step / (max - min);
            Dim {
                kind: Kind::Grid { h, last },
                lo: -0.5 * h,
                hi: (last + 0.5) * h,
            }
        }
    }

    /// Log-scale position of `min + t * step` on a log grid; `None` at or below zero, which
    /// has no logarithm (the first bin then starts at `lo`).
    fn log_edge(&self, t: f64) -> Option<f64> {
        match self.kind {
            Kind::LogGrid {
                min,
                step,
                ln_min,
                ln_span,
                ..
            } => {
                let x = min + t * step;
                (x > 0.0).then(|| (x.ln() - ln_min) / ln_span)
            }
            _ => None,
        }
    }

    /// Grid index of the value nearest to log-scale position `x` (rounding in value space,
    /// as `from_unit` does).
    fn log_index(&self, x: f64) -> f64 {
        match self.kind {
            Kind::LogGrid {
                min,
                step,
                last,
                ln_min,
                ln_span,
            } => {
                let v = (ln_min + x.clamp(0.0, 1.0) * ln_span).exp();
                ((v - min) / step).round().clamp(0.0, last)
            }
            _ => 0.0,
        }
    }

    /// The coordinate of a value (on the grid for grid parameters).
    pub fn encode(&self, p: &Parameter, v: &ParamValue) -> f64 {
        match self.kind {
            Kind::Choice { .. } => choice_index(p, v).unwrap_or(0) as f64,
            _ => self.snap(p, to_unit(p, v)),
        }
    }

    /// The value at a coordinate.
    pub fn decode(&self, p: &Parameter, x: f64) -> ParamValue {
        match (&self.kind, &p.domain) {
            (Kind::Choice { n }, Domain::Discrete { values } | Domain::Categorical { values }) => {
                ParamValue::Choice(values[(x.max(0.0) as usize).min(n - 1)].clone())
            }
            _ => from_unit(p, x),
        }
    }

    /// Moves a drawn coordinate onto the value it decodes to, so densities are evaluated at
    /// the point that is actually proposed.
    pub fn snap(&self, p: &Parameter, x: f64) -> f64 {
        match self.kind {
            Kind::Choice { n } => (x.max(0.0).floor()).min(n as f64 - 1.0),
            Kind::Grid { h, last } => (x / h).round().clamp(0.0, last) * h,
            Kind::LogGrid { min, step, .. } => {
                let k = self.log_index(x);
                to_unit(p, &ParamValue::Double(min + k * step))
            }
            Kind::Continuous => x.clamp(0.0, 1.0),
        }
    }

    fn at(&self, x: f64) -> At {
        match self.kind {
            Kind::Continuous => At::Value(x),
            Kind::Grid { h, .. } => At::Bin((x - 0.5 * h).max(self.lo), (x + 0.5 * h).min(self.hi)),
            Kind::LogGrid { .. } => {
                let k = self.log_index(x);
                let a = self.log_edge(k - 0.5).map_or(self.lo, |u| u.max(self.lo));
                let b = self.log_edge(k + 0.5).map_or(self.hi, |u| u.min(self.hi));
                At::Bin(a, b)
            }
            Kind::Choice { n } => At::Index((x.max(0.0) as usize).min(n - 1)),
        }
    }
}

/// Optuna's `default_weights`: flat for the newest 25 observations, a linear ramp from `1/n`
/// for older ones (hyperopt's linear forgetting). `n` observations in chronological order.
pub(super) fn default_weights(n: usize) -> Vec<f64> {
    if n <= FLAT_WEIGHTS {
        return vec![1.0; n];
    }
    let ramp = n - FLAT_WEIGHTS;
    let first = 1.0 / n as f64;
    (0..ramp)
        .map(|i| {
            if ramp == 1 {
                first
            } else {
                first + (1.0 - first) * i as f64 / (ramp - 1) as f64
            }
        })
        .chain(std::iter::repeat_n(1.0, FLAT_WEIGHTS))
        .collect()
}

/// Per-dimension kernel parameters of a mixture.
#[derive(Debug, Clone)]
enum Kernels {
    /// Truncated normals: `shift[k]` is `ln σ + ln sqrt(2π) + ln Z` (continuous) or `ln Z`
    /// (grid), with `Z` the kernel's mass inside the support.
    Normal {
        mu: Vec<f64>,
        sigma: Vec<f64>,
        shift: Vec<f64>,
    },
    /// Row `k` holds the choice probabilities of kernel `k` (`n` per row), and their logs.
    Categorical {
        n: usize,
        p: Vec<f64>,
        ln_p: Vec<f64>,
    },
}

/// Grid bins whose masses one mixture keeps (at most this many, each one `f64` per kernel:
/// 8 MB at 1,000 kernels).
const MEMO_BINS: usize = 1024;

/// Every kernel's log mass of a grid bin, by (dimension, bits of the bin's two edges).
type BinMemo = RefCell<HashMap<(usize, u64, u64), Rc<Vec<f64>>>>;

/// A weighted mixture of product kernels over some of the dimensions.
#[derive(Debug, Clone)]
pub(super) struct Mixture {
    dims: Vec<Dim>,
    kernels: Vec<Kernels>,
    ln_w: Vec<f64>,
    cum_w: Vec<f64>,
    /// Log masses of grid bins already scored, by (dimension, bin edges): every candidate
    /// lands on one of a grid's few bins, and a bin's mass under each of up to 1,000 kernels
    /// (a difference of normal tails in log space) dominated TPE's time on stepped spaces.
    bin_memo: BinMemo,
}

impl Mixture {
    /// `cols[j][i]` is observation `i` in dimension `j`; `weights` (one per observation, in
    /// the same order) are extended by the prior kernel with `prior_weight`.
    pub fn new(dims: &[Dim], cols: &[Vec<f64>], weights: &[f64], prior_weight: f64) -> Mixture {
        let n = weights.len();
        let mut w: Vec<f64> = weights.to_vec();
        w.push(prior_weight);
        let total: f64 = w.iter().sum();
        let mut acc = 0.0;
        let cum_w = w
            .iter()
            .map(|x| {
                acc += x;
                acc
            })
            .collect();
        let ln_w = w.iter().map(|x| (x / total).ln()).collect();
        let kernels = dims
            .iter()
            .zip(cols)
            .map(|(dim, col)| match dim.kind {
                Kind::Choice { n: choices } => categorical_kernels(col, choices, prior_weight),
                _ => normal_kernels(dim, col, n),
            })
            .collect();
        Mixture {
            dims: dims.to_vec(),
            kernels,
            ln_w,
            cum_w,
            bin_memo: RefCell::default(),
        }
    }

    /// One draw: a kernel chosen by weight, then each dimension from that kernel (not yet
    /// snapped).
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Vec<f64> {
        let total = self.cum_w.last().copied().unwrap_or(1.0);
        let r = rng.random::<f64>() * total;
        let k = self
            .cum_w
            .partition_point(|c| *c <= r)
            .min(self.cum_w.len() - 1);
        self.dims
            .iter()
            .zip(&self.kernels)
            .map(|(dim, kernels)| match kernels {
                Kernels::Normal { mu, sigma, .. } => {
                    sample_truncated(mu[k], sigma[k], dim.lo, dim.hi, rng)
                }
                Kernels::Categorical { n, p, .. } => {
                    let row = &p[k * n..(k + 1) * n];
                    let mut r = rng.random::<f64>() * row.iter().sum::<f64>();
                    let mut pick = n - 1;
                    for (i, pi) in row.iter().enumerate() {
                        if r < *pi {
                            pick = i;
                            break;
                        }
                        r -= pi;
                    }
                    pick as f64
                }
            })
            .collect()
    }

    /// `ln` of the mixture density at a (snapped) point.
    pub fn ln_pdf(&self, x: &[f64]) -> f64 {
        let at: Vec<At> = self.dims.iter().zip(x).map(|(d, xi)| d.at(*xi)).collect();
        // A grid bin's masses under every kernel, looked up instead of recomputed.
        let bins: Vec<Option<Rc<Vec<f64>>>> = at
            .iter()
            .enumerate()
            .map(|(j, at)| self.bin_masses(j, *at))
            .collect();
        // Streaming log-sum-exp over kernels.
        let mut max = f64::NEG_INFINITY;
        let mut sum = 0.0;
        for (k, lw) in self.ln_w.iter().enumerate() {
            let mut t = *lw;
            for ((kernels, at), bin) in self.kernels.iter().zip(&at).zip(&bins) {
                t += match bin {
                    Some(masses) => masses[k],
                    None => kernel_ln_pdf(kernels, k, *at),
                };
            }
            // Terms below e^-LSE_CUTOFF of the largest change nothing at f64 precision; skipping
            // them avoids most exp calls (and libm's slow underflow path) far from a point.
            if t > max {
                let d = max - t;
                sum = if d > -LSE_CUTOFF {
                    sum * d.exp() + 1.0
                } else {
                    1.0
                };
                max = t;
            } else if t - max > -LSE_CUTOFF {
                sum += (t - max).exp();
            }
        }
        max + sum.ln()
    }

    /// Every kernel's log mass of grid bin `at` in dimension `j`, from the memo or computed
    /// and kept there; `None` for points that are not grid bins, or once the memo is full.
    fn bin_masses(&self, j: usize, at: At) -> Option<Rc<Vec<f64>>> {
        let At::Bin(a, b) = at else {
            return None;
        };
        let key = (j, a.to_bits(), b.to_bits());
        let mut memo = self.bin_memo.borrow_mut();
        if let Some(masses) = memo.get(&key) {
            return Some(masses.clone());
        }
        if memo.len() >= MEMO_BINS {
            return None;
        }
        let masses: Rc<Vec<f64>> = Rc::new(
            (0..self.ln_w.len())
                .map(|k| kernel_ln_pdf(&self.kernels[j], k, at))
                .collect(),
        );
        memo.insert(key, masses.clone());
        Some(masses)
    }
}

fn kernel_ln_pdf(kernels: &Kernels, k: usize, at: At) -> f64 {
    match (kernels, at) {
        (Kernels::Normal { mu, sigma, shift }, At::Value(x)) => {
            let z = (x - mu[k]) / sigma[k];
            -0.5 * z * z - shift[k]
        }
        (Kernels::Normal { mu, sigma, shift }, At::Bin(a, b)) => {
            ln_mass((a - mu[k]) / sigma[k], (b - mu[k]) / sigma[k]) - shift[k]
        }
        (Kernels::Categorical { n, ln_p, .. }, At::Index(i)) => ln_p[k * n + i],
        // A dimension's kernels always match how its points are represented.
        _ => f64::NEG_INFINITY,
    }
}

/// Optuna's categorical kernels: each observation's row puts `1 + prior_weight / m` on its
/// own choice and `prior_weight / m` on every choice (`m` kernels with the prior), then is
/// normalised; the prior row is uniform. This is Aitchison–Aitken smoothing whose strength
/// fades as observations accumulate.
fn categorical_kernels(col: &[f64], n: usize, prior_weight: f64) -> Kernels {
    let m = col.len() + 1;
    let base = prior_weight / m as f64;
    let mut p = vec![base; m * n];
    for (k, x) in col.iter().enumerate() {
        let i = (x.max(0.0) as usize).min(n - 1);
        p[k * n + i] += 1.0;
    }
    for row in p.chunks_mut(n) {
        let s: f64 = row.iter().sum();
        row.iter_mut().for_each(|v| *v /= s);
    }
    let ln_p = p.iter().map(|v| v.ln()).collect();
    Kernels::Categorical { n, p, ln_p }
}

/// Truncated normal kernels on a numeric dimension with Optuna's bandwidth rule: neighbour
/// distances (endpoints not considered) clipped to `[range / min(100, 1 + kernels), range]`
/// (the "magic clip"), plus the prior kernel at the centre with sd equal to the range.
fn normal_kernels(dim: &Dim, col: &[f64], n: usize) -> Kernels {
    let (lo, hi) = (dim.lo, dim.hi);
    let range = hi - lo;
    let prior_mu = 0.5 * (lo + hi);
    let mut sigma = neighbour_sigmas(col, lo, hi);
    let min_sigma = range / MAGIC_CLIP_KERNELS.min(1.0 + (n + 1) as f64);
    sigma
        .iter_mut()
        .for_each(|s| *s = s.clamp(min_sigma, range));
    let mut mu = col.to_vec();
    mu.push(prior_mu);
    sigma.push(range);
    let grid = matches!(dim.kind, Kind::Grid { .. } | Kind::LogGrid { .. });
    let shift = mu
        .iter()
        .zip(&sigma)
        .map(|(m, s)| {
            let ln_z = ln_mass((lo - m) / s, (hi - m) / s);
            if grid {
                ln_z
            } else {
                ln_z + s.ln() + LN_SQRT_2PI
            }
        })
        .collect();
    Kernels::Normal { mu, sigma, shift }
}

/// Each observation's bandwidth is the larger gap to its sorted neighbours, the support ends
/// counting as neighbours except that the outermost observations use their inner gap.
fn neighbour_sigmas(col: &[f64], lo: f64, hi: f64) -> Vec<f64> {
    let n = col.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|a, b| col[*a].total_cmp(&col[*b]));
    let mut ends = Vec::with_capacity(n + 2);
    ends.push(lo);
    ends.extend(order.iter().map(|i| col[*i]));
    ends.push(hi);
    let mut sorted_sigma: Vec<f64> = (1..=n)
        .map(|i| (ends[i] - ends[i - 1]).max(ends[i + 1] - ends[i]))
        .collect();
    if n >= 2 {
        sorted_sigma[0] = ends[2] - ends[1];
        sorted_sigma[n - 1] = ends[n] - ends[n - 1];
    }
    let mut sigma = vec![0.0; n];
    for (rank, i) in order.iter().enumerate() {
        sigma[*i] = sorted_sigma[rank];
    }
    sigma
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn weights_ramp_up_older_observations_only() {
        assert_eq!(default_weights(3), vec![1.0; 3]);
        let w = default_weights(30);
        assert_eq!(w.len(), 30);
        assert!((w[0] - 1.0 / 30.0).abs() < 1e-12);
        assert!((w[4] - 1.0).abs() < 1e-12);
        assert!(w[1] > w[0] && w[2] > w[1]);
    }

    #[test]
    fn neighbour_bandwidths_follow_the_gaps() {
        // Sorted [0.1, 0.2, 0.9] between ends 0 and 1; the outermost use their inner gap.
        let s = neighbour_sigmas(&[0.9, 0.1, 0.2], 0.0, 1.0);
        assert!((s[0] - 0.7).abs() < 1e-12, "{s:?}");
        assert!((s[1] - 0.1).abs() < 1e-12, "{s:?}");
        assert!((s[2] - 0.7).abs() < 1e-12, "{s:?}");
        assert_eq!(neighbour_sigmas(&[0.3], 0.0, 1.0), vec![0.7]);
    }

    #[test]
    fn densities_integrate_to_one() {
        let continuous = Dim {
            kind: Kind::Continuous,
            lo: 0.0,
            hi: 1.0,
        };
        let m = Mixture::new(
            &[continuous],
            &[vec![0.02, 0.5, 0.97]],
            &[1.0, 1.0, 1.0],
            1.0,
        );
        let n = 10_000;
        let integral: f64 = (0..n)
            .map(|i| m.ln_pdf(&[(i as f64 + 0.5) / n as f64]).exp() / n as f64)
            .sum();
        assert!((integral - 1.0).abs() < 1e-4, "{integral}");

        let h = 0.25;
        let grid = Dim {
            kind: Kind::Grid { h, last: 4.0 },
            lo: -0.5 * h,
            hi: 4.5 * h,
        };
        let m = Mixture::new(&[grid], &[vec![0.0, 0.75]], &[1.0, 1.0], 1.0);
        let total: f64 = (0..5).map(|k| m.ln_pdf(&[k as f64 * h]).exp()).sum();
        assert!((total - 1.0).abs() < 1e-6, "{total}");

        let c = Dim {
            kind: Kind::Choice { n: 3 },
            lo: 0.0,
            hi: 3.0,
        };
        let m = Mixture::new(&[c], &[vec![1.0, 1.0]], &[1.0, 1.0], 1.0);
        let p: Vec<f64> = (0..3).map(|k| m.ln_pdf(&[k as f64]).exp()).collect();
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        // Kernels [1/6, 2/3, 1/6] twice and the uniform prior, equally weighted.
        assert!((p[1] - 5.0 / 9.0).abs() < 1e-12, "{p:?}");
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let ones = (0..1000).filter(|_| m.sample(&mut rng)[0] == 1.0).count();
        assert!((500..610).contains(&ones), "{ones}");
    }

    #[test]
    fn remembered_bin_masses_give_the_same_density_bit_for_bit() {
        let h = 0.02;
        let grid = Dim {
            kind: Kind::Grid { h, last: 50.0 },
            lo: -0.5 * h,
            hi: 50.5 * h,
        };
        let col: Vec<f64> = (0..300).map(|i| f64::from(i % 51) * h).collect();
        let m = Mixture::new(&[grid, grid], &[col.clone(), col], &[1.0; 300], 1.0);
        // The same mixture with its memo full computes every mass directly.
        let direct = m.clone();
        let full: HashMap<_, _> = (0..MEMO_BINS)
            .map(|i| ((9, i as u64, 0), Rc::new(Vec::new())))
            .collect();
        *direct.bin_memo.borrow_mut() = full;
        for (a, b) in [(0, 0), (7, 50), (0, 0), (50, 1), (7, 50)] {
            let x = [f64::from(a) * h, f64::from(b) * h];
            assert_eq!(m.ln_pdf(&x).to_bits(), direct.ln_pdf(&x).to_bits(), "{x:?}");
        }
        // Bins 0, 7, 50 of dimension 0 and 0, 50, 1 of dimension 1.
        assert_eq!(m.bin_memo.borrow().len(), 6);
    }
}
