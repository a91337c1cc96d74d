//! Resource quantities in the trial spec (`resources.limits` / `requests`, `overhead`,
//! `emptyDir.sizeLimit`) held to Kubernetes' quantity syntax, in every kind: Katib's webhook
//! converts a Job into `batchv1.Job`, whose `resource.Quantity` refuses other text, and the API
//! server refuses such a value in the pod template of any other kind, so the trial could never
//! start on a cluster. Local mode does not read them, so without this check it would run.
//!
//! The syntax is the pattern Kubernetes' generated CRD schemas give an `int-or-string`
//! quantity, with a whole exponent as `resource.ParseQuantity` takes it; a negative value is refused as Kubernetes' resource validation refuses it. Text
//! holding a `${...}` placeholder is a value only once rendered, and is not checked here.

use super::Errors;
use regex::Regex;
use serde_json::Value;
use std::sync::LazyLock;

static QUANTITY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?[0-9]+))?$")
        .expect("the quantity pattern compiles")
});

/// Why `text` is not a resource quantity Kubernetes accepts, if it is not.
fn refusal(text: &str) -> Option<&'static str> {
    if super::holds_placeholder(text) {
        return None;
    }
    if !QUANTITY.is_match(text) {
        return Some("is not a quantity");
    }
    text.starts_with('-')
        .then_some("is negative, and a resource quantity must not be")
}

/// Refuses every malformed quantity under `value`, a trial spec at `path`.
pub(super) fn check(value: &Value, path: &str, errs: &mut Errors) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                let here = format!("{path}.{key}");
                match (key.as_str(), v) {
                    ("resources", Value::Object(r)) => {
                        for part in ["limits", "requests"] {
                            if let Some(Value::Object(q)) = r.get(part) {
                                check_each(q, &format!("{here}.{part}"), errs);
                            }
                        }
                        check(v, &here, errs);
                    }
                    ("overhead", Value::Object(q)) => check_each(q, &here, errs),
                    ("sizeLimit", v) => check_one(v, &here, errs),
                    _ => check(v, &here, errs),
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                check(v, &format!("{path}[{i}]"), errs);
            }
        }
        _ => {}
    }
}

fn check_each(quantities: &serde_json::Map<String, Value>, path: &str, errs: &mut Errors) {
    for (name, v) in quantities {
        check_one(v, &format!("{path}.{name}"), errs);
    }
}

fn check_one(v: &Value, path: &str, errs: &mut Errors) {
    // Another type is the Job schema's refusal (or the API server's), not a quantity's.
    let Some(text) = crate::quantity::sent_text(v) else {
        return;
    };
    if let Some(why) = refusal(&text) {
        errs.add(
            path,
            format!(
                "value {text:?} {why}; hint: write a number with an optional suffix, such as \
                 500m, 2Gi or 1e3"
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubernetes_quantities_are_accepted_and_other_text_refused() {
        let cases = [
            ("1", None),
            ("0.5", None),
            (".5", None),
            ("1.", None),
            ("+2", None),
            ("500m", None),
            ("2Gi", None),
            ("128974848", None),
            ("129e6", None),
            ("1E-3", None),
            ("4k", None),
            ("${trialParameters.memory}", None),
            ("8${trialParameters.unit}", None),
            ("abc", Some("is not a quantity")),
            ("2Gb", Some("is not a quantity")),
            ("1.5.3", Some("is not a quantity")),
            ("", Some("is not a quantity")),
            ("2 Gi", Some("is not a quantity")),
            ("1K", Some("is not a quantity")),
            // Kubernetes' quantity parser takes a whole exponent only.
            ("1e3.5", Some("is not a quantity")),
            (
                "-1",
                Some("is negative, and a resource quantity must not be"),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(refusal(text), want, "{text:?}");
        }
    }

    #[test]
    fn every_quantity_of_the_spec_is_checked_at_its_path() {
        let spec = serde_json::json!({
            "spec": {"template": {"spec": {
                "overhead": {"cpu": "x"},
                "containers": [
                    {"name": "a", "resources": {"limits": {"memory": "abc", "cpu": 2},
                                                "requests": {"cpu": "-1"}}},
                    // kubectl reads 1_000 as 1000 (YAML 1.1); 1_000m stays text there too.
                    {"name": "b", "resources": {"limits": {"memory": "1_000", "cpu": "1_000m"}}}
                ],
                "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "1.5.3"}}]
            }}}
        });
        let mut errs = Errors::default();
        check(&spec, "spec.trialTemplate.trialSpec", &mut errs);
        let paths: Vec<String> = errs.0.0.iter().map(|e| e.path()).collect();
        let p = "spec.trialTemplate.trialSpec.spec.template.spec";
        assert_eq!(
            paths,
            [
                format!("{p}.overhead.cpu"),
                format!("{p}.containers[0].resources.limits.memory"),
                format!("{p}.containers[0].resources.requests.cpu"),
                format!("{p}.containers[1].resources.limits.cpu"),
                format!("{p}.volumes[0].emptyDir.sizeLimit"),
            ]
        );
    }
}
