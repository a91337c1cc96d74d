//! Analytic benchmark functions with known minima (BoTorch / Virtual Library of Simulation
//! Experiments definitions), used to measure algorithm quality as simple regret.

mod multi;

pub use multi::{ConstrainedProblem, MultiProblem};
use std::f64::consts::PI;
use vernier_core::{Assignment, Distribution, Domain, Parameter, SearchSpace};

/// A minimisation problem on a box.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub name: String,
    pub bounds: Vec<(f64, f64)>,
    /// The global minimum value.
    pub optimum: f64,
    kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Branin,
    Hartmann3,
    Hartmann6,
    Rosenbrock,
    Ackley,
    StyblinskiTang,
}

const HARTMANN_ALPHA: [f64; 4] = [1.0, 1.2, 3.0, 3.2];
const HARTMANN3_A: [[f64; 3]; 4] = [
    [3.0, 10.0, 30.0],
    [0.1, 10.0, 35.0],
    [3.0, 10.0, 30.0],
    [0.1, 10.0, 35.0],
];
const HARTMANN3_P: [[f64; 3]; 4] = [
    [3689.0, 1170.0, 2673.0],
    [4699.0, 4387.0, 7470.0],
    [1091.0, 8732.0, 5547.0],
    [381.0, 5743.0, 8828.0],
];
const HARTMANN6_A: [[f64; 6]; 4] = [
    [10.0, 3.0, 17.0, 3.5, 1.7, 8.0],
    [0.05, 10.0, 17.0, 0.1, 8.0, 14.0],
    [3.0, 3.5, 1.7, 10.0, 17.0, 8.0],
    [17.0, 8.0, 0.05, 10.0, 0.1, 14.0],
];
const HARTMANN6_P: [[f64; 6]; 4] = [
    [1312.0, 1696.0, 5569.0, 124.0, 8283.0, 5886.0],
    [2329.0, 4135.0, 8307.0, 3736.0, 1004.0, 9991.0],
    [2348.0, 1451.0, 3522.0, 2883.0, 3047.0, 6650.0],
    [4047.0, 8828.0, 8732.0, 5743.0, 1091.0, 381.0],
];

fn hartmann<const D: usize>(x: &[f64], a: &[[f64; D]; 4], p: &[[f64; D]; 4]) -> f64 {
    -(0..4)
        .map(|i| {
            let inner: f64 = (0..D)
                .map(|j| a[i][j] * (x[j] - p[i][j] * 1e-4).powi(2))
                .sum();
            HARTMANN_ALPHA[i] * (-inner).exp()
        })
        .sum::<f64>()
}

impl Problem {
    /// The problems of the benchmark suite by name: `branin`, `hartmann3`, `hartmann6`,
    /// `rosenbrock4`, `ackley5`, `styblinski-tang` (5-D); `rosenbrockN`, `ackleyN` and
    /// `styblinski-tangN` choose another dimension.
    pub fn by_name(name: &str) -> Option<Problem> {
        let dim = |prefix: &str, default: usize| -> Option<usize> {
            let rest = name.strip_prefix(prefix)?;
            if rest.is_empty() {
                Some(default)
            } else {
                rest.parse().ok().filter(|d| (2..=50).contains(d))
            }
        };
        let p = |kind, bounds: Vec<(f64, f64)>, optimum| Problem {
            name: name.to_string(),
            bounds,
            optimum,
            kind,
        };
        if name == "branin" {
            return Some(p(
                Kind::Branin,
                vec![(-5.0, 10.0), (0.0, 15.0)],
                5.0 / (4.0 * PI),
            ));
        }
        if name == "hartmann3" {
            return Some(p(Kind::Hartmann3, vec![(0.0, 1.0); 3], -3.862_779_787_3));
        }
        if name == "hartmann6" {
            return Some(p(
                Kind::Hartmann6,
                vec![(0.0, 1.0); 6],
                -3.322_368_011_415_5,
            ));
        }
        if let Some(d) = dim("styblinski-tang", 5) {
            return Some(p(
                Kind::StyblinskiTang,
                vec![(-5.0, 5.0); d],
                -39.166_165_703_771_42 * d as f64,
            ));
        }
        if let Some(d) = dim("rosenbrock", 4) {
            return Some(p(Kind::Rosenbrock, vec![(-5.0, 10.0); d], 0.0));
        }
        if let Some(d) = dim("ackley", 5) {
            return Some(p(Kind::Ackley, vec![(-32.768, 32.768); d], 0.0));
        }
        None
    }

