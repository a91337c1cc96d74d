//! A CART regression tree (Breiman et al. 1984) with the squared-error criterion, grown either
//! on the best threshold of every feature (random forests, gradient boosting) or on one
//! uniformly drawn threshold per feature (extra trees, Geurts, Ernst & Wehenkel 2006), as
//! scikit-learn's `DecisionTreeRegressor` and `ExtraTreeRegressor` grow them for
//! scikit-optimize's `RF`, `ET` and `GBRT` surrogates.
//!
//! Written here rather than taken from a crate: the surrogates need each leaf's variance of
//! its training values (scikit-optimize's forest uncertainty) and leaf values rewritten after
//! growth (quantile boosting), which the Rust tree crates (smartcore, linfa-trees) keep
//! private.

use rand::{Rng, RngExt};

/// How a node chooses its split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Splitter {
    /// The threshold of lowest squared error over every feature.
    Best,
    /// One uniform threshold per feature, the best of those.
    Random,
}

/// How a tree grows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TreeParams {
    pub(crate) splitter: Splitter,
    pub(crate) min_samples_leaf: usize,
    pub(crate) max_depth: usize,
}

#[derive(Debug, Clone)]
enum Node {
    Split {
        feature: usize,
        threshold: f64,
        left: usize,
        right: usize,
    },
    Leaf {
        value: f64,
        variance: f64,
    },
}

/// A fitted tree over `d` features.
#[derive(Debug, Clone)]
pub(crate) struct RegressionTree {
    nodes: Vec<Node>,
}

/// The training data a tree is grown on: row-major features and targets.
pub(crate) struct Data<'a> {
    pub(crate) x: &'a [f64],
    pub(crate) d: usize,
    pub(crate) y: &'a [f64],
}

impl Data<'_> {
    fn at(&self, i: usize, f: usize) -> f64 {
        self.x[i * self.d + f]
    }
}

impl RegressionTree {
    /// Grows a tree on the rows `samples` of `data` (a row may repeat: a bootstrap sample).
    pub(crate) fn fit<R: Rng + ?Sized>(
        data: &Data<'_>,
        samples: Vec<usize>,
        params: TreeParams,
        rng: &mut R,
    ) -> RegressionTree {
        let mut tree = RegressionTree { nodes: Vec::new() };
        tree.grow(data, samples, 0, params, rng);
        tree
    }

    /// Adds the node for `samples` and its subtree; returns its index.
    fn grow<R: Rng + ?Sized>(
        &mut self,
        data: &Data<'_>,
        samples: Vec<usize>,
        depth: usize,
        params: TreeParams,
        rng: &mut R,
    ) -> usize {
        let id = self.nodes.len();
        let (value, variance) = mean_variance(samples.iter().map(|i| data.y[*i]));
        self.nodes.push(Node::Leaf { value, variance });
        let splittable = depth < params.max_depth
            && samples.len() >= 2 * params.min_samples_leaf.max(1)
            // scikit-learn's test: a node whose targets agree to rounding is a leaf.
            && variance > f64::EPSILON;
        let split = if splittable {
            best_split(data, &samples, params, rng)
        } else {
            None
        };
        let Some((feature, threshold)) = split else {
            return id;
        };
        let (l, r): (Vec<usize>, Vec<usize>) = samples
            .into_iter()
            .partition(|i| data.at(*i, feature) <= threshold);
        let left = self.grow(data, l, depth + 1, params, rng);
        let right = self.grow(data, r, depth + 1, params, rng);
        self.nodes[id] = Node::Split {
            feature,
            threshold,
            left,
            right,
        };
        id
    }

    /// The index of the leaf `x` falls in.
    pub(crate) fn leaf_of(&self, x: &[f64]) -> usize {
        let mut at = 0;
        while let Node::Split {
            feature,
            threshold,
            left,
            right,
        } = self.nodes[at]
        {
            at = if x[feature] <= threshold { left } else { right };
        }
        at
    }

