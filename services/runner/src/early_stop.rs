//! Early stopping in local runs (`spec.earlyStopping`): each time a running trial's
//! observations are recorded (at most every 0.1 s, `driver::run`'s `RULE_GAP`) and every
//! [`CHECK_EVERY`], the rule sees each trial's intermediate objective values from the store
//! and names running trials to stop; the driver then signals their process groups as it does
//! on Ctrl-C and records them EarlyStopped with Katib's reason and message.
//!
//! Medianstop follows Katib's timing: Katib computes the rule when a trial is suggested (from
//! the trials succeeded then), attaches it to that trial, and the trial's collector applies it
//! once `start_step` values arrived; a trial created before `min_trials_required` trials
//! succeeded is never stopped. So each trial's rule is frozen when the driver creates it
//! ([`EarlyStopMonitor::freeze`]) and the polling applies that rule. Other rules (ASHA) rank
//! trials against each other and are applied to the current history.
//!
//! Both see every started trial's values on every check, so an ended trial's values are read
//! from the store once and kept ([`TrialValues`]): re-reading them each second made a run of
//! 1000 short trials with medianstop 17 to 36 times slower than without it.

use crate::error::RunnerError;
use crate::experiment::LocalExperiment;
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;
use vernier_algorithms::medianstop::{MedianRule, MedianStop};
use vernier_core::{EarlyStopper, EarlyStoppingRequest, TrialProgress, TrialState};
use vernier_store::SqlStore;

/// How often running trials are checked.
pub const CHECK_EVERY: Duration = Duration::from_secs(1);

/// Why the rule stopped a trial, in words when it said, and the step it stopped it at when
/// the rule ranks trials by step (the trial's values past it are not shown to it again).
#[derive(Debug, Clone, Default)]
struct Stop {
    why: Option<String>,
    step: Option<usize>,
}

/// The experiment's early-stopping rule and the trials it has stopped.
#[derive(Debug)]
pub struct EarlyStopMonitor {
    stopper: Box<dyn EarlyStopper>,
    /// Medianstop's settings and each trial's frozen rule, when the rule is medianstop.
    median: Option<(MedianStop, BTreeMap<String, Option<MedianRule>>)>,
    /// Each trial the rule stopped, in this run or (with its stop step) an earlier one.
    stopped: HashMap<String, Stop>,
    values: TrialValues,
    /// How many values of each trial the previous check showed the rule.
    judged: HashMap<String, usize>,
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
            stopped: HashMap::new(),
            values: TrialValues::default(),
            judged: HashMap::new(),
        }))
    }

    /// Takes the stop steps recorded with the trials an earlier run of the experiment ended
    /// EarlyStopped (`TrialRow::stop_step`), so a resumed run shows the rule their values up
    /// to those steps only, as the run that stopped them did.
    pub fn resume(&mut self, rows: &[vernier_store::TrialRow]) {
        for row in rows.iter().filter(|r| r.state == TrialState::EarlyStopped) {
            let Some(step) = row.stop_step.and_then(|s| usize::try_from(s).ok()) else {
                continue;
            };
            let stop = Stop {
                why: None,
                step: Some(step),
            };
            self.stopped.insert(row.name.clone(), stop);
        }
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
        self.values
            .refresh(store, &exp.objective.metric, trials)
            .await?;
        let progress = progress(&self.stopped, trials, &self.values, &self.judged);
        freeze_and_record(&mut self.median, store, exp, &progress).await
    }
}

