//! Multi-objective and constrained test problems with known optima: ZDT1 and ZDT2 (Zitzler,
//! Deb & Thiele 2000, "Comparison of multiobjective evolutionary algorithms: empirical
//! results", 30 variables), DTLZ2 (Deb, Thiele, Laumanns & Zitzler 2002, "Scalable
//! multi-objective optimization test problems", 3 objectives, 12 variables), and Rosenbrock
//! constrained to a disk (minimum 0 at (1, 1), on the constraint's boundary).
//!
//! Hypervolumes are to the reference points used in the benchmarks, (1.1, 1.1) and
//! (1.1, 1.1, 1.1); the true fronts' hypervolumes have closed forms given with each problem.

use std::f64::consts::{FRAC_PI_2, PI};
use vernier_core::{Assignment, Distribution, Domain, Parameter, SearchSpace};

/// A problem with several objectives to minimise, all on `[0, 1]^dim`.
#[derive(Debug, Clone, PartialEq)]
pub struct MultiProblem {
    pub name: String,
    pub dim: usize,
    pub objectives: usize,
    /// Reference point of the hypervolume (every objective minimised).
    pub reference: Vec<f64>,
    /// Hypervolume of the true Pareto front to `reference`.
    pub true_hypervolume: f64,
    kind: MultiKind,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum MultiKind {
    Zdt1,
    Zdt2,
    Dtlz2,
}

impl MultiProblem {
    /// `zdt1`, `zdt2` (30 variables) or `dtlz2` (3 objectives, 12 variables); a suffix
    /// `-N` chooses N variables (2..=50 for ZDT, 3..=50 for DTLZ2), e.g. `zdt1-6`: the true
    /// front and its hypervolume do not depend on the dimension.
    pub fn by_name(name: &str) -> Option<MultiProblem> {
        let (base, dim) = match name.split_once('-') {
            Some((base, d)) => (base, Some(d.parse::<usize>().ok()?)),
            None => (name, None),
        };
        let (kind, default_dim, objectives, true_hv) = match base {
            // 1.1² minus the area above the front f2 = 1 − √f1 inside the unit square
            // (1 − 2/3), i.e. 0.21 + 2/3.
            "zdt1" => (MultiKind::Zdt1, 30, 2, 0.21 + 2.0 / 3.0),
            // f2 = 1 − f1²: 0.21 + 1/3.
            "zdt2" => (MultiKind::Zdt2, 30, 2, 0.21 + 1.0 / 3.0),
            // The front is the unit sphere's positive octant: 1.1³ − π/6.
            "dtlz2" => (MultiKind::Dtlz2, 12, 3, 1.331 - PI / 6.0),
            _ => return None,
        };
        let dim = dim.unwrap_or(default_dim);
        if !(objectives..=50).contains(&dim) {
            return None;
        }
        Some(MultiProblem {
            name: name.to_string(),
            dim,
            objectives,
            reference: vec![1.1; objectives],
            true_hypervolume: true_hv,
            kind,
        })
    }

    /// The objective values at `x` (length `dim`).
    pub fn eval(&self, x: &[f64]) -> Vec<f64> {
        match self.kind {
            MultiKind::Zdt1 | MultiKind::Zdt2 => {
                let f1 = x[0];
                let g = 1.0 + 9.0 * x[1..].iter().sum::<f64>() / (x.len() - 1) as f64;
                let r = f1 / g;
                let h = if self.kind == MultiKind::Zdt1 {
                    1.0 - r.sqrt()
                } else {
                    1.0 - r * r
                };
                vec![f1, g * h]
            }
            MultiKind::Dtlz2 => {
                let g: f64 = x[2..].iter().map(|v| (v - 0.5).powi(2)).sum();
                let (a, b) = (x[0] * FRAC_PI_2, x[1] * FRAC_PI_2);
                vec![
                    (1.0 + g) * a.cos() * b.cos(),
                    (1.0 + g) * a.cos() * b.sin(),
                    (1.0 + g) * a.sin(),
                ]
            }
        }
    }

    /// Points on the true front, `n` per free coordinate (for plots and checks).
    pub fn true_front(&self, n: usize) -> Vec<Vec<f64>> {
        let steps = |n: usize| (0..n).map(move |i| i as f64 / (n - 1).max(1) as f64);
        match self.kind {
            MultiKind::Zdt1 | MultiKind::Zdt2 => steps(n)
                .map(|f1| {
                    let mut x = vec![0.0; self.dim];
                    x[0] = f1;
                    self.eval(&x)
                })
                .collect(),
            MultiKind::Dtlz2 => steps(n)
                .flat_map(|a| steps(n).map(move |b| (a, b)))
                .map(|(a, b)| {
                    let mut x = vec![0.5; self.dim];
                    x[0] = a;
                    x[1] = b;
                    self.eval(&x)
                })
                .collect(),
        }
    }

