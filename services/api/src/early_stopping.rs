//! `api.v1.beta1.EarlyStopping` for `medianstop` (reference §4): rules from the objective
//! observation logs of succeeded trials, read as Katib's service reads them from the DBManager
//! at the request's `db_manager_address` (`crate::remote_logs`; a Katib controller's trials
//! report there), or from Vernier's own store when the address is empty; the rule itself is
//! one pure function of the logs, whichever source gave them. Also settings validation, and
//! `SetTrialStatus`, which marks a trial EarlyStopped: one the operator manages through
//! [`ManagedTrials`] (composed by the binary: this crate never depends on the operator), else
//! one recorded by `vernier run` in the store.

use crate::error::ApiError;
use crate::first_values::{FirstValues, Key, first_finite};
use crate::remote_logs::RemoteLogs;
use tonic::{Request, Response, Status};
use vernier_algorithms::AlgorithmError;
use vernier_algorithms::medianstop::{Comparison, MedianStop};
use vernier_core::{Objective, TrialProgress, TrialState};
use vernier_proto::ProtoError;
use vernier_proto::api::{
    ComparisonType, EarlyStoppingRule, GetEarlyStoppingRulesReply, GetEarlyStoppingRulesRequest,
    SetTrialStatusReply, SetTrialStatusRequest, Trial, ValidateEarlyStoppingSettingsReply,
    ValidateEarlyStoppingSettingsRequest, early_stopping_server::EarlyStopping,
};
use vernier_proto::convert::{experiment_from_wire_warned, state_from_wire};
use vernier_store::{SqlStore, TrialUpdate};

/// Katib's reason and message for an early-stopped trial, from the engine.
pub use vernier_engine::reason::{
    TRIAL_EARLY_STOPPED as EARLY_STOPPED_REASON,
    TRIAL_EARLY_STOPPED_MESSAGE as EARLY_STOPPED_MESSAGE,
};

/// What a [`ManagedTrials`] hook did with a `SetTrialStatus` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManagedOutcome {
    /// The trial is EarlyStopped now (or was already).
    Stopped,
    /// The trial had ended otherwise; `state` names how.
    AlreadyEnded { state: String },
    /// Not a trial the hook manages: the store is asked next.
    NotManaged,
    /// The request is ambiguous or cannot be done; the text says why and what to do.
    Refused(String),
}

/// Trials managed outside the store (the operator's Trial resources).
#[tonic::async_trait]
pub trait ManagedTrials: Send + Sync + std::fmt::Debug {
    /// Marks `trial` EarlyStopped; an `Err` is a failure worth retrying (API server down).
    async fn early_stop(&self, trial: &str) -> Result<ManagedOutcome, String>;
}

#[derive(Debug, Clone)]
pub struct EarlyStoppingService {
    store: SqlStore,
    managed: Option<std::sync::Arc<dyn ManagedTrials>>,
    first_values: FirstValues,
}

impl EarlyStoppingService {
    pub fn new(store: SqlStore) -> Self {
        EarlyStoppingService {
            store,
            managed: None,
            first_values: FirstValues::default(),
        }
    }

    /// `SetTrialStatus` asks `managed` first, then the store.
    pub fn with_managed_trials(mut self, managed: std::sync::Arc<dyn ManagedTrials>) -> Self {
        self.managed = Some(managed);
        self
    }

    async fn rules(
        &self,
        req: &GetEarlyStoppingRulesRequest,
    ) -> Result<Vec<EarlyStoppingRule>, ApiError> {
        let (view, warnings) = experiment_from_wire_warned("experiment", req.experiment.as_ref())?;
        // The suggestion service warned about these already; the controller repeats the spec.
        for w in &warnings {
            tracing::debug!("{w}");
        }
        let (name, settings) = view
            .early_stopping
            .clone()
            .ok_or_else(|| ProtoError::Missing {
                field: "experiment.spec.early_stopping".into(),
                hint: "set early_stopping.algorithm_name to medianstop".into(),
            })?;
        let rule = build_medianstop(&name, &settings)?;
        let succeeded = succeeded_trials(&req.trials)?;
        let address = req.db_manager_address.trim();
        let key = |(trial, completed): &(&str, &str)| Key {
            source: address.to_string(),
            trial: trial.to_string(),
            completed: completed.to_string(),
            metric: view.objective.metric.clone(),
            count: rule.start_step,
        };
        let mut values: Vec<Option<Vec<f64>>> = succeeded
            .iter()
            .map(|t| self.first_values.get(&key(t)))
            .collect();
        let missing: Vec<&str> = succeeded
            .iter()
            .zip(&values)
            .filter(|(_, v)| v.is_none())
            .map(|((trial, _), _)| *trial)
            .collect();
        let mut read = self
            .objective_logs(address, &missing, &view.objective.metric)
            .await?
            .into_iter();
        for (t, v) in succeeded.iter().zip(values.iter_mut()) {
            if v.is_none() {
                let first = first_finite(&read.next().unwrap_or_default(), rule.start_step);
                self.first_values.keep(key(t), first.clone());
                *v = Some(first);
            }
        }
        let names: Vec<&str> = succeeded.iter().map(|(trial, _)| *trial).collect();
        let values: Vec<Vec<f64>> = values.into_iter().map(Option::unwrap_or_default).collect();
        Ok(medianstop_rules(&rule, &view.objective, &names, &values))
    }

