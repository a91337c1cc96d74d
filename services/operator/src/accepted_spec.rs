//! The spec an experiment was accepted with, so that an edit Katib's webhook refuses does not
//! change a running or finished experiment. Katib admits updates of `parallelTrialCount`,
//! `maxTrialCount` and `maxFailedTrialCount` only; without a webhook the edit is already
//! stored, so the operator keeps the first valid spec it ran in an annotation and runs on it,
//! with the editable counts as they are now, while a Warning event names the refused field.
//! An edit of the counts themselves is refused, as by Katib, when `maxTrialCount` would not be
//! above the trials the experiment already has; the counts last accepted are kept in a second
//! annotation ([`COUNTS_ANNOTATION`]), so such an edit leaves them as they were. An experiment
//! without it (accepted by an earlier version) takes its current counts as accepted.
//! Pure: the reconciler reads and writes the annotation and its status copy.

use kube::ResourceExt;
use kube::api::DynamicObject;
use serde_json::{Map, Value};

/// Where the accepted spec is kept, as JSON.
pub const ANNOTATION: &str = "vernier.kubeflow.org/accepted-spec";
/// Where the trial counts last accepted are kept, as a JSON object of the [`EDITABLE`] fields.
pub const COUNTS_ANNOTATION: &str = "vernier.kubeflow.org/accepted-counts";

/// The fields Katib's webhook lets an update change.
pub const EDITABLE: [&str; 3] = ["parallelTrialCount", "maxTrialCount", "maxFailedTrialCount"];

/// Annotations share 256 KiB per object; a spec larger than this is not kept (its edits are
/// then applied, as before).
pub const MAX_KEPT_BYTES: usize = 192 * 1024;

/// The JSON an annotation of `obj` holds (the accepted spec, the accepted counts), if any.
pub fn annotation_json(obj: &DynamicObject, key: &str) -> Option<Value> {
    let text = obj.annotations().get(key)?;
    serde_json::from_str(text).ok()
}

/// Where the accepted spec and counts are kept a second time: in the status subresource,
/// which a PUT of the whole object (`kubectl replace`, a GitOps tool) leaves as it was while
/// it drops the annotations, so that such an edit is refused like any other.
pub const STATUS_COPY: &str = "vernierAccepted";

/// What is kept under `annotation`, or else under `status.vernierAccepted.<field>`.
pub fn kept_json(obj: &DynamicObject, annotation: &str, field: &str) -> Option<Value> {
    annotation_json(obj, annotation).or_else(|| {
        let copy = obj
            .data
            .pointer(&format!("/status/{STATUS_COPY}/{field}"))?;
        (!copy.is_null()).then(|| copy.clone())
    })
}

/// The spec to run, and the refused edit if there is one.
#[derive(Debug, Clone, PartialEq)]
pub enum Effective {
    /// The stored spec: nothing but the editable counts changed (or nothing was kept).
    Current,
    /// The accepted spec with the current editable counts; `field` is the first edited path
    /// that Katib's webhook refuses.
    Accepted { spec: Value, field: String },
}

/// What runs when the stored spec is `current` and `accepted` was kept.
pub fn effective(current: &Value, accepted: Option<&Value>) -> Effective {
    let Some(accepted) = accepted else {
        return Effective::Current;
    };
    match first_difference(&locked(accepted), &locked(current), "spec") {
        None => Effective::Current,
        Some(field) => {
            let mut spec = accepted.clone();
            if let (Some(spec), Some(now)) = (spec.as_object_mut(), current.as_object()) {
                for key in EDITABLE {
                    match now.get(key) {
                        Some(v) => spec.insert(key.to_string(), v.clone()),
                        None => spec.remove(key),
                    };
                }
            }
            Effective::Accepted { spec, field }
        }
    }
}

/// The spec without the fields an update may change.
fn locked(spec: &Value) -> Value {
    match spec {
        Value::Object(map) => {
            let kept: Map<String, Value> = map
                .iter()
                .filter(|(k, _)| !EDITABLE.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            Value::Object(kept)
        }
        other => other.clone(),
    }
}

/// The path of the first place where `a` and `b` differ, in key order, or `None`.
fn first_difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(v), Some(w)) => first_difference(v, w, &format!("{path}.{k}")),
                _ => Some(format!("{path}.{k}")),
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (v, w))| first_difference(v, w, &format!("{path}[{i}]"))),
        _ if a == b || same_number(a, b) => None,
        _ => Some(path.to_string()),
    }
}

