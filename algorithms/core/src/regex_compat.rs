//! Compatibility of Katib's Go (RE2) regular expressions with Rust's `regex` syntax, shared by
//! the spec validator and the metrics collector so both accept the same `metricsFormat`.

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
}
