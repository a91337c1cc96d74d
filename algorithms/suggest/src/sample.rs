//! Drawing parameter values from their prior distributions (uniform, log-uniform, normal,
//! log-normal), always inside `[min, max]` and on the step grid. Shared by every algorithm that
//! needs prior samples.

use rand::{Rng, RngExt};
use rand_distr::{Distribution as _, Normal};
use vernier_core::range;
pub use vernier_core::tidy;
use vernier_core::{Assignment, Distribution, Domain, ParamValue, Parameter, SearchSpace};

/// Draws truncated normals by rejection; after this many misses the draw is clamped instead.
const MAX_REJECTIONS: usize = 64;

/// Samples a whole assignment from the priors.
pub fn sample_assignment<R: Rng + ?Sized>(space: &SearchSpace, rng: &mut R) -> Assignment {
    Assignment(
        space
            .parameters()
            .iter()
            .map(|p| (p.name.clone(), sample_param(p, rng)))
            .collect(),
    )
}

/// Samples one parameter from its prior.
pub fn sample_param<R: Rng + ?Sized>(p: &Parameter, rng: &mut R) -> ParamValue {
    match &p.domain {
        // A uniform stepped double gives every grid point the same weight, as a stepped int
        // does (and Optuna's `step`); drawing on `[min, max]` and snapping gave the two end
        // points half a cell each.
        Domain::Double {
            min,
            max,
            step: Some(s),
        } if p.distribution == Distribution::Uniform => {
            let last = range::double_last(*min, *max, *s) as u64;
            let k = rng.random_range(0..=last);
            ParamValue::Double(vernier_core::grid_point(*min, k as f64, *s))
        }
        Domain::Double { min, max, step } => {
            let x = sample_continuous(*min, *max, p.distribution, rng);
            match step {
                Some(s) => ParamValue::Double(snap(x, *min, *max, *s)),
                None => ParamValue::Double(x.clamp(*min, *max)),
            }
        }
        Domain::Int { min, max, step } => {
            let last = range::int_last(*min, *max, *step);
            let index = if p.distribution == Distribution::Uniform {
                rng.random_range(0..=last)
            } else {
                let x = sample_continuous(*min as f64, *max as f64, p.distribution, rng);
                range::int_nearest(x, *min, *step, last)
            };
            ParamValue::Int(range::int_at(*min, *step, index))
        }
        Domain::Discrete { values } | Domain::Categorical { values } => {
            ParamValue::Choice(values[rng.random_range(0..values.len())].clone())
        }
    }
}

/// A continuous draw in `[min, max]` (log distributions need `min > 0`, checked by the space).
pub fn sample_continuous<R: Rng + ?Sized>(
    min: f64,
    max: f64,
    distribution: Distribution,
    rng: &mut R,
) -> f64 {
    let (lo, hi) = if distribution.is_log() {
        (min.ln(), max.ln())
    } else {
        (min, max)
    };
    let t = match distribution {
        Distribution::Uniform | Distribution::LogUniform => {
            range::lerp(lo, hi, rng.random::<f64>())
        }
        Distribution::Normal | Distribution::LogNormal => truncated_normal(lo, hi, rng),
    };
    let x = if distribution.is_log() { t.exp() } else { t };
    x.clamp(min, max)
}

/// Normal with mean `(lo+hi)/2` and sd `(hi-lo)/6`, truncated to `[lo, hi]`.
fn truncated_normal<R: Rng + ?Sized>(lo: f64, hi: f64, rng: &mut R) -> f64 {
    let mean = range::midpoint(lo, hi);
    let sd = range::span_over(lo, hi, 6.0);
    let Ok(normal) = Normal::new(mean, sd) else {
        return mean;
    };
    for _ in 0..MAX_REJECTIONS {
        let x: f64 = normal.sample(rng);
        if (lo..=hi).contains(&x) {
            return x;
        }
    }
    mean
}

/// Rounds `x` to the nearest `min + k*step` that is not above `max`.
pub fn snap(x: f64, min: f64, max: f64, step: f64) -> f64 {
    let last = range::double_last(min, max, step);
    let k = ((x - min) / step).round().clamp(0.0, last);
    vernier_core::grid_point(min, k, step)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn snaps_to_grid_within_bounds() {
        assert_eq!(snap(0.34, 0.0, 1.0, 0.1), 0.3);
        assert_eq!(snap(0.96, 0.0, 0.95, 0.1), 0.9);
        assert_eq!(snap(-3.0, 0.0, 1.0, 0.25), 0.0);
    }

    /// Every point of a uniform stepped double is as likely as a stepped int's: the ends too.
    #[test]
    fn a_stepped_double_weighs_its_end_points_like_the_rest() {
        let p = crate::test_params::double("d", (0.0, 0.5), Some(0.1), Distribution::Uniform);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut counts = std::collections::BTreeMap::new();
        for _ in 0..6000 {
            *counts
                .entry(sample_param(&p, &mut rng).to_string())
                .or_insert(0) += 1;
        }
        assert_eq!(counts.len(), 6, "{counts:?}");
        // 1000 expected each; a half-weight end would get about 545.
        for (value, n) in &counts {
            assert!((850..1150).contains(n), "{value}: {n} of 6000 ({counts:?})");
        }
    }

    #[test]
    fn normal_draws_concentrate_in_the_middle() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let n = 2000;
        let inner = (0..n)
            .map(|_| sample_continuous(0.0, 6.0, Distribution::Normal, &mut rng))
            .filter(|x| (2.0..=4.0).contains(x))
            .count();
        // One sd either side of the mean holds about 68% of a normal.
        assert!(inner > n * 6 / 10 && inner < n * 76 / 100, "{inner}");
    }

    #[test]
    fn log_uniform_covers_decades_evenly() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let n = 3000;
        let low = (0..n)
            .map(|_| sample_continuous(1e-4, 1.0, Distribution::LogUniform, &mut rng))
            .filter(|x| *x < 1e-2)
            .count();
        assert!(low > n * 45 / 100 && low < n * 55 / 100, "{low}");
    }
}
