//! Shows a running experiment: a live bar on a terminal, plain lines otherwise (logs, CI).

use crate::out::outln;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use vernier_core::TrialState;
use vernier_runner::{DriverEvent, Observer, Progress};

/// Prints driver events for a person or a log.
#[derive(Debug)]
pub struct Display {
    metric: String,
    bar: Option<ProgressBar>,
}

impl Display {
    pub fn new(metric: &str, max_trials: Option<u32>) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = match max_trials {
                Some(n) => ProgressBar::new(u64::from(n)),
                None => ProgressBar::new_spinner(),
            };
            let template = if max_trials.is_some() {
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}"
            } else {
                "{spinner} [{elapsed_precise}] {pos} trials {msg}"
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style);
            }
            bar.enable_steady_tick(std::time::Duration::from_millis(200));
            bar
        });
        Display {
            metric: metric.to_string(),
            bar,
        }
    }

    fn line(&self, text: String) {
        match &self.bar {
            Some(bar) => bar.println(text),
            None => outln!("{text}"),
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    fn summary(&self, p: &Progress) -> String {
        let c = &p.counts;
        let mut s = format!(
            "{} running, {} succeeded, {} failed",
            c.running,
            c.succeeded,
            c.failed + c.metrics_unavailable
        );
        if let Some(b) = &p.best {
            s.push_str(&format!(", best {}={} ({})", self.metric, b.value, b.trial));
        }
        s
    }
}

impl Observer for Display {
    fn on_event(&mut self, event: &DriverEvent, progress: &Progress) {
        match event {
            DriverEvent::TrialStarted { name, assignment } => {
                if self.bar.is_none() {
                    self.line(format!("started   {name}  {assignment}"));
                }
            }
            DriverEvent::TrialFinished {
                name,
                state,
                objective,
                message,
            } => {
                let value =
                    objective.map_or_else(String::new, |v| format!("  {}={v}", self.metric));
                let detail = if *state == TrialState::Succeeded {
                    String::new()
                } else {
                    format!("  ({})", message.lines().next().unwrap_or(""))
                };
                self.line(format!("{:<9} {name}{value}{detail}", state.as_str()));
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
