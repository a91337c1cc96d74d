//! A Job trial's `podFailurePolicy` rules held to what Kubernetes' Job validation takes (at
//! most 20 rules; each with a known action and exactly one of `onExitCodes` and
//! `onPodConditions`; exit codes with a known operator, 1 to 255 ordered distinct values, no
//! `0` under `In`, a `containerName` the pod has; conditions with a qualified type and a
//! known status), as `validatePodFailurePolicy` in `pkg/apis/batch/validation` does.
//! The Job's schema lets all of these through: a cluster then refuses the Job and every trial
//! fails, while local mode would judge its trials by a rule no cluster would take.

use super::{Errors, holds_placeholder};
use k8s_openapi::api::batch::v1::{
    JobSpec, PodFailurePolicyOnExitCodesRequirement, PodFailurePolicyOnPodConditionsPattern,
};
use k8s_openapi::api::core::v1::PodSpec;

const PATH: &str = "spec.trialTemplate.trialSpec.spec.podFailurePolicy";
const MAX_RULES: usize = 20;
const MAX_PATTERNS: usize = 20;
const MAX_EXIT_CODES: usize = 255;
const ACTIONS: [&str; 4] = ["FailJob", "FailIndex", "Ignore", "Count"];
const OPERATORS: [&str; 2] = ["In", "NotIn"];
/// An unset status defaults to `True`.
const STATUSES: [&str; 4] = ["", "True", "False", "Unknown"];

/// Every problem of the Job's pod failure policy, if it has one.
pub(super) fn check(spec: &JobSpec, errs: &mut Errors) {
    let Some(policy) = &spec.pod_failure_policy else {
        return;
    };
    if policy.rules.len() > MAX_RULES {
        errs.add(
            format!("{PATH}.rules"),
            format!(
                "has {} rules, and Kubernetes takes at most {MAX_RULES}; hint: merge rules \
                 with the same action",
                policy.rules.len()
            ),
        );
    }
    let containers = container_names(spec.template.spec.as_ref());
    for (i, rule) in policy.rules.iter().enumerate() {
        let at = format!("{PATH}.rules[{i}]");
        check_choice(&rule.action, format!("{at}.action"), &ACTIONS, errs);
        let conditions = rule.on_pod_conditions.as_deref().unwrap_or_default();
        match (&rule.on_exit_codes, conditions.is_empty()) {
            (Some(_), false) => errs.add(
                at,
                "sets both onExitCodes and onPodConditions, and Kubernetes takes one per rule; \
                 hint: write two rules",
            ),
            (None, true) => errs.add(
                at,
                "sets neither onExitCodes nor onPodConditions, and Kubernetes needs one; hint: \
                 e.g. onExitCodes: {operator: In, values: [42]}",
            ),
            (Some(codes), true) => check_exit_codes(codes, &containers, &at, errs),
            (None, false) => check_conditions(conditions, &at, errs),
        }
    }
}

/// A required choice among `allowed`, unless a placeholder stands for it.
fn check_choice(value: &str, at: String, allowed: &[&str], errs: &mut Errors) {
    match value {
        v if holds_placeholder(v) => {}
        "" => errs.required(at, &format!("use one of {}", allowed.join(", "))),
        v if !allowed.contains(&v) => errs.not_one_of(at, v, allowed),
        _ => {}
    }
}

/// The names of the pod template's containers and init containers.
fn container_names(pod: Option<&PodSpec>) -> Vec<&str> {
    let Some(pod) = pod else {
        return Vec::new();
    };
    let init = pod.init_containers.iter().flatten();
    let all = pod.containers.iter().chain(init);
    all.map(|c| c.name.as_str()).collect()
}

fn check_exit_codes(
    codes: &PodFailurePolicyOnExitCodesRequirement,
    containers: &[&str],
    at: &str,
    errs: &mut Errors,
) {
    let at = format!("{at}.onExitCodes");
    check_choice(&codes.operator, format!("{at}.operator"), &OPERATORS, errs);
    if let Some(problem) = exit_values_problem(&codes.operator, &codes.values) {
        errs.add(format!("{at}.values"), problem);
    }
    if let Some(name) = &codes.container_name
        && !holds_placeholder(name)
        && !containers.contains(&name.as_str())
    {
        errs.add(
            format!("{at}.containerName"),
            format!(
                "value {name:?} names no container of the pod template, and Kubernetes refuses \
                 the Job; hint: use one of {containers:?}, or leave it out to match every \
                 container"
            ),
        );
    }
}

/// Why Kubernetes refuses these exit code values under `operator`, if it does.
fn exit_values_problem(operator: &str, values: &[i32]) -> Option<String> {
    if values.is_empty() {
        return Some("is required: at least one exit code; hint: e.g. values: [42]".into());
    }
    if values.len() > MAX_EXIT_CODES {
        return Some(format!(
            "has {} exit codes, and Kubernetes takes at most {MAX_EXIT_CODES}; hint: use \
             operator NotIn with the codes left out",
            values.len()
        ));
    }
    if values.windows(2).any(|w| w[0] >= w[1]) {
        return Some(format!(
            "value {values:?} is not in increasing order without repeats, which Kubernetes \
             requires; hint: sort them and drop duplicates"
        ));
    }
    if operator == "In" && values.contains(&0) {
        return Some(
            "holds 0 under operator In, which Kubernetes refuses (a container that exits 0 \
             succeeded); hint: drop 0"
                .into(),
        );
    }
    None
}

