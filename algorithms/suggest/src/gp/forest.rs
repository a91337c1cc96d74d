//! The tree-based surrogates of `bayesianoptimization`'s `base_estimator` (scikit-optimize's
//! `cook_estimator`): `RF` (a random forest, Breiman 2001), `ET` (extra trees, Geurts et al.
//! 2006) and `GBRT` (gradient-boosted quantile regression, Friedman 2001), each predicting a
//! mean and a standard deviation for the acquisition functions.
//!
//! The forests' standard deviation is scikit-optimize's (`learning/forest.py`, after Hutter
//! et al. 2014, "Algorithm runtime prediction"): by the law of total variance over the trees,
//! `σ² = mean_t(σ_t² + μ_t²) − μ²`, with `μ_t` and `σ_t²` the mean and variance of the
//! training targets in the leaf of tree `t`. The boosted model fits the 16th, 50th and 84th
//! percentiles and predicts the median with half the distance between the outer two.

use super::tree::{Data, RegressionTree, Splitter, TreeParams};
use rand::{Rng, RngExt};

/// Which surrogate `base_estimator` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TreeKind {
    RandomForest,
    ExtraTrees,
    Boosted,
}

/// scikit-optimize's forests: 100 trees with at least 3 rows per leaf.
const FOREST_TREES: usize = 100;
const FOREST_MIN_LEAF: usize = 3;
/// scikit-optimize's boosting: 30 stages of depth-3 trees at learning rate 0.1
/// (scikit-learn's `GradientBoostingRegressor` defaults but `n_estimators`).
const BOOST_STAGES: usize = 30;
const BOOST_DEPTH: usize = 3;
const BOOST_RATE: f64 = 0.1;
const QUANTILES: [f64; 3] = [0.16, 0.5, 0.84];

/// A fitted tree surrogate.
#[derive(Debug, Clone)]
pub(crate) enum TreeModel {
    Forest(Vec<RegressionTree>),
    Boosted([QuantileBooster; 3]),
}

impl TreeModel {
    /// Fits `kind` to the rows of `x` (row-major, `d` features) and their targets `y`.
    pub(crate) fn fit<R: Rng + ?Sized>(
        kind: TreeKind,
        x: &[f64],
        d: usize,
        y: &[f64],
        rng: &mut R,
    ) -> TreeModel {
        let data = Data { x, d, y };
        let n = y.len();
        let forest = |splitter, bootstrap: bool, rng: &mut R| {
            let params = TreeParams {
                splitter,
                min_samples_leaf: FOREST_MIN_LEAF,
                max_depth: usize::MAX,
            };
            (0..FOREST_TREES)
                .map(|_| {
                    let rows = if bootstrap {
                        (0..n).map(|_| rng.random_range(0..n)).collect()
                    } else {
                        (0..n).collect()
                    };
                    RegressionTree::fit(&data, rows, params, rng)
                })
                .collect()
        };
        match kind {
            TreeKind::RandomForest => TreeModel::Forest(forest(Splitter::Best, true, rng)),
            TreeKind::ExtraTrees => TreeModel::Forest(forest(Splitter::Random, false, rng)),
            TreeKind::Boosted => {
                TreeModel::Boosted(QUANTILES.map(|q| QuantileBooster::fit(&data, q, rng)))
            }
        }
    }

    /// Predictive mean and standard deviation at `x`.
    pub(crate) fn predict(&self, x: &[f64]) -> (f64, f64) {
        match self {
            TreeModel::Forest(trees) => {
                let m = trees.len() as f64;
                let (mut mean, mut second) = (0.0, 0.0);
                for t in trees {
                    let (mu, var) = t.predict(x);
                    mean += mu / m;
                    second += (var + mu * mu) / m;
                }
                (mean, (second - mean * mean).max(0.0).sqrt())
            }
            TreeModel::Boosted([low, mid, high]) => {
                let (lo, hi) = (low.predict(x), high.predict(x));
                (mid.predict(x), ((hi - lo) / 2.0).abs())
            }
        }
    }
}

/// Gradient boosting under the pinball loss of one quantile (scikit-learn's
/// `GradientBoostingRegressor(loss="quantile")`): each stage fits a tree to the loss's
/// negative gradient, then sets each leaf to the quantile of the residuals that fall in it.
#[derive(Debug, Clone)]
pub(crate) struct QuantileBooster {
    init: f64,
    stages: Vec<RegressionTree>,
}

impl QuantileBooster {
    fn fit<R: Rng + ?Sized>(data: &Data<'_>, alpha: f64, rng: &mut R) -> QuantileBooster {
        let (x, d, y) = (data.x, data.d, data.y);
        let n = y.len();
        let init = interpolated_quantile(y, alpha);
        let mut f = vec![init; n];
        let params = TreeParams {
            splitter: Splitter::Best,
            min_samples_leaf: 1,
            max_depth: BOOST_DEPTH,
        };
        let mut stages = Vec::with_capacity(BOOST_STAGES);
        for _ in 0..BOOST_STAGES {
            let gradient: Vec<f64> = (0..n)
                .map(|i| if y[i] > f[i] { alpha } else { alpha - 1.0 })
                .collect();
            let on_gradient = Data { x, d, y: &gradient };
            let mut tree = RegressionTree::fit(&on_gradient, (0..n).collect(), params, rng);
            let leaves: Vec<usize> = (0..n)
                .map(|i| tree.leaf_of(&x[i * d..(i + 1) * d]))
                .collect();
            let mut by_leaf: std::collections::BTreeMap<usize, Vec<f64>> = Default::default();
            for (i, leaf) in leaves.iter().enumerate() {
                by_leaf.entry(*leaf).or_default().push(y[i] - f[i]);
            }
            for (leaf, residuals) in &by_leaf {
                tree.set_leaf_value(*leaf, lower_quantile(residuals, alpha));
            }
            for i in 0..n {
                f[i] += BOOST_RATE * tree.predict(&x[i * d..(i + 1) * d]).0;
            }
            stages.push(tree);
        }
        QuantileBooster { init, stages }
    }

