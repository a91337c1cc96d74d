//! Text fields written as bare numbers or booleans (`min: 0.01`, `value: 5`): Vernier's YAML
//! reader takes a plain scalar as the text it is, so they run here, but Katib's API types hold
//! them as strings and a cluster decodes the object as JSON, where `0.01` is a number: Katib's
//! webhook (and Vernier's operator) refuse the experiment. These are said as warnings, so a
//! spec that runs on a laptop is not thought ready for the cluster.

use crate::error::SpecError;
use regex::Regex;
use serde_json::Value;
use std::sync::LazyLock;

/// A plain integer of 20 digits or more, with the characters around it.
static HUGE_INTEGER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(^|[\s\[,:{])([-+]?[0-9]{20,})([\s\],}]|$)").expect("the pattern compiles")
});

/// Each text field of the experiment in `text` written as a number or boolean, with the fix.
/// A document that does not parse has none (its parse error is reported elsewhere).
pub fn unquoted_text_fields(text: &str) -> Vec<SpecError> {
    let Ok(document) = crate::parse::experiment_document(text) else {
        return Vec::new();
    };
    // An integer of more digits than a u64 holds fails the whole read; written as a float it
    // is still a number, and the others are still seen.
    let readable = HUGE_INTEGER.replace_all(&document, "${1}${2}.0${3}");
    let Ok(doc) = yaml_serde::from_str::<Value>(&readable) else {
        return Vec::new();
    };
    // The same document read into Katib's types, whose text fields keep a plain scalar as
    // written (`1e-05`, `0x1F`), which the messages quote.
    let written = yaml_serde::from_str::<crate::types::Experiment>(&document)
        .ok()
        .and_then(|exp| serde_json::to_value(exp).ok())
        .unwrap_or(Value::Null);
    let check = |v: &Value, path: &str, out: &mut Vec<SpecError>| {
        let text = written.pointer(&pointer_of(path)).and_then(Value::as_str);
        check(v, text, path, out)
    };
    let mut out = Vec::new();
    let spec = &doc["spec"];
    for (i, p) in items(&spec["parameters"]) {
        feasible_space(
            &p["feasibleSpace"],
            &format!("spec.parameters[{i}]"),
            &check,
            &mut out,
        );
    }
    for (i, op) in items(&spec["nasConfig"]["operations"]) {
        for (j, p) in items(&op["parameters"]) {
            let path = format!("spec.nasConfig.operations[{i}].parameters[{j}]");
            feasible_space(&p["feasibleSpace"], &path, &check, &mut out);
        }
    }
    for section in ["algorithm", "earlyStopping"] {
        for (i, s) in items(&spec[section]["algorithmSettings"]) {
            let path = format!("spec.{section}.algorithmSettings[{i}].value");
            check(&s["value"], &path, &mut out);
        }
    }
    for (i, name) in items(&spec["objective"]["additionalMetricNames"]) {
        check(
            name,
            &format!("spec.objective.additionalMetricNames[{i}]"),
            &mut out,
        );
    }
    out
}

fn items(v: &Value) -> impl Iterator<Item = (usize, &Value)> {
    v.as_array().into_iter().flatten().enumerate()
}

type Check<'a> = dyn Fn(&Value, &str, &mut Vec<SpecError>) + 'a;

fn feasible_space(fs: &Value, path: &str, check: &Check<'_>, out: &mut Vec<SpecError>) {
    for field in ["min", "max", "step"] {
        check(&fs[field], &format!("{path}.feasibleSpace.{field}"), out);
    }
    for (i, v) in items(&fs["list"]) {
        check(v, &format!("{path}.feasibleSpace.list[{i}]"), out);
    }
}

/// The JSON pointer of a field path (`spec.parameters[0].feasibleSpace.min`).
fn pointer_of(path: &str) -> String {
    let steps = path.replace('[', ".").replace(']', "");
    format!("/{}", steps.replace('.', "/"))
}

/// `v` written as a number or boolean is named, by its text as written (`written`) when
/// known, so the hint's quotes keep the value a trial gets.
fn check(v: &Value, written: Option<&str>, path: &str, out: &mut Vec<SpecError>) {
    if !matches!(v, Value::Number(_) | Value::Bool(_)) {
        return;
    }
    let text = written.map_or_else(|| v.to_string(), str::to_string);
    out.push(SpecError::new(
        path,
        format!(
            "value {text} is written as a {}, and Katib's API takes text here, so a cluster \
             refuses the experiment (Vernier reads the text as written); hint: quote it, as \
             in \"{text}\"",
            if v.is_boolean() { "boolean" } else { "number" }
        ),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_numbers_and_booleans_in_text_fields_are_named() {
        let yaml = r#"
apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata: {name: e}
spec:
  objective: {type: minimize, objectiveMetricName: loss, goal: 0.1, additionalMetricNames: [acc]}
  algorithm:
    algorithmName: random
    algorithmSettings: [{name: random_state, value: 42}, {name: x, value: "7"}]
  earlyStopping:
    algorithmName: medianstop
    algorithmSettings: [{name: start_step, value: 2}]
  parameters:
    - {name: lr, parameterType: double, feasibleSpace: {min: 0.001, max: "0.1", step: 1e-3}}
    - {name: opt, parameterType: categorical, feasibleSpace: {list: [sgd, true, "1"]}}
  parallelTrialCount: 2
"#;
        let found: Vec<String> = unquoted_text_fields(yaml)
            .iter()
            .map(SpecError::path)
            .collect();
        assert_eq!(
            found,
            [
                "spec.parameters[0].feasibleSpace.min",
                "spec.parameters[0].feasibleSpace.step",
                "spec.parameters[1].feasibleSpace.list[1]",
                "spec.algorithm.algorithmSettings[0].value",
                "spec.earlyStopping.algorithmSettings[0].value",
            ]
        );
        let first = &unquoted_text_fields(yaml)[0];
        assert_eq!(
            first.to_string(),
            "spec.parameters[0].feasibleSpace.min: value 0.001 is written as a number, and \
             Katib's API takes text here, so a cluster refuses the experiment (Vernier reads the \
             text as written); hint: quote it, as in \"0.001\""
        );
        // The text as written, so the hint's quotes keep the value a trial gets.
        let step = &unquoted_text_fields(yaml)[1];
        assert!(
            step.message()
                .starts_with("value 1e-3 is written as a number")
                && step.message().ends_with("as in \"1e-3\""),
            "{step}"
        );
        let hex = yaml.replace("[sgd, true, \"1\"]", "[sgd, 0x1F, +3]");
        let said: Vec<String> = unquoted_text_fields(&hex)
            .iter()
            .map(|e| e.message().to_string())
            .filter(|m| m.contains("as in \"0x1F\"") || m.contains("as in \"+3\""))
            .collect();
        assert_eq!(said.len(), 2, "{said:?}");
        let huge = yaml.replace("[sgd, true, \"1\"]", "[sgd, 123456789012345678901234]");
        let found: Vec<String> = unquoted_text_fields(&huge)
            .iter()
            .map(SpecError::path)
            .collect();
        assert!(
            found.contains(&"spec.parameters[0].feasibleSpace.min".to_string()),
            "{found:?}"
        );
        assert!(
            found.contains(&"spec.parameters[1].feasibleSpace.list[1]".to_string()),
            "{found:?}"
        );
        let said: Vec<String> = unquoted_text_fields(&huge)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(
            said.iter()
                .any(|s| s.contains("as in \"123456789012345678901234\"")),
            "{said:?}"
        );
        assert!(unquoted_text_fields("not: [valid").is_empty());
    }
}