    /// The default suite.
    pub fn suite() -> Vec<Problem> {
        [
            "branin",
            "hartmann3",
            "hartmann6",
            "rosenbrock4",
            "ackley5",
            "styblinski-tang",
        ]
        .iter()
        .filter_map(|n| Problem::by_name(n))
        .collect()
    }

    pub fn dim(&self) -> usize {
        self.bounds.len()
    }

    /// The function value at `x` (length `dim()`).
    pub fn eval(&self, x: &[f64]) -> f64 {
        match self.kind {
            Kind::Branin => {
                let (x1, x2) = (x[0], x[1]);
                let b = 5.1 / (4.0 * PI * PI);
                let c = 5.0 / PI;
                let t = 1.0 / (8.0 * PI);
                (x2 - b * x1 * x1 + c * x1 - 6.0).powi(2) + 10.0 * (1.0 - t) * x1.cos() + 10.0
            }
            Kind::Hartmann3 => hartmann(x, &HARTMANN3_A, &HARTMANN3_P),
            Kind::Hartmann6 => hartmann(x, &HARTMANN6_A, &HARTMANN6_P),
            Kind::Rosenbrock => x
                .windows(2)
                .map(|w| 100.0 * (w[1] - w[0] * w[0]).powi(2) + (w[0] - 1.0).powi(2))
                .sum(),
            Kind::Ackley => {
                let d = x.len() as f64;
                let sq = x.iter().map(|v| v * v).sum::<f64>() / d;
                let cs = x.iter().map(|v| (2.0 * PI * v).cos()).sum::<f64>() / d;
                -20.0 * (-0.2 * sq.sqrt()).exp() - cs.exp() + 20.0 + std::f64::consts::E
            }
            Kind::StyblinskiTang => {
                0.5 * x
                    .iter()
                    .map(|v| v.powi(4) - 16.0 * v * v + 5.0 * v)
                    .sum::<f64>()
            }
        }
    }

    /// Simple regret of a value: how far above the optimum it is.
    pub fn regret(&self, value: f64) -> f64 {
        (value - self.optimum).max(0.0)
    }

    /// The problem as a search space of doubles `x1..xd`.
    pub fn space(&self) -> SearchSpace {
        let params = self
            .bounds
            .iter()
            .enumerate()
            .map(|(i, (lo, hi))| Parameter {
                name: format!("x{}", i + 1),
                domain: Domain::Double {
                    min: *lo,
                    max: *hi,
                    step: None,
                },
                distribution: Distribution::Uniform,
            })
            .collect();
        // Bounds are fixed, finite and ordered, so this cannot fail.
        SearchSpace::new(params).unwrap_or_default()
    }

    /// Evaluates an assignment of `space()`.
    pub fn eval_assignment(&self, a: &Assignment) -> f64 {
        let x: Vec<f64> = (0..self.dim())
            .map(|i| {
                a.get(&format!("x{}", i + 1))
                    .and_then(|v| v.as_f64())
                    .unwrap_or(f64::NAN)
            })
            .collect();
        self.eval(&x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    #[test]
    fn known_minimisers_reach_the_optimum() {
        let b = Problem::by_name("branin").unwrap();
        for x in [[-PI, 12.275], [PI, 2.275], [9.424_78, 2.475]] {
            assert!(close(b.eval(&x), b.optimum) || (b.eval(&x) - b.optimum).abs() < 1e-5);
        }
        let h3 = Problem::by_name("hartmann3").unwrap();
        assert!((h3.eval(&[0.114_614, 0.555_649, 0.852_547]) - h3.optimum).abs() < 1e-5);
        let h6 = Problem::by_name("hartmann6").unwrap();
        let x6 = [0.201_69, 0.150_011, 0.476_874, 0.275_332, 0.311_652, 0.6573];
        assert!((h6.eval(&x6) - h6.optimum).abs() < 1e-4);
        let r = Problem::by_name("rosenbrock4").unwrap();
        assert_eq!(r.eval(&[1.0; 4]), 0.0);
        let a = Problem::by_name("ackley5").unwrap();
        assert!(a.eval(&[0.0; 5]).abs() < 1e-12);
        let s = Problem::by_name("styblinski-tang").unwrap();
        assert!(close(s.eval(&[-2.903_534_027_771_177; 5]), s.optimum));
        assert_eq!(Problem::suite().len(), 6);
        assert_eq!(Problem::by_name("ackley3").unwrap().dim(), 3);
        assert!(Problem::by_name("nope").is_none());
    }
}
