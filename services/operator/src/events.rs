//! Kubernetes events about Experiments and Trials: what a user sees in `kubectl describe`.

use kube::Resource;
use kube::ResourceExt;
use kube::api::DynamicObject;
use kube::runtime::events::{Event, EventType, Recorder};

/// Publishes an event about `obj` (of `resource`); failures are only reported, never fatal
/// to a reconcile.
pub async fn publish(
    recorder: &Recorder,
    obj: &DynamicObject,
    resource: &kube::api::ApiResource,
    warning: bool,
    reason: &str,
    note: String,
) {
    let reference = obj.object_ref(resource);
    if let Err(e) = recorder
        .publish(&event(warning, reason, note), &reference)
        .await
    {
        tracing::warn!("cannot publish event {reason} for {}: {e}", obj.name_any());
    }
}

/// The event to publish. The recorder counts an event again into the first one with the same
/// type, reason and action, keeping that one's note; so the action carries a digest of the
/// note: the same news repeated is counted, a different refusal under the same reason is an
/// event of its own instead of being shown under the first one's text.
fn event(warning: bool, reason: &str, note: String) -> Event {
    let note = truncate(note, 1000);
    let digest = note_digest(&note);
    Event {
        type_: if warning {
            EventType::Warning
        } else {
            EventType::Normal
        },
        reason: reason.to_string(),
        // Its last 8 digits: the action stays short.
        action: format!("{reason}-{}", &digest[8..]),
        note: Some(note),
        secondary: None,
    }
}

/// A short digest of a note (16 hex digits, the start of its SHA-256): what tells one note
/// from another in an event's action and in what the experiment reconciler keeps of the
/// refusals it told. It is kept in an annotation, so an operator built by another Rust
/// release must compute the same one: std's hasher makes no such promise.
pub fn note_digest(note: &str) -> String {
    use sha2::{Digest, Sha256};
    let sum = Sha256::digest(note.as_bytes());
    sum[..8].iter().map(|b| format!("{b:02x}")).collect()
}

fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut cut = max;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::event;

    #[test]
    fn only_the_same_note_shares_an_action() {
        let first = event(
            true,
            "EditRefused",
            "the edit of spec.algorithm is not applied".into(),
        );
        let again = event(
            true,
            "EditRefused",
            "the edit of spec.algorithm is not applied".into(),
        );
        let other = event(
            true,
            "EditRefused",
            "the edit of spec.objective is not applied".into(),
        );
        assert_eq!(first.action, again.action);
        assert_ne!(first.action, other.action);
        assert!(first.action.starts_with("EditRefused-") && first.action.len() <= 128);
        let long = event(false, "Created", "x".repeat(5000));
        assert_eq!(long.note.map(|n| n.len()), Some(1000));
    }

    /// Digests read back from an annotation must not change with the compiler: pinned values.
    #[test]
    fn a_note_digest_is_the_start_of_its_sha256() {
        assert_eq!(super::note_digest(""), "e3b0c44298fc1c14");
        assert_eq!(super::note_digest("abc"), "ba7816bf8f01cfea");
    }
}