    fn predict(&self, x: &[f64]) -> f64 {
        self.init
            + self
                .stages
                .iter()
                .map(|t| BOOST_RATE * t.predict(x).0)
                .sum::<f64>()
    }
}

/// numpy's default (linear) percentile: scikit-learn's initial estimate of a quantile model.
fn interpolated_quantile(values: &[f64], q: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let pos = q * (v.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
}

/// The smallest value with at least a fraction `q` of the values at or below it
/// (scikit-learn's unweighted `_weighted_percentile`, used for the leaves).
fn lower_quantile(values: &[f64], q: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let k = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[k - 1]
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// 60 points of `y = 4x` on a line with a kink at 0.5 (slope 0 after it).
    fn kinked() -> (Vec<f64>, Vec<f64>) {
        let x: Vec<f64> = (0..60).map(|i| i as f64 / 59.0).collect();
        let y = x.iter().map(|v| 4.0 * v.min(0.5)).collect();
        (x, y)
    }

    #[test]
    fn every_kind_follows_the_data_and_is_less_sure_where_it_changes() {
        let (x, y) = kinked();
        for kind in [
            TreeKind::RandomForest,
            TreeKind::ExtraTrees,
            TreeKind::Boosted,
        ] {
            let mut rng = ChaCha8Rng::seed_from_u64(3);
            let model = TreeModel::fit(kind, &x, 1, &y, &mut rng);
            let (low, _) = model.predict(&[0.05]);
            let (flat, flat_sd) = model.predict(&[0.9]);
            assert!(low < 0.6, "{kind:?} at 0.05: {low}");
            assert!((flat - 2.0).abs() < 0.25, "{kind:?} at 0.9: {flat}");
            let (_, slope_sd) = model.predict(&[0.25]);
            assert!(slope_sd >= flat_sd, "{kind:?}: {slope_sd} < {flat_sd}");
            let again = TreeModel::fit(kind, &x, 1, &y, &mut ChaCha8Rng::seed_from_u64(3));
            assert_eq!(
                again.predict(&[0.37]),
                model.predict(&[0.37]),
                "{kind:?} seeded"
            );
        }
    }

    #[test]
    fn forest_deviation_is_the_total_variance_over_trees() {
        // Two leaves of one tree each: targets {0, 2} and {10, 10, 10}.
        let x = [0.0, 0.1, 0.8, 0.9, 1.0];
        let y = [0.0, 2.0, 10.0, 10.0, 10.0];
        let data = Data { x: &x, d: 1, y: &y };
        let params = TreeParams {
            splitter: Splitter::Best,
            min_samples_leaf: 2,
            max_depth: 1,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let tree = RegressionTree::fit(&data, (0..5).collect(), params, &mut rng);
        let stump = TreeParams {
            max_depth: 0,
            ..params
        };
        let root = RegressionTree::fit(&data, (0..5).collect(), stump, &mut rng);
        let model = TreeModel::Forest(vec![tree, root]);
        // Tree 1's leaf: (1, 1); the root: (6.4, 19.84). Mean 3.7; second moment
        // (1 + 1 + 19.84 + 40.96) / 2 = 31.4.
        let (mean, sd) = model.predict(&[0.05]);
        assert!((mean - 3.7).abs() < 1e-12);
        assert!((sd * sd - (31.4 - 3.7 * 3.7)).abs() < 1e-9, "{sd}");
    }

    #[test]
    fn quantiles_are_numpys_and_scikit_learns() {
        let v = [4.0, 1.0, 3.0, 2.0];
        assert_eq!(interpolated_quantile(&v, 0.5), 2.5);
        assert_eq!(interpolated_quantile(&v, 0.16), 1.48);
        assert_eq!(lower_quantile(&v, 0.5), 2.0);
        assert_eq!(lower_quantile(&v, 0.84), 4.0);
        assert_eq!(lower_quantile(&v, 0.16), 1.0);
    }

    #[test]
    fn boosted_spread_grows_with_the_noise() {
        let x: Vec<f64> = (0..200).map(|i| (i % 40) as f64 / 39.0).collect();
        // Five observations per x: equal on the left half, 1, 1.5, ..., 3 on the right half.
        let y: Vec<f64> = x
            .iter()
            .enumerate()
            .map(|(i, v)| {
                if *v < 0.5 {
                    1.0
                } else {
                    1.0 + 0.5 * (i / 40) as f64
                }
            })
            .collect();
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let model = TreeModel::fit(TreeKind::Boosted, &x, 1, &y, &mut rng);
        let (_, quiet) = model.predict(&[0.2]);
        let (_, noisy) = model.predict(&[0.8]);
        assert!(noisy > quiet + 0.3, "{quiet} {noisy}");
    }
}
