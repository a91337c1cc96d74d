//! `vernier report --kube`: the experiment report built from a cluster's Experiment and Trial
//! objects instead of the database. The objects hold only each metric's reduced observation
//! (min, max, latest), so the report has no learning curves.

use crate::error::OperatorError;
use crate::names::SEQ_ANNOTATION;
use crate::objects::rfc3339_us;
use crate::objects::{experiment_resource, owned_trials, trial_resource};
use crate::trial_state::{metric_number, state_of, trial_status};
use kube::api::{Api, DynamicObject};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use vernier_core::{MetricSummary, TrialState};
use vernier_report::{ExperimentReport, assemble};
use vernier_spec::conditions::Condition;
use vernier_spec::status::{ExperimentStatus, MetricValues};
use vernier_spec::trial::TrialSpec;
use vernier_spec::types::API_VERSION;
use vernier_store::{ExperimentRow, ExperimentStatusRow, TrialRow};

/// Reads Experiment `name` in `namespace` and its Trials (those labelled with it and owned by
/// it, as the operator creates them) into the report every format renders.
pub async fn load_report(
    client: &Client,
    namespace: &str,
    name: &str,
) -> Result<ExperimentReport, OperatorError> {
    let experiments: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &experiment_resource());
    let obj = experiments
        .get_opt(name)
        .await
        .map_err(|e| match e {
            // An answer with an error status (forbidden, no such resource) says what it is;
            // no answer at all is most often a wrong address, so say where to look.
            kube::Error::Api(_) => OperatorError::Kube(e),
            e => OperatorError::Unreachable(error_chain(&e)),
        })?
        .ok_or_else(|| OperatorError::ExperimentNotFound {
            namespace: namespace.to_string(),
            name: name.to_string(),
        })?;
    let object = format!("experiment {namespace}/{name}");
    // A template in a ConfigMap is read as the operator reads it, so the spec parses as it ran.
    let spec = obj.data.get("spec").cloned().unwrap_or(Value::Null);
    let spec = match crate::template_source::resolve(client, spec).await? {
        crate::template_source::Resolved::Spec(spec) => spec,
        crate::template_source::Resolved::Invalid(message) => {
            return Err(OperatorError::Malformed { object, message });
        }
    };
    let doc = json!({
        "apiVersion": obj.types.as_ref().map_or(API_VERSION, |t| t.api_version.as_str()),
        "kind": "Experiment",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": obj.labels(),
            "annotations": {},
        },
        "spec": spec,
    });
    // An algorithm only a suggestion service serves is reported as any other.
    let own = doc
        .pointer("/spec/algorithm/algorithmName")
        .and_then(Value::as_str);
    let served: Vec<&str> = own.into_iter().collect();
    let spec = vernier_spec::parse_experiment_value_served(&doc, &served).map_err(|e| {
        OperatorError::Malformed {
            object: object.clone(),
            message: format!("{e}; hint: the operator marks such an experiment Failed, see kubectl describe experiment {name}"),
        }
    })?;
    let objective = spec.objective().map_err(|e| OperatorError::Malformed {
        object: object.clone(),
        message: e.to_string(),
    })?;
    let status: ExperimentStatus = obj
        .data
        .get("status")
        .cloned()
        .and_then(|s| serde_json::from_value(s).ok())
        .unwrap_or_default();
    let created_us = obj.creation_timestamp().map_or(0, |t| t.0.as_microsecond());
    let row = ExperimentRow {
        name: name.to_string(),
        spec_json: doc.to_string(),
        seed: 0,
        created_us,
        work_dir: String::new(),
        log_dir: String::new(),
        status: experiment_status_row(&status),
    };

    let trials: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &trial_resource());
    let mut rows: Vec<_> = owned_trials(&trials, &obj, name)
        .await?
        .iter()
        .map(|t| trial_row(name, t))
        .collect();
    // Creation order, as the operator numbers its trials; the name breaks ties.
    rows.sort_by(|a, b| a.0.seq.cmp(&b.0.seq).then_with(|| a.0.name.cmp(&b.0.name)));
    Ok(assemble(row, spec, objective, rows, false))
}

/// The names of the Experiments in `namespace`, sorted: the list `vernier dashboard --kube`
/// shows.
pub async fn experiment_names(
    client: &Client,
    namespace: &str,
) -> Result<Vec<String>, OperatorError> {
    let experiments: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &experiment_resource());
    let list = experiments
        .list(&kube::api::ListParams::default())
        .await
        .map_err(|e| match e {
            kube::Error::Api(_) => OperatorError::Kube(e),
            e => OperatorError::Unreachable(error_chain(&e)),
        })?;
    let mut names: Vec<String> = list.items.iter().map(|o| o.name_any()).collect();
    names.sort();
    Ok(names)
}

