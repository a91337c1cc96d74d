//! A `batch/v1` Job trial spec held to the Job schema, as Katib's webhook holds it: a field the
//! Job type does not have (a misspelt `evn`) or a value of the wrong type is refused, since on a
//! cluster it would be dropped or refused and locally it would be silently ignored. Katib
//! converts the template to its compiled `batchv1.Job` and refuses any field the conversion
//! lost; this does the same with `k8s-openapi`'s Job type (Kubernetes 1.33) and
//! `serde_path_to_error` for the path of a wrongly typed value. Beyond the schema, what
//! Kubernetes' Job validation refuses and local mode would ignore is refused too: the pod
//! template's restart policy and images, negative counts, the `completionMode` rules (what
//! only an `Indexed` Job takes, and its caps), `podReplacementPolicy` and the
//! `podFailurePolicy` rules (`pod_failure_policy`). The rules every pod template is held to
//! are `pod`'s.

use super::Errors;
use crate::error::SpecError;
use k8s_openapi::api::batch::v1::{Job, JobSpec};
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
        Err(e) => {
            let said = e.inner().to_string();
            let hint = crate::kubectl_yaml11::boolean_word_hint(&said).unwrap_or_else(|| {
                "hint: this field of a batch/v1 Job takes another type".to_string()
            });
            errs.add(join(PATH, &e.path().to_string()), format!("{said}; {hint}"))
        }
        Ok(job) => {
            let kept = serde_json::to_value(&job).unwrap_or(Value::Null);
            for path in lost_fields(&lenient, &kept, PATH.to_string()) {
                errs.add(
                    path,
                    "is not a field of a batch/v1 Job (Kubernetes 1.33), so a cluster would drop it and Katib refuses it; hint: check its spelling and where it is nested",
                );
            }
            check_pod_rules(&job, errs);
            if let Some(spec) = &job.spec {
                check_counts(spec, errs);
                check_completion_mode(spec, errs);
                check_replacement_policy(spec, errs);
                super::pod_failure_policy::check(spec, errs);
            }
        }
    }
}

/// What Kubernetes' Job validation refuses that the Job's schema allows: a pod template whose
/// `restartPolicy` is not `Never` or `OnFailure` (a pod template defaults to `Always`), and a
/// container (or init container) without an image. Katib passes such a Job on and its trials
/// fail when the Job is created; local mode ignores both, so they ran here.
fn check_pod_rules(job: &Job, errs: &mut Errors) {
    let Some(pod) = job.spec.as_ref().and_then(|s| s.template.spec.as_ref()) else {
        return;
    };
    let pod_path = format!("{PATH}.spec.template.spec");
    if let Some(message) = restart_policy_problem(pod.restart_policy.as_deref()) {
        errs.add(format!("{pod_path}.restartPolicy"), message);
    }
    let has_failure_policy = job
        .spec
        .as_ref()
        .is_some_and(|s| s.pod_failure_policy.is_some());
    let never = pod.restart_policy.as_deref() == Some("Never");
    if has_failure_policy && !never {
        errs.add(
            format!("{PATH}.spec.podFailurePolicy"),
            format!(
                "is allowed only with restartPolicy Never (this pod template's is {:?}), and \
                 Kubernetes refuses the Job; hint: set spec.template.spec.restartPolicy: Never",
                pod.restart_policy.as_deref().unwrap_or("unset")
            ),
        );
    }
    let lists = [
        ("containers", Some(&pod.containers)),
        ("initContainers", pod.init_containers.as_ref()),
    ];
    for (field, containers) in lists {
        for (i, c) in containers.into_iter().flatten().enumerate() {
            if c.image.as_deref().is_none_or(|i| i.trim().is_empty()) {
                errs.add(
                    format!("{pod_path}.{field}[{i}].image"),
                    format!(
                        "is required: container {:?} has no image, and Kubernetes refuses a Job \
                         with such a container (local mode ignores the image, a cluster pulls \
                         it); hint: set image to the image holding the trial's code",
                        c.name
                    ),
                );
            }
        }
    }
}

