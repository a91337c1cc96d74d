//! Compatibility of Katib's Go (RE2) regular expressions with Rust's `regex` syntax, shared by
//! the spec validator and the metrics collector so both accept the same `metricsFormat`.

/// A Katib `metricsFormat` (Go RE2) as the Rust pattern that matches the same text: literal
/// braces escaped ([`escape_literal_braces`]) and the Perl classes made ASCII-only
/// ([`ascii_perl_classes`]).
pub fn go_regex(pattern: &str) -> String {
    ascii_perl_classes(&escape_literal_braces(pattern))
}

/// Go's `\d`, `\w` and `\s` are ASCII (`[0-9]`, `[0-9A-Za-z_]`, `[\t\n\f\r ]`); Rust's
/// match any Unicode digit, letter or space, so `loss=٣` would be a metric. Each (and its
/// negation) becomes the ASCII class, inside a bracket class too.
pub fn ascii_perl_classes(pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut in_class = false;
    // Where the current class's members start in `out`: a `]` there is a member, not its end.
    let mut members = 0;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' {
            let next = chars.get(i + 1).copied();
            match next.and_then(|n| ascii_class(n, in_class)) {
                Some(class) => out.push_str(class),
                None => {
                    out.push(c);
                    out.extend(next);
                }
            }
            i += 2;
            continue;
        }
        out.push(c);
        match c {
            '[' if !in_class => {
                in_class = true;
                members = out.len() + usize::from(chars.get(i + 1) == Some(&'^'));
            }
            ']' if in_class && out.len() - 1 > members => in_class = false,
            _ => {}
        }
        i += 1;
    }
    out
}

/// The ASCII form of the Perl class `\<letter>`, as written inside or outside brackets.
fn ascii_class(letter: char, in_class: bool) -> Option<&'static str> {
    Some(match (letter, in_class) {
        ('d', false) => "[0-9]",
        ('D', false) => "[^0-9]",
        ('w', false) => "[0-9A-Za-z_]",
        ('W', false) => "[^0-9A-Za-z_]",
        ('s', false) => "[\\t\\n\\x0C\\r ]",
        ('S', false) => "[^\\t\\n\\x0C\\r ]",
        ('d', true) => "0-9",
        ('D', true) => "[^0-9]",
        ('w', true) => "0-9A-Za-z_",
        ('W', true) => "[^0-9A-Za-z_]",
        ('s', true) => "\\t\\n\\x0C\\r ",
        ('S', true) => "[^\\t\\n\\x0C\\r ]",
        _ => return None,
    })
}

/// Go's RE2 (which Katib uses) reads a `{` that does not start a repetition such as `{2}` or
/// `{1,3}` as a literal brace; Rust's `regex` rejects it. Katib's own PyTorch example relies on
/// the Go reading (`{metricName: ...}`), so such braces are escaped before compiling.
pub fn escape_literal_braces(pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 4);
    let mut in_class = false;
    let mut open_repetition = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                out.push(c);
                if let Some(next) = chars.get(i + 1) {
                    out.push(*next);
                }
                i += 2;
                continue;
            }
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '{' if !in_class => {
                let rest: String = chars[i + 1..].iter().collect();
                let is_repetition = i > 0
                    && rest
                        .split_once('}')
                        .is_some_and(|(inner, _)| is_repetition_body(inner));
                if !is_repetition {
                    out.push_str("\\{");
                    i += 1;
                    continue;
                }
                open_repetition = true;
            }
            '}' if !in_class => {
                if !open_repetition {
                    out.push_str("\\}");
                    i += 1;
                    continue;
                }
                open_repetition = false;
            }
            _ => {}
        }
        out.push(c);
        i += 1;
    }
    out
}

/// `n`, `n,` or `n,m` with decimal digits.
fn is_repetition_body(inner: &str) -> bool {
    let (a, b) = inner.split_once(',').unwrap_or((inner, ""));
    !a.is_empty() && a.chars().all(|c| c.is_ascii_digit()) && b.chars().all(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_only_literal_braces() {
        assert_eq!(
            escape_literal_braces(r"{a: (\d{2,3})}"),
            r"\{a: (\d{2,3})\}"
        );
        assert_eq!(escape_literal_braces(r"[{}](x)\{"), r"[{}](x)\{");
    }

    #[test]
    fn perl_classes_match_ascii_only_as_in_go() {
        let katib_default = go_regex(r"([\w|-]+)\s*=\s*([+-]?\d*(\.\d+)?([Ee][+-]?\d+)?)");
        let re = regex::Regex::new(&katib_default).unwrap();
        let caps = re.captures("val-loss = -1.5e-3").unwrap();
        assert_eq!((&caps[1], &caps[2]), ("val-loss", "-1.5e-3"));
        // Arabic-Indic three, and a name in Chinese: no digit, no word character in Go.
        assert_eq!(&re.captures("loss=\u{663}").unwrap()[2], "");
        assert!(re.captures("损失=0.02").is_none());
        for (pattern, text, matches) in [
            (r"^\D+$", "abc", true),
            (r"^\D+$", "a1", false),
            (r"^[^\d]+$", "\u{663}", true),
            (r"^[\W]+$", "é", true),
            (r"^\S\s\S$", "a b", true),
            (r"^\S\s\S$", "a\u{a0}b", false),
            (r"^[]\d]+$", "]1", true),
            (r"\\d", "\\d", true),
            (r"^[a^]\d$", "^1", true),
            (r"^[^]]\d$", "x1", true),
        ] {
            let re = regex::Regex::new(&go_regex(pattern)).unwrap();
            assert_eq!(re.is_match(text), matches, "{pattern} on {text:?}");
        }
    }
}
