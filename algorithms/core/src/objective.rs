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

/// The objective of an experiment, already defaulted and validated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Objective {
    pub metric: String,
    pub direction: Direction,
    pub goal: Option<f64>,
    /// The objective's own strategy (defaulted from the direction).
    pub strategy: MetricStrategy,
    /// Other metrics recorded with their strategies, in spec order.
    pub additional: Vec<(String, MetricStrategy)>,
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
        }
    }

    /// Every metric name the collector should look for, objective first.
    pub fn metric_names(&self) -> Vec<String> {
        std::iter::once(self.metric.clone())
            .chain(self.additional.iter().map(|(n, _)| n.clone()))
            .collect()
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
}
