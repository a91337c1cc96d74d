//! A trial's Prometheus endpoint scraped while the trial runs: the scraping counterpart of
//! [`FollowedSource`](crate::FollowedSource) and [`follow_until`](crate::follow_until), so a
//! driver wires a scraped endpoint to the same [`ReadSink`] as a followed file.
//!
//! What a scrape's outcome means is decided by `ScrapedSource::take`, apart from the network,
//! so the rules are tested on made-up outcomes: a refused connection is silent (the server
//! starts late, or has gone), one reset is silent (a server shutting down resets what it had
//! queued), anything else is reported once per kind of failure, not once per scrape.

use crate::prometheus::parse_exposition;
use crate::scrape::{ScrapeFailure, scrape};
use crate::source::{ReadSink, SourceRead};
use crate::text::ParsedMetric;
use std::collections::HashSet;
use std::future::Future;
use std::time::Duration;

/// How soon a scrape is tried again while nothing listens on the port yet: the first values
/// are read as soon as the trial serves them, not a whole scrape interval later.
pub const LISTEN_RETRY: Duration = Duration::from_millis(100);

/// A Prometheus endpoint on the loopback interface, scraped while a trial runs.
#[derive(Debug)]
pub struct ScrapedSource {
    port: u16,
    path: String,
    /// Metric names to keep, objective first.
    wanted: Vec<String>,
    /// Warnings and rejected values already handed on.
    reported: HashSet<String>,
    /// Something has accepted a connection on the port.
    answered: bool,
    /// The last scrape's connection was reset before an answer.
    reset: bool,
}

impl ScrapedSource {
    /// Scrapes `http://127.0.0.1:<port><path>`, keeping the metrics named in `wanted`.
    pub fn new(port: u16, path: &str, wanted: Vec<String>) -> ScrapedSource {
        ScrapedSource {
            port,
            path: path.to_string(),
            wanted,
            reported: HashSet::new(),
            answered: false,
            reset: false,
        }
    }

    /// The endpoint, for messages.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}{}", self.port, self.path)
    }

    /// Scrapes once.
    pub async fn read(&mut self) -> SourceRead {
        let outcome = scrape(self.port, &self.path).await;
        self.take(outcome)
    }

    /// What one scrape's outcome adds: the wanted values of a page, and the warnings and
    /// rejected values not handed on before.
    fn take(&mut self, outcome: Result<String, ScrapeFailure>) -> SourceRead {
        let mut read = SourceRead::default();
        let reset_before = std::mem::take(&mut self.reset);
        match outcome {
            Ok(page) => {
                self.answered = true;
                let e = parse_exposition(&page, &self.wanted);
                if e.malformed > 0 {
                    let url = self.url();
                    read.warnings
                        .push(format!("{} malformed line(s) in {url}", e.malformed));
                }
                read.rejected = e.rejected;
                read.metrics = e
                    .values
                    .into_iter()
                    .map(|(name, value)| ParsedMetric {
                        name,
                        value,
                        timestamp_us: None,
                    })
                    .collect();
            }
            Err(ScrapeFailure::NotListening) => {}
            Err(ScrapeFailure::Reset(e)) => {
                self.answered = true;
                if reset_before {
                    read.warnings.push(e.to_string());
                } else {
                    self.reset = true;
                }
            }
            Err(ScrapeFailure::Failed(e)) => {
                self.answered = true;
                read.warnings.push(e.to_string());
            }
        }
        read.warnings.retain(|w| self.reported.insert(w.clone()));
        read.rejected
            .retain(|r| self.reported.insert(r.to_string()));
        read
    }

    /// How long to wait before the next scrape: `every` once something answered on the port,
    /// [`LISTEN_RETRY`] (if shorter) until then.
    pub fn wait(&self, every: Duration) -> Duration {
        if self.answered {
            every
        } else {
            every.min(LISTEN_RETRY)
        }
    }
}

/// Scrapes `source` at once and then every `every` (sooner while nothing listens yet) until
/// `ended` completes, handing every read to `sink`. Nothing is scraped after the end: the
/// trial's server has gone with it.
pub async fn scrape_until(
    source: &mut ScrapedSource,
    every: Duration,
    ended: impl Future<Output = ()>,
    sink: &mut impl ReadSink,
) {
    let mut ended = std::pin::pin!(ended);
    loop {
        sink.take(source.read().await, false).await;
        tokio::select! {
            biased;
            _ = &mut ended => return,
            _ = tokio::time::sleep(source.wait(every)) => {}
        }
    }
}

#[cfg(test)]
mod tests;
