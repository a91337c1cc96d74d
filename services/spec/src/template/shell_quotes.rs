//! Katib's pod webhook runs the primary container of a trial whose metrics come from its
//! output, a file or event files (StdOut, File, TensorFlowEvent) under `sh -c`, its `command`
//! and `args` joined by spaces (`wrapWorkerContainer`), so a shell reads them: Katib's NAS
//! examples write `--architecture="${trialParameters.a}"`, and their trainers get the value
//! without the quotes.
//!
//! Vernier takes off the quotes of that idiom, word by word: a word that ends in one quoted
//! part, after a prefix without quotes or backslashes (`--flag="value"`, `"value"`,
//! `'value'`), and that a shell reads as exactly one word, becomes what the shell makes of it.
//! Any other word is passed as written: one whose quotes are inside it (compact JSON such as
//! `{"lr":0.1}`), one a shell would split or expand, a backslash outside quotes. So every
//! quoted value Katib's examples pass reaches the trainer as on Katib, without a shell in the
//! image, while a word Katib's joining would break (a `python3 -c` program, a JSON value) keeps
//! working as it did. A container that runs `sh -c` or `bash -c` itself is left alone, since
//! Katib's webhook keeps that shell and it reads the words once, as here. A kubelet reference
//! `$(NAME)` is text, since the kubelet replaces it before a shell would see it. The `shlex`
//! crate splits words but does not tell shell syntax from words, which is what decides.

use std::borrow::Cow;
use std::iter::Peekable;
use std::str::Chars;

/// The words of a primary container's `command` and `args` as the shell Katib's webhook adds
/// reads them ([`katib_unquoted`]), unless the container runs its own `sh -c`.
pub fn unquote_katib_words(command: &mut [String], args: &mut [String]) {
    let mut all = command.iter().chain(args.iter());
    let own_shell = matches!(all.next().map(String::as_str), Some("sh" | "bash"))
        && all.next().map(String::as_str) == Some("-c");
    if own_shell {
        return;
    }
    for word in command.iter_mut().chain(args.iter_mut()) {
        if let Cow::Owned(unquoted) = katib_unquoted(word) {
            *word = unquoted;
        }
    }
}

/// `word` as a shell reads it when it ends in one quoted part after a plain prefix and a shell
/// reads it as exactly one word; otherwise as written.
pub fn katib_unquoted(word: &str) -> Cow<'_, str> {
    let Some(open) = word.find(['"', '\'']) else {
        return Cow::Borrowed(word);
    };
    let (prefix, quoted) = word.split_at(open);
    if prefix.contains('\\') || !is_one_quoted_part(quoted) {
        return Cow::Borrowed(word);
    }
    match words(word) {
        Some(mut w) if w.len() == 1 => Cow::Owned(w.remove(0)),
        _ => Cow::Borrowed(word),
    }
}

/// Whether `text`, starting with a quote, is that quote's one part to its end.
fn is_one_quoted_part(text: &str) -> bool {
    let mut chars = text.chars();
    let Some(quote) = chars.next() else {
        return false;
    };
    let mut escaped = false;
    let mut closed_at = None;
    for (i, c) in chars.enumerate() {
        if closed_at.is_some() {
            return false;
        }
        match c {
            '\\' if quote == '"' && !escaped => escaped = true,
            c if c == quote && !escaped => closed_at = Some(i),
            _ => escaped = false,
        }
    }
    closed_at.is_some()
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
                        '$' => dollar(&mut chars, w)?,
                        '`' => return None,
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
            '$' => dollar(&mut chars, word.get_or_insert_with(String::new))?,
            '`' | ';' | '&' | '|' | '<' | '>' | '(' | ')' | '*' | '?' | '[' => return None,
            '~' | '#' if word.is_none() => return None,
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    out.extend(word);
    Some(out)
}

/// A `$` just read: a kubelet reference `$(NAME)` and a `$` a shell takes as itself (before a
/// quote, a space or the end) are copied into `w`; `None` for a shell expansion.
fn dollar(chars: &mut Peekable<Chars<'_>>, w: &mut String) -> Option<()> {
    match chars.peek() {
        None | Some('"' | '\'' | ' ' | '\t' | '\n' | '/' | ':' | '=' | ',' | '.') => {
            w.push('$');
            Some(())
        }
        Some('(') => {
            chars.next();
            let mut name = String::new();
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
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_wrapped_in_quotes_loses_them() {
        // (as written, as the trainer gets it)
        let table = [
            ("--lr=0.1", "--lr=0.1"),
            // Katib's NAS examples: the quotes go, the value's spaces stay.
            ("--arch=\"[[3], [0, 1]]\"", "--arch=[[3], [0, 1]]"),
            ("--c=\"{'k': 'v w'}\"", "--c={'k': 'v w'}"),
            ("'it is'", "it is"),
            ("\"q\\\"x\"", "q\"x"),
            ("\"a\\b\"", "a\\b"),
            ("--x=\"$(POD_NAME)\"", "--x=$(POD_NAME)"),
            ("--re=\"^abc$\"", "--re=^abc$"),
            ("\"a $ b\"", "a $ b"),
            ("\"\"", ""),
            // Quotes inside the word, or a shell's syntax: as written.
            ("{\"lr\":0.1}", "{\"lr\":0.1}"),
            ("'it''s'", "'it''s'"),
            ("a\\'b'", "a\\'b'"),
            ("print('a b')", "print('a b')"),
            ("import sys\nprint(\"x\")", "import sys\nprint(\"x\")"),
            ("\"$HOME/d\"", "\"$HOME/d\""),
            ("'unclosed", "'unclosed"),
            ("\"*.py\" x", "\"*.py\" x"),
            ("\"$(date +%s)\"", "\"$(date +%s)\""),
            ("loss=%s\\n", "loss=%s\\n"),
        ];
        for (written, got) in table {
            assert_eq!(katib_unquoted(written), got, "{written:?}");
        }
    }

    #[test]
    fn a_container_running_its_own_shell_keeps_its_words() {
        let strings = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut command = strings(&["sh", "-c"]);
        let mut args = strings(&["'./my dir/run.sh'", "\"3\""]);
        unquote_katib_words(&mut command, &mut args);
        assert_eq!(args, ["'./my dir/run.sh'", "\"3\""]);
        let mut command = strings(&["python3", "t.py", "--a=\"1 2\""]);
        let mut args = strings(&["--b='x'"]);
        unquote_katib_words(&mut command, &mut args);
        assert_eq!(
            (command, args),
            (
                strings(&["python3", "t.py", "--a=1 2"]),
                strings(&["--b=x"])
            )
        );
    }

    #[test]
    fn shell_syntax_and_words_are_told_apart() {
        let strings = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            words("a#b c~ 'x y' $"),
            Some(strings(&["a#b", "c~", "x y", "$"]))
        );
        for line in [
            "a #b", "~/x", "a;b", "a && b", "a > f", "ls *", "`x`", "$X", "${X}",
        ] {
            assert_eq!(words(line), None, "{line:?}");
        }
        assert_eq!(words("   "), Some(Vec::new()));
    }
}
