//! What a trial is optimised for, and how a metric's observations are reduced to one value.

use serde::{Deserialize, Serialize};

/// Whether smaller or larger objective values are better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Minimize,
    Maximize,
}

impl Direction {
    /// Katib's word for it (`objective.type`).
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Minimize => "minimize",
            Direction::Maximize => "maximize",
        }
    }

    /// True when `a` is strictly better than `b`.
    pub fn is_better(self, a: f64, b: f64) -> bool {
        match self {
            Direction::Minimize => a < b,
            Direction::Maximize => a > b,
        }
    }

    /// True when `value` reaches `goal` (Katib: `<=` for minimise, `>=` for maximise).
    pub fn reaches(self, value: f64, goal: f64) -> bool {
        match self {
            Direction::Minimize => value <= goal,
            Direction::Maximize => value >= goal,
        }
    }

    /// Maps a value so that smaller is always better; algorithms minimise this.
    pub fn to_loss(self, value: f64) -> f64 {
        match self {
            Direction::Minimize => value,
            Direction::Maximize => -value,
        }
    }

    /// The metric strategy Katib's defaulter gives a metric without one.
    pub fn default_strategy(self) -> MetricStrategy {
        match self {
            Direction::Minimize => MetricStrategy::Min,
            Direction::Maximize => MetricStrategy::Max,
        }
    }
}

/// Which of a metric's observations stands for the whole trial (Katib `metricStrategies`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MetricStrategy {
    Min,
    Max,
    Latest,
}

/// One of several objectives of a multi-objective experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectiveTerm {
    pub metric: String,
    pub direction: Direction,
    /// Reached when a feasible trial reaches every term's goal that is set.
    pub goal: Option<f64>,
}

/// How a constraint compares its metric with its bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConstraintOp {
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">=")]
    Ge,
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = ">")]
    Gt,
}

impl ConstraintOp {
    /// Every operator's spelling, as the spec accepts it.
    pub const ALL: [ConstraintOp; 4] = [
        ConstraintOp::Le,
        ConstraintOp::Ge,
        ConstraintOp::Lt,
        ConstraintOp::Gt,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ConstraintOp::Le => "<=",
            ConstraintOp::Ge => ">=",
            ConstraintOp::Lt => "<",
            ConstraintOp::Gt => ">",
        }
    }

    pub fn parse(s: &str) -> Option<ConstraintOp> {
        ConstraintOp::ALL.into_iter().find(|o| o.as_str() == s)
    }

    /// True for `<=` and `<`: the metric must stay below the bound.
    pub fn is_upper(self) -> bool {
        matches!(self, ConstraintOp::Le | ConstraintOp::Lt)
    }
}

/// A metric a trial must satisfy to be feasible, e.g. `latency_ms <= 20`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Constraint {
    pub metric: String,
    pub op: ConstraintOp,
    pub bound: f64,
}

impl Constraint {
    /// How far `value` is on the wrong side of the bound: 0 when satisfied, positive
    /// otherwise (a strict bound met with equality counts as the smallest positive violation,
    /// so it ranks ahead of every real miss). NaN violates infinitely.
    pub fn violation(&self, value: f64) -> f64 {
        if value.is_nan() {
            return f64::INFINITY;
        }
        let over = if self.op.is_upper() {
            value - self.bound
        } else {
            self.bound - value
        };
        let strict = matches!(self.op, ConstraintOp::Lt | ConstraintOp::Gt);
        if over > 0.0 {
            over
        } else if strict && over == 0.0 {
            f64::MIN_POSITIVE
        } else {
            0.0
        }
    }

    /// The constraint as `g(value) <= 0`, which models of a constraint predict.
    pub fn slack(&self, value: f64) -> f64 {
        if self.op.is_upper() {
            value - self.bound
        } else {
            self.bound - value
        }
    }
}

impl std::fmt::Display for Constraint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} {}", self.metric, self.op.as_str(), self.bound)
    }
}

