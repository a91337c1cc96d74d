//! How an error is printed: anyhow's `{:#}` joins a context and its cause as "context: cause",
//! which puts a context's `hint:` line before the cause it explains ("cannot write the report
//! to x.html / hint: pass --output ...: No such file or directory"). Here every link's message
//! comes first, joined as anyhow joins them (a cause the message already ends with is not
//! repeated), and the hints follow, outermost first. A command a hint quotes gets the run's
//! `--db`, since the libraries that write the hints do not know which database was meant.

/// Subcommands that open the database: a hint's `vernier resume x` must name the same one.
const DB_COMMANDS: &[&str] = &[
    "run",
    "resume",
    "report",
    "list",
    "delete",
    "enqueue",
    "compare",
    "dashboard",
    "serve",
];

/// `hint` with `db_flag` (` --db X`, or empty for the default) added inside each backticked
/// `vernier <subcommand> ...` of [`DB_COMMANDS`] that does not name `--db` already.
fn with_db_flag(hint: &str, db_flag: &str) -> String {
    if db_flag.is_empty() {
        return hint.to_string();
    }
    let mut pieces: Vec<String> = hint.split('`').map(str::to_string).collect();
    // Odd pieces are the backticked ones (a hint's backticks come in pairs).
    for piece in pieces.iter_mut().skip(1).step_by(2) {
        let mut words = piece.split_whitespace();
        let is_db_command = words.next() == Some("vernier")
            && words.next().is_some_and(|sub| DB_COMMANDS.contains(&sub));
        if is_db_command && !piece.contains("--db") {
            piece.push_str(db_flag);
        }
    }
    pieces.join("`")
}

/// The error's chain as one message, then each link's hint on its own line, the commands it
/// quotes given `db_flag` ([`crate::db::db_flag`]).
pub fn render(error: &anyhow::Error, db_flag: &str) -> String {
    let mut messages = Vec::new();
    let mut hints = Vec::new();
    for link in error.chain() {
        let text = link.to_string();
        match text.split_once("\nhint:") {
            Some((message, hint)) => {
                messages.push(message.to_string());
                hints.push(format!("hint:{}", with_db_flag(hint, db_flag)));
            }
            // A message that already ends with its cause (`"cannot listen on x: {source}"`)
            // is not followed by the cause again.
            None if messages.last().is_some_and(|m: &String| m.ends_with(&text)) => {}
            None => messages.push(text),
        }
    }
    let mut out = messages.join(": ");
    for hint in hints {
        out.push('\n');
        out.push_str(&hint);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    fn failing(context: &str) -> anyhow::Error {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory");
        Err::<(), _>(io).context(context.to_string()).unwrap_err()
    }

    #[test]
    fn hints_come_after_every_message() {
        let cases = [
            (
                failing(
                    "cannot write the report to x.html\nhint: pass --output with a path in a writable directory",
                ),
                "cannot write the report to x.html: No such file or directory\nhint: pass --output with a path in a writable directory",
            ),
            (
                failing("cannot read f.yaml"),
                "cannot read f.yaml: No such file or directory",
            ),
            (
                anyhow::anyhow!("experiment \"x\" does not exist\nhint: `vernier list` shows them"),
                "experiment \"x\" does not exist\nhint: `vernier list` shows them",
            ),
            (
                anyhow::anyhow!("f.yaml: 2 problem(s) found\nspec.a: bad\nspec.b: bad"),
                "f.yaml: 2 problem(s) found\nspec.a: bad\nspec.b: bad",
            ),
        ];
        for (error, want) in cases {
            assert_eq!(render(&error, ""), want);
        }
        let io = std::io::Error::new(std::io::ErrorKind::AddrInUse, "Address already in use");
        let repeated = Err::<(), _>(io)
            .context("cannot listen on x: Address already in use\nhint: pick a free port")
            .unwrap_err();
        assert_eq!(
            render(&repeated, ""),
            "cannot listen on x: Address already in use\nhint: pick a free port"
        );
        let nested = failing("inner\nhint: fix the inner").context("outer\nhint: fix the outer");
        assert_eq!(
            render(&nested, ""),
            "outer: inner: No such file or directory\nhint: fix the outer\nhint: fix the inner"
        );
    }

    #[test]
    fn commands_in_hints_name_the_database_that_was_meant() {
        let flag = " --db runs.db";
        // (hint, rewritten)
        let cases = [
            (
                " use `vernier resume e`, `vernier delete e`, or rename",
                " use `vernier resume e --db runs.db`, `vernier delete e --db runs.db`, or rename",
            ),
            (
                " free space, then `vernier resume` the experiment",
                " free space, then `vernier resume --db runs.db` the experiment",
            ),
            (
                " `vernier list`, `report` and `compare` read it",
                " `vernier list --db runs.db`, `report` and `compare` read it",
            ),
            // Already named, not a database command, not a command.
            (
                " `vernier report e --db other.db`",
                " `vernier report e --db other.db`",
            ),
            (
                " `vernier validate f.yaml` shows",
                " `vernier validate f.yaml` shows",
            ),
            (" set `parallelTrialCount`", " set `parallelTrialCount`"),
        ];
        for (hint, want) in cases {
            assert_eq!(with_db_flag(hint, flag), want, "{hint}");
            assert_eq!(with_db_flag(hint, ""), hint);
        }
        let e = anyhow::anyhow!("experiment `e` already exists\nhint: use `vernier resume e`");
        assert_eq!(
            render(&e, flag),
            "experiment `e` already exists\nhint: use `vernier resume e --db runs.db`"
        );
    }
}