    /// Doubles `x1..x{dim}` on `[0, 1]`.
    pub fn space(&self) -> SearchSpace {
        unit_space(self.dim)
    }

    pub fn eval_assignment(&self, a: &Assignment) -> Vec<f64> {
        self.eval(&read_x(a, self.dim))
    }
}

/// A single objective with one constraint `c(x) <= 0`.
#[derive(Debug, Clone, PartialEq)]
pub struct ConstrainedProblem {
    pub name: String,
    pub bounds: Vec<(f64, f64)>,
    /// The best objective value among feasible points.
    pub optimum: f64,
    /// Where it is reached.
    pub minimiser: Vec<f64>,
}

impl ConstrainedProblem {
    /// `rosenbrock-disk`: Rosenbrock on `[-1.5, 1.5]²` subject to `x² + y² <= 2`. The optimum
    /// (1, 1) lies on the disk's edge, so half of its neighbourhood is infeasible.
    pub fn by_name(name: &str) -> Option<ConstrainedProblem> {
        (name == "rosenbrock-disk").then(|| ConstrainedProblem {
            name: name.to_string(),
            bounds: vec![(-1.5, 1.5); 2],
            optimum: 0.0,
            minimiser: vec![1.0, 1.0],
        })
    }

    /// `(objective, constraint)`; feasible when the constraint is `<= 0`.
    pub fn eval(&self, x: &[f64]) -> (f64, f64) {
        let (a, b) = (x[0], x[1]);
        let f = (1.0 - a).powi(2) + 100.0 * (b - a * a).powi(2);
        (f, a * a + b * b - 2.0)
    }

    pub fn space(&self) -> SearchSpace {
        box_space(&self.bounds)
    }

    pub fn eval_assignment(&self, a: &Assignment) -> (f64, f64) {
        self.eval(&read_x(a, self.bounds.len()))
    }

    /// How far a feasible value is above the feasible optimum.
    pub fn regret(&self, value: f64) -> f64 {
        (value - self.optimum).max(0.0)
    }
}

fn unit_space(dim: usize) -> SearchSpace {
    box_space(&vec![(0.0, 1.0); dim])
}

fn box_space(bounds: &[(f64, f64)]) -> SearchSpace {
    let params = bounds
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

fn read_x(a: &Assignment, dim: usize) -> Vec<f64> {
    (0..dim)
        .map(|i| {
            a.get(&format!("x{}", i + 1))
                .and_then(|v| v.as_f64())
                .unwrap_or(f64::NAN)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use vernier_core::pareto::hypervolume;

    #[test]
    fn fronts_match_their_closed_forms() {
        for name in ["zdt1", "zdt2", "dtlz2"] {
            let p = MultiProblem::by_name(name).unwrap();
            let n = if p.objectives == 2 { 2001 } else { 121 };
            let front = p.true_front(n);
            let hv = hypervolume(&front, &p.reference).unwrap();
            // A finite sample of the front dominates slightly less than the whole front.
            let gap = p.true_hypervolume - hv;
            let tol = if p.objectives == 2 { 1e-3 } else { 2e-2 };
            assert!(
                gap >= 0.0 && gap < tol,
                "{name}: {hv} vs {}",
                p.true_hypervolume
            );
        }
        let z = MultiProblem::by_name("zdt1").unwrap();
        let mut x = vec![0.0; 30];
        x[0] = 0.25;
        assert_eq!(z.eval(&x), vec![0.25, 0.5]);
        x[1] = 1.0;
        // g = 1 + 9/29, f2 = g (1 − √(0.25/g)).
        let g: f64 = 1.0 + 9.0 / 29.0;
        assert!((z.eval(&x)[1] - g * (1.0 - (0.25 / g).sqrt())).abs() < 1e-12);
        let d = MultiProblem::by_name("dtlz2").unwrap();
        let f = d.eval(&[0.5; 12]);
        let norm: f64 = f.iter().map(|v| v * v).sum();
        assert!((norm - 1.0).abs() < 1e-12);
        assert!(MultiProblem::by_name("zdt9").is_none());
        assert_eq!(MultiProblem::by_name("zdt1-6").unwrap().dim, 6);
        assert!(MultiProblem::by_name("dtlz2-2").is_none());
        assert!(MultiProblem::by_name("zdt2-x").is_none());
    }

    #[test]
    fn constrained_optimum_is_feasible_and_on_the_edge() {
        let p = ConstrainedProblem::by_name("rosenbrock-disk").unwrap();
        let (f, c) = p.eval(&p.minimiser);
        assert_eq!((f, c), (0.0, 0.0));
        // Just outside the disk along the valley is infeasible.
        assert!(p.eval(&[1.01, 1.0201]).1 > 0.0);
        assert_eq!(p.space().parameters().len(), 2);
    }
}
