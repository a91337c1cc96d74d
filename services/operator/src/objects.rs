//! Helpers over the Experiment and Trial objects as stored in Kubernetes: their API resources,
//! reading a trial's state and objective from its status, owner references, status patches
//! and events.

use crate::context::Context;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::crd::v1::CustomResourceExt;
use kube::runtime::events::{Event, EventType};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde_json::Value;
use vernier_core::{MetricStrategy, TrialState};
use vernier_spec::conditions::Condition;
use vernier_spec::status::{Observation, TrialStatus};
use vernier_spec::{ExperimentResource, TrialResource};

pub fn experiment_resource() -> kube::api::ApiResource {
    ExperimentResource::api_resource()
}

pub fn trial_resource() -> kube::api::ApiResource {
    TrialResource::api_resource()
}

/// RFC 3339, second precision, as Katib writes times.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

pub fn now_us() -> i64 {
    chrono::Utc::now().timestamp_micros()
}

/// An API for `resource` in the object's namespace.
pub fn namespaced(
    ctx: &Context,
    resource: &kube::api::ApiResource,
    ns: &str,
) -> Api<DynamicObject> {
    Api::namespaced_with(ctx.client.clone(), ns, resource)
}

/// A trial's state from its conditions (the terminal ones first, as Katib's helpers check).
pub fn state_of(conditions: &[Condition]) -> TrialState {
    let is_true = |t: &str| {
        conditions
            .iter()
            .any(|c| c.type_ == t && c.status == "True")
    };
    for (t, s) in [
        ("EarlyStopped", TrialState::EarlyStopped),
        ("Killed", TrialState::Killed),
        ("MetricsUnavailable", TrialState::MetricsUnavailable),
        ("Failed", TrialState::Failed),
        ("Succeeded", TrialState::Succeeded),
        ("Running", TrialState::Running),
    ] {
        if is_true(t) {
            return s;
        }
    }
    TrialState::Created
}

/// The trial status in `obj`, or the default when absent or unreadable.
pub fn trial_status(obj: &DynamicObject) -> TrialStatus {
    obj.data
        .get("status")
        .and_then(|s| serde::Deserialize::deserialize(s).ok())
        .unwrap_or_default()
}