/// The objective of an experiment, already defaulted and validated.
///
/// `metric`, `direction` and `goal` are the primary objective (Katib's `objectiveMetricName`,
/// `type`, `goal`). `objectives` lists every objective, the primary first; a Katib spec has
/// exactly one, so single-objective code can keep reading `metric` and `direction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Objective {
    pub metric: String,
    pub direction: Direction,
    pub goal: Option<f64>,
    /// The objective's own strategy (defaulted from the direction).
    pub strategy: MetricStrategy,
    /// Other metrics recorded with their strategies, in spec order. Secondary objectives and
    /// constraint metrics are among them.
    pub additional: Vec<(String, MetricStrategy)>,
    /// Every objective, the primary first (never empty when built by `new` or the spec).
    pub objectives: Vec<ObjectiveTerm>,
    /// Metrics a trial must satisfy to be feasible; empty for a Katib spec.
    pub constraints: Vec<Constraint>,
}

impl Objective {
    /// A minimal objective with Katib's default strategy and no extra metrics.
    pub fn new(metric: impl Into<String>, direction: Direction) -> Self {
        Objective {
            metric: metric.into(),
            direction,
            goal: None,
            strategy: direction.default_strategy(),
            additional: Vec::new(),
            objectives: Vec::new(),
            constraints: Vec::new(),
        }
        .with_primary_term()
    }

    /// Re-syncs `objectives[0]` with `metric`, `direction` and `goal` after they changed.
    pub fn with_primary_term(mut self) -> Self {
        let primary = ObjectiveTerm {
            metric: self.metric.clone(),
            direction: self.direction,
            goal: self.goal,
        };
        match self.objectives.first_mut() {
            Some(first) => *first = primary,
            None => self.objectives.push(primary),
        }
        self
    }

    /// More than one objective: the result is a Pareto front, not one best trial.
    pub fn is_multi(&self) -> bool {
        self.objectives.len() > 1
    }

    /// Every objective as a loss vector (smaller is better) read from a trial's metrics, or
    /// `None` when one is missing or not finite.
    pub fn losses(&self, value_of: impl Fn(&str) -> Option<f64>) -> Option<Vec<f64>> {
        self.objectives
            .iter()
            .map(|t| {
                value_of(&t.metric)
                    .filter(|v| v.is_finite())
                    .map(|v| t.direction.to_loss(v))
            })
            .collect()
    }

    /// Total violation of the constraints (0 when feasible; infinite when a constrained
    /// metric was never reported, so such a trial ranks behind every measured one).
    pub fn violation(&self, value_of: impl Fn(&str) -> Option<f64>) -> f64 {
        self.constraints
            .iter()
            .map(|c| value_of(&c.metric).map_or(f64::INFINITY, |v| c.violation(v)))
            .sum()
    }

    /// True when every constraint holds.
    pub fn is_feasible(&self, value_of: impl Fn(&str) -> Option<f64>) -> bool {
        self.violation(value_of) == 0.0
    }