    /// Each trial's logged values of `metric`, from the DBManager at `address`, or from the
    /// store when `address` is empty.
    async fn objective_logs(
        &self,
        address: &str,
        trials: &[&str],
        metric: &str,
    ) -> Result<Vec<Vec<String>>, ApiError> {
        let mut out = Vec::with_capacity(trials.len());
        if address.trim().is_empty() {
            for trial in trials {
                let logs = self
                    .store
                    .observations(trial, Some(metric), None, None)
                    .await?;
                out.push(logs.into_iter().map(|o| o.value).collect());
            }
            return Ok(out);
        }
        let mut remote = RemoteLogs::connect(address.trim()).await?;
        for trial in trials {
            out.push(remote.values(trial, metric).await?);
        }
        Ok(out)
    }

    async fn set_trial_status(&self, trial: &str) -> Result<(), ApiError> {
        if trial.is_empty() {
            return Err(ProtoError::Missing {
                field: "trial_name".into(),
                hint: "name the trial to mark EarlyStopped".into(),
            }
            .into());
        }
        if let Some(managed) = &self.managed {
            let managed = managed.early_stop(trial).await;
            match managed.map_err(|reason| ApiError::Managed {
                trial: trial.to_string(),
                reason,
            })? {
                ManagedOutcome::Stopped => return Ok(()),
                ManagedOutcome::AlreadyEnded { state } => {
                    return Err(ApiError::TrialAlreadyEnded {
                        name: trial.to_string(),
                        state,
                    });
                }
                ManagedOutcome::Refused(why) => return Err(ApiError::ManagedRefused(why)),
                ManagedOutcome::NotManaged => {}
            }
        }
        let row = self
            .store
            .get_trial(trial)
            .await?
            .ok_or_else(|| ApiError::TrialNotFound(trial.to_string()))?;
        match row.state {
            TrialState::EarlyStopped => return Ok(()),
            s if s.is_terminal() => {
                return Err(ApiError::TrialAlreadyEnded {
                    name: trial.to_string(),
                    state: s.to_string(),
                });
            }
            _ => {}
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64);
        self.store
            .update_trial(
                trial,
                &TrialUpdate {
                    state: TrialState::EarlyStopped,
                    reason: EARLY_STOPPED_REASON.into(),
                    message: EARLY_STOPPED_MESSAGE.into(),
                    started_us: None,
                    completed_us: Some(now),
                    attempt: None,
                    stop_step: None,
                },
            )
            .await?;
        Ok(())
    }
}

/// The name and completion time of each of the request's succeeded trials: the ones
/// medianstop learns from.
fn succeeded_trials(trials: &[Trial]) -> Result<Vec<(&str, &str)>, ApiError> {
    let mut succeeded = Vec::new();
    for (i, t) in trials.iter().enumerate() {
        let condition = t.status.as_ref().map_or(0, |s| s.condition);
        let state = state_from_wire(&format!("trials[{i}].status.condition"), condition)?;
        if state == TrialState::Succeeded {
            let completed = t.status.as_ref().map_or("", |s| s.completion_time.as_str());
            succeeded.push((t.name.as_str(), completed));
        }
    }
    Ok(succeeded)
}

/// Katib's rules for `objective` from the first finite values of each succeeded trial
/// (`names` and `values` side by side), whichever source gave them: none while fewer trials
/// than the rule requires succeeded.
fn medianstop_rules(
    rule: &MedianStop,
    objective: &Objective,
    names: &[&str],
    values: &[Vec<f64>],
) -> Vec<EarlyStoppingRule> {
    let progress: Vec<TrialProgress<'_>> = names
        .iter()
        .zip(values)
        .map(|(name, values)| TrialProgress {
            name,
            state: TrialState::Succeeded,
            values,
            judged: values.len(),
        })
        .collect();
    rule.rule(objective, &progress)
        .map(|r| EarlyStoppingRule {
            name: objective.metric.clone(),
            value: r.value.to_string(),
            comparison: match r.comparison {
                Comparison::Less => ComparisonType::Less,
                Comparison::Greater => ComparisonType::Greater,
            } as i32,
            start_step: r.start_step as i32,
        })
        .into_iter()
        .collect()
}

