//! Rules for `spec.trialTemplate`: where the template comes from, the trial parameters and
//! their references, and that placeholders and trial parameters match one to one.

use super::{Errors, is_blank};
use crate::reference::{Reference, placeholder, placeholder_names};
use crate::types::{Experiment, TrialTemplate};
use serde_json::Value;
use std::collections::HashSet;

const T: &str = "spec.trialTemplate";

pub(super) fn check(exp: &Experiment, errs: &mut Errors) {
    let Some(tt) = &exp.spec.trial_template else {
        errs.required(
            T,
            "describe the job each trial runs in trialTemplate.trialSpec",
        );
        return;
    };
    if is_blank(&tt.primary_container_name) {
        errs.required(
            format!("{T}.primaryContainerName"),
            "name the container that runs the training code",
        );
    }
    for (field, value) in [
        ("successCondition", &tt.success_condition),
        ("failureCondition", &tt.failure_condition),
    ] {
        if is_blank(value) {
            errs.required(
                format!("{T}.{field}"),
                "it is filled in only for Job, TFJob, PyTorchJob, XGBoostJob, MXJob, MPIJob and \
                 TrainJob templates written inline; write a GJSON condition for other kinds",
            );
        }
    }
    check_source(tt, errs);
    check_trial_parameters(exp, tt, errs);
    if let Some(spec) = &tt.trial_spec {
        check_trial_spec(spec, errs);
        super::batch_job::check(spec, errs);
        super::quantity::check(spec, &format!("{T}.trialSpec"), errs);
        super::pod::check(spec, &format!("{T}.trialSpec"), errs);
        check_placeholders(tt, spec, errs);
        if let Some(primary) = tt
            .primary_container_name
            .as_deref()
            .filter(|p| !p.is_empty())
        {
            check_known_kind(spec, primary, errs);
        }
    }
}

/// The checks a cluster makes of the kinds whose shape is known (Job and the training
/// operator's jobs): replica sets as the training operator validates them, and a container
/// named `primaryContainerName`, which Katib's metrics collector attaches to (without it
/// Katib's pod webhook refuses the trial's pod). What local mode needs beyond that (a
/// command, literal env values) is judged by the runner, not here.
fn check_known_kind(spec: &Value, primary: &str, errs: &mut Errors) {
    let kind = spec.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = spec.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let known = crate::template::JobKind::of(kind).is_some()
        || (kind == "Job" && api_version == "batch/v1");
    if !known {
        return;
    }
    let problems = crate::template::check_replica_set(spec, primary);
    if !problems.is_empty() {
        problems.into_iter().for_each(|e| errs.0.push(e));
        return;
    }
    if let Err(e) = crate::template::check_primary_container(spec, primary) {
        errs.0.push(e);
    }
}

fn check_source(tt: &TrialTemplate, errs: &mut Errors) {
    match (&tt.trial_spec, &tt.config_map) {
        (Some(_), Some(_)) => errs.add(
            T,
            "only one of trialSpec and configMap may be set; hint: remove one of them",
        ),
        (None, None) => errs.required(
            format!("{T}.trialSpec"),
            "write the job inline in trialSpec, or point configMap at a stored template",
        ),
        (None, Some(cm)) => {
            for (field, value) in [
                ("configMapName", &cm.config_map_name),
                ("configMapNamespace", &cm.config_map_namespace),
                ("templatePath", &cm.template_path),
            ] {
                if is_blank(value) {
                    errs.required(format!("{T}.configMap.{field}"), "");
                }
            }
        }
        (Some(_), None) => {}
    }
}