/// The Job's counts, which Kubernetes' `validateJobSpec` (`pkg/apis/batch/validation`) holds
/// non-negative (`ValidateNonnegativeField`); a Job's `activeDeadlineSeconds` may be 0, unlike
/// a pod's. Local mode reads a negative `backoffLimit` or deadline as unset.
fn check_counts(spec: &JobSpec, errs: &mut Errors) {
    let counts = [
        ("parallelism", spec.parallelism.map(i64::from)),
        ("completions", spec.completions.map(i64::from)),
        ("backoffLimit", spec.backoff_limit.map(i64::from)),
        ("activeDeadlineSeconds", spec.active_deadline_seconds),
        (
            "ttlSecondsAfterFinished",
            spec.ttl_seconds_after_finished.map(i64::from),
        ),
        (
            "backoffLimitPerIndex",
            spec.backoff_limit_per_index.map(i64::from),
        ),
        ("maxFailedIndexes", spec.max_failed_indexes.map(i64::from)),
    ];
    for (field, n) in counts {
        if let Some(n) = n.filter(|n| *n < 0) {
            errs.add(
                format!("{PATH}.spec.{field}"),
                format!(
                    "value {n} is negative, which Kubernetes refuses for a Job; hint: use 0 or more"
                ),
            );
        }
    }
}

/// `completionMode` and what only an `Indexed` Job takes, as `validateJobSpec`,
/// `validateSuccessPolicy` and `validatePodFailurePolicyRule` hold them: an Indexed Job
/// counts `completions` indexes; `backoffLimitPerIndex`, `maxFailedIndexes` (with
/// `backoffLimitPerIndex`, at most `completions`) and `successPolicy` need one, and a
/// `FailIndex` failure rule needs `backoffLimitPerIndex`. A mode holding a placeholder is
/// known only once rendered.
fn check_completion_mode(spec: &JobSpec, errs: &mut Errors) {
    let at = |field: &str| format!("{PATH}.spec.{field}");
    let mode = spec.completion_mode.as_deref();
    if mode.is_some_and(super::holds_placeholder) {
        return;
    }
    if let Some(m) = mode.filter(|m| !["NonIndexed", "Indexed"].contains(m)) {
        errs.add(
            at("completionMode"),
            format!(
                "value {m:?} is not a completion mode, which Kubernetes refuses for a Job; hint: \
                 use NonIndexed (the default) or Indexed"
            ),
        );
        return;
    }
    let indexed = mode == Some("Indexed");
    if indexed && spec.completions.is_none() {
        errs.required(
            at("completions"),
            "completionMode Indexed counts completions indexes, and Kubernetes refuses an \
             Indexed Job without it; set completions (1 for one trial process)",
        );
    }
    let only_indexed = [
        (
            "backoffLimitPerIndex",
            spec.backoff_limit_per_index.is_some(),
        ),
        ("maxFailedIndexes", spec.max_failed_indexes.is_some()),
        ("successPolicy", spec.success_policy.is_some()),
    ];
    for (field, _) in only_indexed.iter().filter(|(_, set)| *set && !indexed) {
        errs.add(
            at(field),
            format!(
                "is allowed only with completionMode Indexed (this Job's is {}), and Kubernetes \
                 refuses the Job; hint: set spec.completionMode: Indexed and completions, or \
                 remove {field}",
                mode.unwrap_or("NonIndexed")
            ),
        );
    }
    check_per_index(spec, indexed, errs);
    if indexed {
        check_indexed_limits(spec, errs);
    }
}

/// `validateJobSpec`'s caps on an Indexed Job, which keep its status's index lists short:
/// parallelism and maxFailedIndexes at most 100000, and above 100000 completions with
/// backoffLimitPerIndex, parallelism and maxFailedIndexes (then required) at most 10000.
fn check_indexed_limits(spec: &JobSpec, errs: &mut Errors) {
    const MAX: i32 = 100_000;
    const HIGH_COMPLETIONS_MAX: i32 = 10_000;
    let high = spec.completions.is_some_and(|c| c > MAX) && spec.backoff_limit_per_index.is_some();
    let cap = if high { HIGH_COMPLETIONS_MAX } else { MAX };
    let when = if high {
        " with more than 100000 completions and backoffLimitPerIndex"
    } else {
        ""
    };
    for (field, value) in [
        ("parallelism", spec.parallelism),
        ("maxFailedIndexes", spec.max_failed_indexes),
    ] {
        if let Some(v) = value.filter(|v| *v > cap) {
            errs.add(
                format!("{PATH}.spec.{field}"),
                format!(
                    "value {v} is more than Kubernetes takes for an Indexed Job{when} ({cap}); \
                     hint: use at most {cap}"
                ),
            );
        }
    }
    if high && spec.max_failed_indexes.is_none() {
        errs.required(
            format!("{PATH}.spec.maxFailedIndexes"),
            "Kubernetes needs it for an Indexed Job with more than 100000 completions and \
             backoffLimitPerIndex; set it (at most 10000)",
        );
    }
}

