//! Observation logs (one row per reported metric value) and their Katib-style reduction to
//! `{min, max, latest}` per metric.

use crate::objective::MetricStrategy;
use serde::{Deserialize, Serialize};

/// The value Katib records when a trial never reported its objective metric.
pub const UNAVAILABLE: &str = "unavailable";

/// The longest metric name every store can key (Katib's `metric_name VARCHAR(255)`, Vernier's
/// MySQL and PostgreSQL columns alike), in bytes.
pub const MAX_METRIC_NAME_BYTES: usize = 255;
/// The longest trial name every store can key (the trials' `name VARCHAR(255)` on the server
/// stores, Katib's `trial_name` column), in bytes.
pub const MAX_TRIAL_NAME_BYTES: usize = 255;
/// The longest metric value every store can hold (MySQL's `TEXT`, Katib's `value` column), in
/// bytes.
pub const MAX_METRIC_VALUE_BYTES: usize = 65_535;

/// One reported value of one metric (Katib `MetricLog`). Values stay strings, as on the wire:
/// a trial may legitimately report a non-numeric value such as `unavailable`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    pub metric: String,
    /// Microseconds since the Unix epoch (UTC). Katib's zero time is `-62135596800000000`.
    pub timestamp_us: i64,
    pub value: String,
}

/// Katib's `Metric {name, min, max, latest}` for one metric of one trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricSummary {
    pub name: String,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// The value with the greatest timestamp (the later log wins ties); may be non-numeric.
    pub latest: String,
}

impl MetricSummary {
    /// Reduces the observations of `name` as Katib's trial controller does. Observations of
    /// other metrics are ignored. Returns `None` when `name` was never observed.
    pub fn reduce<'a>(
        name: &str,
        observations: impl IntoIterator<Item = &'a Observation>,
    ) -> Option<MetricSummary> {
        let mut reducer: Option<MetricReducer> = None;
        for obs in observations.into_iter().filter(|o| o.metric == name) {
            reducer
                .get_or_insert_with(|| MetricReducer::new(name))
                .observe(obs.timestamp_us, &obs.value);
        }
        reducer.map(MetricReducer::finish)
    }

    /// The numeric value a strategy selects; `min`/`max` fall back to `latest` as in Katib.
    pub fn value(&self, strategy: MetricStrategy) -> Option<f64> {
        let latest = || {
            self.latest
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
        };
        match strategy {
            MetricStrategy::Min => self.min.or_else(latest),
            MetricStrategy::Max => self.max.or_else(latest),
            MetricStrategy::Latest => latest(),
        }
    }

    /// The text a strategy selects when it selects no number: Katib's `min`/`max` fall back to
    /// `latest`, which may be text such as DARTS's `Genotype(...)`. `None` when the strategy
    /// selects a number, or `latest` is Katib's `unavailable` or empty. A non-finite number
    /// (`nan` pushed to the DBManager) is text: a result, ranked below every number.
    pub fn text(&self, strategy: MetricStrategy) -> Option<&str> {
        if self.value(strategy).is_some() || self.latest == UNAVAILABLE {
            return None;
        }
        (!self.latest.trim().is_empty()).then_some(self.latest.as_str())
    }

    /// Katib renders absent min/max as `unavailable`.
    pub fn min_text(&self) -> String {
        self.min
            .map_or_else(|| UNAVAILABLE.to_string(), number_text)
    }

    /// Katib renders absent min/max as `unavailable`.
    pub fn max_text(&self) -> String {
        self.max
            .map_or_else(|| UNAVAILABLE.to_string(), number_text)
    }
}

/// A number as few digits as read back the same, in exponent form outside [1e-6, 1e21) as Go
/// and JavaScript write it: `2.5e+299`, not three hundred digits.
pub fn number_text(v: f64) -> String {
    let magnitude = v.abs();
    if magnitude == 0.0 || (1e-6..1e21).contains(&magnitude) {
        return v.to_string();
    }
    let e = format!("{v:e}");
    match e.split_once('e') {
        Some((mantissa, exp)) if !exp.starts_with('-') => format!("{mantissa}e+{exp}"),
        _ => e,
    }
}

/// Reduces one metric's observations as they stream by, without keeping them.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricReducer {
    summary: MetricSummary,
    latest_ts: i64,
}