    /// The leaf's value and the variance of its training targets at `x`.
    pub(crate) fn predict(&self, x: &[f64]) -> (f64, f64) {
        match self.nodes[self.leaf_of(x)] {
            Node::Leaf { value, variance } => (value, variance),
            Node::Split { .. } => unreachable!("leaf_of ends at a leaf"),
        }
    }

    /// Replaces the value of leaf `leaf` (quantile boosting's leaf update).
    pub(crate) fn set_leaf_value(&mut self, leaf: usize, new: f64) {
        if let Node::Leaf { value, .. } = &mut self.nodes[leaf] {
            *value = new;
        }
    }
}

/// Mean and population variance of `values`.
fn mean_variance(values: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let (n, sum) = values
        .clone()
        .fold((0.0, 0.0), |(n, s), v| (n + 1.0, s + v));
    if n == 0.0 {
        return (0.0, 0.0);
    }
    let mean = sum / n;
    let var = values.map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    (mean, var.max(0.0))
}

/// The split of lowest total squared error, leaving `min_samples_leaf` rows on each side.
fn best_split<R: Rng + ?Sized>(
    data: &Data<'_>,
    samples: &[usize],
    params: TreeParams,
    rng: &mut R,
) -> Option<(usize, f64)> {
    let mut best: Option<(f64, usize, f64)> = None;
    for f in 0..data.d {
        let found = match params.splitter {
            Splitter::Best => best_threshold(data, samples, f, params.min_samples_leaf),
            Splitter::Random => random_threshold(data, samples, f, params.min_samples_leaf, rng),
        };
        if let Some((sse, t)) = found
            && best.is_none_or(|(b, _, _)| sse < b)
        {
            best = Some((sse, f, t));
        }
    }
    best.map(|(_, f, t)| (f, t))
}

/// The threshold of feature `f` of lowest squared error and that error, midway between two
/// neighbouring distinct values.
fn best_threshold(
    data: &Data<'_>,
    samples: &[usize],
    f: usize,
    min_leaf: usize,
) -> Option<(f64, f64)> {
    let mut rows: Vec<(f64, f64)> = samples
        .iter()
        .map(|i| (data.at(*i, f), data.y[*i]))
        .collect();
    rows.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = rows.len();
    let total: f64 = rows.iter().map(|r| r.1).sum();
    let total_sq: f64 = rows.iter().map(|r| r.1 * r.1).sum();
    let (mut sum, mut sq) = (0.0, 0.0);
    let mut best: Option<(f64, f64)> = None;
    for k in 1..n {
        sum += rows[k - 1].1;
        sq += rows[k - 1].1 * rows[k - 1].1;
        if k < min_leaf.max(1) || n - k < min_leaf.max(1) || rows[k - 1].0 == rows[k].0 {
            continue;
        }
        let (nl, nr) = (k as f64, (n - k) as f64);
        let sse = (sq - sum * sum / nl) + ((total_sq - sq) - (total - sum).powi(2) / nr);
        if best.is_none_or(|(b, _)| sse < b) {
            best = Some((sse, (rows[k - 1].0 + rows[k].0) / 2.0));
        }
    }
    best
}

