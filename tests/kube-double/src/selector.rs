//! Label and field selectors from list/watch query strings. kube-core has the label
//! `Expression` type and its matching but no parser for the string form the API server
//! receives, so the grammar (`a=b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`) is parsed
//! here into kube-core's types.

use crate::status::ApiStatus;
use kube::core::{Expression, Selector, SelectorExt};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// A parsed `labelSelector`.
#[derive(Debug, Clone, Default)]
pub struct LabelSelector(Option<Selector>);

impl LabelSelector {
    /// Parse the query-string form; an empty string selects everything.
    pub fn parse(text: &str) -> Result<Self, ApiStatus> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(LabelSelector(None));
        }
        let mut expressions = Vec::new();
        for requirement in split_top_level(text) {
            expressions.push(parse_requirement(requirement.trim()).map_err(|why| {
                ApiStatus::bad_request(format!(
                    "unable to parse requirement: {why} in labelSelector {text:?}"
                ))
            })?);
        }
        Ok(LabelSelector(Some(Selector::from_iter(expressions))))
    }

    /// Does an object with these `metadata.labels` match?
    pub fn matches(&self, object: &Value) -> bool {
        let Some(selector) = &self.0 else {
            return true;
        };
        let labels: BTreeMap<String, String> = object
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .map(|labels| {
                labels
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                    .collect()
            })
            .unwrap_or_default();
        selector.matches(&labels)
    }
}

fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn parse_requirement(req: &str) -> Result<Expression, String> {
    if req.is_empty() {
        return Err("found '', expected: identifier".to_owned());
    }
    if let Some(key) = req.strip_prefix('!') {
        return Ok(Expression::DoesNotExist(valid_key(key.trim())?));
    }
    if let Some((key, value)) = req.split_once("!=") {
        return Ok(Expression::NotEqual(
            valid_key(key.trim())?,
            valid_value(value.trim())?,
        ));
    }
    if let Some((key, value)) = req.split_once("==").or_else(|| req.split_once('=')) {
        return Ok(Expression::Equal(
            valid_key(key.trim())?,
            valid_value(value.trim())?,
        ));
    }
    let words: Vec<&str> = req.splitn(2, char::is_whitespace).collect();
    if words.len() == 2 {
        let key = valid_key(words[0])?;
        let rest = words[1].trim_start();
        let (is_in, list) = if let Some(list) = rest.strip_prefix("notin") {
            (false, list)
        } else if let Some(list) = rest.strip_prefix("in") {
            (true, list)
        } else {
            return Err(format!("found {rest:?}, expected: in, notin, =, ==, !="));
        };
        let list = list
            .trim()
            .strip_prefix('(')
            .and_then(|l| l.strip_suffix(')'))
            .ok_or_else(|| format!("found {list:?}, expected: '('"))?;
        let values: BTreeSet<String> = list
            .split(',')
            .map(|v| valid_value(v.trim()))
            .collect::<Result<_, _>>()?;
        return Ok(if is_in {
            Expression::In(key, values)
        } else {
            Expression::NotIn(key, values)
        });
    }
    Ok(Expression::Exists(valid_key(req)?))
}

fn valid_key(key: &str) -> Result<String, String> {
    let ok = !key.is_empty()
        && key.len() <= 316
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    if ok {
        Ok(key.to_owned())
    } else {
        Err(format!("invalid label key {key:?}"))
    }
}

fn valid_value(value: &str) -> Result<String, String> {
    let ok = value.len() <= 63
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(value.to_owned())
    } else {
        Err(format!("invalid label value {value:?}"))
    }
}

/// A parsed `fieldSelector`: `field=value`, `field==value`, `field!=value`, comma-separated.
#[derive(Debug, Clone, Default)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    /// Parse the query-string form, accepting `metadata.name`, `metadata.namespace` and the
    /// resource's extra `selectable` fields (the API server's per-kind list).
    pub fn parse(text: &str, selectable: &[String]) -> Result<Self, ApiStatus> {
        let mut terms = Vec::new();
        for term in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (field, equal, value) = if let Some((f, v)) = term.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                (f, true, v)
            } else {
                return Err(ApiStatus::bad_request(format!(
                    "invalid selector: '{term}'; can't understand '{term}'"
                )));
            };
            let field = field.trim();
            let known = field == "metadata.name"
                || field == "metadata.namespace"
                || selectable.iter().any(|s| s == field);
            if !known {
                return Err(ApiStatus::bad_request(format!(
                    "field label not supported: {field}"
                )));
            }
            terms.push((field.to_owned(), equal, value.trim().to_owned()));
        }
        Ok(FieldSelector(terms))
    }

    /// Does the object match every term? Absent fields compare as the empty string.
    pub fn matches(&self, object: &Value) -> bool {
        self.0.iter().all(|(field, equal, value)| {
            let pointer = format!("/{}", field.replace('.', "/"));
            let actual = match object.pointer(&pointer) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            (actual == *value) == *equal
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labelled(labels: Value) -> Value {
        json!({"metadata": {"labels": labels}})
    }

    #[test]
    fn every_label_operator_selects_as_the_api_server_does() {
        let obj = labelled(json!({"app": "web", "tier": "front"}));
        let cases = [
            ("app=web", true),
            ("app==web", true),
            ("app=db", false),
            ("app!=db", true),
            ("app!=web", false),
            ("app in (db, web)", true),
            ("app in (db)", false),
            ("app notin (db)", true),
            ("app notin (web,db)", false),
            ("tier", true),
            ("missing", false),
            ("!missing", true),
            ("!app", false),
            ("app=web,tier in (front),!missing", true),
            ("app=web,tier=back", false),
            ("missing!=x", true),
            ("missing notin (x)", true),
            ("", true),
        ];
        for (text, expected) in cases {
            let selector = LabelSelector::parse(text).unwrap();
            assert_eq!(selector.matches(&obj), expected, "{text}");
        }
    }

    #[test]
    fn malformed_label_selectors_are_bad_requests() {
        for text in ["app in db", "app=we b", "app maybe (x)", "a,,b"] {
            let err = LabelSelector::parse(text).unwrap_err();
            assert_eq!(err.code, 400, "{text}");
            assert!(
                err.message.contains("unable to parse requirement"),
                "{text}"
            );
        }
    }

    #[test]
    fn field_selectors_use_the_allowed_fields_only() {
        let obj =
            json!({"metadata": {"name": "a", "namespace": "ns"}, "status": {"phase": "Running"}});
        let sel = FieldSelector::parse("metadata.name=a,metadata.namespace!=other", &[]).unwrap();
        assert!(sel.matches(&obj));
        let sel = FieldSelector::parse("metadata.name==b", &[]).unwrap();
        assert!(!sel.matches(&obj));
        let pods = vec!["status.phase".to_owned()];
        assert!(
            FieldSelector::parse("status.phase=Running", &pods)
                .unwrap()
                .matches(&obj)
        );
        let err = FieldSelector::parse("status.phase=Running", &[]).unwrap_err();
        assert_eq!(err.message, "field label not supported: status.phase");
    }
}
