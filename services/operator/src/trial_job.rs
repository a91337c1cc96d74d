//! A trial's job: the API of its kind (when this operator may create that kind) and the object
//! to create, owned by the Trial and labelled so that its pods can be found.

use crate::context::Context;
use crate::error::Result;
use crate::names::JOB_FINALIZER;
use crate::objects::{namespaced, owned_by_another_trial, owner_reference};
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};
use vernier_spec::trial::{EXPERIMENT_LABEL, TRIAL_LABEL};
use vernier_spec::types::API_VERSION;

/// The API for the job's kind, if that kind is allowed.
pub fn job_api(
    ctx: &Context,
    run_spec: &Value,
    ns: &str,
) -> Option<(kube::Api<DynamicObject>, String)> {
    let api_version = run_spec.get("apiVersion").and_then(Value::as_str)?;
    let kind = run_spec.get("kind").and_then(Value::as_str)?;
    let k = ctx.trial_kind(api_version, kind)?;
    Some((
        namespaced(&ctx.client, &k.api_resource(), ns),
        kind.to_string(),
    ))
}

/// The job to create: the rendered run spec, owned by the Trial, with the trial and
/// experiment labels on the job and on every pod template inside it, so that the trial's
/// pods can be found by label whatever controller creates them.
pub fn job_object(
    trial: &DynamicObject,
    mut run_spec: Value,
    name: &str,
    ns: &str,
) -> DynamicObject {
    let mut labels = serde_json::Map::new();
    labels.insert(TRIAL_LABEL.into(), name.into());
    if let Some(exp) = trial.labels().get(EXPERIMENT_LABEL) {
        labels.insert(EXPERIMENT_LABEL.into(), exp.clone().into());
    }
    label_pod_templates(&mut run_spec, &labels);
    if let Some(obj) = run_spec.as_object_mut() {
        let meta = obj.entry("metadata").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert("name".into(), name.into());
            meta.insert("namespace".into(), ns.into());
            let l = meta.entry("labels").or_insert_with(|| json!({}));
            if let Some(l) = l.as_object_mut() {
                l.extend(labels.clone());
            }
            if let Some(owner) = owner_reference(trial, API_VERSION, "Trial") {
                meta.insert("ownerReferences".into(), json!([owner]));
            }
            let finalizers = meta.entry("finalizers").or_insert_with(|| json!([]));
            if let Some(f) = finalizers.as_array_mut() {
                f.push(JOB_FINALIZER.into());
            }
        }
    }
    serde_json::from_value(run_spec.clone()).unwrap_or_else(|_| DynamicObject {
        types: None,
        metadata: Default::default(),
        data: run_spec,
    })
}

/// Lets the job of the trial whose UID is `trial_uid` go: takes this operator's finalizer off
/// it (a job another trial of the name owns, or none, is left alone). A job changed since it
/// was read fails with a conflict, and the reconcile runs again.
pub async fn release(jobs: &Api<DynamicObject>, name: &str, trial_uid: Option<&str>) -> Result<()> {
    let Some(job) = jobs.get_opt(name).await? else {
        return Ok(());
    };
    let finalizers = job.finalizers();
    if owned_by_another_trial(&job, trial_uid) || !finalizers.iter().any(|f| f == JOB_FINALIZER) {
        return Ok(());
    }
    let kept: Vec<&String> = finalizers.iter().filter(|f| *f != JOB_FINALIZER).collect();
    let patch = json!({"metadata": {
        "finalizers": kept,
        "resourceVersion": job.resource_version(),
    }});
    match jobs
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        // RBAC from before the finalizer (no `patch`): the trial's end or deletion goes on,
        // and the job waits for an administrator.
        Err(kube::Error::Api(e)) if e.code == 403 => {
            tracing::warn!(
                "job {name}: cannot take finalizer {JOB_FINALIZER} off ({}); hint: give the operator the patch verb on its trial kinds (deploy/base/clusterrole.yaml), or remove the finalizer with kubectl patch",
                e.message
            );
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

/// Whether `value` under the key `key` is a pod template (an object with `spec.containers`).
fn is_pod_template(key: &str, value: &Value) -> bool {
    key == "template"
        && value
            .pointer("/spec/containers")
            .is_some_and(Value::is_array)
}

/// Whether the job holds a pod template the operator labels. Pods of a job without one (an
/// Argo Workflow's steps, a user's own kind) carry no trial label, so they are found through
/// their owners instead, as Katib's pod webhook finds a pod's trial.
pub fn has_pod_template(value: &Value) -> bool {
    match value {
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| is_pod_template(k, v) || has_pod_template(v)),
        Value::Array(items) => items.iter().any(has_pod_template),
        _ => false,
    }
}

/// Adds `labels` to `metadata.labels` of every pod template (an object with `spec.containers`
/// under a `template` key), wherever it sits in the job.
fn label_pod_templates(value: &mut Value, labels: &serde_json::Map<String, Value>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if is_pod_template(k, v)
                    && let Some(t) = v.as_object_mut()
                {
                    let meta = t.entry("metadata").or_insert_with(|| json!({}));
                    if let Some(meta) = meta.as_object_mut() {
                        let l = meta.entry("labels").or_insert_with(|| json!({}));
                        if let Some(l) = l.as_object_mut() {
                            l.extend(labels.clone());
                        }
                    }
                }
                label_pod_templates(v, labels);
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| label_pod_templates(v, labels)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_every_pod_template() {
        let mut tf = json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "spec": {"tfReplicaSpecs": {
                "Chief": {"template": {"spec": {"containers": [{"name": "tensorflow"}]}}},
                "PS": {"template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "tensorflow"}]}}}
            }}
        });
        let mut labels = serde_json::Map::new();
        labels.insert(TRIAL_LABEL.into(), "t-1".into());
        label_pod_templates(&mut tf, &labels);
        assert_eq!(
            tf.pointer(
                "/spec/tfReplicaSpecs/Chief/template/metadata/labels/katib.kubeflow.org~1trial"
            ),
            Some(&json!("t-1"))
        );
        assert_eq!(
            tf.pointer("/spec/tfReplicaSpecs/PS/template/metadata/labels/a"),
            Some(&json!("b"))
        );
        assert_eq!(
            tf.pointer(
                "/spec/tfReplicaSpecs/PS/template/metadata/labels/katib.kubeflow.org~1trial"
            ),
            Some(&json!("t-1"))
        );
    }

    #[test]
    fn only_jobs_with_a_pod_template_have_labelled_pods() {
        let job = json!({"kind": "Job", "spec": {"template": {"spec": {"containers": []}}}});
        let argo = json!({"kind": "Workflow", "spec": {"templates": [
            {"name": "train", "container": {"image": "x"}},
            {"name": "steps", "steps": [[{"name": "a", "template": "train"}]]}
        ]}});
        let pipeline = json!({"kind": "PipelineRun", "spec": {"pipelineSpec": {"tasks": [
            {"name": "t", "taskSpec": {"steps": [{"name": "s", "image": "x"}]}}
        ]}}});
        assert!(has_pod_template(&job));
        assert!(!has_pod_template(&argo));
        assert!(!has_pod_template(&pipeline));
    }
}