impl MetricReducer {
    pub fn new(name: &str) -> Self {
        MetricReducer {
            summary: MetricSummary {
                name: name.to_string(),
                min: None,
                max: None,
                latest: UNAVAILABLE.to_string(),
            },
            latest_ts: i64::MIN,
        }
    }

    /// Adds one observation; the later of two with the same timestamp wins `latest`.
    pub fn observe(&mut self, timestamp_us: i64, value: &str) {
        let s = &mut self.summary;
        if let Ok(v) = value.trim().parse::<f64>()
            && v.is_finite()
        {
            s.min = Some(s.min.map_or(v, |m| m.min(v)));
            s.max = Some(s.max.map_or(v, |m| m.max(v)));
        }
        if timestamp_us >= self.latest_ts {
            self.latest_ts = timestamp_us;
            value.clone_into(&mut s.latest);
        }
    }

    pub fn finish(self) -> MetricSummary {
        self.summary
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(metric: &str, ts: i64, value: &str) -> Observation {
        Observation {
            metric: metric.into(),
            timestamp_us: ts,
            value: value.into(),
        }
    }

    #[test]
    fn reduces_min_max_latest() {
        let logs = vec![
            obs("loss", 1, "0.5"),
            obs("loss", 3, "0.7"),
            obs("loss", 2, "0.2"),
            obs("acc", 4, "0.9"),
        ];
        let s = MetricSummary::reduce("loss", &logs).unwrap();
        assert_eq!(s.min, Some(0.2));
        assert_eq!(s.max, Some(0.7));
        assert_eq!(s.latest, "0.7");
        assert_eq!(s.value(MetricStrategy::Min), Some(0.2));
        assert_eq!(s.value(MetricStrategy::Latest), Some(0.7));
    }

    #[test]
    fn later_log_wins_timestamp_ties() {
        let logs = vec![obs("m", 0, "1"), obs("m", 0, "2")];
        assert_eq!(MetricSummary::reduce("m", &logs).unwrap().latest, "2");
    }

    #[test]
    fn non_numeric_values_only_count_as_latest() {
        let logs = vec![obs("m", 0, UNAVAILABLE)];
        let s = MetricSummary::reduce("m", &logs).unwrap();
        assert_eq!(s.min, None);
        assert_eq!(s.min_text(), "unavailable");
        assert_eq!(s.value(MetricStrategy::Max), None);
        assert!(MetricSummary::reduce("other", &logs).is_none());
        assert_eq!(s.text(MetricStrategy::Latest), None);
    }

    #[test]
    fn numbers_are_written_short() {
        let table = [
            (0.25, "0.25"),
            (-3.0, "-3"),
            (0.0, "0"),
            (1e-6, "0.000001"),
            (2.502304143545855e299, "2.502304143545855e+299"),
            (-2.5e-300, "-2.5e-300"),
            (1e21, "1e+21"),
            (123456789012.5, "123456789012.5"),
        ];
        for (v, want) in table {
            assert_eq!(number_text(v), want);
            assert_eq!(number_text(v).parse::<f64>().unwrap(), v);
        }
    }

    #[test]
    fn text_is_selected_only_when_no_number_is() {
        let genotype = "Genotype(normal=[[('skip_connection', 0)]])";
        let s = MetricSummary::reduce("g", &[obs("g", 0, genotype)]).unwrap();
        for strategy in [
            MetricStrategy::Min,
            MetricStrategy::Max,
            MetricStrategy::Latest,
        ] {
            assert_eq!(s.text(strategy), Some(genotype));
        }
        let mixed = MetricSummary::reduce("g", &[obs("g", 0, "0.5"), obs("g", 1, "done")]).unwrap();
        assert_eq!(mixed.text(MetricStrategy::Max), None);
        assert_eq!(mixed.text(MetricStrategy::Latest), Some("done"));
        let nan = MetricSummary::reduce("g", &[obs("g", 0, "0.5"), obs("g", 1, "nan")]).unwrap();
        assert_eq!(nan.text(MetricStrategy::Latest), Some("nan"));
        assert_eq!(nan.text(MetricStrategy::Min), None);
        let blank = MetricSummary::reduce("g", &[obs("g", 0, " ")]).unwrap();
        assert_eq!(blank.text(MetricStrategy::Latest), None);
    }
}
