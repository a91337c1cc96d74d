//! Small helpers for reading and writing `metadata` of untyped objects, shared by the store,
//! the patch code and the deletion logic.

use serde_json::{Map, Value, json};

/// Current time as `metav1.Time` serialises it (RFC 3339, whole seconds, `Z`).
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// `metadata` as a mutable map, created if absent or not an object.
pub fn metadata_mut(object: &mut Value) -> &mut Map<String, Value> {
    if !object.is_object() {
        *object = json!({});
    }
    let map = object
        .as_object_mut()
        .expect("object was just made an object");
    let meta = map.entry("metadata").or_insert_with(|| json!({}));
    if !meta.is_object() {
        *meta = json!({});
    }
    meta.as_object_mut()
        .expect("metadata was just made an object")
}

/// A string field of `metadata`, empty if absent.
pub fn meta_str<'a>(object: &'a Value, field: &str) -> &'a str {
    object
        .get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `metadata.finalizers` as strings.
pub fn finalizers(object: &Value) -> Vec<String> {
    object
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|f| {
            f.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Replace `metadata.finalizers` (removing the key when empty, as the server does).
pub fn set_finalizers(object: &mut Value, finalizers: &[String]) {
    let meta = metadata_mut(object);
    if finalizers.is_empty() {
        meta.remove("finalizers");
    } else {
        meta.insert("finalizers".to_owned(), json!(finalizers));
    }
}

/// The `uid`s of `metadata.ownerReferences`.
pub fn owner_uids(object: &Value) -> Vec<String> {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r.get("uid").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Is the object marked for deletion (waiting on finalizers)?
pub fn is_terminating(object: &Value) -> bool {
    object
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
}

/// A fresh random `metadata.uid`.
pub fn new_uid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The random suffix `generateName` gets: five characters from the API server's alphabet
/// (no vowels, no confusable digits).
pub fn name_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    uuid::Uuid::new_v4().as_bytes()[..5]
        .iter()
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect()
}

/// Why `name` is not a DNS-1123 subdomain, if it is not one.
pub fn invalid_name(name: &str) -> Option<String> {
    let label_ok = |label: &str| {
        !label.is_empty()
            && label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    if name.len() > 253 {
        return Some(format!(
            "metadata.name: Invalid value: {name:?}: must be no more than 253 characters"
        ));
    }
    if name.split('.').all(label_ok) {
        None
    } else {
        Some(format!(
            "metadata.name: Invalid value: {name:?}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        ))
    }
}

/// Why a label value in `metadata.labels` is not one the API server takes, if it is not:
/// at most 63 characters, alphanumerics with `-`, `_` or `.` inside.
pub fn invalid_label_value(object: &Value) -> Option<String> {
    let labels = object.pointer("/metadata/labels")?.as_object()?;
    labels.iter().find_map(|(key, value)| {
        let text = value.as_str().unwrap_or_default();
        let inner = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
        let ends = |b: Option<&u8>| b.is_none_or(u8::is_ascii_alphanumeric);
        let ok = text.len() <= 63
            && text.bytes().all(inner)
            && ends(text.as_bytes().first())
            && ends(text.as_bytes().last());
        (!ok).then(|| {
            format!(
                "metadata.labels: Invalid value: {text:?}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (key {key:?})"
            )
        })
    })
}
