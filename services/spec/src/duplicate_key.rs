//! Points a duplicate-key error at the duplicate: the YAML deserializer reports a struct's
//! "duplicate field" at the start of its mapping, which is the first key, not the repeated one
//! a user has to delete.

/// `message` with its `at line L column C` moved to the second occurrence of the duplicated
/// key, when the mapping at that place is a block mapping in `text` that repeats it; any other
/// message as it is.
pub(crate) fn at_the_duplicate(text: &str, message: &str) -> String {
    let Some(key) = duplicated_key(message) else {
        return message.to_string();
    };
    let Some((head, line, column)) = location(message) else {
        return message.to_string();
    };
    match second_occurrence(text, key, line, column) {
        Some(found) => format!("{head}at line {found} column {column}"),
        None => message.to_string(),
    }
}

/// The key of a serde "duplicate field `key`" message (after the deserializer's own path).
fn duplicated_key(message: &str) -> Option<&str> {
    let (_, rest) = message.split_once("duplicate field `")?;
    rest.split_once('`').map(|(key, _)| key)
}

/// The message before its trailing `at line L column C`, and L and C.
fn location(message: &str) -> Option<(&str, usize, usize)> {
    let at = message.rfind("at line ")?;
    let (line, column) = message[at + "at line ".len()..].split_once(" column ")?;
    Some((
        &message[..at],
        line.parse().ok()?,
        column.trim().parse().ok()?,
    ))
}

/// The 1-based line of the second `key:` at the indentation of the mapping that starts at
/// `line`, `column` (both 1-based), before the mapping ends.
fn second_occurrence(text: &str, key: &str, line: usize, column: usize) -> Option<usize> {
    let indent = column.checked_sub(1)?;
    let mut seen = 0;
    for (i, raw) in text.lines().enumerate().skip(line.checked_sub(1)?) {
        let body = raw.trim_start_matches(' ');
        if body.is_empty() || body.starts_with('#') {
            continue;
        }
        let at = raw.len() - body.len();
        // A sequence item's first key sits after its dash, at the mapping's indentation (a
        // column that is no character boundary of the line is no block mapping's).
        let body = match raw.get(indent..) {
            Some(rest) if i + 1 == line => rest,
            _ => body,
        };
        if at < indent && i + 1 != line {
            return None;
        }
        if (at == indent || i + 1 == line) && names(body, key) {
            seen += 1;
            if seen == 2 {
                return Some(i + 1);
            }
        }
    }
    None
}

/// Whether the line `body` (indentation removed) is the key `key`, plain or quoted.
fn names(body: &str, key: &str) -> bool {
    [
        format!("{key}:"),
        format!("\"{key}\":"),
        format!("'{key}':"),
    ]
    .iter()
    .any(|k| {
        body.strip_prefix(k.as_str())
            .is_some_and(|r| r.is_empty() || r.starts_with([' ', '\t']))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_duplicate_is_located_not_the_first_key() {
        let objective =
            "spec:\n  objective:\n    type: minimize\n    goal: 0.1\n    type: maximize\n";
        let item = "params:\n  - name: a\n    parameterType: int\n    name: b\n";
        let quoted = "spec:\n  \"goal\": 1\n  # goal: 3\n  nested:\n    goal: 2\n  'goal': 4\n";
        // (text, message, what it becomes)
        let table = [
            (
                objective,
                "duplicate field `type` at line 3 column 5",
                "duplicate field `type` at line 5 column 5",
            ),
            (
                item,
                "duplicate field `name` at line 2 column 5",
                "duplicate field `name` at line 4 column 5",
            ),
            (
                quoted,
                "duplicate field `goal` at line 2 column 3",
                "duplicate field `goal` at line 6 column 3",
            ),
            // After the deserializer's own path.
            (
                item,
                "params[0]: duplicate field `name` at line 2 column 5",
                "params[0]: duplicate field `name` at line 4 column 5",
            ),
            // The mapping ends before a repeat: left as the deserializer said.
            (
                "a:\n  type: x\nb:\n  type: y\n",
                "duplicate field `type` at line 2 column 3",
                "duplicate field `type` at line 2 column 3",
            ),
            // A flow mapping has no key per line.
            (
                "{\"type\": 1, \"type\": 2}",
                "duplicate field `type` at line 1 column 1",
                "duplicate field `type` at line 1 column 1",
            ),
            (objective, "invalid type: string", "invalid type: string"),
            // A column inside a character of the line (a flow mapping after a non-ASCII key).
            (
                "ééé: {type: 1, type: 2}\n",
                "duplicate field `type` at line 1 column 6",
                "duplicate field `type` at line 1 column 6",
            ),
        ];
        for (text, message, want) in table {
            assert_eq!(at_the_duplicate(text, message), want, "{text}");
        }
    }
}
