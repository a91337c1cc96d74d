//! Printing that a closed pipe cannot panic. `println!` panics when stdout is gone
//! (`vernier run x.yaml | head -3`, `vernier report x | head`), which would strand a running
//! experiment; here a broken pipe means "stop printing" and the command goes on (a run to
//! its end, a report to its exit). Other write errors are dropped the same way: output is
//! optional, the record in the store is not.

use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
static STDERR_CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes to stdout unless it was found closed; `false` once it is.
pub fn stdout(args: fmt::Arguments<'_>) -> bool {
    write_to(&mut std::io::stdout().lock(), &STDOUT_CLOSED, args)
}

/// Writes to stderr unless it was found closed.
pub fn stderr(args: fmt::Arguments<'_>) -> bool {
    write_to(&mut std::io::stderr().lock(), &STDERR_CLOSED, args)
}

/// The width of the terminal stdout writes to, `None` when stdout is a file or a pipe (whose
/// tables keep every cell on one line for tools that read them).
pub fn terminal_width() -> Option<u16> {
    let term = console::Term::stdout();
    if !term.is_term() {
        return None;
    }
    term.size_checked().map(|(_, cols)| cols)
}

fn write_to(w: &mut dyn Write, closed: &AtomicBool, args: fmt::Arguments<'_>) -> bool {
    if closed.load(Ordering::Relaxed) {
        return false;
    }
    if w.write_fmt(args).and_then(|()| w.flush()).is_err() {
        closed.store(true, Ordering::Relaxed);
        return false;
    }
    true
}

/// `println!` to stdout, stopping quietly at a closed pipe.
macro_rules! outln {
    () => {{
        let _ = $crate::out::stdout(format_args!("\n"));
    }};
    ($($arg:tt)*) => {{
        let _ = $crate::out::stdout(format_args!("{}\n", format_args!($($arg)*)));
    }};
}

/// `print!` to stdout, stopping quietly at a closed pipe.
macro_rules! out {
    ($($arg:tt)*) => {{
        let _ = $crate::out::stdout(format_args!($($arg)*));
    }};
}

/// `eprintln!`, stopping quietly at a closed pipe.
macro_rules! errln {
    () => {{
        let _ = $crate::out::stderr(format_args!("\n"));
    }};
    ($($arg:tt)*) => {{
        let _ = $crate::out::stderr(format_args!("{}\n", format_args!($($arg)*)));
    }};
}

/// `eprint!`, stopping quietly at a closed pipe.
macro_rules! err {
    ($($arg:tt)*) => {{
        let _ = $crate::out::stderr(format_args!($($arg)*));
    }};
}

pub(crate) use {err, errln, out, outln};

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer whose reader went away.
    struct Closed(usize);

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            self.0 += 1;
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_broken_pipe_stops_printing_without_panicking() {
        let flag = AtomicBool::new(false);
        let mut w = Closed(0);
        assert!(!write_to(&mut w, &flag, format_args!("a\n")));
        assert!(!write_to(&mut w, &flag, format_args!("b\n")));
        assert_eq!(w.0, 1, "nothing is tried after the pipe closed");
        let mut ok = Vec::new();
        assert!(write_to(
            &mut ok,
            &AtomicBool::new(false),
            format_args!("x={}\n", 1)
        ));
        assert_eq!(ok, b"x=1\n");
    }
}
