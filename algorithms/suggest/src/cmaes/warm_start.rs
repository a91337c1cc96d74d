//! The first search distribution of a warm-started CMA-ES, fitted to the earlier results:
//! WS-CMA-ES (M. Nomura, S. Watanabe, Y. Akimoto, Y. Ozaki & M. Onishi, "Warm Starting CMA-ES
//! for Hyperparameter Optimization", AAAI 2021), as the `cmaes` library computes it for
//! Optuna's `CmaEsSampler(source_trials=...)`.
//!
//! The best `gamma` (10 %) of the earlier results, as points of the unit cube, each stand for a
//! Gaussian of covariance `alpha^2 I` (`alpha` 0.1); the mixture's mean and covariance `Sigma`
//! become the first mean and `sigma^2 C` with `sigma = det(Sigma)^(1 / 2n)`, so `C` has
//! determinant 1. With fewer than `1 / gamma` results no point is selected, and the search
//! starts as it would without them (the library refuses such a start).

use nalgebra::{DMatrix, DVector, SymmetricEigen};

/// Share of the earlier results the distribution is fitted to.
const GAMMA: f64 = 0.1;
/// Standard deviation of the Gaussian each selected result stands for, in cube units.
const ALPHA: f64 = 0.1;

/// The fewest earlier results a warm start is made from (one selected at `GAMMA`).
pub(crate) const MIN_RESULTS: usize = 10;

/// A starting distribution: mean, step size and covariance of determinant 1.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct StartingPoint {
    pub mean: DVector<f64>,
    pub sigma: f64,
    pub cov: DMatrix<f64>,
}

/// The starting point fitted to `results` (cube point, loss; smaller is better), or `None`
/// when there are too few of them to select one.
pub(super) fn starting_point(mut results: Vec<(DVector<f64>, f64)>) -> Option<StartingPoint> {
    let selected = (results.len() as f64 * GAMMA).floor() as usize;
    let n = results.first()?.0.len();
    if selected == 0 || n == 0 {
        return None;
    }
    results.sort_by(|a, b| a.1.total_cmp(&b.1));
    let top = &results[..selected];
    let mean = top.iter().fold(DVector::zeros(n), |m, (x, _)| m + x) / selected as f64;
    let second = top
        .iter()
        .fold(DMatrix::zeros(n, n), |s, (x, _)| s + x * x.transpose())
        / selected as f64;
    let mixture = DMatrix::identity(n, n) * (ALPHA * ALPHA) + second - &mean * mean.transpose();
    // The determinant through the eigenvalues: `alpha^2 I` keeps them at least `alpha^2`, and
    // their logarithms keep a high-dimensional product from underflowing.
    let sym = (&mixture + mixture.transpose()) * 0.5;
    let log_det: f64 = SymmetricEigen::new(sym.clone())
        .eigenvalues
        .iter()
        .map(|v| v.max(ALPHA * ALPHA).ln())
        .sum();
    let sigma = (log_det / (2.0 * n as f64)).exp();
    Some(StartingPoint {
        mean,
        sigma,
        cov: sym / (sigma * sigma),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn results(points: &[([f64; 2], f64)]) -> Vec<(DVector<f64>, f64)> {
        points
            .iter()
            .map(|(x, l)| (DVector::from_column_slice(x), *l))
            .collect()
    }

    #[test]
    fn fewer_than_ten_results_make_no_starting_point() {
        let nine: Vec<([f64; 2], f64)> = (0..9).map(|i| ([0.1 * i as f64, 0.5], 1.0)).collect();
        assert_eq!(starting_point(results(&nine)), None);
        assert_eq!(starting_point(Vec::new()), None);
    }

    /// Ten results select the best one: the distribution is centred on it with the prior's
    /// own spread, `sigma = alpha` and `C = I`.
    #[test]
    fn one_selected_result_is_the_mean_with_the_priors_spread() {
        let mut points: Vec<([f64; 2], f64)> = (0..9)
            .map(|i| ([0.05 * i as f64, 0.9], 5.0 + i as f64))
            .collect();
        points.push(([0.3, 0.7], 0.5));
        let start = starting_point(results(&points)).unwrap();
        assert!((start.mean - DVector::from_column_slice(&[0.3, 0.7])).norm() < 1e-15);
        assert!((start.sigma - ALPHA).abs() < 1e-15, "{}", start.sigma);
        assert!((start.cov - DMatrix::identity(2, 2)).norm() < 1e-12);
    }

    /// Twenty results select two; their spread along x widens the distribution along x only,
    /// and the covariance keeps determinant 1 with `sigma` taking the scale, as the `cmaes`
    /// library's `get_warm_start_mgd` returns for the same input (hand-computed below).
    #[test]
    fn two_selected_results_spread_the_distribution_along_their_difference() {
        let mut points: Vec<([f64; 2], f64)> =
            (0..18).map(|i| ([0.05 * i as f64, 0.1], 10.0)).collect();
        points.push(([0.2, 0.5], 1.0));
        points.push(([0.6, 0.5], 2.0));
        let start = starting_point(results(&points)).unwrap();
        // Sigma = diag(0.01 + 0.04, 0.01): det 5e-4, sigma = det^(1/4).
        let sigma = 5e-4f64.powf(0.25);
        assert!((start.mean - DVector::from_column_slice(&[0.4, 0.5])).norm() < 1e-15);
        assert!((start.sigma - sigma).abs() < 1e-12, "{}", start.sigma);
        let want = DMatrix::from_row_slice(2, 2, &[0.05, 0.0, 0.0, 0.01]) / (sigma * sigma);
        assert!((start.cov.clone() - want).norm() < 1e-9, "{}", start.cov);
        assert!((start.cov.determinant() - 1.0).abs() < 1e-9);
    }

    /// The order of the results does not matter, only their losses.
    #[test]
    fn the_best_results_are_selected_whatever_their_order() {
        let mut points: Vec<([f64; 2], f64)> = (0..10)
            .map(|i| ([0.1 * i as f64, 0.2], 3.0 - 0.1 * i as f64))
            .collect();
        let a = starting_point(results(&points)).unwrap();
        points.reverse();
        let b = starting_point(results(&points)).unwrap();
        assert_eq!(a, b);
        assert!((a.mean[0] - 0.9).abs() < 1e-15);
    }
}
