//! Early stopping in local runs (`spec.earlyStopping`): every [`CHECK_EVERY`] the rule sees
//! each trial's intermediate objective values from the store and names running trials to
//! stop; the driver then signals their process groups as it does on Ctrl-C and records them
//! EarlyStopped with Katib's reason and message.
//!
//! Medianstop follows Katib's timing: Katib computes the rule when a trial is suggested (from
//! the trials succeeded then), attaches it to that trial, and the trial's collector applies it
//! once `start_step` values arrived; a trial created before `min_trials_required` trials
//! succeeded is never stopped. So each trial's rule is frozen when the driver creates it
//! ([`EarlyStopMonitor::freeze`]) and the polling applies that rule. Other rules (ASHA) rank
//! trials against each other and are applied to the current history.

use crate::error::RunnerError;
use crate::experiment::LocalExperiment;
use std::collections::{BTreeMap, HashSet};
use std::time::Duration;
use vernier_algorithms::medianstop::{MedianRule, MedianStop};
use vernier_core::{EarlyStopper, EarlyStoppingRequest, TrialProgress, TrialState};
use vernier_store::SqlStore;

/// How often running trials are checked.
pub const CHECK_EVERY: Duration = Duration::from_secs(1);

/// The experiment's early-stopping rule and the trials it has stopped.
#[derive(Debug)]
pub struct EarlyStopMonitor {
    stopper: Box<dyn EarlyStopper>,
    /// Medianstop's settings and each trial's frozen rule, when the rule is medianstop.
    median: Option<(MedianStop, BTreeMap<String, Option<MedianRule>>)>,
    stopped: HashSet<String>,
}

impl EarlyStopMonitor {
    /// The monitor for `spec.earlyStopping`, or `None` when the experiment has none.
    pub fn for_experiment(exp: &LocalExperiment) -> Result<Option<EarlyStopMonitor>, RunnerError> {
        let Some(built) = vernier_engine::build_early_stopping(exp)? else {
            return Ok(None);
        };
        Ok(Some(EarlyStopMonitor {
            stopper: built.stopper,
            median: built.median.map(|m| (m, BTreeMap::new())),
            stopped: HashSet::new(),
        }))
    }

    /// Fixes the medianstop rule of trials created since the last call (see the module doc);
    /// the driver calls it right after creating trials.
    pub async fn freeze(
        &mut self,
        store: &SqlStore,
        exp: &LocalExperiment,
        trials: &[(String, TrialState)],
    ) -> Result<(), RunnerError> {
        if self.median.is_none() {
            return Ok(());
        }
        let values = read_values(store, &exp.objective.metric, trials).await?;
        let progress = self.progress(trials, &values);
        self.freeze_and_record(store, exp, &progress).await
    }

    /// Freezes today's rule for the trials that have none yet and records it with each, as
    /// Katib writes it into the Trial's `spec.earlyStoppingRules`, so reports show it.
    async fn freeze_and_record(
        &mut self,
        store: &SqlStore,
        exp: &LocalExperiment,
        progress: &[TrialProgress<'_>],
    ) -> Result<(), RunnerError> {
        let Some((ms, rules)) = self.median.as_mut() else {
            return Ok(());
        };
        let fresh: Vec<&str> = progress
            .iter()
            .map(|t| t.name)
            .filter(|n| !rules.contains_key(*n))
            .collect();
        ms.freeze_rules(&exp.objective, progress, rules);
        let metric = &exp.objective.metric;
        for name in fresh {
            let Some(Some(rule)) = rules.get(name) else {
                continue;
            };
            let katib = [vernier_engine::frozen_rules::katib_form(metric, rule)];
            let json = serde_json::to_string(&katib).expect("rules serialize");
            store.set_trial_early_stopping_rules(name, &json).await?;
        }
        Ok(())
    }

    /// Running trials (of `trials`, name and state in creation order) the rule stops now;
    /// each is named once.
    pub async fn check(
        &mut self,
        store: &SqlStore,
        exp: &LocalExperiment,
        trials: &[(String, TrialState)],
    ) -> Result<Vec<String>, RunnerError> {
        let values = read_values(store, &exp.objective.metric, trials).await?;
        let progress = self.progress(trials, &values);
        // A trial the driver created without a `freeze` call gets today's rule.
        self.freeze_and_record(store, exp, &progress).await?;
        let names = match &mut self.median {
            Some((_, rules)) => MedianStop::frozen_stops(rules, &progress),
            None => self
                .stopper
                .trials_to_stop(&EarlyStoppingRequest {
                    objective: &exp.objective,
                    trials: &progress,
                })
                .map_err(|e| RunnerError::EarlyStopping(e.to_string()))?,
        };
        let fresh: Vec<String> = names
            .into_iter()
            .filter(|n| self.stopped.insert(n.clone()))
            .collect();
        Ok(fresh)
    }

    fn progress<'a>(
        &self,
        trials: &'a [(String, TrialState)],
        values: &'a [Vec<f64>],
    ) -> Vec<TrialProgress<'a>> {
        trials
            .iter()
            .zip(values)
            .map(|((name, state), values)| TrialProgress {
                name,
                state: if self.stopped.contains(name) {
                    TrialState::EarlyStopped
                } else {
                    *state
                },
                values,
            })
            .collect()
    }

    /// Whether the rule stopped `trial`: its end is then EarlyStopped, whatever its exit.
    pub fn stopped(&self, trial: &str) -> bool {
        self.stopped.contains(trial)
    }
}

/// Each trial's objective values so far (none for trials not started), whatever its state:
/// the rules choose whom they count (the ASHA rule ranks stopped and failed trials' values
/// too, as the operator's reading does).
async fn read_values(
    store: &SqlStore,
    metric: &str,
    trials: &[(String, TrialState)],
) -> Result<Vec<Vec<f64>>, RunnerError> {
    let mut values: Vec<Vec<f64>> = Vec::with_capacity(trials.len());
    for (name, state) in trials {
        if *state == TrialState::Created {
            values.push(Vec::new());
            continue;
        }
        let logs = store.observations(name, Some(metric), None, None).await?;
        values.push(
            logs.iter()
                .filter_map(|o| o.value.trim().parse::<f64>().ok().filter(|v| v.is_finite()))
                .collect(),
        );
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_store::{obs, with_trial};

    /// An early-stopped trial's values still reach the rules (the ASHA rule ranks them); a
    /// trial not started has none.
    #[tokio::test]
    async fn every_started_trials_values_are_read_whatever_its_state() {
        let store = SqlStore::connect(":memory:").await.unwrap();
        with_trial(&store, TrialState::EarlyStopped).await;
        store
            .report_observations("e-0", &[obs("loss", 1, "0.5"), obs("loss", 2, "0.25")])
            .await
            .unwrap();
        let trials = [
            ("e-0".to_string(), TrialState::EarlyStopped),
            ("e-1".to_string(), TrialState::Created),
        ];
        let values = read_values(&store, "loss", &trials).await.unwrap();
        assert_eq!(values, [vec![0.5, 0.25], vec![]]);
    }
}
