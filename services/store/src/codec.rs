//! JSON text encodings of the trial columns that hold structured values, shared by backends.

use crate::error::StoreError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use vernier_core::TrialState;

/// Katib's `ParameterAssignment {name, value}`, so the stored JSON reads like Katib's.
#[derive(Serialize, Deserialize)]
struct NameValue<'a> {
    #[serde(borrow)]
    name: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    value: std::borrow::Cow<'a, str>,
}

pub(crate) fn encode_assignment(trial: &str, a: &[(String, String)]) -> Result<String, StoreError> {
    let items: Vec<NameValue<'_>> = a
        .iter()
        .map(|(n, v)| NameValue {
            name: n.as_str().into(),
            value: v.as_str().into(),
        })
        .collect();
    serde_json::to_string(&items).map_err(|e| corrupt(trial, "assignment", e))
}

pub(crate) fn decode_assignment(
    trial: &str,
    json: &str,
) -> Result<Vec<(String, String)>, StoreError> {
    let items: Vec<NameValue<'_>> =
        serde_json::from_str(json).map_err(|e| corrupt(trial, "assignment", e))?;
    Ok(items
        .into_iter()
        .map(|nv| (nv.name.into_owned(), nv.value.into_owned()))
        .collect())
}

pub(crate) fn encode_labels(
    trial: &str,
    labels: &BTreeMap<String, String>,
) -> Result<String, StoreError> {
    serde_json::to_string(labels).map_err(|e| corrupt(trial, "labels", e))
}

pub(crate) fn decode_labels(
    trial: &str,
    json: &str,
) -> Result<BTreeMap<String, String>, StoreError> {
    serde_json::from_str(json).map_err(|e| corrupt(trial, "labels", e))
}

pub(crate) fn decode_state(trial: &str, s: &str) -> Result<TrialState, StoreError> {
    TrialState::parse(s).ok_or_else(|| StoreError::Corrupt {
        kind: "trial",
        name: trial.to_owned(),
        detail: format!("unknown state `{s}`"),
    })
}

fn corrupt(trial: &str, column: &str, e: serde_json::Error) -> StoreError {
    StoreError::Corrupt {
        kind: "trial",
        name: trial.to_owned(),
        detail: format!("{column}: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignment_keeps_order_and_reads_like_katib() {
        let a = vec![
            ("lr".to_owned(), "0.01".to_owned()),
            ("batch \"size\"".to_owned(), "32".to_owned()),
        ];
        let json = encode_assignment("t", &a).unwrap();
        assert!(
            json.starts_with(r#"[{"name":"lr","value":"0.01"}"#),
            "{json}"
        );
        assert_eq!(decode_assignment("t", &json).unwrap(), a);
    }

    #[test]
    fn bad_json_names_the_trial() {
        let e = decode_labels("trial-7", "{").unwrap_err();
        assert!(e.to_string().contains("trial-7"), "{e}");
        assert!(decode_state("trial-7", "Done").is_err());
    }
}
