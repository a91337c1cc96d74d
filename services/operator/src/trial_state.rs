//! Reading a Trial's status: its state from the conditions (as Katib's helpers do) and the
//! values its observation holds for each metric strategy.

use kube::api::DynamicObject;
use vernier_core::{MetricStrategy, TrialState};
use vernier_spec::conditions::Condition;
use vernier_spec::status::{Observation, TrialStatus};

/// A trial's state from its conditions (the terminal ones first, as Katib's helpers check).
/// A `MetricsUnavailable` condition is MetricsUnavailable (Katib's `IsMetricsUnavailable`);
/// `Succeeded` with status `False`, which older Katib versions and one Vernier version wrote,
/// is read so too.
pub fn state_of(conditions: &[Condition]) -> TrialState {
    let has = |t: &str, status: &str| {
        conditions
            .iter()
            .any(|c| c.type_ == t && c.status == status)
    };
    for (t, status, s) in [
        ("EarlyStopped", "True", TrialState::EarlyStopped),
        ("Killed", "True", TrialState::Killed),
        ("Succeeded", "False", TrialState::MetricsUnavailable),
        ("MetricsUnavailable", "True", TrialState::MetricsUnavailable),
        ("Failed", "True", TrialState::Failed),
        ("Succeeded", "True", TrialState::Succeeded),
        ("Running", "True", TrialState::Running),
    ] {
        if has(t, status) {
            return s;
        }
    }
    TrialState::Created
}

/// The trial status in `obj`, or the default when absent or unreadable.
pub fn trial_status(obj: &DynamicObject) -> TrialStatus {
    obj.data
        .get("status")
        .and_then(|s| serde::Deserialize::deserialize(s).ok())
        .unwrap_or_default()
}

/// A finite number from a status metric field; Katib writes `unavailable` and the like as
/// text, which counts as no value.
pub fn metric_number(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

/// The value a metric strategy selects from an observation (Katib: min/max fall back to
/// latest when unavailable).
pub fn metric_value(
    observation: &Observation,
    metric: &str,
    strategy: MetricStrategy,
) -> Option<f64> {
    let m = observation.metrics.iter().find(|m| m.name == metric)?;
    let latest = || metric_number(&m.latest);
    match strategy {
        MetricStrategy::Min => metric_number(&m.min).or_else(latest),
        MetricStrategy::Max => metric_number(&m.max).or_else(latest),
        MetricStrategy::Latest => latest(),
    }
}

/// The `latest` value an observation holds for `metric`, which the engine's
/// `objective_reported` judges a succeeded job by.
pub fn latest_of<'a>(observation: &'a Observation, metric: &str) -> Option<&'a str> {
    observation
        .metrics
        .iter()
        .find(|m| m.name == metric)
        .map(|m| m.latest.as_str())
}

/// Whether the metric's latest value is text (not a number, not Katib's `unavailable`), the
/// value Katib's best-trial rule falls back to for DARTS's genotype.
pub fn metric_is_text(observation: &Observation, metric: &str) -> bool {
    observation.metrics.iter().any(|m| {
        m.name == metric
            && !m.latest.trim().is_empty()
            && m.latest != vernier_core::UNAVAILABLE
            && m.latest.trim().parse::<f64>().is_err()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use vernier_spec::conditions::set_condition;
    use vernier_spec::status::MetricValues;

    #[test]
    fn state_prefers_terminal_conditions() {
        let mut c = Vec::new();
        assert_eq!(state_of(&c), TrialState::Created);
        set_condition(&mut c, "Created", true, "TrialCreated", "", 0);
        set_condition(&mut c, "Running", true, "TrialRunning", "", 0);
        assert_eq!(state_of(&c), TrialState::Running);
        set_condition(&mut c, "Running", false, "TrialSucceeded", "", 0);
        set_condition(&mut c, "Succeeded", true, "TrialSucceeded", "", 0);
        assert_eq!(state_of(&c), TrialState::Succeeded);
        set_condition(&mut c, "EarlyStopped", true, "TrialEarlyStopped", "", 0);
        assert_eq!(state_of(&c), TrialState::EarlyStopped);
    }

    /// Katib writes a MetricsUnavailable trial with a `MetricsUnavailable` condition; the
    /// earlier shape, `Succeeded` False, is still read.
    #[test]
    fn metrics_unavailable_is_read_in_katibs_shape_and_the_earlier_one() {
        let mut earlier = Vec::new();
        set_condition(&mut earlier, "Running", false, "TrialRunning", "", 0);
        set_condition(
            &mut earlier,
            "Succeeded",
            false,
            "MetricsUnavailable",
            "",
            0,
        );
        assert_eq!(state_of(&earlier), TrialState::MetricsUnavailable);
        let mut katib = Vec::new();
        set_condition(
            &mut katib,
            "MetricsUnavailable",
            true,
            "MetricsUnavailable",
            "",
            0,
        );
        assert_eq!(state_of(&katib), TrialState::MetricsUnavailable);
    }

    #[test]
    fn strategies_fall_back_to_latest() {
        let obs = Observation {
            metrics: vec![MetricValues {
                name: "loss".into(),
                min: "unavailable".into(),
                max: "0.9".into(),
                latest: "0.4".into(),
            }],
        };
        assert_eq!(metric_value(&obs, "loss", MetricStrategy::Min), Some(0.4));
        assert_eq!(metric_value(&obs, "loss", MetricStrategy::Max), Some(0.9));
        assert_eq!(metric_value(&obs, "acc", MetricStrategy::Max), None);
    }

    #[test]
    fn the_latest_value_of_the_named_metric_is_read() {
        let obs = |latest: &str| Observation {
            metrics: vec![MetricValues {
                name: "acc".into(),
                min: "unavailable".into(),
                max: "unavailable".into(),
                latest: latest.into(),
            }],
        };
        let cases = [
            ("0.5", "acc", Some("0.5")),
            ("Genotype(normal=[])", "acc", Some("Genotype(normal=[])")),
            ("unavailable", "acc", Some("unavailable")),
            ("0.5", "loss", None),
        ];
        for (latest, metric, want) in cases {
            assert_eq!(latest_of(&obs(latest), metric), want, "{latest} {metric}");
        }
    }
}