fn check_conditions(
    patterns: &[PodFailurePolicyOnPodConditionsPattern],
    at: &str,
    errs: &mut Errors,
) {
    let at = format!("{at}.onPodConditions");
    if patterns.len() > MAX_PATTERNS {
        errs.add(
            at.clone(),
            format!(
                "has {} patterns, and Kubernetes takes at most {MAX_PATTERNS}; hint: spread \
                 them over rules with the same action",
                patterns.len()
            ),
        );
    }
    for (j, pattern) in patterns.iter().enumerate() {
        let type_ = pattern.type_.trim();
        if type_.is_empty() {
            errs.required(
                format!("{at}[{j}].type"),
                "name the pod condition, e.g. type: DisruptionTarget",
            );
        } else if !holds_placeholder(type_) && !super::pod_names::qualified_name(type_) {
            errs.add(
                format!("{at}[{j}].type"),
                format!(
                    "value {:?} is not a condition type Kubernetes takes (a qualified name: \
                     letters, digits, '-', '_' and '.', with an optional DNS prefix and '/'); \
                     hint: e.g. DisruptionTarget",
                    pattern.type_
                ),
            );
        }
        if !holds_placeholder(&pattern.status) && !STATUSES.contains(&pattern.status.as_str()) {
            errs.not_one_of(format!("{at}[{j}].status"), &pattern.status, &STATUSES[1..]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn problems(policy: Value) -> Vec<String> {
        let spec: JobSpec = serde_json::from_value(json!({
            "podFailurePolicy": policy,
            "template": {"spec": {
                "containers": [{"name": "training", "image": "i"}],
                "initContainers": [{"name": "fetch", "image": "i"}],
            }},
        }))
        .expect("a Job spec");
        let mut errs = Errors::default();
        check(&spec, &mut errs);
        errs.lines()
    }

    #[test]
    fn rules_kubernetes_takes_pass() {
        let policy = json!({"rules": [
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1, 42]}},
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
            {"action": "Count", "onExitCodes": {"containerName": "fetch", "operator": "NotIn",
                                                "values": [0, 3]}},
            {"action": "FailIndex", "onPodConditions": [{"type": "X", "status": "False"}]},
            {"action": "${trialParameters.a}", "onExitCodes": {
                "operator": "${trialParameters.o}", "values": [1],
                "containerName": "${trialParameters.c}"}},
            {"action": "Ignore", "onPodConditions": [
                {"type": "${trialParameters.t}", "status": "${trialParameters.s}"}]},
        ]});
        assert_eq!(problems(policy), Vec::<String>::new());
    }

    #[test]
    fn each_rule_kubernetes_refuses_is_named_by_its_field() {
        let rules = "spec.trialTemplate.trialSpec.spec.podFailurePolicy.rules";
        let codes = |v: Value| json!({"action": "FailJob", "onExitCodes": v});
        let cases = [
            (
                json!({"action": "Fail", "onExitCodes": {"operator": "In", "values": [1]}}),
                format!("{rules}[0].action: value \"Fail\" is not supported"),
            ),
            (
                json!({"action": "FailJob"}),
                format!("{rules}[0]: sets neither onExitCodes nor onPodConditions"),
            ),
            (
                json!({"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1]},
                       "onPodConditions": [{"type": "DisruptionTarget"}]}),
                format!("{rules}[0]: sets both onExitCodes and onPodConditions"),
            ),
            (
                codes(json!({"operator": "Equals", "values": [1]})),
                format!("{rules}[0].onExitCodes.operator: value \"Equals\" is not supported"),
            ),
            (
                codes(json!({"operator": "In", "values": []})),
                format!("{rules}[0].onExitCodes.values: is required"),
            ),
            (
                codes(json!({"operator": "In", "values": [3, 2]})),
                format!("{rules}[0].onExitCodes.values: value [3, 2] is not in increasing order"),
            ),
            (
                codes(json!({"operator": "NotIn", "values": [2, 2]})),
                format!("{rules}[0].onExitCodes.values: value [2, 2] is not in increasing order"),
            ),
            (
                codes(json!({"operator": "In", "values": [0, 1]})),
                format!("{rules}[0].onExitCodes.values: holds 0 under operator In"),
            ),
            (
                codes(json!({"operator": "In", "values": (1..=256).collect::<Vec<_>>()})),
                format!("{rules}[0].onExitCodes.values: has 256 exit codes"),
            ),
            (
                codes(json!({"operator": "In", "values": [1], "containerName": "trainer"})),
                format!(
                    "{rules}[0].onExitCodes.containerName: value \"trainer\" names no container"
                ),
            ),
            (
                json!({"action": "Ignore", "onPodConditions": [{"status": "True"}]}),
                format!("{rules}[0].onPodConditions[0].type: is required"),
            ),
            (
                json!({"onExitCodes": {"operator": "In", "values": [1]}}),
                format!("{rules}[0].action: is required"),
            ),
            (
                codes(json!({"values": [1]})),
                format!("{rules}[0].onExitCodes.operator: is required"),
            ),
            (
                json!({"action": "Ignore", "onPodConditions": [{"type": "Disruption Target"}]}),
                format!(
                    "{rules}[0].onPodConditions[0].type: value \"Disruption Target\" is not a condition type"
                ),
            ),
            (
                json!({"action": "Ignore", "onPodConditions": [{"type": "X", "status": "true"}]}),
                format!("{rules}[0].onPodConditions[0].status: value \"true\" is not supported"),
            ),
        ];
        for (rule, want) in cases {
            let got = problems(json!({"rules": [rule]}));
            assert!(
                got.len() == 1 && got[0].starts_with(&want) && got[0].contains("hint: "),
                "{rule}: {got:?}"
            );
        }
        let many: Vec<Value> = (0..21)
            .map(|_| codes(json!({"operator": "In", "values": [1]})))
            .collect();
        let got = problems(json!({"rules": many}));
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(
            got[0].starts_with(&format!("{rules}: has 21 rules")),
            "{got:?}"
        );
    }
}
