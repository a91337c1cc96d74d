//! Prometheus metrics of the operator: reconciles, errors and durations per controller, and
//! trials created, exposed as text on `/metrics`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::Mutex;
use std::time::Duration;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabel {
    pub controller: String,
}

/// The operator's metrics and the registry they are exposed from.
#[derive(Debug)]
pub struct Metrics {
    registry: Mutex<Registry>,
    reconciles: Family<ControllerLabel, Counter>,
    errors: Family<ControllerLabel, Counter>,
    durations: Family<ControllerLabel, Histogram>,
    trials_created: Counter,
    /// Why a controller stopped without being asked to (a panic, a stream that ended); the
    /// health endpoints report it so Kubernetes restarts the pod. It rides with the metrics
    /// because both are what the controllers show the HTTP endpoints.
    stopped: Mutex<Option<String>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("vernier_operator");
        let reconciles = Family::<ControllerLabel, Counter>::default();
        let errors = Family::<ControllerLabel, Counter>::default();
        let durations = Family::<ControllerLabel, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.001, 2.0, 14))
        });
        let trials_created = Counter::default();
        registry.register("reconciles", "Reconciles run", reconciles.clone());
        registry.register("reconcile_errors", "Reconciles that failed", errors.clone());
        registry.register(
            "reconcile_duration_seconds",
            "Time spent in one reconcile",
            durations.clone(),
        );
        registry.register(
            "trials_created",
            "Trial objects created",
            trials_created.clone(),
        );
        Metrics {
            registry: Mutex::new(registry),
            reconciles,
            errors,
            durations,
            trials_created,
            stopped: Mutex::new(None),
        }
    }

    /// Records that a controller stopped without being asked to; the first reason is kept.
    pub fn controller_stopped(&self, reason: &str) {
        let mut stopped = self.stopped.lock().unwrap_or_else(|e| e.into_inner());
        stopped.get_or_insert_with(|| reason.to_string());
    }

    /// Why a controller stopped, if one did.
    pub fn stopped_reason(&self) -> Option<String> {
        self.stopped
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn reconciled(&self, controller: &str, took: Duration) {
        let label = ControllerLabel {
            controller: controller.into(),
        };
        self.reconciles.get_or_create(&label).inc();
        self.durations
            .get_or_create(&label)
            .observe(took.as_secs_f64());
    }

    pub fn failed(&self, controller: &str) {
        self.errors
            .get_or_create(&ControllerLabel {
                controller: controller.into(),
            })
            .inc();
    }

    pub fn trial_created(&self) {
        self.trials_created.inc();
    }

    pub fn trials_created(&self) -> u64 {
        self.trials_created.get()
    }

    /// The OpenMetrics text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        let registry = self.registry.lock().unwrap_or_else(|e| e.into_inner());
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_show_in_the_exposition() {
        let m = Metrics::new();
        m.reconciled("experiment", Duration::from_millis(3));
        m.failed("trial");
        m.trial_created();
        let text = m.encode();
        assert!(
            text.contains(r#"vernier_operator_reconciles_total{controller="experiment"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"vernier_operator_reconcile_errors_total{controller="trial"} 1"#),
            "{text}"
        );
        assert!(
            text.contains("vernier_operator_trials_created_total 1"),
            "{text}"
        );
    }
}
