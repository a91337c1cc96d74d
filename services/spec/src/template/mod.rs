//! Katib's trial-template substitution (`manifest/generator.go`): the trial spec with every
//! `${trialParameters.x}` replaced for one trial, plus finding the container to run locally
//! (local mode) or checking that the primary container exists (a cluster).

mod container;
pub mod downward_api;
pub mod expansion;
pub mod mounts;
pub mod replicas;
mod shell_quotes;

pub use container::{
    ContainerSpec, check_primary_container, container_from, local_blockers, pod_template_of,
    primary_container, primary_container_blockers,
};
pub use replicas::{
    JobKind, ReplicaSet, ReplicaSpec, ReplicaType, RestartPolicy, check_replica_set,
    replica_local_blockers, replica_set, training_job_ignored,
};
pub use shell_quotes::{katib_unquoted, unquote_katib_words};

use crate::error::SpecError;
use crate::reference::{Reference, placeholder, substitute};
use crate::types::Experiment;
use serde_json::Value;

const T: &str = "spec.trialTemplate";

/// Whether a trial spec is a Kubernetes `batch/v1` Job, the one kind whose schema and run
/// controls (`backoffLimit`, `activeDeadlineSeconds`) Vernier knows beyond the training jobs.
pub fn is_batch_job(spec: &Value) -> bool {
    spec.get("kind").and_then(Value::as_str) == Some("Job")
        && spec.get("apiVersion").and_then(Value::as_str) == Some("batch/v1")
}

/// Renders the trial spec for `trial_name` with `assignment` (parameter name → value as text).
///
/// Like Katib, substitution is textual on the template's JSON form. Unlike Katib, each value is
/// JSON-escaped first: a categorical value holding `"` or `\` stays one string instead of
/// breaking the document or injecting fields into it.
pub fn render_trial_spec(
    exp: &Experiment,
    trial_name: &str,
    assignment: &[(String, String)],
) -> Result<Value, SpecError> {
    let tt = exp
        .spec
        .trial_template
        .as_ref()
        .ok_or_else(|| SpecError::new(T, "is required"))?;
    let spec = tt.trial_spec.as_ref().ok_or_else(|| {
        SpecError::new(
            format!("{T}.trialSpec"),
            "is required to run a trial; hint: a configMap template must be copied inline into trialSpec",
        )
    })?;
    let namespace = exp.namespace();
    let target = Target {
        spec,
        trial_name,
        namespace,
        assignment,
    };
    let mut values: Vec<(&str, String)> = Vec::with_capacity(tt.trial_parameters.len());
    for (i, tp) in tt.trial_parameters.iter().enumerate() {
        let path = format!("{T}.trialParameters[{i}].reference");
        let value = target.value_of(&tp.reference, &path)?;
        values.push((tp.name.as_str(), json_escape(&value)));
    }
    // One pass over the template, so a value that itself looks like a placeholder is inserted
    // as is instead of being substituted again.
    let text = substitute(&spec.to_string(), |name| {
        values
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    })
    .map_err(|name| {
        SpecError::new(
            format!("{T}.trialSpec"),
            format!(
                "placeholder {:?} is not defined in {T}.trialParameters",
                placeholder(&name)
            ),
        )
    })?;
    let mut rendered: Value = serde_json::from_str(&text).map_err(|e| {
        SpecError::new(
            format!("{T}.trialSpec"),
            format!("the rendered template is not valid JSON: {e}"),
        )
    })?;
    name_object(&mut rendered, trial_name, namespace)?;
    Ok(rendered)
}

/// What a trial's template is rendered for: the values its trial parameters can reference.
struct Target<'a> {
    spec: &'a Value,
    trial_name: &'a str,
    namespace: &'a str,
    assignment: &'a [(String, String)],
}

impl Target<'_> {
    /// The value of one trial parameter's `reference`; `path` names it in errors.
    fn value_of(&self, reference: &str, path: &str) -> Result<String, SpecError> {
        let parsed = Reference::parse(reference)
            .map_err(|why| SpecError::new(path, format!("value {reference:?}: {why}")))?;
        match parsed {
            Reference::Parameter(name) => self.assigned(&name, path),
            Reference::Name => Ok(self.trial_name.to_string()),
            Reference::Namespace => Ok(self.namespace.to_string()),
            Reference::Kind => string_at(self.spec, &["kind"], path),
            Reference::ApiVersion => string_at(self.spec, &["apiVersion"], path),
            Reference::Label(key) => string_at(self.spec, &["metadata", "labels", &key], path),
            Reference::Annotation(key) => {
                string_at(self.spec, &["metadata", "annotations", &key], path)
            }
        }
    }

    fn assigned(&self, name: &str, path: &str) -> Result<String, SpecError> {
        let found = self.assignment.iter().find(|(n, _)| n == name);
        found.map(|(_, v)| v.clone()).ok_or_else(|| {
            let names: Vec<&str> = self.assignment.iter().map(|(n, _)| n.as_str()).collect();
            SpecError::new(
                path,
                format!(
                    "parameter {name:?} has no value in the trial's assignment; hint: \
                     its assignment has {}",
                    names.join(", ")
                ),
            )
        })
    }
}

/// The rendered job is named after its trial, in the experiment's namespace.
fn name_object(rendered: &mut Value, trial_name: &str, namespace: &str) -> Result<(), SpecError> {
    let obj = rendered
        .as_object_mut()
        .ok_or_else(|| SpecError::new(format!("{T}.trialSpec"), "must be a Kubernetes object"))?;
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Default::default()));
    if !meta.is_object() {
        *meta = Value::Object(Default::default());
    }
    if let Value::Object(meta) = meta {
        meta.insert("name".into(), trial_name.into());
        meta.insert("namespace".into(), namespace.into());
    }
    Ok(())
}

/// `value` as it must appear between the quotes of a JSON string.
fn json_escape(value: &str) -> String {
    let quoted = Value::String(value.to_string()).to_string();
    quoted[1..quoted.len() - 1].to_string()
}

fn string_at(spec: &Value, keys: &[&str], path: &str) -> Result<String, SpecError> {
    let found = keys
        .iter()
        .try_fold(spec, |v, k| v.get(k))
        .and_then(Value::as_str);
    found.map(str::to_string).ok_or_else(|| {
        SpecError::new(
            path,
            format!(
                "{T}.trialSpec.{} is not set; hint: add it to the template",
                keys.join(".")
            ),
        )
    })
}
