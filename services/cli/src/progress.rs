//! Shows a running experiment: a live bar on a terminal, plain lines otherwise (logs, CI).

use crate::out::outln;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use vernier_core::TrialState;
use vernier_report::svg::significant;
use vernier_runner::{DriverEvent, Observer, Progress};
use vernier_spec::plan::TrialCounts;
use vernier_store::SqlStore;

/// The last non-empty line of a log (read from its last 4 KiB), if it can be read.
fn last_line(path: &Path) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(4096))).ok()?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_string)
}

/// How much of the last output line is shown; the log has all of it.
const LAST_OUTPUT_CHARS: usize = 300;

/// `line` cut to [`LAST_OUTPUT_CHARS`], saying how long it was: one progress bar printed
/// without newlines must not fill the terminal.
fn shortened(line: &str) -> String {
    match vernier_core::first_chars(line, LAST_OUTPUT_CHARS) {
        None => line.to_string(),
        Some(head) => format!("{head}... ({} bytes)", line.len()),
    }
}

/// How much of a trial's parameter values its started line shows: ENAS's `nn_config` alone
/// is some 600 characters, printed again for every trial.
const STARTED_VALUES_CHARS: usize = 160;

/// A trial's `name=value` text cut to [`STARTED_VALUES_CHARS`], saying where the rest is: its
/// started line, and the best trial's line at the end of a run.
pub fn started_values(assignment: &str) -> String {
    match vernier_core::first_chars(assignment, STARTED_VALUES_CHARS) {
        None => assignment.to_string(),
        Some(head) => format!(
            "{head}... ({} characters; `vernier report --format json` shows them whole)",
            assignment.chars().count()
        ),
    }
}

/// What a failed trial's line adds: the last thing it printed (most often the error) and
/// where its whole log is, when it has one (a trial that failed before it started has none).
fn failure_lines(last: Option<&str>, log: Option<&Path>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(l) = last {
        out.push(format!("          last log line: {}", shortened(l)));
    }
    if let Some(log) = log {
        out.push(format!("          log: {}", log.display()));
    }
    out
}

/// Each finished outcome's count and word, in the order of `vernier report`'s summary.
fn finished_outcomes(c: &TrialCounts) -> [(u32, &'static str); 5] {
    [
        (c.succeeded, "succeeded"),
        (c.early_stopped, "early stopped"),
        (c.failed, "failed"),
        (c.metrics_unavailable, "metrics unavailable"),
        (c.killed, "killed"),
    ]
}

/// The progress line's counts: running and succeeded always, every other outcome (and
/// pending trials) once it happened, so the numbers add up to the trials so far.
fn count_words(c: &TrialCounts) -> String {
    let mut parts = vec![format!("{} running", c.running)];
    let happened = finished_outcomes(c)
        .into_iter()
        .chain([(c.pending, "pending")])
        .filter(|&(n, word)| n > 0 || word == "succeeded");
    parts.extend(happened.map(|(n, word)| format!("{n} {word}")));
    parts.join(", ")
}

/// Every finished outcome with its count, zeros included: the end-of-run summary, where the
/// counts must visibly add up to the trials run.
pub(crate) fn final_counts(c: &TrialCounts) -> String {
    finished_outcomes(c)
        .iter()
        .map(|(n, word)| format!("{n} {word}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Prints driver events for a person or a log.
#[derive(Debug)]
pub struct Display {
    metric: String,
    /// Where `<trial>.log` files are, so a failed trial's line can point at its log.
    log_dir: PathBuf,
    bar: Option<ProgressBar>,
}

impl Display {
    pub fn new(metric: &str, max_trials: Option<u32>, log_dir: &Path) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = match max_trials {
                Some(n) => ProgressBar::new(u64::from(n)),
                None => ProgressBar::new_spinner(),
            };
            // The second line lists the running trials' latest values (see `watch_running`).
            let template = if max_trials.is_some() {
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}\n  {prefix}"
            } else {
                "{spinner} [{elapsed_precise}] {pos} trials {msg}\n  {prefix}"
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style);
            }
            bar.enable_steady_tick(std::time::Duration::from_millis(200));
            bar
        });
        Display {
            metric: metric.to_string(),
            log_dir: log_dir.to_path_buf(),
            bar,
        }
    }

    fn line(&self, text: String) {
        match &self.bar {
            Some(bar) => bar.println(text),
            None => outln!("{text}"),
        }
    }

    /// The live bar, when there is one: `watch_running` writes the running trials' line on it.
    pub fn bar(&self) -> Option<ProgressBar> {
        self.bar.clone()
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    fn summary(&self, p: &Progress) -> String {
        let mut s = count_words(&p.counts);
        if let Some(b) = &p.best {
            if let Some((_, front)) = &b.front {
                s.push_str(&format!(", {front} on the Pareto front"));
            }
            s.push_str(&format!(
                ", best {}={} ({})",
                self.metric,
                shown(&b.value, FINISHED_DIGITS),
                b.trial
            ));
        }
        s
    }
}

