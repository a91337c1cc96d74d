//! Acquisition functions on the GP posterior (minimisation, standardised outputs), each as a
//! value to maximise with its derivatives in the predictive mean and standard deviation.
//!
//! Expected improvement is computed as log-EI following Ament et al. 2023, "Unexpected
//! Improvements to Expected Improvement for Bayesian Optimization" (NeurIPS), eq. 9: far from
//! the incumbent EI underflows to zero in floating point and its gradient vanishes, while
//! log-EI stays finite and informative. Probability of improvement is likewise `log Φ(z)`.
//! The lower confidence bound is `−(μ − κσ)` (Srinivas et al. 2010).

use std::f64::consts::{PI, SQRT_2};

/// Which acquisition to maximise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Acq {
    Ei,
    Pi,
    Lcb,
}

/// Constants of the acquisition functions.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AcqParams {
    /// Best (smallest) standardised loss observed.
    pub(crate) best: f64,
    /// Improvement margin for EI and PI.
    pub(crate) xi: f64,
    /// Exploration weight of the confidence bound.
    pub(crate) kappa: f64,
}

impl Acq {
    /// Value and derivatives `(a, ∂a/∂μ, ∂a/∂σ)`.
    pub(crate) fn eval(self, mu: f64, sigma: f64, p: &AcqParams) -> (f64, f64, f64) {
        match self {
            Acq::Lcb => (-(mu - p.kappa * sigma), -1.0, p.kappa),
            Acq::Ei => {
                let z = (p.best - p.xi - mu) / sigma;
                let lh = log_h(z);
                // d log h / dz = Φ(z) / h(z), formed in logs so it survives underflow.
                let dlh = (log_ndtr(z) - lh).exp();
                (sigma.ln() + lh, -dlh / sigma, 1.0 / sigma - dlh * z / sigma)
            }
            Acq::Pi => {
                let z = (p.best - p.xi - mu) / sigma;
                let lp = log_ndtr(z);
                let dlp = (log_phi(z) - lp).exp();
                (lp, -dlp / sigma, -dlp * z / sigma)
            }
        }
    }

    pub(crate) fn value(self, mu: f64, sigma: f64, p: &AcqParams) -> f64 {
        self.eval(mu, sigma, p).0
    }
}

/// Chebyshev coefficients of `erfc` in `t = 2/(2+x)` (Press et al., Numerical Recipes, 3rd
/// ed., §6.2.2), accurate to about 1e-16.
const ERFC_COF: [f64; 28] = [
    -1.302_653_719_781_709_4,
    6.419_697_923_564_902e-1,
    1.947_647_320_418_583_6e-2,
    -9.561_514_786_808_63e-3,
    -9.465_953_444_820_36e-4,
    3.668_394_978_527_61e-4,
    4.252_332_480_690_7e-5,
    -2.027_857_811_253_4e-5,
    -1.624_290_004_647e-6,
    1.303_655_835_580e-6,
    1.562_644_172_2e-8,
    -8.523_809_591_5e-8,
    6.529_054_439e-9,
    5.059_343_495e-9,
    -9.913_641_56e-10,
    -2.273_651_22e-10,
    9.646_791_1e-11,
    2.394_038e-12,
    -6.886_027e-12,
    8.944_87e-13,
    3.130_92e-13,
    -1.127_08e-13,
    3.81e-16,
    7.106e-15,
    -1.523e-15,
    -9.4e-17,
    1.21e-16,
    -2.8e-17,
];

/// Scaled complementary error function `e^{x²} erfc(x)` for `x ≥ 0`, without overflow.
pub(crate) fn erfcx(x: f64) -> f64 {
    let x = x.max(0.0);
    let t = 2.0 / (2.0 + x);
    let ty = 4.0 * t - 2.0;
    let (mut d, mut dd) = (0.0, 0.0);
    for c in ERFC_COF[1..].iter().rev() {
        let tmp = d;
        d = ty * d - dd + c;
        dd = tmp;
    }
    t * (0.5 * (ERFC_COF[0] + ty * d) - dd).exp()
}

pub(crate) fn erfc(x: f64) -> f64 {
    if x >= 0.0 {
        erfcx(x) * (-x * x).exp()
    } else {
        2.0 - erfcx(-x) * (-x * x).exp()
    }
}

fn log_phi(z: f64) -> f64 {
    -0.5 * z * z - 0.5 * (2.0 * PI).ln()
}

/// `ln Φ(z)`, accurate in both tails.
pub(crate) fn log_ndtr(z: f64) -> f64 {
    if z > 0.0 {
        (-0.5 * erfc(z / SQRT_2)).ln_1p()
    } else {
        (0.5 * erfcx(-z / SQRT_2)).ln() - 0.5 * z * z
    }
}