/// One threshold of feature `f` drawn uniformly between its smallest and largest value, and
/// its squared error; none when the feature is constant or a side gets too few rows.
fn random_threshold<R: Rng + ?Sized>(
    data: &Data<'_>,
    samples: &[usize],
    f: usize,
    min_leaf: usize,
    rng: &mut R,
) -> Option<(f64, f64)> {
    let values = samples.iter().map(|i| data.at(*i, f));
    let lo = values.clone().fold(f64::INFINITY, f64::min);
    let hi = values.fold(f64::NEG_INFINITY, f64::max);
    if lo >= hi {
        return None;
    }
    let t = rng.random_range(lo..hi);
    let side = |left: bool| {
        samples
            .iter()
            .filter(move |i| (data.at(**i, f) <= t) == left)
            .map(|i| data.y[*i])
    };
    let (nl, nr) = (side(true).count(), side(false).count());
    if nl < min_leaf.max(1) || nr < min_leaf.max(1) {
        return None;
    }
    let sse = |left: bool| {
        let (_, var) = mean_variance(side(left));
        var * side(left).count() as f64
    };
    Some((sse(true) + sse(false), t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    const DEEP: usize = usize::MAX;

    fn params(splitter: Splitter, min_samples_leaf: usize) -> TreeParams {
        TreeParams {
            splitter,
            min_samples_leaf,
            max_depth: DEEP,
        }
    }

    #[test]
    fn a_step_is_split_where_it_steps() {
        let x = [0.1, 0.2, 0.3, 0.6, 0.7, 0.8];
        let y = [1.0, 1.0, 1.0, 5.0, 5.0, 5.0];
        let data = Data { x: &x, d: 1, y: &y };
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let tree =
            RegressionTree::fit(&data, (0..6).collect(), params(Splitter::Best, 1), &mut rng);
        assert_eq!(tree.predict(&[0.0]), (1.0, 0.0));
        assert_eq!(tree.predict(&[0.44]), (1.0, 0.0));
        assert_eq!(tree.predict(&[0.46]), (5.0, 0.0));
        assert_eq!(tree.nodes.len(), 3, "pure leaves are not split again");
    }

    #[test]
    fn leaves_keep_min_samples_and_their_variance() {
        let x = [0.0, 1.0, 2.0, 3.0];
        let y = [0.0, 2.0, 4.0, 6.0];
        let data = Data { x: &x, d: 1, y: &y };
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let tree =
            RegressionTree::fit(&data, (0..4).collect(), params(Splitter::Best, 2), &mut rng);
        assert_eq!(tree.predict(&[0.0]), (1.0, 1.0));
        assert_eq!(tree.predict(&[3.0]), (5.0, 1.0));
        let stump = TreeParams {
            max_depth: 0,
            ..params(Splitter::Best, 1)
        };
        let root = RegressionTree::fit(&data, (0..4).collect(), stump, &mut rng);
        assert_eq!(root.predict(&[0.0]), (3.0, 5.0));
    }

    #[test]
    fn the_best_feature_is_chosen_and_repeated_rows_count() {
        // Feature 1 separates the targets; feature 0 is noise.
        let x = [0.5, 0.0, 0.1, 0.0, 0.9, 1.0, 0.4, 1.0];
        let y = [0.0, 0.0, 3.0, 3.0];
        let data = Data { x: &x, d: 2, y: &y };
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let tree = RegressionTree::fit(
            &data,
            vec![0, 1, 1, 2, 3],
            params(Splitter::Best, 1),
            &mut rng,
        );
        assert_eq!(tree.predict(&[0.0, 0.2]).0, 0.0);
        assert_eq!(tree.predict(&[0.0, 0.8]).0, 3.0);
    }

    #[test]
    fn random_splits_are_seeded_and_fit_a_line_coarsely() {
        let x: Vec<f64> = (0..40).map(|i| i as f64 / 39.0).collect();
        let y: Vec<f64> = x.iter().map(|v| 10.0 * v).collect();
        let data = Data { x: &x, d: 1, y: &y };
        let grow = |seed| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            RegressionTree::fit(
                &data,
                (0..40).collect(),
                params(Splitter::Random, 3),
                &mut rng,
            )
        };
        let (a, b) = (grow(1), grow(1));
        for q in [0.0, 0.33, 0.5, 0.9] {
            assert_eq!(a.predict(&[q]), b.predict(&[q]));
            assert!((a.predict(&[q]).0 - 10.0 * q).abs() < 2.0, "{q}");
        }
        assert_ne!(grow(1).nodes.len(), 0);
    }
}
