//! Which times Katib accepts: its collectors and DB manager read a time with Go's
//! `time.Parse(time.RFC3339Nano, text)`, stricter than an RFC 3339 parser in some ways (an
//! upper-case `T` and `Z`, no leap second) and looser in one (a comma before the fraction).
//! The shape is checked here, without a clock or a date library, so every reader of a time
//! (collectors, the gRPC API) refuses and accepts the same texts.

use std::borrow::Cow;

/// `text` ready for an RFC 3339 parser when Go's `time.Parse(time.RFC3339Nano, text)` could
/// accept it: nothing around it, `T` between date and time, no lower-case `t` or `z`, seconds
/// below 60, a comma before the fraction written as a period. `None` when Go refuses it for
/// one of those reasons (the parser still checks the rest).
pub fn go_rfc3339_text(text: &str) -> Option<Cow<'_, str>> {
    let b = text.as_bytes();
    let shaped = b.len() >= 20 && b[10] == b'T' && &b[17..19] != b"60";
    if !shaped || text.contains(['t', 'z', ' ', '\t']) {
        return None;
    }
    match b[19] {
        b',' => Some(Cow::Owned(format!("{}.{}", &text[..19], &text[20..]))),
        _ => Some(Cow::Borrowed(text)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_shapes_are_kept_and_others_refused() {
        // (text, what an RFC 3339 parser is handed)
        let table = [
            ("2024-01-01T00:00:00Z", Some("2024-01-01T00:00:00Z")),
            ("2024-01-01T00:00:00.5Z", Some("2024-01-01T00:00:00.5Z")),
            ("2024-01-01T00:00:00,5Z", Some("2024-01-01T00:00:00.5Z")),
            (
                "2024-01-01T01:00:00+01:00",
                Some("2024-01-01T01:00:00+01:00"),
            ),
            ("2024-01-01t00:00:00Z", None),
            ("2024-01-01T00:00:00z", None),
            ("2024-01-01 00:00:00Z", None),
            (" 2024-01-01T00:00:00Z", None),
            ("2024-01-01T00:00:00Z ", None),
            ("2016-12-31T23:59:60Z", None),
            ("2024-01-01T00:00", None),
            ("", None),
        ];
        for (text, want) in table {
            assert_eq!(go_rfc3339_text(text).as_deref(), want, "{text:?}");
        }
    }
}
