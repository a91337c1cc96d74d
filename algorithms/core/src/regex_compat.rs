//! Compatibility of Katib's Go (RE2) regular expressions with Rust's `regex` syntax, shared by
//! the spec validator and the metrics collector so both accept the same `metricsFormat`.

/// Katib's default `metricsFormat` for TEXT metrics (`name=value`), in Go syntax: what the
/// collector applies when none is given and what the validator says cannot read a name.
pub const KATIB_DEFAULT_METRICS_FORMAT: &str = r"([\w|-]+)\s*=\s*([+-]?\d*(\.\d+)?([Ee][+-]?\d+)?)";

/// A Katib `metricsFormat` (Go RE2) as the Rust pattern that matches the same text: Go's own
/// escapes spelled as Rust reads them ([`go_escapes`]), the characters Rust reads as nested
/// classes or set operators inside a bracket class escaped ([`go_class_literals`]), literal
/// braces escaped ([`escape_literal_braces`]) and the Perl classes made ASCII-only
/// ([`ascii_perl_classes`]).
pub fn go_regex(pattern: &str) -> String {
    let literal = go_class_literals(&go_escapes(pattern));
    ascii_perl_classes(&escape_literal_braces(&literal))
}

/// Inside a bracket class Go reads `[` (unless it opens `[:alpha:]`), `&` and `~` as
/// themselves; Rust reads `[` as a nested class and `&&`, `~~` as set operations, so
/// `[^[=]` is refused and `[a-z&&]` silently intersects. They are escaped there.
pub fn go_class_literals(pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 4);
    let mut in_class = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' {
            out.extend(&chars[i..(i + 2).min(chars.len())]);
            i += 2;
            continue;
        }
        if !in_class {
            out.push(c);
            i += 1;
            if c == '[' {
                in_class = true;
                // A `^` and then a `]` first are members, not the class's end.
                for lead in ['^', ']'] {
                    if chars.get(i) == Some(&lead) {
                        out.push(lead);
                        i += 1;
                    }
                }
            }
            continue;
        }
        let posix_end = (c == '[' && chars.get(i + 1) == Some(&':'))
            .then(|| (i + 2..chars.len()).find(|&k| chars[k] == ']'))
            .flatten()
            .filter(|&k| chars[k - 1] == ':' && k > i + 2);
        match c {
            // `[:alpha:]`: its `:]` is the first `]` after it; else the `[` is a member.
            '[' if posix_end.is_some() => {
                let end = posix_end.unwrap_or(i);
                out.extend(&chars[i..=end]);
                i = end;
            }
            '[' | '&' | '~' => {
                out.push('\\');
                out.push(c);
            }
            ']' => {
                in_class = false;
                out.push(c);
            }
            _ => out.push(c),
        }
        i += 1;
    }
    out
}