fn check_trial_parameters(exp: &Experiment, tt: &TrialTemplate, errs: &mut Errors) {
    if tt.trial_parameters.is_empty() {
        errs.required(
            format!("{T}.trialParameters"),
            "map each placeholder to a parameter, e.g. {name: learningRate, reference: lr}",
        );
        return;
    }
    let params = &exp.spec.parameters;
    let param_names: HashSet<&str> = params.iter().map(|p| p.name.as_str()).collect();
    let spec = tt.trial_spec.as_ref();
    // Names and references seen so far: one lookup each keeps 100,000 entries linear.
    let mut names: HashSet<&str> = HashSet::with_capacity(tt.trial_parameters.len());
    let mut references: HashSet<&str> = HashSet::with_capacity(tt.trial_parameters.len());
    for (i, tp) in tt.trial_parameters.iter().enumerate() {
        let path = format!("{T}.trialParameters[{i}]");
        let repeated_name = !names.insert(tp.name.as_str());
        if tp.name.is_empty() {
            errs.required(format!("{path}.name"), "");
        } else if tp.name.contains(['{', '}']) {
            errs.add(
                format!("{path}.name"),
                format!("value {:?} must not contain '{{' or '}}'", tp.name),
            );
        } else if repeated_name {
            errs.add(
                format!("{path}.name"),
                format!("value {:?} appears twice", tp.name),
            );
        }
        let rpath = format!("{path}.reference");
        if tp.reference.is_empty() {
            errs.required(rpath, "name a parameter from spec.parameters");
            continue;
        }
        if !references.insert(tp.reference.as_str()) {
            errs.add(
                &rpath,
                format!(
                    "value {:?} is referenced twice; hint: give each trial parameter its own \
                     spec.parameters entry, and use the first one's name where both appear",
                    tp.reference
                ),
            );
        }
        match Reference::parse(&tp.reference) {
            Err(why) => errs.add(rpath, format!("value {:?}: {why}", tp.reference)),
            Ok(Reference::Parameter(name)) => {
                if !params.is_empty() && !param_names.contains(name.as_str()) {
                    errs.add(
                        rpath,
                        format!(
                            "value {name:?} is not a parameter in spec.parameters; hint: use one of {}",
                            first_names(params.iter().map(|p| p.name.as_str()))
                        ),
                    );
                }
            }
            Ok(Reference::Label(key)) => check_meta_key(spec, "labels", &key, &rpath, errs),
            Ok(Reference::Annotation(key)) => {
                check_meta_key(spec, "annotations", &key, &rpath, errs)
            }
            Ok(_) => {}
        }
    }
    // Katib fails every trial when an assignment has no trial parameter to go to.
    for (i, p) in params.iter().enumerate() {
        if !p.name.is_empty() && !references.contains(p.name.as_str()) {
            errs.add(
                format!("spec.parameters[{i}].name"),
                format!(
                    "parameter {:?} is not referenced by any {T}.trialParameters entry; \
                     hint: add {{name: <placeholder>, reference: {}}}",
                    p.name, p.name
                ),
            );
        }
    }
}

fn check_meta_key(spec: Option<&Value>, field: &str, key: &str, path: &str, errs: &mut Errors) {
    // A ConfigMap template is not available here; it is checked when rendered.
    let Some(spec) = spec else {
        return;
    };
    let found = spec
        .get("metadata")
        .and_then(|m| m.get(field))
        .and_then(|m| m.get(key));
    if found.is_none() {
        errs.add(
            path,
            format!(
                "{field} key {key:?} is not set in {T}.trialSpec.metadata.{field}; hint: add it there"
            ),
        );
    }
}

fn check_trial_spec(spec: &Value, errs: &mut Errors) {
    let path = format!("{T}.trialSpec");
    let Some(obj) = spec.as_object() else {
        errs.add(
            path,
            "must be a Kubernetes object (a mapping with apiVersion and kind)",
        );
        return;
    };
    for field in ["apiVersion", "kind"] {
        if obj
            .get(field)
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            errs.required(format!("{path}.{field}"), "");
        }
    }
    let text = |field: &str| obj.get(field).and_then(Value::as_str).unwrap_or("");
    if let Some(served) = unserved_version(text("apiVersion"), text("kind")) {
        errs.add(
            format!("{path}.apiVersion"),
            format!(
                "value {:?} is not served for kind {}, so no trial could be created on a \
                 cluster; hint: use {}",
                text("apiVersion"),
                text("kind"),
                served.join(" or ")
            ),
        );
    }
    if let Some(meta) = obj.get("metadata") {
        for field in ["name", "namespace"] {
            if let Some(v) = meta.get(field) {
                errs.add(
                    format!("{path}.metadata.{field}"),
                    format!(
                        "value {v} must not be set; hint: each trial's job is named after the trial, in the experiment's namespace"
                    ),
                );
            }
        }
    }
}

