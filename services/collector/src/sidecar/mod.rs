//! The metrics-collector sidecar behind `vernier collect`, which the operator puts beside a
//! trial's primary container for the File and TensorFlowEvent collectors: it follows the
//! metrics file (or event directory) on the volume both containers share and reports what it
//! reads to the DBManager (`ReportObservationLog`), as Katib's file and tfevent collectors do.
//! The command only parses flags and says when to stop; everything else is here.

mod options;
mod report;
mod started;

pub use options::{FileFormat, SidecarKind, SidecarOptions, is_primary};
pub use report::{Reporter, endpoint, logs_of};

use crate::error::CollectorError;
use crate::source::{ReadSink, SourceRead, follow_until};
use started::StartedFile;
use std::future::Future;
use std::time::Duration;
use vernier_proto::api::MetricLog;

/// Attempts at the final report after the stop: the kubelet's grace period (30 s by default)
/// leaves room for a few, and a DBManager that is restarting is usually back by then.
const FINAL_ATTEMPTS: u32 = 5;

/// Shortest time between reads, whatever the options say.
const MIN_POLL: Duration = Duration::from_millis(10);

/// Runs the sidecar until `stop` completes (SIGTERM: the training container has exited), then
/// reads what is left and reports it; returns how many observations were reported. The caller
/// must be handling SIGTERM before calling, since the started file says so.
pub async fn run(
    options: &SidecarOptions,
    stop: impl Future<Output = ()>,
) -> Result<usize, CollectorError> {
    let wanted = options.wanted()?;
    let mut source = options.source(wanted.clone())?;
    let _started = match &options.started_file {
        Some(path) => Some(StartedFile::create(path)?),
        None => None,
    };
    if !is_primary(options)? {
        // A native sidecar that exits is restarted, so one with nothing to do waits.
        tracing::info!(
            "vernier collect: this pod is not trial {}'s primary pod ({}); nothing to collect",
            options.trial,
            options.pod_label.join(",")
        );
        stop.await;
        return Ok(0);
    }
    let mut delivery = Delivery {
        reporter: Reporter::new(&options.db_manager_address, &options.trial)?,
        pending: Vec::new(),
        reported: 0,
        last_error: String::new(),
    };
    tracing::info!(
        "vernier collect: trial {} metrics {} from {} ({:?}) to {}",
        options.trial,
        wanted.join(","),
        options.path.display(),
        options.kind,
        options.db_manager_address
    );
    let every = options.poll.max(MIN_POLL);
    follow_until(&mut source, every, stop, &mut delivery).await;
    delivery.finish(&options.trial).await?;
    tracing::info!(
        "vernier collect: reported {} observation(s) of trial {}",
        delivery.reported,
        options.trial
    );
    Ok(delivery.reported)
}

/// What was read and not yet accepted by the DBManager.
#[derive(Debug)]
struct Delivery {
    reporter: Reporter,
    pending: Vec<MetricLog>,
    reported: usize,
    /// The last failure told to the user, so a DBManager that stays down is reported once.
    last_error: String,
}

impl ReadSink for Delivery {
    /// Queues what was read and, before the last read, tries to report it at once.
    async fn take(&mut self, read: SourceRead, last: bool) {
        self.queue(read);
        if !last {
            self.try_report().await;
        }
    }
}

impl Delivery {
    fn queue(&mut self, read: SourceRead) {
        let now = chrono::Utc::now().timestamp_micros();
        let (logs, warnings) = logs_of(read, now);
        for w in warnings {
            tracing::warn!("{w}");
        }
        self.pending.extend(logs);
    }

    /// One attempt; what fails is kept for the next read (the DBManager may be restarting).
    async fn try_report(&mut self) {
        match self.reporter.report(&mut self.pending).await {
            Ok(n) => {
                self.reported += n;
                self.last_error.clear();
            }
            Err(e) => {
                let e = e.to_string();
                if e != self.last_error {
                    tracing::warn!("{e}; retrying");
                    self.last_error = e;
                }
            }
        }
    }

    /// The last report, retried [`FINAL_ATTEMPTS`] times a second apart.
    async fn finish(&mut self, trial: &str) -> Result<(), CollectorError> {
        let mut attempt = 1;
        loop {
            match self.reporter.report(&mut self.pending).await {
                Ok(n) => {
                    self.reported += n;
                    return Ok(());
                }
                Err(e) if attempt >= FINAL_ATTEMPTS => {
                    return Err(CollectorError::Unreported {
                        count: self.pending.len(),
                        trial: trial.to_string(),
                        last: Box::new(e),
                    });
                }
                Err(e) => {
                    tracing::warn!("{e}; retrying");
                    attempt += 1;
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::sidecar::options::tests::options;

    /// A DBManager that is down when the trial ends: the collector says how many observations
    /// of which trial were lost, why, and which flag to check.
    #[tokio::test]
    async fn observations_the_db_manager_never_took_are_counted_and_the_flag_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("metrics.log");
        std::fs::write(&path, "loss=0.5\nloss=0.4\nloss=0.3\n").unwrap();
        // A port that was free a moment ago: connections to it are refused.
        let closed = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let mut o = options(SidecarKind::File, path.to_str().unwrap());
        o.db_manager_address = closed.to_string();
        o.poll = MIN_POLL;
        let e = run(&o, async {}).await.unwrap_err();
        assert!(
            matches!(&e, CollectorError::Unreported { count: 3, last, .. }
                if matches!(**last, CollectorError::Report { .. })),
            "{e:?}"
        );
        let e = e.to_string();
        assert!(
            e.starts_with("3 observation(s) of trial t1 were not reported: ")
                && e.contains("reporting to the db manager failed: ")
                && e.contains("Connection refused")
                && e.contains(&format!(
                    "hint: check --db-manager-address value \"{closed}\""
                )),
            "{e}"
        );
    }
}