/// Why Go's regexp (which Katib's webhook compiles every `metricsFormat` with) refuses a
/// pattern that Rust's would accept, if it does: an escape Go does not know (`\u`, `\U`,
/// `\e`), a repetition with nothing to repeat (`{2}` first, or after `(` or `|`), a count
/// above Go's 1000, or a flag Go does not have (only `i`, `m`, `s` and `U`).
pub fn go_refusal(pattern: &str) -> Option<String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut in_class = false;
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            // Inside a bracket class `(`, `?` and `{` are members.
            '[' if !in_class => {
                in_class = true;
                i += 1;
                for lead in ['^', ']'] {
                    if chars.get(i) == Some(&lead) {
                        i += 1;
                    }
                }
                continue;
            }
            ']' if in_class => in_class = false,
            _ if in_class && chars[i] != '\\' => {}
            '(' if chars.get(i + 1) == Some(&'?') => {
                if let Some(refused) = go_flag_refusal(&chars[i + 2..]) {
                    return Some(refused);
                }
            }
            '\\' if chars.get(i + 1) == Some(&'Q') => {
                let end = (i + 2..chars.len())
                    .find(|&k| chars[k] == '\\' && chars.get(k + 1) == Some(&'E'));
                i = end.map_or(chars.len(), |k| k + 2);
                continue;
            }
            '\\' => {
                if let Some(&c @ ('u' | 'U' | 'e' | 'Z' | 'C' | 'i' | 'y')) = chars.get(i + 1) {
                    return Some(format!(
                        "invalid escape sequence: `\\{c}` (Go's regexp has no such escape)"
                    ));
                }
                i += 2;
                continue;
            }
            '{' => {
                let body: String = chars[i + 1..].iter().take_while(|&&c| c != '}').collect();
                if is_repetition_body(&body) {
                    let counts = body.split(',').filter_map(|n| n.parse::<u64>().ok());
                    if counts.clone().any(|n| n > 1000) {
                        return Some(format!(
                            "invalid repeat count: `{{{body}}}` (Go allows at most 1000)"
                        ));
                    }
                    let before = i.checked_sub(1).map(|k| chars[k]);
                    if matches!(before, None | Some('(' | '|')) {
                        return Some(format!(
                            "missing argument to repetition operator: `{{{body}}}`"
                        ));
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Go's refusal of the group `(?` followed by `rest`, if it refuses it: a flag group may hold
/// only `i`, `m`, `s`, `U` and `-`; a named group (`P<`, `<`) is not a flag group.
fn go_flag_refusal(rest: &[char]) -> Option<String> {
    if matches!(rest, ['P', '<', ..] | ['<', ..]) {
        return None;
    }
    let flags: String = rest.iter().take_while(|&&c| c != ')' && c != ':').collect();
    if flags.chars().all(|c| "imsU-".contains(c)) {
        return None;
    }
    let bad: String = flags.chars().take_while(|c| "imsU-".contains(*c)).collect();
    let first = flags.chars().nth(bad.chars().count()).unwrap_or_default();
    Some(format!(
        "invalid or unsupported Perl syntax: `(?{bad}{first}` (Go's regexp has only the flags i, m, s and U)"
    ))
}

/// The escapes whose meaning differs between Go and Rust, rewritten to Go's meaning:
/// - `\Q...\E` quotes literal text in Go; Rust has no such syntax.
/// - `\<` and `\>` are the literal `<` and `>` in Go (any escaped punctuation is itself),
///   word boundaries in Rust.
/// - `\b` and `\B` are ASCII word boundaries in Go, Unicode ones in Rust.
/// - `\0`, `\012`, `\75` are octal character codes in Go, refused (backreferences) in Rust.
pub fn go_escapes(pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut in_class = false;
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' if chars.get(i + 1) == Some(&'Q') && !in_class => {
                i = quote_literal(&chars, i + 2, &mut out);
            }
            '\\' => i = go_escape(&chars, i, in_class, &mut out),
            c => {
                // A `]` first in a class is a member; that rare case only decides whether a
                // later `\b` is rewritten, so it is not tracked here.
                match c {
                    '[' => in_class = true,
                    ']' => in_class = false,
                    _ => {}
                }
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// The text of `\Q...\E` starting at `from`, quoted for Rust; returns where to go on.
fn quote_literal(chars: &[char], from: usize, out: &mut String) -> usize {
    let end = (from..chars.len())
        .find(|&i| chars[i] == '\\' && chars.get(i + 1) == Some(&'E'))
        .unwrap_or(chars.len());
    for &c in &chars[from..end] {
        // The characters `regex::escape` escapes (this crate does not depend on `regex`).
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    (end + 2).min(chars.len())
}

/// One escape at `at` (a backslash), rewritten where Go reads it otherwise than Rust.
fn go_escape(chars: &[char], at: usize, in_class: bool, out: &mut String) -> usize {
    let Some(&next) = chars.get(at + 1) else {
        out.push('\\');
        return at + 1;
    };
    match next {
        '<' | '>' => out.push(next),
        'b' | 'B' if !in_class => {
            out.push_str("(?-u:\\");
            out.push(next);
            out.push(')');
        }
        '0'..='7' => {
            if let Some((code, used)) = octal_code(&chars[at + 1..]) {
                out.push_str(&format!("\\u{code:04X}"));
                return at + 1 + used;
            }
            out.push('\\');
            out.push(next);
        }
        _ => {
            out.push('\\');
            out.push(next);
        }
    }
    at + 2
}

/// Go's octal escape at the start of `digits` (after the backslash): `\0` followed by up to
/// two octal digits, or `\1`-`\7` followed by one or two (a lone one is a backreference,
/// which neither Go nor Rust supports). Returns the code and the digits used.
fn octal_code(digits: &[char]) -> Option<(u32, usize)> {
    let octal: Vec<u32> = digits.iter().take(3).map_while(|c| c.to_digit(8)).collect();
    if octal.first() != Some(&0) && octal.len() < 2 {
        return None;
    }
    Some((octal.iter().fold(0, |code, d| code * 8 + d), octal.len()))
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
                // `\p{Greek}`, `\P{L}` and `\x{3A}` take their braces along, as in Go.
                let braced = matches!(chars.get(i + 1), Some('p' | 'P' | 'x'))
                    && chars.get(i + 2) == Some(&'{');
                let end = match braced {
                    true => (i + 3..chars.len()).find(|&k| chars[k] == '}'),
                    false => None,
                };
                let end = end.unwrap_or(i + 1).min(chars.len() - 1);
                out.extend(&chars[i..=end]);
                i = end + 1;
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
        assert_eq!(escape_literal_braces("a\\"), "a\\");
    }

    /// Escapes whose argument is in braces keep them, as Go reads them: Unicode classes and
    /// hexadecimal codes.
    #[test]
    fn braced_escape_arguments_are_not_literal_braces() {
        for (pattern, text, matches) in [
            (r"(\p{L}+):\s*([0-9.]+)", "précision: 0.9", true),
            (r"^\p{Greek}+=", "λ=1", true),
            (r"^\P{L}+$", "12", true),
            (r"^\P{L}+$", "a2", false),
            (r"^[\p{Nd}]+$", "42", true),
            (r"(\w+)\x{3A}\s*([0-9.]+)", "loss: 0.5", true),
            (r"\x{3A}{2}", "::", true),
            (r"\pN{2}", "12", true),
            (r"{\p{L}}", "{a}", true),
        ] {
            let re =
                regex::Regex::new(&go_regex(pattern)).unwrap_or_else(|e| panic!("{pattern}: {e}"));
            assert_eq!(re.is_match(text), matches, "{pattern} on {text:?}");
        }
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

    #[test]
    fn go_escapes_keep_their_go_meaning() {
        for (pattern, text, matches) in [
            // Escaped punctuation is itself in Go; `\<` `\>` are word boundaries in Rust.
            (r"\<(\w+)\>=([\d.]+)", "<loss>=0.23", true),
            (r"\<(\w+)\>=([\d.]+)", "loss=0.42", false),
            (r"[\<]loss", "<loss", true),
            // Go's `\b` is an ASCII word boundary: `é` is no word character there.
            (r"\b(loss)=([\d.]+)", "\u{e9}loss=0.24", true),
            (r"\Bloss", "\u{e9}loss", false),
            (r"\bloss", "xloss", false),
            // Octal codes: `\075` is `=`, `\0` NUL, `\12` a newline.
            (r"<(\w+)>\075([\d.]+)", "<loss>=0.5", true),
            (r"a\0b", "a\0b", true),
            (r"a\12b", "a\nb", true),
            (r"^\101\1012$", "AA2", true),
            // `\Q...\E` quotes; without `\E` up to the end.
            (r"(\Qloss\E)>=([\d.]+)", "loss>=0.1", true),
            (r"^\Qa.b{2}(c)\E$", "a.b{2}(c)", true),
            (r"^\Qa.b{2}(c)\E$", "axbb(c)", false),
            (r"x\Q[*", "x[*", true),
            (r"\\Q", "\\Q", true),
        ] {
            let re =
                regex::Regex::new(&go_regex(pattern)).unwrap_or_else(|e| panic!("{pattern}: {e}"));
            assert_eq!(re.is_match(text), matches, "{pattern} on {text:?}");
        }
        // A lone `\1` is a backreference in Go too: still refused.
        assert!(regex::Regex::new(&go_regex(r"(a)\1")).is_err());
    }

    /// Inside a bracket class `[`, `&` and `~` are themselves, as in Go; a POSIX class stays
    /// a class.
    #[test]
    fn class_members_rust_would_read_as_operators_are_literal() {
        for (pattern, text, matches) in [
            (r"^([^[=]+)=([\d.]+)$", "loss=0.5", true),
            (r"^([^[=]+)=", "a[b=1", false),
            (r"^([a-z&&]+)=", "a&b=0.5", true),
            // Go: the class `[\w&&[^_]` and then `]+`.
            (r"^[\w&&[^_]]+$", "a_b", false),
            (r"^[\w&&[^_]]+$", "_]]", true),
            (r"^[a~~b]+$", "a~b", true),
            (r"^[[:alpha:]]+$", "abc", true),
            (r"^[[:alpha:]]+$", "a1", false),
            (r"^[]&]+$", "]&", true),
            // No `:]` before the class ends: a `[` member, then `:` and `x`.
            (r"^[[:x]+$", "[x:", true),
            (r"^[\[]$", "[", true),
        ] {
            let re =
                regex::Regex::new(&go_regex(pattern)).unwrap_or_else(|e| panic!("{pattern}: {e}"));
            assert_eq!(re.is_match(text), matches, "{pattern} on {text:?}");
        }
    }

    #[test]
    fn what_go_refuses_and_rust_accepts_is_named() {
        for (pattern, refused) in [
            (r"(\w+)=\u0030([\d.]+)", Some("invalid escape sequence")),
            (
                r"{2}(\w+)=([\d.]+)",
                Some("missing argument to repetition operator"),
            ),
            (
                r"(\w+)=(a|{3})",
                Some("missing argument to repetition operator"),
            ),
            (r"(\w+)=(\d+\.\d{1001})", Some("invalid repeat count")),
            (r"(\w+)=(\d{2,1000})", None),
            (r"([\w|-]+)\s*=\s*([+-]?\d*(\.\d+)?([Ee][+-]?\d+)?)", None),
            (
                r"{metricName: ([\w|-]+), metricValue: ([+-]?\d*(\.\d+)?)}",
                None,
            ),
            (r"\Q\u{2}\E(\w+)=(\d)", None),
            (r"\\u(\w+)=(\d)", None),
            (
                r"(?x) (\w+) = ([\d.]+)",
                Some("invalid or unsupported Perl syntax: `(?x`"),
            ),
            (
                r"(?iu)(\w+)=(\d)",
                Some("invalid or unsupported Perl syntax: `(?iu`"),
            ),
            (r"(?i)(\w+)=(?s:\d)", None),
            (r"(?-U:(\w+))=(?P<v>\d)(?<w>x)?", None),
            (r"\(?x(\w+)=(\d)", None),
            (r"[(?x](\w+)=(\d)", None),
            (r"[a{2}](\w+)=(\d)", None),
        ] {
            let got = go_refusal(pattern);
            match refused {
                Some(needle) => assert!(
                    got.as_deref().is_some_and(|g| g.starts_with(needle)),
                    "{pattern}: {got:?}"
                ),
                None => assert_eq!(got, None, "{pattern}"),
            }
        }
    }
}