/// The versions that serve `kind` when `api_version` names a group whose kinds are known (a
/// Job of `batch`, the training operator's jobs of `kubeflow.org`) but a version that group
/// does not serve for it; `None` otherwise, also for groups of custom resources, which only
/// the cluster knows.
fn unserved_version(api_version: &str, kind: &str) -> Option<&'static [&'static str]> {
    let (group, _) = api_version.split_once('/')?;
    let served: &'static [&'static str] = match (group, kind) {
        ("batch", "Job") => &["batch/v1"],
        ("kubeflow.org", "TFJob" | "PyTorchJob" | "XGBoostJob" | "MXJob") => &["kubeflow.org/v1"],
        ("kubeflow.org", "MPIJob") => &["kubeflow.org/v1", "kubeflow.org/v2beta1"],
        _ => return None,
    };
    (!served.contains(&api_version)).then_some(served)
}

fn check_placeholders(tt: &TrialTemplate, spec: &Value, errs: &mut Errors) {
    let text = spec.to_string();
    let used: Vec<&str> = placeholder_names(&text);
    let defined: HashSet<&str> = tt
        .trial_parameters
        .iter()
        .map(|tp| tp.name.as_str())
        .collect();
    let mut reported: HashSet<&str> = HashSet::new();
    for name in &used {
        if !defined.contains(name) && reported.insert(name) {
            errs.add(
                format!("{T}.trialSpec"),
                format!(
                    "placeholder {:?} is not defined in {T}.trialParameters; hint: add {{name: {name}, reference: <parameter>}}",
                    placeholder(name)
                ),
            );
        }
    }
    let used: HashSet<&str> = used.into_iter().collect();
    for (i, tp) in tt.trial_parameters.iter().enumerate() {
        // A name with a brace is refused already and can never be written as a placeholder.
        let writable = !tp.name.is_empty() && !tp.name.contains(['{', '}']);
        if writable && !used.contains(tp.name.as_str()) {
            errs.add(
                format!("{T}.trialParameters[{i}].name"),
                format!(
                    "trial parameter {:?} is not used in {T}.trialSpec; hint: write {} where the value belongs, or remove the entry",
                    tp.name,
                    placeholder(&tp.name)
                ),
            );
        }
    }
}

/// At most ten names for a hint, then how many more: a hint listing 100,000 parameters once per
/// wrong reference grew quadratically.
fn first_names<'a>(names: impl ExactSizeIterator<Item = &'a str>) -> String {
    const SHOWN: usize = 10;
    let total = names.len();
    let mut text = names.take(SHOWN).collect::<Vec<_>>().join(", ");
    if total > SHOWN {
        text.push_str(&format!(" (and {} more)", total - SHOWN));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_a_known_group_does_not_serve_are_named_with_those_it_does() {
        let cases = [
            ("Job", "batch/v1", None),
            ("Job", "batch/v2", Some("batch/v1")),
            ("TFJob", "kubeflow.org/v1", None),
            ("PyTorchJob", "kubeflow.org/v2", Some("kubeflow.org/v1")),
            ("MPIJob", "kubeflow.org/v2beta1", None),
            (
                "MPIJob",
                "kubeflow.org/v1alpha2",
                Some("kubeflow.org/v1 or kubeflow.org/v2beta1"),
            ),
            // Groups of custom resources are the cluster's to judge.
            ("Job", "example.com/v1", None),
            ("Workflow", "argoproj.io/v1alpha1", None),
            ("TrainJob", "trainer.kubeflow.org/v1alpha1", None),
            ("Job", "v1", None),
        ];
        for (kind, version, want) in cases {
            let served = unserved_version(version, kind).map(|s| s.join(" or "));
            assert_eq!(served.as_deref(), want, "{kind} {version}");
        }
    }
}