/// Medianstop from wire settings; any other name is Katib's "unknown algorithm name". ASHA
/// ranks trials against each other at every rung, which Katib's fixed per-metric rules cannot
/// express, so it is applied by `vernier run` and the operator but not served as rules.
fn build_medianstop(name: &str, settings: &[(String, String)]) -> Result<MedianStop, ApiError> {
    match vernier_algorithms::build_early_stopper(name, settings) {
        // The rules this service gives are medianstop's alone: the hint names no other.
        Err(AlgorithmError::UnknownAlgorithm { name, .. }) => {
            return Err(AlgorithmError::UnknownAlgorithm {
                name,
                known: "medianstop".into(),
            }
            .into());
        }
        other => other?,
    };
    if name != "medianstop" {
        return Err(ApiError::RulesUnsupported(name.to_string()));
    }
    Ok(MedianStop::from_settings(settings)?)
}

#[tonic::async_trait]
impl EarlyStopping for EarlyStoppingService {
    async fn get_early_stopping_rules(
        &self,
        request: Request<GetEarlyStoppingRulesRequest>,
    ) -> Result<Response<GetEarlyStoppingRulesReply>, Status> {
        let early_stopping_rules = self.rules(request.get_ref()).await?;
        Ok(Response::new(GetEarlyStoppingRulesReply {
            early_stopping_rules,
        }))
    }

    async fn set_trial_status(
        &self,
        request: Request<SetTrialStatusRequest>,
    ) -> Result<Response<SetTrialStatusReply>, Status> {
        self.set_trial_status(&request.get_ref().trial_name).await?;
        Ok(Response::new(SetTrialStatusReply {}))
    }

    async fn validate_early_stopping_settings(
        &self,
        request: Request<ValidateEarlyStoppingSettingsRequest>,
    ) -> Result<Response<ValidateEarlyStoppingSettingsReply>, Status> {
        let spec = request.get_ref().early_stopping.as_ref().ok_or_else(|| {
            ApiError::from(ProtoError::Missing {
                field: "early_stopping".into(),
                hint: "set early_stopping.algorithm_name to medianstop".into(),
            })
        })?;
        let settings: Vec<(String, String)> = spec
            .algorithm_settings
            .iter()
            .map(|s| (s.name.clone(), s.value.clone()))
            .collect();
        // A Katib controller asks for rules after every suggestion and gives up the batch on
        // an error, so an algorithm that has no rules must be refused here, before it starts.
        build_medianstop(&spec.algorithm_name, &settings).map_err(|e| match e {
            ApiError::RulesUnsupported(_) => Status::invalid_argument(e.to_string()),
            other => other.into(),
        })?;
        Ok(Response::new(ValidateEarlyStoppingSettingsReply {}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vernier_core::Direction;

    #[test]
    fn only_medianstop_gives_rules_and_the_hint_names_only_it() {
        let said = |name: &str| build_medianstop(name, &[]).err().map(|e| e.to_string());
        assert_eq!(said("medianstop"), None);
        let asha = said("asha").unwrap_or_default();
        assert!(
            asha.starts_with("early stopping algorithm \"asha\" cannot be expressed"),
            "{asha}"
        );
        assert_eq!(
            said("MedianStop").as_deref(),
            Some("unknown algorithm name \"MedianStop\"\nhint: known algorithms are medianstop")
        );
    }

    #[test]
    fn rules_come_from_the_logged_values_whatever_their_source() {
        let rule = MedianStop::from_settings(&[
            ("min_trials_required".into(), "2".into()),
            ("start_step".into(), "2".into()),
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        let logs = |a: &[&str], b: &[&str]| -> Vec<Vec<String>> {
            [a, b]
                .iter()
                .map(|v| v.iter().map(|s| s.to_string()).collect())
                .collect()
        };
        // (direction, logs of trials a and b, expected rule value and comparison)
        let cases = [
            (
                Direction::Maximize,
                logs(&["0.5", "0.7"], &["0.1", "0.3"]),
                Some((0.4, ComparisonType::Less)),
            ),
            // Text and non-finite values are no value: b's first two numbers are 0.1, 0.3.
            (
                Direction::Minimize,
                logs(&["0.5", "0.7"], &["n/a", "0.1", "inf", "0.3"]),
                Some((0.4, ComparisonType::Greater)),
            ),
            (Direction::Minimize, logs(&["0.5", "0.7"], &[]), None),
        ];
        for (direction, logs, expected) in cases {
            let objective = Objective::new("acc".to_string(), direction);
            let values: Vec<Vec<f64>> = logs.iter().map(|l| first_finite(l, 2)).collect();
            let rules = medianstop_rules(&rule, &objective, &["a", "b"], &values);
            let got: Option<(f64, ComparisonType)> = rules.first().map(|r| {
                (
                    r.value.parse().unwrap_or(f64::NAN),
                    ComparisonType::try_from(r.comparison)
                        .unwrap_or(ComparisonType::UnknownComparison),
                )
            });
            match (got, expected) {
                (Some((v, c)), Some((ev, ec))) => {
                    assert!((v - ev).abs() < 1e-12, "{logs:?}: {v}");
                    assert_eq!(c, ec, "{logs:?}");
                }
                (got, expected) => {
                    assert_eq!(got.is_none(), expected.is_none(), "{logs:?}: {rules:?}")
                }
            }
        }
    }
}
