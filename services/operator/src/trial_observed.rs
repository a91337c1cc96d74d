//! A trial's observations as the store holds them, read for the trial reconciler (its
//! observation in Katib's form, its values for a frozen rule) and for the experiment's
//! early-stopping rules.

use crate::error::Result;
use vernier_core::Objective;
use vernier_spec::status::{MetricValues, Observation};

/// The finite values trial `name` reported on `metric`, in order.
pub async fn objective_values(
    store: &vernier_store::SqlStore,
    name: &str,
    metric: &str,
) -> Result<Vec<f64>> {
    let logs = store.observations(name, Some(metric), None, None).await?;
    Ok(logs
        .iter()
        .filter_map(|o| o.value.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite())
        .collect())
}

/// Katib's observation of `trial`: `{name, min, max, latest}` for every metric of `objective`
/// with observations, from the store's reduced observation (one query however long the log).
pub async fn observation(
    store: &vernier_store::SqlStore,
    trial: &str,
    objective: &Objective,
) -> Result<Option<Observation>> {
    let names = objective.metric_names();
    let metrics: Vec<MetricValues> = store
        .trial_metric_summaries(trial, &names)
        .await?
        .into_iter()
        .map(|s| MetricValues {
            min: s.min_text(),
            max: s.max_text(),
            latest: s.latest,
            name: s.name,
        })
        .collect();
    Ok((!metrics.is_empty()).then_some(Observation { metrics }))
}
