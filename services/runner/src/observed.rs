//! A trial's objective and every metric's value by its strategy, for the driver and the
//! algorithms (`TrialRecord::objective` and `TrialRecord::metrics`), read from the store's
//! reduced observation so restarting a large experiment does not re-read every logged value.

use crate::error::RunnerError;
use std::collections::BTreeMap;
use vernier_core::{MetricSummary, Objective};
use vernier_store::SqlStore;

/// The objective value and the value of every metric the objective records (objective and
/// additional metrics), each selected by its metric strategy. Metrics never observed, or
/// with no numeric value their strategy can select, are absent.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TrialMetrics {
    pub objective: Option<f64>,
    pub metrics: BTreeMap<String, f64>,
    /// The objective's strategy selects text (e.g. DARTS's genotype), not a number.
    pub objective_text: Option<String>,
    /// The objective's latest recorded value, whatever it is: what the engine's
    /// `objective_reported` judges a completed trial by.
    pub objective_latest: Option<String>,
}

/// Reads the trial's stored summary; a trial logged before the store kept summaries (an older
/// database) is reduced from its raw logs instead.
pub async fn trial_metrics(
    store: &SqlStore,
    objective: &Objective,
    trial: &str,
) -> Result<TrialMetrics, RunnerError> {
    let summaries = store
        .trial_metric_summaries(trial, &objective.metric_names())
        .await?;
    Ok(select(objective, &summaries))
}

/// Applies each metric's strategy to its summary.
pub fn select(objective: &Objective, summaries: &[MetricSummary]) -> TrialMetrics {
    let mut out = TrialMetrics::default();
    for s in summaries {
        let Some(strategy) = objective.strategy_for(&s.name) else {
            continue;
        };
        if s.name == objective.metric {
            out.objective_text = s.text(strategy).map(str::to_string);
            out.objective_latest = Some(s.latest.clone());
        }
        if let Some(v) = s.value(strategy) {
            out.metrics.insert(s.name.clone(), v);
            if s.name == objective.metric {
                out.objective = Some(v);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_store::{obs, with_trial};
    use vernier_core::{Direction, MetricStrategy, TrialState};

    #[tokio::test]
    async fn every_metric_by_its_strategy_from_the_stored_summary() {
        let store = SqlStore::connect(":memory:").await.unwrap();
        with_trial(&store, TrialState::Succeeded).await;
        store
            .report_observations(
                "e-0",
                &[
                    obs("loss", 1, "0.5"),
                    obs("loss", 2, "0.2"),
                    obs("loss", 3, "0.4"),
                    obs("acc", 1, "0.7"),
                    obs("acc", 2, "0.6"),
                    obs("f1", 1, "0.3"),
                    obs("ignored", 1, "9"),
                ],
            )
            .await
            .unwrap();
        let mut objective = Objective::new("loss", Direction::Minimize);
        objective.additional = vec![
            ("acc".into(), MetricStrategy::Latest),
            ("f1".into(), MetricStrategy::Max),
            ("never".into(), MetricStrategy::Max),
        ];
        let got = trial_metrics(&store, &objective, "e-0").await.unwrap();
        assert_eq!(got.objective, Some(0.2));
        assert_eq!(
            got.metrics,
            BTreeMap::from([
                ("loss".to_string(), 0.2),
                ("acc".to_string(), 0.6),
                ("f1".to_string(), 0.3),
            ])
        );
        // A trial with no logs has neither.
        assert_eq!(
            trial_metrics(&store, &objective, "other").await.unwrap(),
            TrialMetrics::default()
        );
    }
}