/// Whether `a` and `b` are one number written two ways: a client that reads the object back
/// and writes it again (Katib's SDK in `edit_experiment_budget`) turns a goal of `0` into
/// `0.0`, a quantity `cpu: 1` into `"1"`; Katib's webhook compares the decoded values.
fn same_number(a: &Value, b: &Value) -> bool {
    let number = |v: &Value| match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    let is_number = |v: &Value| matches!(v, Value::Number(_));
    (is_number(a) || is_number(b)) && number(a).is_some() && number(a) == number(b)
}

/// The editable counts of `spec`, as kept in [`COUNTS_ANNOTATION`].
pub fn counts_of(spec: &Value) -> Value {
    let counts: Map<String, Value> = EDITABLE
        .iter()
        .filter_map(|k| Some((k.to_string(), spec.get(k)?.clone())))
        .collect();
    Value::Object(counts)
}

/// Whether the editable counts of `spec` differ from those `accepted` holds.
pub fn counts_changed(spec: &Value, accepted: &Value) -> bool {
    EDITABLE.iter().any(|k| spec.get(k) != accepted.get(k))
}

/// Katib's webhook refuses an update while its `maxTrialCount` is not above `status.trials`
/// (`ValidateExperiment`: "must be greater than status.trials count"); the note of the
/// Warning event when an edit of the counts is refused so.
pub fn count_refusal(spec: &Value, accepted: &Value, trials: i32) -> Option<String> {
    if !counts_changed(spec, accepted) {
        return None;
    }
    let max = spec.get("maxTrialCount")?.as_i64()?;
    (max <= i64::from(trials)).then(|| {
        format!(
            "the edit of the trial counts is not applied: spec.maxTrialCount {max} must be \
             greater than status.trials count {trials} (Katib's webhook refuses any edit until \
             it is), so the experiment runs on with the counts it had ({accepted})\nhint: set \
             spec.maxTrialCount above {trials}, or delete the experiment to end it now"
        )
    })
}

/// `spec` with the editable counts `accepted` holds (a refused edit of the counts undone).
pub fn with_counts_of(spec: &Value, accepted: &Value) -> Value {
    let mut out = spec.clone();
    if let Some(map) = out.as_object_mut() {
        for key in EDITABLE {
            match accepted.get(key) {
                Some(v) => map.insert(key.to_string(), v.clone()),
                None => map.remove(key),
            };
        }
    }
    out
}

