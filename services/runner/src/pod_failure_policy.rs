//! A batch Job's `spec.podFailurePolicy` as Kubernetes' Job controller applies it to a failed
//! pod, by its containers' exit codes: the first rule that matches decides whether the job
//! fails at once (`FailJob`), the failure is not counted against `backoffLimit` (`Ignore`), or
//! it is counted as usual (`Count`, or no rule). Rules on pod conditions (a disruption, an
//! eviction) never match a local process. Pure.

use serde_json::Value;

/// What a matching rule does with a failed pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureAction {
    FailJob,
    Ignore,
    Count,
}

/// One rule of `podFailurePolicy.rules` that reads exit codes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailureRule {
    pub action: FailureAction,
    /// `operator: In` (true) or `NotIn`.
    pub within: bool,
    pub values: Vec<i64>,
    /// `onExitCodes.containerName`: the rule reads only that container's exit code.
    pub container: Option<String>,
    /// Its place in `rules`, for the message.
    pub index: usize,
}

/// The exit-code rules of a rendered batch Job (the schema check has refused wrong types);
/// `FailIndex` (indexed jobs only) and condition rules are left out.
pub fn failure_rules(rendered: &Value) -> Vec<FailureRule> {
    let rules = rendered
        .pointer("/spec/podFailurePolicy/rules")
        .and_then(Value::as_array);
    rules
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(index, rule)| {
            let action = match rule.get("action")?.as_str()? {
                "FailJob" => FailureAction::FailJob,
                "Ignore" => FailureAction::Ignore,
                "Count" => FailureAction::Count,
                _ => return None,
            };
            let codes = rule.get("onExitCodes")?;
            let within = codes.get("operator").and_then(Value::as_str) == Some("In");
            let values = codes.get("values")?.as_array()?;
            let container = codes.get("containerName").and_then(Value::as_str);
            Some(FailureRule {
                action,
                within,
                values: values.iter().filter_map(Value::as_i64).collect(),
                container: container.filter(|c| !c.is_empty()).map(str::to_string),
                index,
            })
        })
        .collect()
}

/// The rule that decides a pod whose container `container` exited with `code` (128 + the
/// signal for a killed one), if any: the first that matches. A container that exited 0
/// matches none, nor does a rule about another container (one local mode does not run).
pub fn deciding_rule<'a>(
    rules: &'a [FailureRule],
    container: &str,
    code: i64,
) -> Option<&'a FailureRule> {
    if code == 0 {
        return None;
    }
    let about = |r: &FailureRule| r.container.as_deref().is_none_or(|c| c == container);
    rules
        .iter()
        .find(|r| about(r) && r.values.contains(&code) == r.within)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_first_rule_matching_the_exit_code_decides() {
        let job = json!({"spec": {"podFailurePolicy": {"rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
            {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [137, 143]}},
            {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [1, 2]}},
            {"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [3]}},
        ]}}});
        let rules = failure_rules(&job);
        assert_eq!(rules.len(), 4);
        let sidecar = json!({"spec": {"podFailurePolicy": {"rules": [
            {"action": "FailJob", "onExitCodes": {"containerName": "logger", "operator": "In", "values": [1]}}]}}});
        let sidecar = failure_rules(&sidecar);
        assert_eq!(deciding_rule(&sidecar, "main", 1), None);
        assert_eq!(
            deciding_rule(&sidecar, "logger", 1).map(|r| r.index),
            Some(0)
        );
        // (exit code, deciding rule's action and index)
        let table = [
            (42, Some((FailureAction::FailJob, 1))),
            (143, Some((FailureAction::Ignore, 2))),
            (7, Some((FailureAction::Count, 3))),
            (1, Some((FailureAction::FailJob, 4))),
            (3, Some((FailureAction::Count, 3))),
            (0, None),
        ];
        for (code, want) in table {
            let got = deciding_rule(&rules, "main", code).map(|r| (r.action, r.index));
            assert_eq!(got, want, "exit code {code}");
        }
    }
}