impl Observer for Display {
    fn on_event(&mut self, event: &DriverEvent, progress: &Progress) {
        match event {
            DriverEvent::TrialStarted { name, assignment } => {
                if self.bar.is_none() {
                    self.line(format!("started   {name}  {}", started_values(assignment)));
                }
            }
            DriverEvent::TrialFinished {
                name,
                state,
                objective,
                objective_text,
                message,
            } => {
                let shown = objective
                    .map(num)
                    .or_else(|| objective_text.as_deref().map(|t| shown(t, FINISHED_DIGITS)));
                let value = shown.map_or_else(String::new, |v| format!("  {}={v}", self.metric));
                let detail = if *state == TrialState::Succeeded {
                    String::new()
                } else {
                    format!("  ({})", message.lines().next().unwrap_or(""))
                };
                self.line(format!("{:<9} {name}{value}{detail}", state.as_str()));
                if *state != TrialState::Succeeded {
                    for hint in message.lines().skip(1).filter(|l| l.starts_with("hint:")) {
                        self.line(format!("          {hint}"));
                    }
                }
                if matches!(state, TrialState::Failed | TrialState::MetricsUnavailable) {
                    let log = self.log_dir.join(format!("{name}.log"));
                    let written = log.exists().then_some(log.as_path());
                    for l in failure_lines(last_line(&log).as_deref(), written) {
                        self.line(l);
                    }
                }
                if self.bar.is_none() {
                    self.line(format!("          {}", self.summary(progress)));
                }
            }
            DriverEvent::Warning(w) => self.line(format!("warning: {w}")),
        }
        if let Some(bar) = &self.bar {
            bar.set_position(u64::from(progress.counts.completed()));
            bar.set_message(self.summary(progress));
        }
    }
}

/// How often the running trials' line is refreshed from the store.
const RUNNING_REFRESH: std::time::Duration = std::time::Duration::from_secs(1);

/// Keeps the bar's second line showing each running trial's latest `metric` value, read from
/// the store the trials report to (the driver records observations as they are printed).
/// Runs until aborted; a failed read leaves the line as it was.
pub async fn watch_running(store: SqlStore, experiment: String, metric: String, bar: ProgressBar) {
    loop {
        if let Ok(running) = running_values(&store, &experiment, &metric).await {
            let width = usize::from(console::Term::stderr().size().1).saturating_sub(3);
            bar.set_prefix(running_line(&running, &metric, width.max(20)));
        }
        tokio::time::sleep(RUNNING_REFRESH).await;
    }
}

/// Each running trial of `experiment` with its latest `metric` value, in creation order.
async fn running_values(
    store: &SqlStore,
    experiment: &str,
    metric: &str,
) -> Result<Vec<(String, Option<String>)>, vernier_store::StoreError> {
    let mut out = Vec::new();
    for t in store.list_trials(experiment).await? {
        if t.state != TrialState::Running {
            continue;
        }
        let (metrics, _) = store.trial_summary(&t.name).await?;
        let latest = metrics
            .into_iter()
            .find(|m| m.summary.name == metric)
            .map(|m| m.summary.latest);
        out.push((t.name, latest));
    }
    Ok(out)
}

/// The running trials and their latest objective value (`None` before the first) as one
/// line of at most `width` characters: `running: t-1 loss=0.41 · t-2 loss=… (+3 more)`.
pub(crate) fn running_line(
    running: &[(String, Option<String>)],
    metric: &str,
    width: usize,
) -> String {
    if running.is_empty() {
        return String::new();
    }
    let chars = |s: &str| s.chars().count();
    let more = |n: usize| format!(" (+{n} more)");
    let mut line = String::from("running:");
    for (i, (trial, value)) in running.iter().enumerate() {
        let item = format!(
            "{trial} {metric}={}",
            value
                .as_deref()
                .map_or("…".into(), |v| shown(v, RUNNING_DIGITS))
        );
        let sep = if i == 0 { " " } else { " · " };
        let after = running.len() - i - 1;
        let reserve = if after > 0 { chars(&more(after)) } else { 0 };
        if chars(&line) + chars(sep) + chars(&item) + reserve > width {
            line.push_str(&more(running.len() - i));
            break;
        }
        line.push_str(sep);
        line.push_str(&item);
    }
    line.chars().take(width).collect()
}

/// Significant digits of a finished trial's or the best value: enough that an accuracy of
/// 0.999995 does not read as 1.
const FINISHED_DIGITS: usize = 6;
/// Significant digits on the running trials' line, which is short of room.
const RUNNING_DIGITS: usize = 4;

fn num(v: f64) -> String {
    significant(v, FINISHED_DIGITS)
}