/// The note of the Warning event for a refused edit of `field`.
pub fn refused_note(field: &str) -> String {
    format!(
        "the edit of {field} is not applied: only spec.parallelTrialCount, spec.maxTrialCount \
         and spec.maxFailedTrialCount are editable (Katib's webhook refuses other edits); the \
         experiment runs on with the spec it was accepted with\nhint: create a new experiment \
         for another search, or edit {field} back"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(goal: f64, max: u32, image: &str) -> Value {
        json!({
            "maxTrialCount": max,
            "parallelTrialCount": 2,
            "objective": {"type": "maximize", "goal": goal},
            "parameters": [{"name": "lr", "feasibleSpace": {"min": "0.01", "max": "0.1"}}],
            "trialTemplate": {"trialSpec": {"image": image}},
        })
    }

    #[test]
    fn only_edits_of_locked_fields_are_refused() {
        let accepted = spec(0.99, 12, "a");
        let mut no_max = spec(0.99, 12, "a");
        no_max.as_object_mut().unwrap().remove("maxTrialCount");
        let mut list_grew = spec(0.99, 12, "a");
        list_grew["parameters"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "x"}));
        // (current spec, kept, refused field)
        let cases: Vec<(Value, Option<&Value>, Option<&str>)> = vec![
            (spec(0.5, 12, "a"), None, None),
            (spec(0.99, 12, "a"), Some(&accepted), None),
            (spec(0.99, 30, "a"), Some(&accepted), None),
            (no_max, Some(&accepted), None),
            (
                spec(0.5, 12, "a"),
                Some(&accepted),
                Some("spec.objective.goal"),
            ),
            (
                spec(0.99, 12, "evil"),
                Some(&accepted),
                Some("spec.trialTemplate.trialSpec.image"),
            ),
            (list_grew, Some(&accepted), Some("spec.parameters")),
        ];
        for (i, (current, kept, refused)) in cases.into_iter().enumerate() {
            match (effective(&current, kept), refused) {
                (Effective::Current, None) => {}
                (Effective::Accepted { field, .. }, Some(want)) => {
                    assert_eq!(field, want, "case {i}")
                }
                (got, want) => panic!("case {i}: {got:?}, wanted {want:?}"),
            }
        }
    }

    /// Katib's SDK reads the spec back and writes it again: a goal of `0` returns as `0.0`, a
    /// `cpu: 1` as `"1"`. That is no edit; a different number, or a word, still is.
    #[test]
    fn a_number_written_again_another_way_is_no_edit() {
        let with = |goal: Value, cpu: Value| {
            json!({"maxTrialCount": 4, "objective": {"goal": goal},
                   "trialTemplate": {"trialSpec": {"resources": {"cpu": cpu}}}})
        };
        let accepted = with(json!(0), json!(1));
        let cases = [
            (with(json!(0.0), json!("1")), None),
            (with(json!(0.5), json!(1)), Some("spec.objective.goal")),
            (
                with(json!(0), json!("one")),
                Some("spec.trialTemplate.trialSpec.resources.cpu"),
            ),
        ];
        for (current, want) in cases {
            let got = match effective(&current, Some(&accepted)) {
                Effective::Current => None,
                Effective::Accepted { field, .. } => Some(field),
            };
            assert_eq!(got.as_deref(), want, "{current}");
        }
        assert!(
            !same_number(&json!("1"), &json!("1.0")),
            "two texts are text"
        );
    }

    /// Katib's rule: an update whose maxTrialCount is not above status.trials is refused,
    /// whatever it changed among the counts; an unchanged spec is no update.
    #[test]
    fn counts_that_leave_no_room_above_the_trials_so_far_are_refused() {
        let accepted = spec(0.99, 8, "a");
        let parallel = |p: u32, max: u32| {
            let mut s = spec(0.99, max, "a");
            s["parallelTrialCount"] = json!(p);
            s
        };
        // (current spec, status.trials, refused)
        let cases = [
            (spec(0.99, 8, "a"), 8, false),
            (spec(0.99, 3, "a"), 4, true),
            (spec(0.99, 4, "a"), 4, true),
            (spec(0.99, 5, "a"), 4, false),
            (spec(0.99, 20, "a"), 8, false),
            (parallel(3, 8), 8, true),
            (parallel(3, 8), 7, false),
        ];
        for (i, (current, trials, refused)) in cases.into_iter().enumerate() {
            let note = count_refusal(&current, &counts_of(&accepted), trials);
            assert_eq!(note.is_some(), refused, "case {i}: {note:?}");
            if let Some(note) = note {
                let want = format!("must be greater than status.trials count {trials}");
                assert!(note.contains(&want) && note.contains("hint:"), "{note}");
                assert!(note.starts_with("the edit of the trial counts"), "{note}");
                let undone = with_counts_of(&current, &counts_of(&accepted));
                assert!(!counts_changed(&undone, &accepted), "case {i}: {undone}");
            }
        }
        let mut unlimited = spec(0.99, 8, "a");
        unlimited.as_object_mut().unwrap().remove("maxTrialCount");
        assert_eq!(count_refusal(&unlimited, &counts_of(&accepted), 50), None);
        // The counts kept hold only the fields the spec has.
        assert_eq!(
            counts_of(&accepted),
            json!({"maxTrialCount": 8, "parallelTrialCount": 2})
        );
    }

    #[test]
    fn a_refused_edit_runs_the_accepted_spec_with_the_current_counts() {
        let accepted = spec(0.99, 12, "a");
        let mut current = spec(0.5, 30, "a");
        current["maxFailedTrialCount"] = json!(4);
        let Effective::Accepted { spec: run, field } = effective(&current, Some(&accepted)) else {
            panic!("the goal edit is refused");
        };
        assert_eq!(field, "spec.objective.goal");
        assert_eq!(run["objective"]["goal"], 0.99);
        assert_eq!(run["maxTrialCount"], 30);
        assert_eq!(run["maxFailedTrialCount"], 4);
        assert_eq!(run["parallelTrialCount"], 2);
        let note = refused_note(&field);
        assert!(note.contains("spec.objective.goal"), "{note}");
        assert!(note.contains("hint:"), "{note}");
    }
}