/// The store's shape of an experiment status: the phase is the last true terminal or
/// Running/Created condition, with its reason and message.
fn experiment_status_row(status: &ExperimentStatus) -> ExperimentStatusRow {
    let current = ["Succeeded", "Failed", "Running", "Restarting", "Created"]
        .iter()
        .find_map(|t| {
            status
                .conditions
                .iter()
                .find(|c| c.type_ == *t && c.status == "True")
        });
    let phase = match current.map(|c| c.type_.as_str()) {
        Some("Restarting") => "Running",
        Some(t) => t,
        None => "Created",
    };
    ExperimentStatusRow {
        phase: phase.to_string(),
        reason: current.map(|c| c.reason.clone()).unwrap_or_default(),
        message: current.map(|c| c.message.clone()).unwrap_or_default(),
        started_us: status.start_time.as_deref().and_then(rfc3339_us),
        completed_us: status.completion_time.as_deref().and_then(rfc3339_us),
        algorithm_state: None,
        conditions_json: serde_json::to_string(&status.conditions).unwrap_or_default(),
    }
}

fn trial_row(experiment: &str, t: &DynamicObject) -> (TrialRow, Vec<MetricSummary>, i64) {
    let spec: TrialSpec = t
        .data
        .get("spec")
        .cloned()
        .and_then(|s| serde_json::from_value(s).ok())
        .unwrap_or_default();
    let status = trial_status(t);
    let state = state_of(&status.conditions);
    let last = last_condition(&status.conditions, state);
    let seq = t
        .annotations()
        .get(SEQ_ANNOTATION)
        .and_then(|s| s.parse().ok())
        .unwrap_or(i64::MAX);
    let row = TrialRow {
        experiment: experiment.to_string(),
        name: t.name_any(),
        seq,
        assignment: spec
            .parameter_assignments
            .iter()
            .map(|p| (p.name.clone(), p.value.clone()))
            .collect(),
        labels: t.labels().clone(),
        state,
        reason: last.map(|c| c.reason.clone()).unwrap_or_default(),
        message: last.map(|c| c.message.clone()).unwrap_or_default(),
        created_us: t.creation_timestamp().map_or(0, |c| c.0.as_microsecond()),
        started_us: status.start_time.as_deref().and_then(rfc3339_us),
        completed_us: status.completion_time.as_deref().and_then(rfc3339_us),
        attempt: 0,
        early_stopping_rules: (!spec.early_stopping_rules.is_empty())
            .then(|| serde_json::to_string(&spec.early_stopping_rules).ok())
            .flatten(),
        stop_step: crate::stop_trials::recorded_stop_step(t).and_then(|s| i64::try_from(s).ok()),
    };
    let metrics = status
        .observation
        .map(|o| o.metrics.iter().map(summary).collect())
        .unwrap_or_default();
    // The objects keep no intermediate values, so no curve length either.
    (row, metrics, 0)
}

/// The condition that put the trial in `state`, for its reason and message.
fn last_condition(conditions: &[Condition], state: TrialState) -> Option<&Condition> {
    conditions
        .iter()
        .find(|c| c.type_ == state.as_str() && c.status == "True")
}

/// Katib writes unavailable min/max as text; only finite numbers count.
fn summary(m: &MetricValues) -> MetricSummary {
    MetricSummary {
        name: m.name.clone(),
        min: metric_number(&m.min),
        max: metric_number(&m.max),
        latest: m.latest.clone(),
    }
}

/// The error and its causes on one line: the innermost (e.g. "connection refused") is the
/// useful part of a transport error.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cause = c.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unavailable_bounds_are_absent_and_latest_is_kept() {
        let s = summary(&MetricValues {
            name: "loss".into(),
            min: "unavailable".into(),
            max: "0.9".into(),
            latest: "0.4".into(),
        });
        assert_eq!(s.min, None);
        assert_eq!(s.max, Some(0.9));
        assert_eq!(s.latest, "0.4");
    }

    #[test]
    fn phase_follows_the_terminal_condition() {
        let mut status = ExperimentStatus::default();
        assert_eq!(experiment_status_row(&status).phase, "Created");
        vernier_spec::conditions::set_condition(
            &mut status.conditions,
            "Running",
            true,
            "ExperimentRunning",
            "running",
            0,
        );
        assert_eq!(experiment_status_row(&status).phase, "Running");
        vernier_spec::conditions::set_condition(
            &mut status.conditions,
            "Succeeded",
            true,
            "ExperimentMaxTrialsReached",
            "done",
            0,
        );
        let row = experiment_status_row(&status);
        assert_eq!(row.phase, "Succeeded");
        assert_eq!(row.reason, "ExperimentMaxTrialsReached");
    }
}