/// `podReplacementPolicy` as `validateJobSpec` holds it: `TerminatingOrFailed` or `Failed`,
/// and `Failed` beside a `podFailurePolicy`, which judges a pod only once it has failed
/// (KEP-3939). A policy holding a placeholder is known only once rendered.
fn check_replacement_policy(spec: &JobSpec, errs: &mut Errors) {
    let policy = spec.pod_replacement_policy.as_deref();
    let Some(p) = policy.filter(|p| !super::holds_placeholder(p)) else {
        return;
    };
    let at = format!("{PATH}.spec.podReplacementPolicy");
    if !["TerminatingOrFailed", "Failed"].contains(&p) {
        errs.add(
            at,
            format!(
                "value {p:?} is not a pod replacement policy, which Kubernetes refuses for a \
                 Job; hint: use TerminatingOrFailed or Failed"
            ),
        );
    } else if p != "Failed" && spec.pod_failure_policy.is_some() {
        errs.add(
            at,
            format!(
                "value {p:?} is refused by Kubernetes beside spec.podFailurePolicy, which \
                 judges a pod only once it has failed; hint: use Failed, or leave \
                 podReplacementPolicy out (it then defaults to Failed)"
            ),
        );
    }
}

/// What `maxFailedIndexes` and a `FailIndex` rule need of `backoffLimitPerIndex` and
/// `completions`.
fn check_per_index(spec: &JobSpec, indexed: bool, errs: &mut Errors) {
    let per_index = spec.backoff_limit_per_index.is_some();
    if let Some(max) = spec.max_failed_indexes {
        if !per_index {
            errs.required(
                format!("{PATH}.spec.backoffLimitPerIndex"),
                "maxFailedIndexes counts the indexes failed after backoffLimitPerIndex retries, \
                 and Kubernetes refuses it alone; set backoffLimitPerIndex",
            );
        }
        if let Some(completions) = spec.completions.filter(|c| indexed && max > *c) {
            errs.add(
                format!("{PATH}.spec.maxFailedIndexes"),
                format!(
                    "value {max} is more than completions ({completions}), which Kubernetes \
                     refuses; hint: use at most {completions}"
                ),
            );
        }
    }
    let rules = spec.pod_failure_policy.iter().flat_map(|p| &p.rules);
    for (i, rule) in rules.enumerate() {
        if rule.action == "FailIndex" && !per_index {
            errs.add(
                format!("{PATH}.spec.podFailurePolicy.rules[{i}].action"),
                "value \"FailIndex\" needs spec.backoffLimitPerIndex, and Kubernetes refuses the \
                 Job without it; hint: set backoffLimitPerIndex (with completionMode: Indexed), \
                 or use FailJob",
            );
        }
    }
}

const RESTART_HINT: &str = "hint: set restartPolicy: Never (a failed trial is then retried up \
                            to spec.backoffLimit times) or OnFailure";

/// Why Kubernetes refuses a Job whose pod template sets this `restartPolicy`, if it does. An
/// unset one is only warned about ([`unset_restart_policy`]).
fn restart_policy_problem(policy: Option<&str>) -> Option<String> {
    match policy {
        None | Some("" | "Never" | "OnFailure") => None,
        Some(other) => Some(format!(
            "value {other:?} is not allowed in a Job: Kubernetes accepts only Never and \
             OnFailure; {RESTART_HINT}"
        )),
    }
}

