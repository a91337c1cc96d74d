//! Where the library crates' `tracing` events go: stderr, one plain line each, as the
//! command line has always printed them (`warning: ...` for warnings, `error: ...` for errors,
//! the bare message otherwise). Only Vernier's own crates are shown, at info and above; the
//! libraries underneath (kube, tonic, hyper) stay quiet as they were before.

use std::fmt;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;

/// The library crates whose events are shown.
const CRATES: [&str; 9] = [
    "vernier_core",
    "vernier_algorithms",
    "vernier_spec",
    "vernier_store",
    "vernier_collector",
    "vernier_runner",
    "vernier_proto",
    "vernier_api",
    "vernier_operator",
];

/// Installs the subscriber for the whole process; a second call changes nothing.
pub fn init() {
    let targets = CRATES
        .iter()
        .fold(Targets::new(), |t, c| t.with_target(*c, LevelFilter::INFO));
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .event_format(Plain);
    let _ = tracing_subscriber::registry()
        .with(layer.with_filter(targets))
        .try_init();
}

/// `warning: message`, `error: message` or `message`, with any fields after it.
#[derive(Debug)]
struct Plain;

impl<S, N> FormatEvent<S, N> for Plain
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        write!(writer, "{}", prefix(*event.metadata().level()))?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

fn prefix(level: Level) -> &'static str {
    match level {
        Level::ERROR => "error: ",
        Level::WARN => "warning: ",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_print_the_words_the_command_line_always_used() {
        let cases = [
            (Level::ERROR, "error: "),
            (Level::WARN, "warning: "),
            (Level::INFO, ""),
            (Level::DEBUG, ""),
        ];
        for (level, want) in cases {
            assert_eq!(prefix(level), want, "{level}");
        }
    }
}