/// Freezes today's rule for the trials that have none yet and records it with each, as
/// Katib writes it into the Trial's `spec.earlyStoppingRules`, so reports show it.
async fn freeze_and_record(
    median: &mut Option<(MedianStop, BTreeMap<String, Option<MedianRule>>)>,
    store: &SqlStore,
    exp: &LocalExperiment,
    progress: &[TrialProgress<'_>],
) -> Result<(), RunnerError> {
    let Some((ms, rules)) = median.as_mut() else {
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

impl EarlyStopMonitor {
    /// Running trials (of `trials`, name and state in creation order) the rule stops now;
    /// each is named once.
    pub async fn check(
        &mut self,
        store: &SqlStore,
        exp: &LocalExperiment,
        trials: &[(String, TrialState)],
    ) -> Result<Vec<String>, RunnerError> {
        self.values
            .refresh(store, &exp.objective.metric, trials)
            .await?;
        let progress = progress(&self.stopped, trials, &self.values, &self.judged);
        // A trial the driver created without a `freeze` call gets today's rule.
        freeze_and_record(&mut self.median, store, exp, &progress).await?;
        let request = EarlyStoppingRequest {
            objective: &exp.objective,
            trials: &progress,
        };
        let names = match &mut self.median {
            Some((_, rules)) => MedianStop::frozen_stops(rules, &progress),
            None => self
                .stopper
                .trials_to_stop(&request)
                .map_err(|e| RunnerError::EarlyStopping(e.to_string()))?,
        };
        for p in &progress {
            self.judged.insert(p.name.to_string(), p.values.len());
        }
        let mut fresh = Vec::new();
        for name in names {
            if !self.stopped.contains_key(&name) {
                let stop = Stop {
                    why: self.stopper.explain(&request, &name),
                    step: self.stopper.stop_step(&request, &name),
                };
                self.stopped.insert(name.clone(), stop);
                fresh.push(name);
            }
        }
        Ok(fresh)
    }

    /// Whether the rule stopped `trial`: its end is then EarlyStopped, whatever its exit.
    pub fn stopped(&self, trial: &str) -> bool {
        self.stopped.contains_key(trial)
    }

    /// Why the rule stopped `trial`, when it said.
    pub fn why_stopped(&self, trial: &str) -> Option<&str> {
        self.stopped.get(trial)?.why.as_deref()
    }

    /// The step the rule stopped `trial` at, when it ranks trials by step; the driver records
    /// it with the trial's EarlyStopped state ([`EarlyStopMonitor::resume`] reads it back).
    pub fn stop_step(&self, trial: &str) -> Option<usize> {
        self.stopped.get(trial)?.step
    }
}

/// What the rules see of each trial: its values (of a trial the rule stopped at a step, those
/// up to it), how many of them the previous check showed (none for a trial new to this driver,
/// which sees every trial it runs from its start), and EarlyStopped once the monitor stopped it
/// (the driver records the state only when the process is gone).
fn progress<'a>(
    stopped: &HashMap<String, Stop>,
    trials: &'a [(String, TrialState)],
    values: &'a TrialValues,
    judged: &HashMap<String, usize>,
) -> Vec<TrialProgress<'a>> {
    trials
        .iter()
        .map(|(name, state)| {
            let stop = stopped.get(name);
            let values = values.of(name);
            let counted = stop.and_then(|s| s.step).unwrap_or(values.len());
            let values = &values[..counted.min(values.len())];
            TrialProgress {
                name,
                state: match stop {
                    Some(_) => TrialState::EarlyStopped,
                    None => *state,
                },
                values,
                judged: judged.get(name).copied().unwrap_or(0).min(values.len()),
            }
        })
        .collect()
}

/// Each started trial's objective values, whatever its state: the rules choose whom they
/// count (the ASHA rule ranks stopped and failed trials' values too, as the operator's reading
/// does). A trial's values are final once the driver recorded its end, so they are read once
/// then; a running trial's are read from where the last refresh stopped, and not at all when
/// its stored count of numeric values did not change (reading its whole log at every look
/// cost time quadratic in the values of a trainer that logs every batch).
#[derive(Debug, Default)]
struct TrialValues {
    ended: HashMap<String, Vec<f64>>,
    running: HashMap<String, Running>,
}

/// What was read of a running trial's log: its numeric values, the time of the last row read
/// and how many rows of that time were read (rows come ordered by time, then insertion).
#[derive(Debug, Default)]
struct Running {
    values: Vec<f64>,
    last_us: i64,
    at_last: usize,
}

impl Running {
    /// Takes `rows` read from `self.last_us` on (inclusive): those of that time already read
    /// are skipped.
    fn extend(&mut self, rows: &[vernier_core::Observation]) {
        let mut skip = self.at_last;
        for o in rows {
            if o.timestamp_us == self.last_us && skip > 0 {
                skip -= 1;
                continue;
            }
            self.at_last = match o.timestamp_us == self.last_us {
                true => self.at_last + 1,
                false => 1,
            };
            self.last_us = o.timestamp_us;
            if let Some(v) = o.value.trim().parse::<f64>().ok().filter(|v| v.is_finite()) {
                self.values.push(v);
            }
        }
    }
}

impl TrialValues {
    async fn refresh(
        &mut self,
        store: &SqlStore,
        metric: &str,
        trials: &[(String, TrialState)],
    ) -> Result<(), RunnerError> {
        let mut running = HashMap::new();
        for (name, state) in trials {
            if *state == TrialState::Created || self.ended.contains_key(name) {
                continue;
            }
            if state.is_terminal() {
                let mut all = Running::default();
                all.extend(&store.observations(name, Some(metric), None, None).await?);
                self.ended.insert(name.clone(), all.values);
                continue;
            }
            let before = self.running.remove(name).unwrap_or_default();
            running.insert(
                name.clone(),
                read_running(store, name, metric, before).await?,
            );
        }
        self.running = running;
        Ok(())
    }

    /// The values last read of `trial`; none for a trial not started.
    fn of(&self, trial: &str) -> &[f64] {
        match self.ended.get(trial) {
            Some(values) => values,
            None => self.running.get(trial).map_or(&[], |r| r.values.as_slice()),
        }
    }
}

/// A running trial's values, read on from `before`. The store's count of the metric's numeric
/// values says whether there is anything new, and whether a value was recorded out of time
/// order (a pushed report's own timestamps) behind the rows read: then the log is read whole.
async fn read_running(
    store: &SqlStore,
    trial: &str,
    metric: &str,
    mut before: Running,
) -> Result<Running, RunnerError> {
    let (summaries, counted) = store.trial_summary(trial).await?;
    let stored = summaries
        .iter()
        .find(|m| m.summary.name == metric)
        .map_or(0, |m| usize::try_from(m.numeric_count).unwrap_or(0));
    if counted && before.at_last > 0 && before.values.len() == stored {
        return Ok(before);
    }
    if counted && before.at_last > 0 {
        let since = Some(before.last_us);
        before.extend(&store.observations(trial, Some(metric), since, None).await?);
        if before.values.len() >= stored {
            return Ok(before);
        }
    }
    let mut all = Running::default();
    all.extend(&store.observations(trial, Some(metric), None, None).await?);
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_store::{obs, with_trial};

    /// A running trial is read on from where the last refresh stopped: a value logged at the
    /// same time as the last one read counts once, and one recorded behind those read (a
    /// pushed report's older timestamp) takes its place in time order.
    #[tokio::test]
    async fn a_running_trial_is_read_on_from_where_the_last_refresh_stopped() {
        let store = SqlStore::connect(":memory:").await.unwrap();
        with_trial(&store, TrialState::Running).await;
        let report = |rows: Vec<vernier_core::Observation>| {
            let store = store.clone();
            async move { store.report_observations("e-0", &rows).await.unwrap() }
        };
        report(vec![obs("loss", 10, "4"), obs("loss", 20, "3")]).await;
        let trials = [("e-0".to_string(), TrialState::Running)];
        let mut values = TrialValues::default();
        values.refresh(&store, "loss", &trials).await.unwrap();
        assert_eq!(values.of("e-0"), [4.0, 3.0]);
        // Nothing new: the same values; then one more at the last time read, one after it,
        // and a text value that is no number.
        values.refresh(&store, "loss", &trials).await.unwrap();
        report(vec![
            obs("loss", 20, "2.5"),
            obs("loss", 30, "nan"),
            obs("loss", 30, "2"),
        ])
        .await;
        values.refresh(&store, "loss", &trials).await.unwrap();
        assert_eq!(values.of("e-0"), [4.0, 3.0, 2.5, 2.0]);
        assert_eq!(values.running["e-0"].last_us, 30);
        // Recorded behind what was read: the log is read again whole, in time order.
        report(vec![obs("loss", 15, "3.5")]).await;
        values.refresh(&store, "loss", &trials).await.unwrap();
        assert_eq!(values.of("e-0"), [4.0, 3.5, 3.0, 2.5, 2.0]);
    }

    /// An early-stopped trial's values still reach the rules (the ASHA rule ranks them); a
    /// trial not started has none; an ended trial is read once, a running one each time.
    #[tokio::test]
    async fn ended_trials_are_read_once_and_running_ones_every_time() {
        let store = SqlStore::connect(":memory:").await.unwrap();
        with_trial(&store, TrialState::EarlyStopped).await;
        store
            .report_observations("e-0", &[obs("loss", 1, "0.5"), obs("loss", 2, "0.25")])
            .await
            .unwrap();
        let mut trials = vec![
            ("e-0".to_string(), TrialState::Running),
            ("e-1".to_string(), TrialState::Created),
        ];
        let mut values = TrialValues::default();
        values.refresh(&store, "loss", &trials).await.unwrap();
        assert_eq!(
            (values.of("e-0"), values.of("e-1")),
            (&[0.5, 0.25][..], &[][..])
        );
        let late = [obs("loss", 3, "0.125")];
        store.report_observations("e-0", &late).await.unwrap();
        trials[0].1 = TrialState::EarlyStopped;
        values.refresh(&store, "loss", &trials).await.unwrap();
        assert_eq!(values.of("e-0"), [0.5, 0.25, 0.125]);
        // Read once: values that reach the store after the end are not read again.
        store
            .report_observations("e-0", &[obs("loss", 4, "9")])
            .await
            .unwrap();
        values.refresh(&store, "loss", &trials).await.unwrap();
        assert_eq!(values.of("e-0"), [0.5, 0.25, 0.125]);
    }
}