    /// Every metric name the collector should look for, objective first; secondary
    /// objectives and constraint metrics are included even when not listed as additional.
    pub fn metric_names(&self) -> Vec<String> {
        let mut names: Vec<String> = std::iter::once(self.metric.clone())
            .chain(self.additional.iter().map(|(n, _)| n.clone()))
            .collect();
        let extra = self
            .objectives
            .iter()
            .map(|t| &t.metric)
            .chain(self.constraints.iter().map(|c| &c.metric));
        for name in extra {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        names
    }

    /// The metrics a search reads besides the primary objective: the other objectives' and
    /// the constraints', each once, in spec order (empty for a Katib spec).
    pub fn secondary_search_metrics(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        let metrics = self.objectives.iter().skip(1).map(|t| &t.metric);
        for name in metrics.chain(self.constraints.iter().map(|c| &c.metric)) {
            if *name != self.metric && !names.contains(name) {
                names.push(name.clone());
            }
        }
        names
    }

    /// The strategy for `metric`, if it is one this objective records.
    pub fn strategy_for(&self, metric: &str) -> Option<MetricStrategy> {
        if metric == self.metric {
            return Some(self.strategy);
        }
        self.additional
            .iter()
            .find(|(n, _)| n == metric)
            .map(|(_, s)| *s)
            .or_else(|| {
                self.objectives
                    .iter()
                    .find(|t| t.metric == metric)
                    .map(|t| t.direction.default_strategy())
            })
            .or_else(|| {
                self.constraints
                    .iter()
                    .any(|c| c.metric == metric)
                    .then_some(MetricStrategy::Latest)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direction_compares_and_reaches_goal() {
        assert!(Direction::Minimize.is_better(1.0, 2.0));
        assert!(!Direction::Maximize.is_better(1.0, 2.0));
        assert!(Direction::Minimize.reaches(0.1, 0.1));
        assert!(!Direction::Maximize.reaches(0.09, 0.1));
        assert_eq!(Direction::Maximize.to_loss(3.0), -3.0);
    }

    #[test]
    fn metric_names_put_objective_first() {
        let mut o = Objective::new("loss", Direction::Minimize);
        o.additional.push(("acc".into(), MetricStrategy::Latest));
        assert_eq!(o.metric_names(), vec!["loss", "acc"]);
        assert_eq!(o.strategy_for("loss"), Some(MetricStrategy::Min));
        assert_eq!(o.strategy_for("acc"), Some(MetricStrategy::Latest));
        assert_eq!(o.strategy_for("nope"), None);
    }

    fn two_objectives_one_constraint() -> Objective {
        let mut o = Objective::new("loss", Direction::Minimize);
        o.objectives.push(ObjectiveTerm {
            metric: "acc".into(),
            direction: Direction::Maximize,
            goal: None,
        });
        o.constraints.push(Constraint {
            metric: "latency".into(),
            op: ConstraintOp::Lt,
            bound: 20.0,
        });
        o
    }

    #[test]
    fn secondary_objectives_and_constraints_are_collected() {
        let o = two_objectives_one_constraint();
        assert!(o.is_multi());
        assert!(!Objective::new("loss", Direction::Minimize).is_multi());
        assert_eq!(o.metric_names(), vec!["loss", "acc", "latency"]);
        assert_eq!(o.strategy_for("acc"), Some(MetricStrategy::Max));
        assert_eq!(o.strategy_for("latency"), Some(MetricStrategy::Latest));
    }

    #[test]
    fn losses_and_violations_read_metrics() {
        let o = two_objectives_one_constraint();
        let m = |pairs: &'static [(&'static str, f64)]| {
            move |n: &str| pairs.iter().find(|(k, _)| *k == n).map(|(_, v)| *v)
        };
        let ok = m(&[("loss", 1.0), ("acc", 0.5), ("latency", 19.0)]);
        assert_eq!(o.losses(ok), Some(vec![1.0, -0.5]));
        assert_eq!(o.violation(ok), 0.0);
        assert!(o.is_feasible(ok));
        let slow = m(&[("loss", 1.0), ("acc", f64::NAN), ("latency", 23.5)]);
        assert_eq!(o.losses(slow), None);
        assert_eq!(o.violation(slow), 3.5);
        let equal = m(&[("latency", 20.0)]);
        assert!(!o.is_feasible(equal));
        assert!(o.violation(equal) < 1e-300);
        assert_eq!(o.violation(m(&[])), f64::INFINITY);
    }

    #[test]
    fn secondary_search_metrics_are_the_other_objectives_and_the_constraints_once() {
        assert!(
            Objective::new("loss", Direction::Minimize)
                .secondary_search_metrics()
                .is_empty()
        );
        let mut o = two_objectives_one_constraint();
        o.constraints.push(Constraint {
            metric: "loss".into(),
            op: ConstraintOp::Le,
            bound: 1.0,
        });
        o.constraints.push(o.constraints[0].clone());
        assert_eq!(o.secondary_search_metrics(), o.metric_names()[1..]);
    }

    #[test]
    fn constraint_ops_round_trip_and_compare() {
        for op in ConstraintOp::ALL {
            assert_eq!(ConstraintOp::parse(op.as_str()), Some(op));
        }
        assert_eq!(ConstraintOp::parse("=="), None);
        let c = Constraint {
            metric: "acc".into(),
            op: ConstraintOp::Ge,
            bound: 0.9,
        };
        assert_eq!(c.violation(0.95), 0.0);
        assert!((c.violation(0.8) - 0.1).abs() < 1e-12);
        assert!((c.slack(0.8) - 0.1).abs() < 1e-12);
        assert_eq!(c.to_string(), "acc >= 0.9");
    }
}
