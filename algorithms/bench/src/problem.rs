//! The problems the harness accepts: single-objective ones scored by simple regret,
//! multi-objective problems scored by the hypervolume gap to the true front, and a constrained
//! problem scored by the regret of the best feasible trial, with the constraint declared to the
//! algorithm or hidden from it (`:blind`), to measure what constraint handling buys.

use crate::error::BenchError;
use std::collections::BTreeMap;
use vernier_core::{
    Assignment, Constraint, ConstraintOp, Direction, Objective, ObjectiveTerm, SearchSpace,
    TrialRecord, TrialState, pareto,
};
use vernier_testfunctions::{ConstrainedProblem, MultiProblem, Problem};

/// One benchmark problem of any kind.
#[derive(Debug, Clone)]
pub enum BenchProblem {
    Single(Problem),
    /// Scored by `true hypervolume − hypervolume of the trials`.
    Multi(MultiProblem),
    /// Scored by the best feasible value's regret; `declared` says whether the algorithm is
    /// told the constraint.
    Constrained {
        problem: ConstrainedProblem,
        declared: bool,
    },
}

/// Resolves problem names, failing on the first unknown one.
pub fn problems(names: &[String]) -> Result<Vec<BenchProblem>, BenchError> {
    names
        .iter()
        .map(|name| {
            BenchProblem::by_name(name)
                .ok_or_else(|| BenchError::UnknownProblem { name: name.clone() })
        })
        .collect()
}

impl BenchProblem {
    pub fn by_name(name: &str) -> Option<BenchProblem> {
        if let Some(p) = Problem::by_name(name) {
            return Some(BenchProblem::Single(p));
        }
        if let Some(p) = MultiProblem::by_name(name) {
            return Some(BenchProblem::Multi(p));
        }
        let (base, declared) = match name.strip_suffix(":blind") {
            Some(base) => (base, false),
            None => (name, true),
        };
        ConstrainedProblem::by_name(base)
            .map(|problem| BenchProblem::Constrained { problem, declared })
    }

    pub fn name(&self) -> String {
        match self {
            BenchProblem::Single(p) => p.name.clone(),
            BenchProblem::Multi(p) => p.name.clone(),
            BenchProblem::Constrained { problem, declared } => {
                format!("{}{}", problem.name, if *declared { "" } else { ":blind" })
            }
        }
    }

    pub fn space(&self) -> SearchSpace {
        match self {
            BenchProblem::Single(p) => p.space(),
            BenchProblem::Multi(p) => p.space(),
            BenchProblem::Constrained { problem, .. } => problem.space(),
        }
    }

    /// The objective the algorithm is given.
    pub fn objective(&self) -> Objective {
        let mut o = Objective::new("value", Direction::Minimize);
        match self {
            BenchProblem::Single(_) => {}
            BenchProblem::Multi(p) => {
                o = Objective::new("f1", Direction::Minimize);
                for k in 1..p.objectives {
                    o.objectives.push(ObjectiveTerm {
                        metric: format!("f{}", k + 1),
                        direction: Direction::Minimize,
                        goal: None,
                    });
                }
            }
            BenchProblem::Constrained { declared, .. } => {
                if *declared {
                    o.constraints.push(Constraint {
                        metric: "c".into(),
                        op: ConstraintOp::Le,
                        bound: 0.0,
                    });
                }
            }
        }
        o
    }

    /// Evaluates a proposal as a finished trial.
    pub fn trial(&self, name: String, assignment: Assignment) -> TrialRecord {
        let mut metrics = BTreeMap::new();
        let objective = match self {
            BenchProblem::Single(p) => p.eval_assignment(&assignment),
            BenchProblem::Multi(p) => {
                let f = p.eval_assignment(&assignment);
                for (k, v) in f.iter().enumerate() {
                    metrics.insert(format!("f{}", k + 1), *v);
                }
                f[0]
            }
            BenchProblem::Constrained { problem, .. } => {
                let (f, c) = problem.eval_assignment(&assignment);
                metrics.insert("value".to_string(), f);
                metrics.insert("c".to_string(), c);
                f
            }
        };
        TrialRecord {
            name,
            assignment,
            state: TrialState::Succeeded,
            objective: Some(objective),
            labels: BTreeMap::new(),
            metrics,
        }
    }

    /// The score of a finished run (smaller is better): simple regret, hypervolume gap, or
    /// the best feasible value's regret (infinite when no trial was feasible).
    pub fn score(&self, trials: &[TrialRecord]) -> f64 {
        match self {
            BenchProblem::Single(p) => p.regret(
                trials
                    .iter()
                    .filter_map(|t| t.objective)
                    .fold(f64::INFINITY, f64::min),
            ),
            BenchProblem::Multi(p) => {
                let o = self.objective();
                let pts: Vec<Vec<f64>> =
                    trials.iter().filter_map(|t| t.usable_losses(&o)).collect();
                let hv = pareto::hypervolume(&pts, &p.reference).unwrap_or(0.0);
                (p.true_hypervolume - hv).max(0.0)
            }
            BenchProblem::Constrained { problem, .. } => problem.regret(
                trials
                    .iter()
                    .filter(|t| t.metrics.get("c").is_some_and(|c| *c <= 0.0))
                    .filter_map(|t| t.objective)
                    .fold(f64::INFINITY, f64::min),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_to_kinds_and_scores_follow_them() {
        assert!(matches!(
            BenchProblem::by_name("branin"),
            Some(BenchProblem::Single(_))
        ));
        let z = BenchProblem::by_name("zdt1-4").unwrap();
        assert_eq!(z.objective().objectives.len(), 2);
        // A single point on the true front: the gap is the rest of the front's volume.
        let mut a = vec![0.0; 4];
        a[0] = 0.25;
        let space = z.space();
        let assignment = vernier_algorithms::encode::unit_to_assignment(&space, &a);
        let t = z.trial("t".into(), assignment);
        assert_eq!(t.metrics["f2"], 0.5);
        let gap = z.score(&[t]);
        let BenchProblem::Multi(p) = &z else { panic!() };
        assert!((gap - (p.true_hypervolume - 0.85 * 0.6)).abs() < 1e-12);

        let blind = BenchProblem::by_name("rosenbrock-disk:blind").unwrap();
        assert_eq!(blind.name(), "rosenbrock-disk:blind");
        assert!(blind.objective().constraints.is_empty());
        let declared = BenchProblem::by_name("rosenbrock-disk").unwrap();
        assert_eq!(declared.objective().constraints.len(), 1);
        let outside =
            vernier_algorithms::encode::unit_to_assignment(&space_of(&declared), &[1.0, 1.0]);
        assert_eq!(
            declared.score(&[declared.trial("t".into(), outside)]),
            f64::INFINITY
        );
        assert!(BenchProblem::by_name("nope").is_none());
        let names = ["branin".to_string(), "nope".to_string()];
        let e = problems(&names).unwrap_err().to_string();
        assert!(e.contains("\"nope\"") && e.contains("hint:"), "{e}");
        assert_eq!(problems(&names[..1]).unwrap().len(), 1);
    }

    fn space_of(p: &BenchProblem) -> SearchSpace {
        p.space()
    }
}
