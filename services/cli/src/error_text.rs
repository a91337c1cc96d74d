//! How an error is printed: anyhow's `{:#}` joins a context and its cause as "context: cause",
//! which puts a context's `hint:` line before the cause it explains ("cannot write the report
//! to x.html / hint: pass --output ...: No such file or directory"). Here every link's message
//! comes first, joined as anyhow joins them (a cause the message already ends with is not
//! repeated), and the hints follow, outermost first.

/// The error's chain as one message, then each link's hint on its own line.
pub fn render(error: &anyhow::Error) -> String {
    let mut messages = Vec::new();
    let mut hints = Vec::new();
    for link in error.chain() {
        let text = link.to_string();
        match text.split_once("\nhint:") {
            Some((message, hint)) => {
                messages.push(message.to_string());
                hints.push(format!("hint:{hint}"));
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
            assert_eq!(render(&error), want);
        }
        let io = std::io::Error::new(std::io::ErrorKind::AddrInUse, "Address already in use");
        let repeated = Err::<(), _>(io)
            .context("cannot listen on x: Address already in use\nhint: pick a free port")
            .unwrap_err();
        assert_eq!(
            render(&repeated),
            "cannot listen on x: Address already in use\nhint: pick a free port"
        );
        let nested = failing("inner\nhint: fix the inner").context("outer\nhint: fix the outer");
        assert_eq!(
            render(&nested),
            "outer: inner: No such file or directory\nhint: fix the outer\nhint: fix the inner"
        );
    }
}
