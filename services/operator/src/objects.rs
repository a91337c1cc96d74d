//! The Experiment and Trial objects in the API: their resources, ownership between them, and
//! status writes (merge-patched, or replaced as read so that a stale write conflicts).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::crd::v1::CustomResourceExt;
use kube::{Client, ResourceExt};
use serde::Serialize;
use serde_json::Value;
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

/// A time as Katib writes it (RFC 3339), in microseconds since the epoch.
pub fn rfc3339_us(text: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.timestamp_micros())
}

/// An API for `resource` in the object's namespace.
pub fn namespaced(
    client: &Client,
    resource: &kube::api::ApiResource,
    ns: &str,
) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, resource)
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

/// Whether `job` belongs to another Trial than the one with `uid`: a trial of the same name
/// deleted before, whose job the garbage collector has not removed yet.
pub fn owned_by_another_trial(job: &DynamicObject, uid: Option<&str>) -> bool {
    let trials: Vec<&str> = job
        .owner_references()
        .iter()
        .filter(|o| o.kind == "Trial")
        .map(|o| o.uid.as_str())
        .collect();
    !trials.is_empty() && !trials.iter().any(|t| Some(*t) == uid)
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
/// merge patch would otherwise keep their old values (e.g. an emptied trial list). With
/// `read_at`, the object's `resourceVersion` when it was read, a write based on a stale read
/// fails with 409 Conflict instead.
pub async fn patch_status<S: Serialize>(
    api: &Api<DynamicObject>,
    name: &str,
    status: &S,
    clear: &[&str],
    read_at: Option<&str>,
) -> Result<(), kube::Error> {
    let mut value = serde_json::to_value(status).map_err(kube::Error::SerdeError)?;
    if let Value::Object(map) = &mut value {
        for key in clear {
            map.entry(key.to_string()).or_insert(Value::Null);
        }
    }
    let patch = match read_at {
        Some(rv) => serde_json::json!({ "metadata": {"resourceVersion": rv}, "status": value }),
        None => serde_json::json!({ "status": value }),
    };
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

/// Creates `object` (a `K`, as JSON) in `namespace` unless an object of its name is there
/// already, which is kept as it is.
pub async fn create_unless_present<K>(
    client: &Client,
    namespace: &str,
    object: Value,
) -> crate::error::Result<()>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Serialize,
    K::DynamicType: Default,
{
    let name = object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let kind = K::kind(&K::DynamicType::default()).to_lowercase();
    let malformed = |e: serde_json::Error| crate::error::OperatorError::Malformed {
        object: format!("{kind} {namespace}/{name}"),
        message: e.to_string(),
    };
    let typed: K = serde_json::from_value(object).map_err(malformed)?;
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    match api.create(&kube::api::PostParams::default(), &typed).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Whether `error` is a 409 Conflict: another writer was first, so read again and retry.
pub fn is_conflict(error: &crate::error::OperatorError) -> bool {
    matches!(error, crate::error::OperatorError::Kube(kube::Error::Api(e)) if e.code == 409)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (owner kinds and uids of the job, the trial's uid, another trial's job)
    #[test]
    fn a_job_left_by_a_deleted_namesake_is_another_trials() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
        let owner = |kind: &str, uid: &str| OwnerReference {
            api_version: "v1".into(),
            kind: kind.into(),
            name: "t".into(),
            uid: uid.into(),
            ..OwnerReference::default()
        };
        let cases = [
            (vec![owner("Trial", "new")], Some("new"), false),
            (vec![owner("Trial", "old")], Some("new"), true),
            (
                vec![owner("Trial", "old"), owner("Trial", "new")],
                Some("new"),
                false,
            ),
            (vec![owner("Experiment", "e")], Some("new"), false),
            (vec![], Some("new"), false),
        ];
        for (i, (owners, uid, another)) in cases.into_iter().enumerate() {
            let mut job = DynamicObject::new("t", &experiment_resource());
            job.metadata.owner_references = Some(owners);
            assert_eq!(owned_by_another_trial(&job, uid), another, "case {i}");
        }
    }
}
