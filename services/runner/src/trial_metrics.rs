//! Every objective and constraint metric of a trial reduced by its strategy, for
//! multi-objective search and constraints (`TrialRecord::metrics`). Single-objective
//! experiments without constraints skip it, so they read the store exactly as before.

use crate::error::RunnerError;
use std::collections::BTreeMap;
use vernier_core::{MetricSummary, Objective};
use vernier_store::SqlStore;

/// The reduced value of each metric the objective needs, for one trial.
pub(crate) async fn reduced_metrics(
    store: &SqlStore,
    objective: &Objective,
    trial: &str,
) -> Result<BTreeMap<String, f64>, RunnerError> {
    let mut out = BTreeMap::new();
    if !objective.is_multi() && objective.constraints.is_empty() {
        return Ok(out);
    }
    for name in objective.metric_names() {
        let Some(strategy) = objective.strategy_for(&name) else {
            continue;
        };
        let logs = store.observations(trial, Some(&name), None, None).await?;
        if let Some(v) = MetricSummary::reduce(&name, &logs).and_then(|s| s.value(strategy)) {
            out.insert(name, v);
        }
    }
    Ok(out)
}
