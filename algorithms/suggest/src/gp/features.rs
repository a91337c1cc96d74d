//! The GP's input space: every numeric or discrete parameter is one coordinate in `[0, 1]`
//! (log scale for log distributions, via `encode`), every categorical parameter is one-hot over
//! its choices, so unordered choices are never given a spurious order.

use crate::encode::{choice_index, from_unit, to_unit};
use rand::{Rng, RngExt};
use vernier_core::{Assignment, Domain, SearchSpace};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Column {
    /// Doubles, ints and discrete (numeric list) values: one ordered coordinate.
    Ordered,
    /// Categorical values: one coordinate per choice.
    OneHot(usize),
}

/// Where each parameter lives in the feature vector.
#[derive(Debug, Clone)]
pub(crate) struct Features {
    columns: Vec<(usize, Column)>,
    dim: usize,
}

impl Features {
    pub(crate) fn new(space: &SearchSpace) -> Self {
        let mut columns = Vec::with_capacity(space.len());
        let mut dim = 0;
        for p in space.parameters() {
            let column = match &p.domain {
                Domain::Categorical { values } if values.len() > 1 => Column::OneHot(values.len()),
                _ => Column::Ordered,
            };
            columns.push((dim, column));
            dim += match column {
                Column::Ordered => 1,
                Column::OneHot(k) => k,
            };
        }
        Features { columns, dim }
    }

    pub(crate) fn dim(&self) -> usize {
        self.dim
    }

    pub(crate) fn encode(&self, space: &SearchSpace, a: &Assignment) -> Vec<f64> {
        let mut x = vec![0.0; self.dim];
        for (p, (start, column)) in space.parameters().iter().zip(&self.columns) {
            let Some(v) = a.get(&p.name) else {
                x[*start] = 0.5;
                continue;
            };
            match column {
                Column::Ordered => x[*start] = to_unit(p, v),
                Column::OneHot(k) => {
                    let i = choice_index(p, v).unwrap_or(0).min(k - 1);
                    x[start + i] = 1.0;
                }
            }
        }
        x
    }

    /// The assignment nearest to a feature vector: numeric values snap to their grid,
    /// categoricals take the largest one-hot coordinate.
    pub(crate) fn decode(&self, space: &SearchSpace, x: &[f64]) -> Assignment {
        Assignment(
            space
                .parameters()
                .iter()
                .zip(&self.columns)
                .map(|(p, (start, column))| {
                    let v = match column {
                        Column::Ordered => from_unit(p, x[*start]),
                        Column::OneHot(k) => {
                            let mut best = 0;
                            for i in 1..*k {
                                if x[start + i] > x[start + best] {
                                    best = i;
                                }
                            }
                            from_unit(p, (best as f64 + 0.5) / *k as f64)
                        }
                    };
                    (p.name.clone(), v)
                })
                .collect(),
        )
    }

    /// Which coordinates local search may move (one-hot blocks stay fixed).
    pub(crate) fn continuous_mask(&self) -> Vec<bool> {
        let mut mask = vec![false; self.dim];
        for (start, column) in &self.columns {
            if *column == Column::Ordered {
                mask[*start] = true;
            }
        }
        mask
    }

    /// A uniform point of the relaxed space (a random choice for each categorical).
    pub(crate) fn random<R: Rng + ?Sized>(&self, rng: &mut R, out: &mut [f64]) {
        out.fill(0.0);
        for (start, column) in &self.columns {
            match column {
                Column::Ordered => out[*start] = rng.random::<f64>(),
                Column::OneHot(k) => out[start + rng.random_range(0..*k)] = 1.0,
            }
        }
    }

    /// A point near `x`: ordered coordinates move by a normal step of size `scale`, and each
    /// categorical switches to a random choice with probability `flip`.
    pub(crate) fn perturb<R: Rng + ?Sized>(
        &self,
        rng: &mut R,
        x: &[f64],
        scale: f64,
        flip: f64,
        out: &mut [f64],
    ) {
        out.copy_from_slice(x);
        for (start, column) in &self.columns {
            match column {
                Column::Ordered => {
                    out[*start] = (x[*start] + scale * standard_normal(rng)).clamp(0.0, 1.0);
                }
                Column::OneHot(k) => {
                    if rng.random::<f64>() < flip {
                        out[*start..start + k].fill(0.0);
                        out[start + rng.random_range(0..*k)] = 1.0;
                    }
                }
            }
        }
    }
}

/// Box–Muller, enough for candidate jitter.
fn standard_normal<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    let u: f64 = rng.random::<f64>().max(1e-300);
    let v: f64 = rng.random();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}
