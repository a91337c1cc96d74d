//! A trial's observations as the store holds them, read for the trial reconciler (its
//! observation in Katib's form, its values for a frozen rule) and for the experiment's
//! early-stopping rules.

use crate::error::Result;
use vernier_core::{Objective, UNAVAILABLE};
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

/// Katib's observation of `trial`: `{name, min, max, latest}` for every metric of `objective`,
/// from the store's reduced observation (one query however long the log), once any has
/// observations; a metric without any is `unavailable`, as Katib's `getMetrics` writes it.
pub async fn observation(
    store: &vernier_store::SqlStore,
    trial: &str,
    objective: &Objective,
) -> Result<Option<Observation>> {
    let names = objective.metric_names();
    let found = store.trial_metric_summaries(trial, &names).await?;
    if found.is_empty() {
        return Ok(None);
    }
    let metrics = names
        .iter()
        .map(|name| match found.iter().find(|s| s.name == *name) {
            Some(s) => MetricValues {
                min: s.min_text(),
                max: s.max_text(),
                latest: s.latest.clone(),
                name: s.name.clone(),
            },
            None => MetricValues {
                name: name.to_string(),
                min: UNAVAILABLE.into(),
                max: UNAVAILABLE.into(),
                latest: UNAVAILABLE.into(),
            },
        })
        .collect();
    Ok(Some(Observation { metrics }))
}
