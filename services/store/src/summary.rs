//! Each trial's reduced observation (Katib's `status.observation`: min, max and latest per
//! metric), kept in `observation_summaries` beside the raw logs so reports and the driver read
//! one row per trial and metric instead of every logged value.
//!
//! Every `report_observations` call reduces its batch here and merges the result into the
//! stored summary in the same transaction as the raw rows (each backend has the merge as one
//! upsert), so the summary is right for running trials, for trials that receive observations
//! after they finished, and for re-run trials alike. Databases written before the table existed
//! list their trials in `observation_summaries_pending`; readers reduce those trials' raw logs.

use vernier_core::{MetricReducer, Observation};

/// One metric's share of one `report_observations` batch, ready to merge.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BatchSummary {
    pub(crate) metric: String,
    pub(crate) min: Option<f64>,
    pub(crate) max: Option<f64>,
    pub(crate) latest: String,
    /// The time of `latest`; a stored summary keeps its own latest value only when it is
    /// strictly later, so with equal times the later batch wins, as the later log does.
    pub(crate) latest_time: i64,
    /// How many values were numbers (learning curves need two or more).
    pub(crate) numeric_count: i64,
}

/// Reduces a batch per metric with the same rules as [`MetricReducer`], sorted by metric name
/// so that concurrent writers upsert summary rows in one order and cannot deadlock.
pub(crate) fn reduce_batch(logs: &[Observation]) -> Vec<BatchSummary> {
    let mut per_metric: Vec<(String, MetricReducer, i64, i64)> = Vec::new();
    for o in logs {
        let i = match per_metric.iter().position(|(m, ..)| *m == o.metric) {
            Some(i) => i,
            None => {
                per_metric.push((o.metric.clone(), MetricReducer::new(&o.metric), i64::MIN, 0));
                per_metric.len() - 1
            }
        };
        let (_, reducer, latest_time, numeric) = &mut per_metric[i];
        reducer.observe(o.timestamp_us, &o.value);
        *latest_time = (*latest_time).max(o.timestamp_us);
        // The same rule MetricReducer applies before a value counts towards min and max.
        if o.value.trim().parse::<f64>().is_ok_and(f64::is_finite) {
            *numeric += 1;
        }
    }
    let mut out: Vec<BatchSummary> = per_metric
        .into_iter()
        .map(|(metric, reducer, latest_time, numeric_count)| {
            let s = reducer.finish();
            // SQLite's REAL and MySQL's DOUBLE drop the sign of -0.0 and PostgreSQL keeps it;
            // adding 0.0 makes it 0.0, so every store reports a printed `-0.0` alike.
            BatchSummary {
                metric,
                min: s.min.map(|v| v + 0.0),
                max: s.max.map(|v| v + 0.0),
                latest: s.latest,
                latest_time,
                numeric_count,
            }
        })
        .collect();
    out.sort_by(|a, b| a.metric.cmp(&b.metric));
    out
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
    fn reduces_each_metric_and_sorts_by_name() {
        let got = reduce_batch(&[
            obs("loss", 2, "0.5"),
            obs("acc", 1, "0.9"),
            obs("loss", 3, "0.7"),
            obs("loss", 3, "unavailable"),
            obs("loss", 1, "0.2"),
        ]);
        assert_eq!(
            got,
            vec![
                BatchSummary {
                    metric: "acc".into(),
                    min: Some(0.9),
                    max: Some(0.9),
                    latest: "0.9".into(),
                    latest_time: 1,
                    numeric_count: 1,
                },
                BatchSummary {
                    metric: "loss".into(),
                    min: Some(0.2),
                    max: Some(0.7),
                    latest: "unavailable".into(),
                    latest_time: 3,
                    numeric_count: 3,
                },
            ]
        );
    }

    /// A printed `-0.0` is summarised as 0.0, which every store keeps the same way.
    #[test]
    fn negative_zero_is_summarised_as_zero() {
        let got = reduce_batch(&[obs("loss", 1, "-0.0")]);
        let (min, max) = (got[0].min.unwrap(), got[0].max.unwrap());
        assert!(min == 0.0 && min.is_sign_positive(), "{min}");
        assert!(max == 0.0 && max.is_sign_positive(), "{max}");
        assert_eq!(got[0].latest, "-0.0");
    }
}
