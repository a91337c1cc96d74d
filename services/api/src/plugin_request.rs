//! What a suggestion plugin is sent and what its reply means, shaped as Katib's controller
//! (`suggestionclient.go`, v0.19) shapes them, so Katib's own suggestion services accept them:
//! only the experiment's own trials, MetricsUnavailable ones left out, their start and
//! completion times (empty while unset), no labels, and the settings the plugin returned
//! earlier merged over the spec's by name. Both drivers' plugin calls go through here.

use vernier_core::{Objective, Suggestions, TrialState};
use vernier_engine::{ExternalRequest, ResolvedExperiment, SourceError, TimedTrial};
use vernier_proto::api::{
    AlgorithmSetting, Experiment, GetSuggestionsReply, GetSuggestionsRequest, Trial,
};
use vernier_proto::convert::{
    ExperimentView, experiment_to_wire, proposals_from_wire, trial_to_wire,
};

/// `request` as Katib's controller sends it.
pub fn request_to_wire(request: &ExternalRequest<'_>) -> GetSuggestionsRequest {
    GetSuggestionsRequest {
        experiment: Some(wire_experiment(request.experiment, request.state)),
        trials: katib_trials(&request.trials, &request.experiment.objective),
        current_request_number: request.count as i32,
        total_request_number: request.total as i32,
    }
}

/// The proposals of the reply to `request`, with the settings it returned kept as the new
/// state; a reply Katib's controller refuses is an error.
pub fn read_reply(
    request: &ExternalRequest<'_>,
    reply: GetSuggestionsReply,
) -> Result<Suggestions, SourceError> {
    if reply.parameter_assignments.len() != request.count {
        // Katib's controller refuses such a reply and asks again; it never ends a search.
        return Err(SourceError::Unavailable(format!(
            "its reply holds {} assignment(s) where {} were asked for, which Katib's controller refuses",
            reply.parameter_assignments.len(),
            request.count
        )));
    }
    let space = &request.experiment.space;
    let proposals = proposals_from_wire(&reply.parameter_assignments, space)
        .map_err(|e| SourceError::Rejected(format!("its reply is refused: {e}")))?;
    let returned = reply.algorithm.map(|a| a.algorithm_settings);
    Ok(Suggestions {
        proposals,
        state: state_after(request.state, returned.unwrap_or_default()),
        exhausted: false,
    })
}

/// The settings a plugin returned, by name, kept as opaque state (a JSON list of pairs):
/// `returned` over those of `state`.
fn state_after(state: Option<&str>, returned: Vec<AlgorithmSetting>) -> Option<String> {
    let mut kept = returned_settings(state);
    for AlgorithmSetting { name, value } in returned {
        kept.retain(|(n, _)| *n != name);
        kept.push((name, value));
    }
    (!kept.is_empty()).then(|| serde_json::to_string(&kept).unwrap_or_default())
}

fn returned_settings(state: Option<&str>) -> Vec<(String, String)> {
    state
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_default()
}

/// Katib's `ConvertTrials`: MetricsUnavailable trials left out, no labels, and a completion
/// time only on a trial that ended (one that ended after its record was taken goes out as
/// the record has it).
fn katib_trials(trials: &[TimedTrial<'_>], objective: &Objective) -> Vec<Trial> {
    trials
        .iter()
        .filter(|t| t.record.state != TrialState::MetricsUnavailable)
        .map(|t| {
            let completed_us = t.completed_us.filter(|_| t.record.state.is_terminal());
            let mut wire = trial_to_wire(t.record, objective, t.started_us, completed_us);
            if let Some(spec) = wire.spec.as_mut() {
                spec.labels.clear();
            }
            wire
        })
        .collect()
}

/// The experiment as Katib's controller sends it, with the settings the plugin returned
/// earlier (`state`) merged over the spec's, as Katib does.
pub fn wire_experiment(exp: &ResolvedExperiment, state: Option<&str>) -> Experiment {
    let mut settings = exp.settings.clone();
    for (name, value) in returned_settings(state) {
        match settings.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value,
            None => settings.push((name, value)),
        }
    }
    let early_stopping = exp.spec.spec.early_stopping.as_ref().map(|es| {
        (
            es.algorithm_name.clone().unwrap_or_default(),
            es.algorithm_settings
                .iter()
                .map(|s| (s.name.clone(), s.value.clone()))
                .collect(),
        )
    });
    experiment_to_wire(&ExperimentView {
        name: exp.name.clone(),
        space: exp.space.clone(),
        objective: exp.objective.clone(),
        algorithm: exp.algorithm.clone(),
        settings,
        early_stopping,
        parallel_trial_count: exp.limits.parallel as i32,
        max_trial_count: exp.limits.max_trials.map_or(0, |m| m as i32),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use vernier_core::{Assignment, Direction, ParamValue, TrialRecord};

    fn record(name: &str, state: TrialState, objective: Option<f64>) -> TrialRecord {
        TrialRecord {
            name: name.into(),
            assignment: Assignment(vec![("x".into(), ParamValue::Int(1))]),
            state,
            objective,
            labels: BTreeMap::from([("vernier.hyperband/rung".into(), "0".into())]),
            metrics: objective
                .map(|v| ("acc".to_string(), v))
                .into_iter()
                .collect(),
        }
    }

    #[test]
    fn trials_go_out_as_katib_controller_sends_them() {
        let o = Objective::new("acc", Direction::Maximize);
        let records = [
            record("e-done", TrialState::Succeeded, Some(0.5)),
            record("e-nometrics", TrialState::MetricsUnavailable, None),
            record("e-running", TrialState::Running, None),
            record("e-created", TrialState::Created, None),
        ];
        let times = [
            (Some(1_000_000), Some(61_000_000)),
            (Some(1_000_000), Some(2_000_000)),
            // It ended after its record was taken: it goes out as the record has it.
            (Some(3_000_000), Some(4_000_000)),
            (None, None),
        ];
        let timed: Vec<TimedTrial<'_>> = records
            .iter()
            .zip(times)
            .map(|(record, (started_us, completed_us))| TimedTrial {
                record,
                started_us,
                completed_us,
            })
            .collect();
        let wire = katib_trials(&timed, &o);
        let names: Vec<&str> = wire.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["e-done", "e-running", "e-created"]);
        let times: Vec<(&str, &str)> = wire
            .iter()
            .map(|t| {
                let s = t.status.as_ref().unwrap();
                (s.start_time.as_str(), s.completion_time.as_str())
            })
            .collect();
        assert_eq!(
            times,
            [
                ("1970-01-01T00:00:01Z", "1970-01-01T00:01:01Z"),
                ("1970-01-01T00:00:03Z", ""),
                ("", ""),
            ]
        );
        assert!(
            wire.iter()
                .all(|t| t.spec.as_ref().unwrap().labels.is_empty())
        );
        let observed = wire[1].status.as_ref().unwrap().observation.as_ref();
        assert!(observed.unwrap().metrics.is_empty());
    }

    #[test]
    fn returned_settings_are_kept_by_name_over_earlier_ones() {
        let setting = |name: &str, value: &str| AlgorithmSetting {
            name: name.into(),
            value: value.into(),
        };
        let first = state_after(None, vec![setting("a", "1"), setting("b", "2")]);
        assert_eq!(first.as_deref(), Some(r#"[["a","1"],["b","2"]]"#));
        let second = state_after(first.as_deref(), vec![setting("a", "3")]);
        assert_eq!(second.as_deref(), Some(r#"[["b","2"],["a","3"]]"#));
        assert_eq!(state_after(None, vec![]), None);
    }
}
