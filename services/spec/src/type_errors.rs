//! Finds the type errors after the first one. serde stops at the first value of the wrong
//! type, so a file with three would be fixed one run at a time; this takes each offending
//! value out of a copy of the document and deserializes again, so all are listed at once.

use crate::types::Experiment;
use serde_path_to_error::{Path, Segment};
use yaml_serde::Value;

/// Past this many, the user has enough to fix before running again.
const MAX_TYPE_ERRORS: usize = 20;

/// One type error: where, and serde's words for it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TypeError {
    pub(crate) path: String,
    pub(crate) message: String,
}

/// The type errors after `first` (the one the parse already reported), in document order.
/// Their messages carry no line: the document they were found in is a rewritten copy.
pub(crate) fn later_type_errors(text: &str, first: &Path) -> Vec<TypeError> {
    let Ok(mut doc) = yaml_serde::from_str::<Value>(text) else {
        return Vec::new();
    };
    let mut path = first.clone();
    let mut found = Vec::new();
    while found.len() + 1 < MAX_TYPE_ERRORS {
        match next_error(&mut doc, &path) {
            Some((next, message)) => {
                found.push(TypeError {
                    path: next.to_string(),
                    message: without_location(&message),
                });
                path = next;
            }
            None => break,
        }
    }
    found
}

/// Takes the value at `path` out of `doc` and returns the error deserializing then meets, if
/// it is elsewhere. A map entry is removed (every field has a default); a sequence element is
/// replaced by the first stand-in that its type takes, so later indices keep their meaning.
fn next_error(doc: &mut Value, path: &Path) -> Option<(Path, String)> {
    let stand_ins = match path.iter().next_back()? {
        Segment::Map { .. } => vec![None],
        Segment::Seq { .. } => vec![
            Some(Value::Mapping(Default::default())),
            Some(Value::String(String::new())),
            Some(Value::Null),
        ],
        _ => return None,
    };
    for stand_in in stand_ins {
        let mut attempt = doc.clone();
        put_at(&mut attempt, path, stand_in)?;
        let retyped = yaml_serde::to_string(&attempt).ok()?;
        let de = yaml_serde::Deserializer::from_str(&retyped);
        let Err(e) = serde_path_to_error::deserialize::<_, Experiment>(de) else {
            return None;
        };
        if e.path().to_string() == path.to_string() {
            continue;
        }
        let message = e.inner().to_string();
        // A field the removal left missing is not the user's error.
        if message.contains("missing field `") {
            return None;
        }
        *doc = attempt;
        return Some((e.path().clone(), message));
    }
    None
}

/// Sets the value at `path` to `value`, or removes the map entry when `value` is `None`.
fn put_at(doc: &mut Value, path: &Path, value: Option<Value>) -> Option<()> {
    let segments: Vec<&Segment> = path.iter().collect();
    let (last, parents) = segments.split_last()?;
    let mut node = doc;
    for segment in parents {
        node = match segment {
            Segment::Map { key } => node.get_mut(key.as_str())?,
            Segment::Seq { index } => node.get_mut(*index)?,
            _ => return None,
        };
    }
    match (last, value) {
        (Segment::Map { key }, None) => {
            node.as_mapping_mut()?.remove(key.as_str())?;
        }
        (Segment::Seq { index }, Some(value)) => *node.get_mut(*index)? = value,
        _ => return None,
    }
    Some(())
}

/// Drops the YAML parser's " at line L column C", which would point into the rewritten copy.
fn without_location(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) if message[at..].contains(" column ") => message[..at].to_string(),
        _ => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_error(text: &str) -> Path {
        let de = yaml_serde::Deserializer::from_str(text);
        serde_path_to_error::deserialize::<_, Experiment>(de)
            .expect_err("the text has a type error")
            .path()
            .clone()
    }

    const BASE: &str = "apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: x
spec:
  objective:
    type: minimize
    goal: GOAL
    objectiveMetricName: loss
  algorithm:
    algorithmName: random
  parallelTrialCount: PARALLEL
  maxTrialCount: MAX
  parameters:
    - name: lr
      parameterType: double
      feasibleSpace:
        min: \"0.1\"
        max: \"1\"
";

    fn spec(goal: &str, parallel: &str, max: &str) -> String {
        BASE.replace("GOAL", goal)
            .replace("PARALLEL", parallel)
            .replace("MAX", max)
    }

    #[test]
    fn finds_every_type_error_in_document_order() {
        let text = spec("abc", "[1]", "x");
        let later = later_type_errors(&text, &first_error(&text));
        let paths: Vec<&str> = later.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["spec.parallelTrialCount", "spec.maxTrialCount"]);
        assert!(
            later[0].message.contains("invalid type: sequence"),
            "{later:?}"
        );
        assert!(later[1].message.contains(r#"string "x""#), "{later:?}");
    }

    #[test]
    fn one_type_error_has_no_later_ones() {
        let text = spec("abc", "2", "4");
        assert_eq!(later_type_errors(&text, &first_error(&text)), []);
    }

    #[test]
    fn later_messages_carry_no_line_of_the_rewritten_copy() {
        let text = spec("abc", "2", "x");
        let later = later_type_errors(&text, &first_error(&text));
        assert_eq!(later.len(), 1, "{later:?}");
        assert!(!later[0].message.contains(" at line "), "{later:?}");
        assert_eq!(
            without_location("invalid type: string \"x\", expected i32 at line 12 column 18"),
            "invalid type: string \"x\", expected i32"
        );
    }

    #[test]
    fn a_bad_sequence_element_does_not_hide_the_next() {
        let text = spec("0.1", "2", "4").replace("  parameters:\n", "  parameters:\n    - 7\n");
        let text = text.replace("type: minimize", "type: [minimize]");
        let first = first_error(&text);
        assert_eq!(first.to_string(), "spec.objective.type");
        let later = later_type_errors(&text, &first);
        let paths: Vec<&str> = later.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["spec.parameters[0]"]);
        assert!(later[0].message.contains("integer `7`"), "{later:?}");
    }
}
