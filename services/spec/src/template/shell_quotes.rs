//! Katib's pod webhook runs the primary container of a trial whose metrics come from its
//! output, a file or event files (StdOut, File, TensorFlowEvent) under `sh -c`, its `command`
//! and `args` joined by spaces (`wrapWorkerContainer`), so a shell reads them: Katib's NAS
//! examples write `--architecture="${trialParameters.a}"`, and their trainers get the value
//! without the quotes.
//!
//! Vernier gives each such word that holds quotes what the shell would make of it, word by
//! word: a word that a shell reads as exactly one word (plain, single- or double-quoted,
//! backslash-escaped parts) loses its quotes; any other is passed as written, and so is a
//! word without quotes (a `printf` format's `\n` or a regex's `\d` stay as they are, where
//! Katib's shell would eat the backslash). So every command Katib's shell runs as
//! intended runs alike, without a shell in the image or on the path, while a word Katib's
//! joining would break (a `python3 -c` program, a JSON value with spaces, `$HOME`) keeps
//! working as it does without the webhook. A kubelet reference `$(NAME)` is text here, since
//! the kubelet replaces it before a shell would see it. The `shlex` crate splits words but
//! does not tell shell syntax from words, which is what decides.

use std::borrow::Cow;

/// `word` as a shell reads it when it holds quotes and a shell reads it as exactly one plain
/// word; otherwise as written.
pub fn katib_unquoted(word: &str) -> Cow<'_, str> {
    if !word.contains(['"', '\'']) {
        return Cow::Borrowed(word);
    }
    match words(word) {
        Some(mut w) if w.len() == 1 => Cow::Owned(w.remove(0)),
        _ => Cow::Borrowed(word),
    }
}

/// The words of `line` as a POSIX shell splits them, or `None` when the line holds anything a
/// shell would act on beyond quoting: an expansion, a redirect, an operator, a glob, a leading
/// `~` or `#`, or an unclosed quote.
fn words(line: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => out.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => w.push(c),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '$' if chars.peek() == Some(&'(') => kubelet_reference(&mut chars, w)?,
                        '$' | '`' => return None,
                        '\\' => match chars.next()? {
                            c @ ('"' | '\\' | '$' | '`') => w.push(c),
                            '\n' => {}
                            c => {
                                w.push('\\');
                                w.push(c);
                            }
                        },
                        c => w.push(c),
                    }
                }
            }
            '\\' => match chars.next()? {
                '\n' => {}
                c => word.get_or_insert_with(String::new).push(c),
            },
            '$' if chars.peek() == Some(&'(') => {
                kubelet_reference(&mut chars, word.get_or_insert_with(String::new))?;
            }
            '$' | '`' | ';' | '&' | '|' | '<' | '>' | '(' | ')' | '*' | '?' | '[' => return None,
            '~' | '#' if word.is_none() => return None,
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    out.extend(word);
    Some(out)
}

/// Copies a kubelet reference `$(NAME)` (the `$` already read) into `w` as text; `None` when
/// what follows is not one (a shell's command substitution).
fn kubelet_reference(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    w: &mut String,
) -> Option<()> {
    let mut name = String::new();
    chars.next();
    loop {
        match chars.next()? {
            ')' => break,
            c if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') => name.push(c),
            _ => return None,
        }
    }
    w.push_str(&format!("$({name})"));
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_loses_the_quotes_a_shell_would_take() {
        // (as written, as the trainer gets it)
        let table = [
            ("--lr=0.1", "--lr=0.1"),
            // Katib's NAS examples: the quotes go, the value's spaces stay.
            ("--arch=\"[[3], [0, 1]]\"", "--arch=[[3], [0, 1]]"),
            ("--c=\"{'k': 'v w'}\"", "--c={'k': 'v w'}"),
            ("'it''s'", "its"),
            ("'a'\\ b", "a b"),
            ("loss=%s\\n", "loss=%s\\n"),
            ("\"q\\\"x\"", "q\"x"),
            ("\"a\\b\"", "a\\b"),
            ("--x=\"$(POD_NAME)\"", "--x=$(POD_NAME)"),
            // Not one plain word to a shell: as written.
            ("print('a b')", "print('a b')"),
            ("import sys\nprint(\"x\")", "import sys\nprint(\"x\")"),
            ("{\"a\": 1}", "{\"a\": 1}"),
            ("\"$HOME/d\"", "\"$HOME/d\""),
            ("'unclosed", "'unclosed"),
            ("\"*.py\" x", "\"*.py\" x"),
            ("\"$(date +%s)\"", "\"$(date +%s)\""),
        ];
        for (written, got) in table {
            assert_eq!(katib_unquoted(written), got, "{written:?}");
        }
    }

    #[test]
    fn shell_syntax_and_words_are_told_apart() {
        let strings = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(words("a#b c~ 'x y'"), Some(strings(&["a#b", "c~", "x y"])));
        for line in ["a #b", "~/x", "a;b", "a && b", "a > f", "ls *", "`x`", "$X"] {
            assert_eq!(words(line), None, "{line:?}");
        }
        assert_eq!(words("   "), Some(Vec::new()));
    }
}
