//! A `batch/v1` Job trial spec held to the Job schema, as Katib's webhook holds it: a field the
//! Job type does not have (a misspelt `evn`) or a value of the wrong type is refused, since on a
//! cluster it would be dropped or refused and locally it would be silently ignored. Katib
//! converts the template to its compiled `batchv1.Job` and refuses any field the conversion
//! lost; this does the same with `k8s-openapi`'s Job type (Kubernetes 1.33) and
//! `serde_path_to_error` for the path of a wrongly typed value.

use super::Errors;
use k8s_openapi::api::batch::v1::Job;
use serde_json::Value;

const PATH: &str = "spec.trialTemplate.trialSpec";

/// Refuses the unknown fields and wrongly typed values of a `batch/v1` Job trial spec; other
/// kinds are not checked (Katib validates only Jobs).
pub(super) fn check(spec: &Value, errs: &mut Errors) {
    if !crate::template::is_batch_job(spec) {
        return;
    }
    let lenient = quantities_as_text(spec.clone(), false);
    match serde_path_to_error::deserialize::<_, Job>(&lenient) {
        Err(e) => errs.add(
            join(PATH, &e.path().to_string()),
            format!(
                "{}; hint: this field of a batch/v1 Job takes another type",
                e.inner()
            ),
        ),
        Ok(job) => {
            let kept = serde_json::to_value(&job).unwrap_or(Value::Null);
            for path in lost_fields(&lenient, &kept, PATH.to_string()) {
                errs.add(
                    path,
                    "is not a field of a batch/v1 Job (Kubernetes 1.33), so a cluster would drop it and Katib refuses it; hint: check its spelling and where it is nested",
                );
            }
        }
    }
}

fn join(base: &str, rest: &str) -> String {
    match rest {
        "" | "." => base.to_string(),
        r if r.starts_with('[') => format!("{base}{r}"),
        r => format!("{base}.{r}"),
    }
}

/// Numbers under `resources` (`cpu: 1`) and in `sizeLimit` as the strings Kubernetes reads them
/// as: a quantity may be written either way, but the typed Job only takes text.
fn quantities_as_text(v: Value, quantity: bool) -> Value {
    match v {
        Value::Number(n) if quantity => Value::String(n.to_string()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let q =
                        quantity || matches!(k.as_str(), "resources" | "sizeLimit" | "overhead");
                    (k, quantities_as_text(v, q))
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|v| quantities_as_text(v, quantity))
                .collect(),
        ),
        other => other,
    }
}

/// The paths of the fields `written` has that the typed round trip `kept` lost; a null is
/// nothing written.
fn lost_fields(written: &Value, kept: &Value, path: String) -> Vec<String> {
    match (written, kept) {
        (Value::Object(w), Value::Object(k)) => w
            .iter()
            .filter(|(_, v)| !v.is_null())
            .flat_map(|(key, v)| {
                let here = format!("{path}.{key}");
                match k.get(key) {
                    None => vec![here],
                    Some(kv) => lost_fields(v, kv, here),
                }
            })
            .collect(),
        (Value::Array(w), Value::Array(k)) => w
            .iter()
            .zip(k)
            .enumerate()
            .flat_map(|(i, (wv, kv))| lost_fields(wv, kv, format!("{path}[{i}]")))
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(container: Value, job_spec: Value) -> Value {
        let mut spec = json!({"template": {"spec": {
            "restartPolicy": "Never",
            "containers": [container],
        }}});
        spec.as_object_mut()
            .unwrap()
            .extend(job_spec.as_object().unwrap().clone());
        json!({"apiVersion": "batch/v1", "kind": "Job", "spec": spec})
    }

    fn problems(spec: &Value) -> Vec<String> {
        let mut errs = Errors::default();
        check(spec, &mut errs);
        errs.0
            .errors()
            .iter()
            .map(|e| format!("{}: {}", e.path(), e.message()))
            .collect()
    }

    #[test]
    fn jobs_are_held_to_the_job_schema() {
        let c = |extra: Value| {
            let mut c = json!({"name": "t", "image": "python:3", "command": ["python3", "${trialParameters.lr}"]});
            c.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            c
        };
        let containers = "spec.trialTemplate.trialSpec.spec.template.spec.containers[0]";
        // (container fields, job spec fields, the paths refused; empty: accepted)
        let table: Vec<(Value, Value, Vec<String>)> = vec![
            (json!({}), json!({}), vec![]),
            (
                json!({"env": [{"name": "A", "value": "1"}], "resources": {"limits": {"cpu": 1, "nvidia.com/gpu": 2}, "requests": {"memory": "1Gi"}}, "workingDir": "/src", "volumeMounts": [{"name": "v", "mountPath": "/v"}]}),
                json!({"backoffLimit": 2, "activeDeadlineSeconds": 60, "ttlSecondsAfterFinished": null, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"restartPolicy": "Never", "volumes": [{"name": "v", "emptyDir": {"sizeLimit": 1}}], "containers": [c(json!({}))]}}}),
                vec![],
            ),
            (
                json!({"evn": [], "arg": ["--x"]}),
                json!({}),
                vec![format!("{containers}.arg"), format!("{containers}.evn")],
            ),
            (
                json!({}),
                json!({"backofLimit": 2}),
                vec!["spec.trialTemplate.trialSpec.spec.backofLimit".into()],
            ),
            (
                json!({"env": [{"name": "N", "value": 5}]}),
                json!({}),
                vec![format!("{containers}.env[0].value")],
            ),
            (
                json!({}),
                json!({"backoffLimit": "${trialParameters.n}"}),
                vec!["spec.trialTemplate.trialSpec.spec.backoffLimit".into()],
            ),
        ];
        for (container, job_spec, want) in table {
            let spec = job(c(container), job_spec);
            let mut got = problems(&spec);
            got.sort();
            assert_eq!(got.len(), want.len(), "{got:?}");
            for (g, w) in got.iter().zip(&want) {
                assert!(g.starts_with(&format!("{w}:")), "{g} / {w}");
            }
        }
    }

    #[test]
    fn only_batch_jobs_are_checked() {
        let mut spec = job(json!({"name": "t", "evn": []}), json!({}));
        spec["apiVersion"] = json!("kubeflow.org/v1");
        assert!(problems(&spec).is_empty());
        spec["apiVersion"] = json!("batch/v1");
        spec["kind"] = json!("CronJob");
        assert!(problems(&spec).is_empty());
    }
}
