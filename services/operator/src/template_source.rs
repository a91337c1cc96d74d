//! Katib's second trial-template source: `trialTemplate.configMap` names a ConfigMap entry
//! holding the job template. The operator reads it on each reconcile and puts it inline in
//! `trialSpec`, so validation, defaulting and rendering stay the ones every experiment goes
//! through (with the template inline, success and failure conditions get Katib's defaults
//! where Katib would have required them written out).

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use serde_json::Value;

/// What became of the experiment's spec.
#[derive(Debug)]
pub enum Resolved {
    /// The spec to validate: unchanged, or with the ConfigMap's template inline.
    Spec(Value),
    /// The template cannot be had; the experiment is invalid for this reason.
    Invalid(String),
}

const FIELD: &str = "spec.trialTemplate.configMap";

/// Replaces `trialTemplate.configMap` by the template it points at, when there is no inline
/// `trialSpec` (with both, validation reports the conflict). API failures other than a
/// missing ConfigMap or a refusal are returned for a retry.
pub async fn resolve(client: &kube::Client, spec: Value) -> Result<Resolved, kube::Error> {
    let Some(cm) = spec.pointer("/trialTemplate/configMap").cloned() else {
        return Ok(Resolved::Spec(spec));
    };
    if spec.pointer("/trialTemplate/trialSpec").is_some() {
        return Ok(Resolved::Spec(spec));
    }
    let text = |key: &str| cm.get(key).and_then(Value::as_str).unwrap_or_default();
    let (name, namespace, path) = (
        text("configMapName"),
        text("configMapNamespace"),
        text("templatePath"),
    );
    // Blank fields are validation's to report, with the others.
    if name.is_empty() || namespace.is_empty() || path.is_empty() {
        return Ok(Resolved::Spec(spec));
    }
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let found = match api.get_opt(name).await {
        Ok(found) => found,
        Err(kube::Error::Api(e)) if e.code == 403 => {
            return Ok(Resolved::Invalid(format!(
                "{FIELD}.configMapName: value {name:?}: the operator may not read ConfigMaps in namespace {namespace:?}; hint: grant it get on configmaps there (the namespaced install reads only its own namespace), or copy the template inline into trialSpec"
            )));
        }
        Err(e) => return Err(e),
    };
    let Some(found) = found else {
        return Ok(Resolved::Invalid(format!(
            "{FIELD}.configMapName: value {name:?}: no such ConfigMap in namespace {namespace:?}; hint: create it (Katib's is trial-templates in its own namespace) or copy the template inline into trialSpec"
        )));
    };
    let Some(template) = found.data.as_ref().and_then(|d| d.get(path)) else {
        let keys: Vec<&String> = found.data.iter().flat_map(|d| d.keys()).collect();
        return Ok(Resolved::Invalid(format!(
            "{FIELD}.templatePath: value {path:?}: ConfigMap {namespace}/{name} has no such key; hint: its keys are {keys:?}"
        )));
    };
    let template: Value = match yaml_serde::from_str(template) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => {
            return Ok(Resolved::Invalid(format!(
                "{FIELD}.templatePath: value {path:?}: the entry in ConfigMap {namespace}/{name} is not a Kubernetes object; hint: it must hold the job's YAML (apiVersion, kind, spec)"
            )));
        }
        Err(e) => {
            return Ok(Resolved::Invalid(format!(
                "{FIELD}.templatePath: value {path:?}: the entry in ConfigMap {namespace}/{name} is not valid YAML: {e}"
            )));
        }
    };
    let mut spec = spec;
    if let Some(tt) = spec
        .pointer_mut("/trialTemplate")
        .and_then(Value::as_object_mut)
    {
        tt.remove("configMap");
        tt.insert("trialSpec".into(), template);
    }
    Ok(Resolved::Spec(spec))
}
