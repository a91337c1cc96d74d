//! Reporting to Katib's DBManager (`ReportObservationLog`): the endpoint a sidecar dials, what
//! a read of a source becomes on the wire, and sending in chunks under the message limit.

use crate::error::CollectorError;
use crate::source::SourceRead;
use std::time::Duration;
use tonic::transport::{Channel, Endpoint};
use vernier_proto::api::db_manager_client::DbManagerClient;
use vernier_proto::api::{Metric, MetricLog, ObservationLog, ReportObservationLogRequest};
use vernier_proto::time::format_rfc3339_us;

/// Logs per `ReportObservationLog` call, well under gRPC's 4 MiB default message limit.
const MAX_LOGS_PER_CALL: usize = 5_000;

/// The DBManager endpoint for an address given as HOST:PORT or a full http(s) URL.
pub fn endpoint(address: &str) -> Result<Endpoint, CollectorError> {
    let url = if address.starts_with("http://") || address.starts_with("https://") {
        address.to_string()
    } else {
        format!("http://{address}")
    };
    let bad = |why: String| CollectorError::Flag {
        flag: "--db-manager-address",
        value: address.to_string(),
        problem: why,
        hint: "write HOST:PORT, e.g. vernier-db-manager.vernier-system:6789",
    };
    let uri: tonic::codegen::http::Uri = url
        .parse()
        .map_err(|e| bad(format!("is not an address ({e})")))?;
    if uri.port_u16().is_none() {
        return Err(bad("has no port".into()));
    }
    Endpoint::from_shared(url)
        .map(|e| e.connect_timeout(Duration::from_secs(5)))
        .map_err(|e| bad(format!("is not an address ({e})")))
}

/// A read as the DBManager records it, and its warnings as the user reads them. Values
/// without a timestamp of their own are dated `now_us`.
pub fn logs_of(read: SourceRead, now_us: i64) -> (Vec<MetricLog>, Vec<String>) {
    let mut warnings: Vec<String> = read
        .rejected
        .into_iter()
        .map(|r| format!("metric {} value {:?} is not a number", r.name, r.raw))
        .collect();
    warnings.extend(read.warnings);
    let logs = read
        .metrics
        .into_iter()
        .map(|m| MetricLog {
            time_stamp: format_rfc3339_us(m.timestamp_us.unwrap_or(now_us)),
            metric: Some(Metric {
                name: m.name,
                value: m.value,
            }),
        })
        .collect();
    (logs, warnings)
}

/// One trial's connection to the DBManager.
#[derive(Debug)]
pub struct Reporter {
    client: DbManagerClient<Channel>,
    /// `--db-manager-address` as given, for messages.
    address: String,
    trial: String,
}

impl Reporter {
    /// Connects lazily to `address` (`--db-manager-address`): a DBManager that is not up yet
    /// is retried at the first report.
    pub fn new(address: &str, trial: &str) -> Result<Reporter, CollectorError> {
        Ok(Reporter {
            client: DbManagerClient::new(endpoint(address)?.connect_lazy()),
            address: address.to_string(),
            trial: trial.to_string(),
        })
    }

    /// Sends `pending` in order, removing what was accepted; returns how many were sent.
    pub async fn report(&mut self, pending: &mut Vec<MetricLog>) -> Result<usize, CollectorError> {
        let mut sent = 0;
        while !pending.is_empty() {
            let n = pending.len().min(MAX_LOGS_PER_CALL);
            let metric_logs = pending[..n].to_vec();
            self.client
                .report_observation_log(ReportObservationLogRequest {
                    trial_name: self.trial.clone(),
                    observation_log: Some(ObservationLog { metric_logs }),
                })
                .await
                .map_err(|s| CollectorError::Report {
                    address: self.address.clone(),
                    code: s.code().to_string(),
                    message: with_causes(&s),
                })?;
            pending.drain(..n);
            sent += n;
        }
        Ok(sent)
    }
}

/// The status message and what caused it, which a transport failure keeps apart
/// (`tcp connect error` is caused by `Connection refused`, or a timeout, or an unknown host).
fn with_causes(status: &tonic::Status) -> String {
    let mut message = status.message().to_string();
    let mut cause = std::error::Error::source(status);
    while let Some(c) = cause {
        let text = c.to_string();
        if !message.contains(&text) {
            message = format!("{message}: {text}");
        }
        cause = c.source();
    }
    message
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::sidecar::options::tests::options;
    use crate::sidecar::{FileFormat, SidecarKind};

    #[test]
    fn text_lines_become_logs_and_the_last_partial_line_waits_for_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("metrics.log");
        let o = options(SidecarKind::File, path.to_str().unwrap());
        let mut source = o.source(o.metric_names.clone()).unwrap();
        std::fs::write(
            &path,
            "2024-05-01T12:00:00Z loss=0.5 accuracy=nan\nloss=0.25",
        )
        .unwrap();
        let (logs, warnings) = logs_of(source.read(false), 0);
        let got: Vec<(String, String, String)> = logs
            .iter()
            .map(|l| {
                let m = l.metric.clone().unwrap();
                (m.name, m.value, l.time_stamp.clone())
            })
            .collect();
        assert_eq!(
            got,
            vec![(
                "loss".to_string(),
                "0.5".to_string(),
                "2024-05-01T12:00:00Z".to_string()
            )]
        );
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let (logs, _) = logs_of(source.read(true), 0);
        assert_eq!(logs.len(), 1);
        assert_eq!(logs[0].metric.as_ref().unwrap().value, "0.25");
    }

    #[test]
    fn json_lines_keep_their_timestamps() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("metrics.json");
        let mut o = options(SidecarKind::File, path.to_str().unwrap());
        o.file_format = Some(FileFormat::Json);
        let mut source = o.source(o.metric_names.clone()).unwrap();
        std::fs::write(
            &path,
            "{\"loss\": \"0.5\", \"timestamp\": 1700000000}\nnot json\n",
        )
        .unwrap();
        let (logs, warnings) = logs_of(source.read(false), 0);
        assert_eq!(logs.len(), 1);
        assert_eq!(logs[0].time_stamp, "2023-11-14T22:13:20Z");
        assert_eq!(warnings.len(), 1);
    }

    #[test]
    fn addresses_need_a_port_and_say_how_to_write_one() {
        let e = endpoint("no-port").unwrap_err().to_string();
        assert!(
            e.contains("--db-manager-address value \"no-port\"") && e.contains("hint:"),
            "{e}"
        );
        assert!(endpoint("vernier-db-manager.vernier-system:6789").is_ok());
    }
}
