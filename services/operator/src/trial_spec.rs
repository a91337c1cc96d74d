//! What a Trial's spec implies beyond its fields: the objective with strategies resolved, the
//! metrics collector in use, and which log to follow for it.

use crate::logs::FollowTarget;
use vernier_core::Objective;
use vernier_spec::trial::TrialSpec;
use vernier_spec::types::ExperimentSpec;

/// The trial's objective with strategies resolved, through the same conversion as an
/// experiment's.
pub fn objective_of(spec: &TrialSpec) -> Option<Objective> {
    let exp = vernier_spec::Experiment {
        spec: ExperimentSpec {
            objective: spec.objective.clone(),
            ..Default::default()
        },
        ..Default::default()
    };
    exp.objective().ok()
}

/// The metrics collector kind, Katib's default `StdOut` when unset.
pub fn collector_kind(spec: &TrialSpec) -> String {
    spec.metrics_collector
        .as_ref()
        .and_then(|m| m.collector.as_ref())
        .and_then(|c| c.kind.clone())
        .unwrap_or_else(|| "StdOut".into())
}

/// Whether the operator reads the trial's metrics from its primary container's log.
pub fn follows_log(spec: &TrialSpec) -> bool {
    collector_kind(spec) == "StdOut"
}

/// The primary container's log to follow for trial `name` in namespace `ns`.
pub fn follow_target(spec: &TrialSpec, ns: &str, name: &str) -> FollowTarget {
    FollowTarget {
        namespace: ns.to_string(),
        trial: name.to_string(),
        pod_labels: spec.primary_pod_labels.clone().unwrap_or_default(),
        owner_kind: spec
            .run_spec
            .as_ref()
            .filter(|job| !crate::trial_job::has_pod_template(job))
            .and_then(|job| job.get("kind")?.as_str().map(String::from)),
        container: spec.primary_container_name.clone().unwrap_or_default(),
        metrics: objective_of(spec)
            .as_ref()
            .map(Objective::metric_names)
            .unwrap_or_default(),
        formats: vernier_engine::metrics_formats(spec.metrics_collector.as_ref()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn trial_objective_resolves_default_strategy() {
        let spec: TrialSpec = serde_json::from_value(json!({
            "objective": {"type": "maximize", "objectiveMetricName": "accuracy", "additionalMetricNames": ["loss"]}
        }))
        .unwrap();
        let o = objective_of(&spec).unwrap();
        assert_eq!(o.metric_names(), vec!["accuracy", "loss"]);
        assert_eq!(o.strategy, vernier_core::MetricStrategy::Max);
    }

    #[test]
    fn the_log_is_followed_for_std_out_only() {
        let spec = |kind: &str| -> TrialSpec {
            serde_json::from_value(json!({"metricsCollector": {"collector": {"kind": kind}}}))
                .unwrap()
        };
        assert!(follows_log(&TrialSpec::default()));
        assert!(follows_log(&spec("StdOut")));
        assert!(!follows_log(&spec("File")));
        assert!(!follows_log(&spec("Push")));
    }
}