/// A value as shown on one line: numbers with `digits` significant digits, text (a DARTS
/// genotype) cut to 60 characters.
fn shown(value: &str, digits: usize) -> String {
    match value.parse::<f64>() {
        Ok(v) => significant(v, digits),
        Err(_) if value.chars().count() > 60 => {
            format!("{}...", value.chars().take(60).collect::<String>())
        }
        Err(_) => value.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_started_line_cuts_long_values_and_says_how_long_they_were() {
        let short = "lr=0.01 layers=3";
        assert_eq!(started_values(short), short);
        let exactly = "x".repeat(STARTED_VALUES_CHARS);
        assert_eq!(started_values(&exactly), exactly);
        let long = format!("nn_config={}", "é".repeat(600));
        let cut = started_values(&long);
        assert!(cut.starts_with(&long[..20]), "{cut}");
        assert!(
            cut.ends_with("... (610 characters; `vernier report --format json` shows them whole)"),
            "{cut}"
        );
        assert_eq!(cut.chars().count(), STARTED_VALUES_CHARS + 69);
    }

    #[test]
    fn a_failed_trial_points_at_its_last_output_and_log() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("t.log");
        std::fs::write(
            &log,
            "epoch=1 loss=3\nTraceback (most recent call last):\nValueError: bad lr\n\n",
        )
        .unwrap();
        let last = last_line(&log);
        assert_eq!(last.as_deref(), Some("ValueError: bad lr"));
        let lines = failure_lines(last.as_deref(), Some(&log));
        assert_eq!(lines[0], "          last log line: ValueError: bad lr");
        let long = "x".repeat(5000);
        let cut = failure_lines(Some(&long), Some(Path::new("/l/t.log")));
        assert_eq!(
            cut[0],
            format!(
                "          last log line: {}... (5000 bytes)",
                "x".repeat(300)
            )
        );
        assert_eq!(lines[1], format!("          log: {}", log.display()));
        assert_eq!(last_line(&dir.path().join("missing.log")), None);
        assert_eq!(failure_lines(None, Some(&log)).len(), 1);
        assert!(failure_lines(None, None).is_empty());
    }

    /// A best or finished value keeps six digits, so a maximised accuracy of 0.999995 is not
    /// shown as 1; text is cut to 60 characters.
    #[test]
    fn values_keep_the_digits_their_line_has_room_for() {
        let cases = [
            ("0.999995", 6, "0.999995"),
            ("0.999995", 4, "1"),
            ("0.864", 6, "0.864"),
            ("e5", 6, "e5"),
        ];
        for (value, digits, want) in cases {
            assert_eq!(shown(value, digits), want, "{value}");
        }
        assert_eq!(shown(&"g".repeat(70), 6), format!("{}...", "g".repeat(60)));
    }

    #[test]
    fn running_trials_line_shows_latest_values_within_the_width() {
        let running = |n: usize| -> Vec<(String, Option<String>)> {
            (0..n)
                .map(|i| {
                    let v = (i != 1).then(|| format!("0.{}123456", i + 1));
                    (format!("t-{i}"), v)
                })
                .collect()
        };
        // (trials running, width, line)
        let cases = [
            (0, 80, ""),
            (1, 80, "running: t-0 loss=0.1123"),
            (2, 80, "running: t-0 loss=0.1123 · t-1 loss=…"),
            (3, 40, "running: t-0 loss=0.1123 (+2 more)"),
            (
                3,
                60,
                "running: t-0 loss=0.1123 · t-1 loss=… · t-2 loss=0.3123",
            ),
            (2, 12, "running: (+2"),
        ];
        for (n, width, want) in cases {
            let line = running_line(&running(n), "loss", width);
            assert_eq!(line, want, "{n} at {width}");
            assert!(line.chars().count() <= width);
        }
    }

    #[test]
    fn every_outcome_that_happened_is_counted_in_the_reports_words() {
        let quiet = TrialCounts {
            total: 3,
            running: 1,
            succeeded: 2,
            ..TrialCounts::default()
        };
        assert_eq!(count_words(&quiet), "1 running, 2 succeeded");
        let all = TrialCounts {
            total: 15,
            pending: 1,
            running: 2,
            succeeded: 3,
            failed: 4,
            killed: 1,
            early_stopped: 2,
            metrics_unavailable: 2,
        };
        assert_eq!(
            count_words(&all),
            "2 running, 3 succeeded, 2 early stopped, 4 failed, 2 metrics unavailable, 1 killed, 1 pending"
        );
        // The final summary lists every outcome, zeros too, so the total visibly adds up.
        assert_eq!(
            final_counts(&quiet),
            "2 succeeded, 0 early stopped, 0 failed, 0 metrics unavailable, 0 killed"
        );
        assert_eq!(
            final_counts(&all),
            "3 succeeded, 2 early stopped, 4 failed, 2 metrics unavailable, 1 killed"
        );
    }
}