/// `ln h(z)` with `h(z) = φ(z) + zΦ(z)`, so that `EI = σ h(z)` (Ament et al. 2023, eq. 9).
pub(crate) fn log_h(z: f64) -> f64 {
    let c1 = 0.5 * (2.0 * PI).ln();
    if z > -1.0 {
        let cdf = 0.5 * erfc(-z / SQRT_2);
        (log_phi(z).exp() + z * cdf).ln()
    } else if z > -1.0 / f64::EPSILON.sqrt() {
        let c2 = 0.5 * (PI / 2.0).ln();
        -0.5 * z * z - c1 + log1mexp((erfcx(-z / SQRT_2) * z.abs()).ln() + c2)
    } else {
        -0.5 * z * z - c1 - 2.0 * z.abs().ln()
    }
}

/// `ln(1 − e^x)` for `x < 0` (Mächler 2012).
fn log1mexp(x: f64) -> f64 {
    if x > -std::f64::consts::LN_2 {
        (-x.exp_m1()).ln()
    } else {
        (-x.exp()).ln_1p()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phi_cdf(z: f64) -> f64 {
        0.5 * erfc(-z / SQRT_2)
    }

    #[test]
    fn erfc_matches_known_values() {
        assert!((erfc(0.0) - 1.0).abs() < 1e-15);
        assert!((erfc(1.0) - 0.157_299_207_050_285_13).abs() < 1e-15);
        assert!((erfc(-1.0) - 1.842_700_792_949_715).abs() < 1e-15);
        assert!((erfc(3.0) / 2.209_049_699_858_544e-5 - 1.0).abs() < 1e-13);
        // erfcx(x) → 1/(x√π) for large x.
        let x = 1e4;
        assert!((erfcx(x) * x * PI.sqrt() - 1.0).abs() < 1e-8);
    }

    #[test]
    fn log_ei_matches_direct_formula_where_ei_is_not_tiny() {
        for z in [-4.0, -2.5, -1.0001, -0.999, -0.3, 0.0, 0.7, 2.0, 5.0] {
            let direct = (log_phi(z).exp() + z * phi_cdf(z)).ln();
            assert!(
                (log_h(z) - direct).abs() < 1e-9,
                "z={z}: {} vs {direct}",
                log_h(z)
            );
        }
        let p = AcqParams {
            best: 0.0,
            xi: 0.0,
            kappa: 1.96,
        };
        let (mu, sigma) = (0.4, 0.5);
        let z = -mu / sigma;
        let ei = sigma * (log_phi(z).exp() + z * phi_cdf(z));
        assert!((Acq::Ei.value(mu, sigma, &p) - ei.ln()).abs() < 1e-12);
    }

    #[test]
    fn log_ei_stays_finite_where_ei_underflows() {
        let mut last = f64::INFINITY;
        for z in [-40.0, -100.0, -1e4, -1e8, -1e10] {
            let direct = log_phi(z).exp() + z * phi_cdf(z);
            assert!(direct <= 1e-200, "{z}: {direct}");
            let l = log_h(z);
            assert!(l.is_finite() && l < last, "{z}: {l}");
            last = l;
        }
        // Asymptotically h(z) ≈ φ(z)/z² (1 − 3/z²).
        let z: f64 = -50.0;
        let asymptotic = log_phi(z) - 2.0 * z.abs().ln() + (1.0 - 3.0 / (z * z)).ln();
        assert!((log_h(z) - asymptotic).abs() < 1e-5);
        // The gradient stays finite and points towards smaller means.
        let p = AcqParams {
            best: 0.0,
            xi: 0.0,
            kappa: 1.96,
        };
        let (v, dmu, dsigma) = Acq::Ei.eval(60.0, 1.0, &p);
        assert!(v.is_finite() && dmu < 0.0 && dmu.is_finite() && dsigma > 0.0);
    }

    #[test]
    fn derivatives_match_finite_differences() {
        let p = AcqParams {
            best: 0.1,
            xi: 0.01,
            kappa: 1.96,
        };
        for acq in [Acq::Ei, Acq::Pi, Acq::Lcb] {
            for (mu, sigma) in [(0.5, 0.3), (-0.2, 1.0), (3.0, 0.2)] {
                let (_, dmu, dsigma) = acq.eval(mu, sigma, &p);
                let h = 1e-6;
                let fd_mu =
                    (acq.value(mu + h, sigma, &p) - acq.value(mu - h, sigma, &p)) / (2.0 * h);
                let fd_s =
                    (acq.value(mu, sigma + h, &p) - acq.value(mu, sigma - h, &p)) / (2.0 * h);
                assert!(
                    (fd_mu - dmu).abs() < 1e-5 * (1.0 + dmu.abs()),
                    "{acq:?} {mu} {sigma}"
                );
                assert!(
                    (fd_s - dsigma).abs() < 1e-5 * (1.0 + dsigma.abs()),
                    "{acq:?} {mu} {sigma}"
                );
            }
        }
    }
}