/// The warning for a `batch/v1` Job trial spec whose pod template sets no `restartPolicy`:
/// Kubernetes defaults it to `Always` and then refuses the Job, while local mode runs it once.
/// A warning for `vernier run`; `vernier operator` refuses the experiment with it.
pub fn unset_restart_policy(spec: &Value) -> Option<SpecError> {
    if !crate::template::is_batch_job(spec) {
        return None;
    }
    let policy = spec.pointer("/spec/template/spec/restartPolicy");
    let unset = policy.is_none_or(|p| p.is_null() || p.as_str() == Some(""));
    unset.then(|| {
        SpecError::new(
            format!("{PATH}.spec.template.spec.restartPolicy"),
            format!(
                "is not set, so on a cluster the pod template defaults to Always, which \
                 Kubernetes refuses for a Job (only Never and OnFailure); local mode runs the \
                 trial once; {RESTART_HINT}"
            ),
        )
    })
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

    #[test]
    fn a_pod_failure_policy_needs_restart_policy_never() {
        let policy = json!({"podFailurePolicy": {"rules": [
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]}});
        let c = json!({"name": "main", "image": "i"});
        assert_eq!(
            problems(&job(c.clone(), policy.clone())),
            Vec::<String>::new()
        );
        let mut on_failure = job(c, policy);
        on_failure["spec"]["template"]["spec"]["restartPolicy"] = json!("OnFailure");
        let got = problems(&on_failure);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(
            got[0].starts_with("spec.trialTemplate.trialSpec.spec.podFailurePolicy: is allowed only with restartPolicy Never (this pod template's is \"OnFailure\")"),
            "{got:?}"
        );
    }

    fn problems(spec: &Value) -> Vec<String> {
        let mut errs = Errors::default();
        check(spec, &mut errs);
        errs.lines()
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
    fn what_kubernetes_refuses_in_a_jobs_pod_is_refused() {
        let pod = "spec.trialTemplate.trialSpec.spec.template.spec";
        let c = |image: Value| json!({"name": "t", "image": image, "command": ["t"]});
        // (restartPolicy, container image, init container image, the problems as path, needle)
        type Case = (Value, Value, Option<Value>, Vec<(String, &'static str)>);
        let table: Vec<Case> = vec![
            (json!("Never"), json!("python:3"), None, vec![]),
            (
                json!("OnFailure"),
                json!("python:3"),
                Some(json!("busybox")),
                vec![],
            ),
            (
                json!("Always"),
                json!("python:3"),
                None,
                vec![(
                    format!("{pod}.restartPolicy"),
                    "value \"Always\" is not allowed in a Job",
                )],
            ),
            (
                json!("Never"),
                Value::Null,
                Some(json!(" ")),
                vec![
                    (
                        format!("{pod}.containers[0].image"),
                        "container \"t\" has no image",
                    ),
                    (format!("{pod}.initContainers[0].image"), "is required"),
                ],
            ),
        ];
        for (policy, image, init_image, want) in table {
            let mut spec = job(c(image), json!({}));
            spec["spec"]["template"]["spec"]["restartPolicy"] = policy;
            if let Some(init) = init_image {
                spec["spec"]["template"]["spec"]["initContainers"] = json!([c(init)]);
            }
            crate::tests::assert_problems_with_hints(&problems(&spec), &want);
        }
    }

    #[test]
    fn what_kubernetes_refuses_in_a_jobs_counts_and_completion_mode_is_refused() {
        let s = "spec.trialTemplate.trialSpec.spec";
        let c = json!({"name": "t", "image": "i", "command": ["t"]});
        let fail_index = json!({"rules": [
            {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [42]}}]});
        let exit_42 = json!({"rules": [
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]});
        // (job spec refused, its problem's path and words, the nearest job spec accepted)
        let table: Vec<(Value, String, &str, Value)> = vec![
            (
                json!({"parallelism": -1}),
                format!("{s}.parallelism"),
                "value -1 is negative, which Kubernetes refuses for a Job; hint: use 0 or more",
                json!({"parallelism": 0}),
            ),
            (
                json!({"completions": -2}),
                format!("{s}.completions"),
                "value -2 is negative",
                json!({"completions": 0}),
            ),
            (
                json!({"backoffLimit": -1}),
                format!("{s}.backoffLimit"),
                "value -1 is negative",
                json!({"backoffLimit": 0}),
            ),
            (
                json!({"activeDeadlineSeconds": -5}),
                format!("{s}.activeDeadlineSeconds"),
                "value -5 is negative",
                json!({"activeDeadlineSeconds": 0}),
            ),
            (
                json!({"completionMode": "Index"}),
                format!("{s}.completionMode"),
                "value \"Index\" is not a completion mode",
                json!({"completionMode": "NonIndexed"}),
            ),
            (
                json!({"completionMode": "Indexed"}),
                format!("{s}.completions"),
                "is required; hint: completionMode Indexed counts completions indexes",
                json!({"completionMode": "Indexed", "completions": 1}),
            ),
            (
                json!({"backoffLimitPerIndex": 1}),
                format!("{s}.backoffLimitPerIndex"),
                "is allowed only with completionMode Indexed (this Job's is NonIndexed)",
                json!({"backoffLimitPerIndex": 1, "completionMode": "Indexed", "completions": 2}),
            ),
            (
                json!({"completionMode": "NonIndexed", "successPolicy": {"rules": [{"succeededCount": 1}]}}),
                format!("{s}.successPolicy"),
                "is allowed only with completionMode Indexed",
                json!({"completionMode": "Indexed", "completions": 2, "successPolicy": {"rules": [{"succeededCount": 1}]}}),
            ),
            (
                json!({"completionMode": "Indexed", "completions": 2, "maxFailedIndexes": 1}),
                format!("{s}.backoffLimitPerIndex"),
                "is required; hint: maxFailedIndexes counts",
                json!({"completionMode": "Indexed", "completions": 2, "maxFailedIndexes": 1, "backoffLimitPerIndex": 0}),
            ),
            (
                json!({"completionMode": "Indexed", "completions": 2, "maxFailedIndexes": 3, "backoffLimitPerIndex": 1}),
                format!("{s}.maxFailedIndexes"),
                "value 3 is more than completions (2)",
                json!({"completionMode": "Indexed", "completions": 2, "maxFailedIndexes": 2, "backoffLimitPerIndex": 1}),
            ),
            (
                json!({"completionMode": "Indexed", "completions": 2, "podFailurePolicy": fail_index}),
                format!("{s}.podFailurePolicy.rules[0].action"),
                "value \"FailIndex\" needs spec.backoffLimitPerIndex",
                json!({"completionMode": "Indexed", "completions": 2, "backoffLimitPerIndex": 1, "podFailurePolicy": fail_index}),
            ),
            (
                json!({"completionMode": "Indexed", "completions": 10, "parallelism": 100_001}),
                format!("{s}.parallelism"),
                "value 100001 is more than Kubernetes takes for an Indexed Job (100000)",
                json!({"completionMode": "Indexed", "completions": 10, "parallelism": 100_000}),
            ),
            (
                json!({"completionMode": "Indexed", "completions": 200_000, "backoffLimitPerIndex": 1,
                       "maxFailedIndexes": 10, "parallelism": 20_000}),
                format!("{s}.parallelism"),
                "value 20000 is more than Kubernetes takes for an Indexed Job with more than 100000 completions and backoffLimitPerIndex (10000)",
                json!({"completionMode": "Indexed", "completions": 200_000, "backoffLimitPerIndex": 1,
                       "maxFailedIndexes": 10, "parallelism": 10_000}),
            ),
            (
                json!({"completionMode": "Indexed", "completions": 200_000, "backoffLimitPerIndex": 1}),
                format!("{s}.maxFailedIndexes"),
                "is required; hint: Kubernetes needs it for an Indexed Job with more than 100000 completions",
                json!({"completionMode": "Indexed", "completions": 200_000, "backoffLimitPerIndex": 1,
                       "maxFailedIndexes": 5}),
            ),
            (
                json!({"podReplacementPolicy": "Terminating"}),
                format!("{s}.podReplacementPolicy"),
                "value \"Terminating\" is not a pod replacement policy, which Kubernetes refuses for a Job; hint: use TerminatingOrFailed or Failed",
                json!({"podReplacementPolicy": "TerminatingOrFailed"}),
            ),
            (
                json!({"podReplacementPolicy": "TerminatingOrFailed", "podFailurePolicy": exit_42}),
                format!("{s}.podReplacementPolicy"),
                "value \"TerminatingOrFailed\" is refused by Kubernetes beside spec.podFailurePolicy",
                json!({"podReplacementPolicy": "Failed", "podFailurePolicy": exit_42}),
            ),
        ];
        for (refused, path, words, accepted) in table {
            let got = problems(&job(c.clone(), refused));
            crate::tests::assert_problems_with_hints(&got, &[(path, words)]);
            assert_eq!(
                problems(&job(c.clone(), accepted.clone())),
                Vec::<String>::new(),
                "{accepted}"
            );
        }
        // A mode known only once rendered is not judged.
        let rendered_later =
            json!({"completionMode": "${trialParameters.mode}", "backoffLimitPerIndex": 1});
        assert_eq!(problems(&job(c, rendered_later)), Vec::<String>::new());
    }

    #[test]
    fn an_unset_restart_policy_is_warned_about_not_refused() {
        let mut spec = job(
            json!({"name": "t", "image": "i", "command": ["t"]}),
            json!({}),
        );
        assert!(unset_restart_policy(&spec).is_none());
        spec["spec"]["template"]["spec"]
            .as_object_mut()
            .unwrap()
            .remove("restartPolicy");
        assert!(problems(&spec).is_empty());
        let w = unset_restart_policy(&spec).unwrap().to_string();
        assert!(
            w.starts_with(
                "spec.trialTemplate.trialSpec.spec.template.spec.restartPolicy: is not set"
            ) && w.contains("defaults to Always"),
            "{w}"
        );
        spec["kind"] = json!("TFJob");
        assert!(unset_restart_policy(&spec).is_none());
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
