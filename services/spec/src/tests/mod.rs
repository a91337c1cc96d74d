//! Crate tests, kept out of the modules they exercise because most of them go through the
//! whole pipeline (text → parse → defaults → validate → convert/render).

mod cluster;
mod defaults;
mod hostile;
mod invalid;
mod katib_accepts;
mod nas;
mod objectives;
mod parse;
mod render;
mod replicas;
mod warm_start;

use crate::{Experiment, SpecErrors, parse_experiment};
use serde_json::Value;

pub(crate) const RANDOM: &str = include_str!("../../tests/fixtures/random.yaml");
pub(crate) const TFJOB: &str = include_str!("../../tests/fixtures/tfjob.yaml");

pub(crate) fn parse_ok(text: &str) -> Experiment {
    match parse_experiment(text) {
        Ok(exp) => exp,
        Err(e) => panic!("expected a valid spec, got:\n{e}"),
    }
}

pub(crate) fn parse_err(text: &str) -> SpecErrors {
    match parse_experiment(text) {
        Ok(_) => panic!("expected errors, the spec was accepted"),
        Err(e) => e,
    }
}

/// The fixture as a JSON tree, changed by `f`, written back as YAML.
pub(crate) fn mutated(fixture: &str, f: impl FnOnce(&mut Value)) -> String {
    let mut v: Value = yaml_serde::from_str(fixture).unwrap();
    f(&mut v);
    yaml_serde::to_string(&v).unwrap()
}

/// Sets the value at a JSON pointer whose parent exists.
pub(crate) fn set(v: &mut Value, pointer: &str, new: Value) {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    let parent = v
        .pointer_mut(parent)
        .unwrap_or_else(|| panic!("no {parent}"));
    match parent {
        Value::Object(m) => {
            m.insert(key.to_string(), new);
        }
        Value::Array(a) => {
            let i: usize = key.parse().unwrap();
            if i == a.len() {
                a.push(new);
            } else {
                a[i] = new;
            }
        }
        _ => panic!("{parent} is not a container"),
    }
}

/// Asserts one error line starts with `path: ` and contains `needle`.
#[track_caller]
pub(crate) fn assert_error(errors: &SpecErrors, path: &str, needle: &str) {
    let text = errors.to_string();
    let hit = text
        .lines()
        .any(|l| l.starts_with(&format!("{path}: ")) && l.contains(needle));
    assert!(
        hit,
        "no error at {path:?} containing {needle:?}; errors were:\n{text}"
    );
}

/// Asserts `got` is exactly the problems of `want`, in order: each line starts with its path
/// and `: `, contains its needle, and carries a `hint: `.
#[track_caller]
pub(crate) fn assert_problems_with_hints(got: &[String], want: &[(String, &str)]) {
    assert_eq!(got.len(), want.len(), "{got:#?}");
    for (g, (path, needle)) in got.iter().zip(want) {
        assert!(
            g.starts_with(&format!("{path}: ")) && g.contains(needle),
            "{g}"
        );
        assert!(g.contains("hint: "), "{g}");
    }
}
