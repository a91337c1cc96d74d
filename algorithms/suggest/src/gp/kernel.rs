//! The Matérn 5/2 kernel with one length scale per input coordinate (ARD), written in terms
//! of the scaled squared distance `r² = Σ λ_d (x_d − x'_d)²` with `λ_d = 1/ℓ_d²`, so that the
//! derivatives needed for hyperparameter fitting and acquisition gradients have no
//! singularity at `r = 0` (Rasmussen & Williams 2006, eq. 4.17).

const SQRT5: f64 = 2.236_067_977_499_79;

/// Correlation `(1 + √5 r + 5r²/3) e^{−√5 r}` and its derivative with respect to `r²`,
/// `−(5/6)(1 + √5 r) e^{−√5 r}`.
#[inline]
pub(crate) fn matern52(r2: f64) -> (f64, f64) {
    let r = r2.max(0.0).sqrt();
    let e = (-SQRT5 * r).exp();
    let a = 1.0 + SQRT5 * r;
    ((a + 5.0 / 3.0 * r2) * e, -5.0 / 6.0 * a * e)
}

/// Scaled squared distance between two points.
#[inline]
pub(crate) fn dist2(a: &[f64], b: &[f64], inv_ls2: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .zip(inv_ls2)
        .map(|((x, y), l)| l * (x - y) * (x - y))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derivative_matches_finite_difference() {
        for r2 in [0.0, 0.01, 0.3, 2.0, 9.0] {
            let h = 1e-6;
            let (lo, _) = matern52(r2 + h);
            let (hi, _) = matern52(r2 + 2.0 * h);
            let (k, d) = matern52(r2 + 1.5 * h);
            assert!(((hi - lo) / h - d).abs() < 1e-5, "{r2}");
            assert!(k <= 1.0 && k > 0.0);
        }
        assert_eq!(matern52(0.0).0, 1.0);
    }
}