/// A finite number from a status metric field; Katib writes `unavailable` and the like as
/// text, which counts as no value.
pub fn metric_number(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

/// The Trials labelled with the experiment's name that this Experiment object owns: a
/// same-named experiment deleted and re-created may leave the old one's trials behind until
/// garbage collection, and only the current one's count.
pub async fn owned_trials(
    api: &Api<DynamicObject>,
    experiment: &DynamicObject,
    name: &str,
) -> kube::Result<Vec<DynamicObject>> {
    let selector = format!("{}={name}", vernier_spec::trial::EXPERIMENT_LABEL);
    let uid = experiment.uid();
    let list = api.list(&ListParams::default().labels(&selector)).await?;
    Ok(list
        .items
        .into_iter()
        .filter(|t| owned_by(t, uid.as_deref()))
        .collect())
}

/// Whether `trial` names the Experiment with `uid` among its owners.
pub fn owned_by(trial: &DynamicObject, uid: Option<&str>) -> bool {
    trial
        .owner_references()
        .iter()
        .any(|o| o.kind == "Experiment" && Some(o.uid.as_str()) == uid)
}

/// The value a metric strategy selects from an observation (Katib: min/max fall back to
/// latest when unavailable).
pub fn metric_value(
    observation: &Observation,
    metric: &str,
    strategy: MetricStrategy,
) -> Option<f64> {
    let m = observation.metrics.iter().find(|m| m.name == metric)?;
    let latest = || metric_number(&m.latest);
    match strategy {
        MetricStrategy::Min => metric_number(&m.min).or_else(latest),
        MetricStrategy::Max => metric_number(&m.max).or_else(latest),
        MetricStrategy::Latest => latest(),
    }
}

/// Whether the metric's latest value is text (not a number, not Katib's `unavailable`), the
/// value Katib's best-trial rule falls back to for DARTS's genotype.
pub fn metric_is_text(observation: &Observation, metric: &str) -> bool {
    observation.metrics.iter().any(|m| {
        m.name == metric
            && !m.latest.trim().is_empty()
            && m.latest != vernier_core::UNAVAILABLE
            && m.latest.trim().parse::<f64>().is_err()
    })
}

/// A controller owner reference to `owner`.
pub fn owner_reference(
    owner: &DynamicObject,
    api_version: &str,
    kind: &str,
) -> Option<OwnerReference> {
    Some(OwnerReference {
        api_version: api_version.to_string(),
        kind: kind.to_string(),
        name: owner.name_any(),
        uid: owner.uid()?,
        controller: Some(true),
        block_owner_deletion: Some(true),
    })
}

/// Merge-patches `status`. Fields in `clear` that `status` lacks are set to null, because a
/// merge patch would otherwise keep their old values (e.g. an emptied trial list).
pub async fn patch_status<S: Serialize>(
    api: &Api<DynamicObject>,
    name: &str,
    status: &S,
    clear: &[&str],
) -> Result<(), kube::Error> {
    let mut value = serde_json::to_value(status).map_err(kube::Error::SerdeError)?;
    if let Value::Object(map) = &mut value {
        for key in clear {
            map.entry(key.to_string()).or_insert(Value::Null);
        }
    }
    let patch = serde_json::json!({ "status": value });
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// Replaces the status of `obj` as read, so that a write based on a stale read fails with
/// 409 Conflict instead of undoing another writer's change (the trial reconciler and the
/// early-stopping hook both write trial conditions).
pub async fn replace_status<S: Serialize>(
    api: &Api<DynamicObject>,
    obj: &DynamicObject,
    status: &S,
) -> Result<(), kube::Error> {
    let mut updated = obj.clone();
    let status = serde_json::to_value(status).map_err(kube::Error::SerdeError)?;
    if let Value::Object(map) = &mut updated.data {
        map.insert("status".into(), status);
    } else {
        updated.data = serde_json::json!({ "status": status });
    }
    api.replace_status(&obj.name_any(), &kube::api::PostParams::default(), &updated)
        .await?;
    Ok(())
}

/// Whether `error` is a 409 Conflict: another writer was first, so read again and retry.
pub fn is_conflict(error: &crate::error::OperatorError) -> bool {
    matches!(error, crate::error::OperatorError::Kube(kube::Error::Api(e)) if e.code == 409)
}

/// Publishes an event about `obj` (of `resource`); failures are only reported, never fatal
/// to a reconcile.
pub async fn publish(
    ctx: &Context,
    obj: &DynamicObject,
    resource: &kube::api::ApiResource,
    warning: bool,
    reason: &str,
    note: String,
) {
    let reference = obj.object_ref(resource);
    let event = Event {
        type_: if warning {
            EventType::Warning
        } else {
            EventType::Normal
        },
        reason: reason.to_string(),
        note: Some(truncate(note, 1000)),
        action: reason.to_string(),
        secondary: None,
    };
    if let Err(e) = ctx.recorder.publish(&event, &reference).await {
        tracing::warn!("cannot publish event {reason} for {}: {e}", obj.name_any());
    }
}

fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut cut = max;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use vernier_spec::conditions::set_condition;
    use vernier_spec::status::MetricValues;

    #[test]
    fn state_prefers_terminal_conditions() {
        let mut c = Vec::new();
        assert_eq!(state_of(&c), TrialState::Created);
        set_condition(&mut c, "Created", true, "TrialCreated", "", 0);
        set_condition(&mut c, "Running", true, "TrialRunning", "", 0);
        assert_eq!(state_of(&c), TrialState::Running);
        set_condition(&mut c, "Running", false, "TrialSucceeded", "", 0);
        set_condition(&mut c, "Succeeded", true, "TrialSucceeded", "", 0);
        assert_eq!(state_of(&c), TrialState::Succeeded);
        set_condition(&mut c, "EarlyStopped", true, "TrialEarlyStopped", "", 0);
        assert_eq!(state_of(&c), TrialState::EarlyStopped);
    }

    #[test]
    fn strategies_fall_back_to_latest() {
        let obs = Observation {
            metrics: vec![MetricValues {
                name: "loss".into(),
                min: "unavailable".into(),
                max: "0.9".into(),
                latest: "0.4".into(),
            }],
        };
        assert_eq!(metric_value(&obs, "loss", MetricStrategy::Min), Some(0.4));
        assert_eq!(metric_value(&obs, "loss", MetricStrategy::Max), Some(0.9));
        assert_eq!(metric_value(&obs, "acc", MetricStrategy::Max), None);
    }
}
