//! `vernier collect`: the metrics-collector sidecar the operator puts beside a trial's primary
//! container for the File and TensorFlowEvent collectors. It follows the metrics file (or
//! event directory) on the volume both containers share and reports what it reads to the
//! DBManager (`ReportObservationLog`), as Katib's file and tfevent collectors do.

use crate::Exit;
use crate::out::errln;
use anyhow::{Context as _, anyhow, bail};
use std::path::PathBuf;
use std::time::Duration;
use tonic::transport::{Channel, Endpoint};
use vernier_collector::{FileFollower, MetricsFilter, TfEventFollower, parse_json_line};
use vernier_proto::api::db_manager_client::DbManagerClient;
use vernier_proto::api::{Metric, MetricLog, ObservationLog, ReportObservationLogRequest};
use vernier_proto::time::format_rfc3339_us;

/// Logs per `ReportObservationLog` call, well under gRPC's 4 MiB default message limit.
const MAX_LOGS_PER_CALL: usize = 5_000;

/// Attempts at the final report after SIGTERM: the kubelet's grace period (30 s by default)
/// leaves room for a few, and a DBManager that is restarting is usually back by then.
const FINAL_ATTEMPTS: u32 = 5;

/// The collector kinds this sidecar serves (Katib `metricsCollectorSpec.collector.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    #[value(name = "File")]
    File,
    #[value(name = "TensorFlowEvent")]
    TensorFlowEvent,
}

/// Katib's `fileSystemPath.format` for the File collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FileFormat {
    #[value(name = "TEXT")]
    Text,
    #[value(name = "JSON")]
    Json,
}

/// Options of `vernier collect`.
#[derive(Debug, clap::Args)]
pub struct CollectArgs {
    /// The trial the observations belong to.
    #[arg(long, env = "KATIB_TRIAL_NAME")]
    pub trial: String,
    /// Metric names to report, objective first, comma-separated.
    #[arg(long, value_delimiter = ',', required = true)]
    pub metric_names: Vec<String>,
    /// What the trial writes: a metrics file (File) or TensorFlow event files under a
    /// directory (TensorFlowEvent).
    #[arg(long, value_enum, ignore_case = true)]
    pub kind: Kind,
    /// The metrics file, or the event directory, as the trial's container sees it.
    #[arg(long)]
    pub path: PathBuf,
    /// Format of the metrics file (File only).
    #[arg(long, value_enum, ignore_case = true)]
    pub file_format: Option<FileFormat>,
    /// Regular expression with two groups, metric name and value (TEXT only; repeatable;
    /// default Katib's `name=value`).
    #[arg(long = "metrics-format", value_name = "REGEX")]
    pub metrics_format: Vec<String>,
    /// The DBManager to report to, HOST:PORT.
    #[arg(long, env = "VERNIER_DB_MANAGER_ADDRESS")]
    pub db_manager_address: String,
    /// A label the trial's primary pod carries, KEY=VALUE (repeatable). With the pod's own
    /// values in --pod-label, a sidecar in any other pod made from the same template (a
    /// second worker) reports nothing and only waits for SIGTERM.
    #[arg(long = "primary-label", value_name = "KEY=VALUE")]
    pub primary_label: Vec<String>,
    /// This pod's value of a --primary-label key, KEY=VALUE (repeatable; the operator has the
    /// kubelet fill it in from the downward API).
    #[arg(long = "pod-label", value_name = "KEY=VALUE")]
    pub pod_label: Vec<String>,
    /// A file to create once SIGTERM is handled (and remove at exit), for the container's
    /// startup probe: the kubelet starts the training container only after it exists, so a
    /// trial that ends at once cannot stop the collector before it can flush.
    #[arg(long, value_name = "PATH")]
    pub started_file: Option<PathBuf>,
    /// Milliseconds between reads of the file or directory.
    #[arg(long, default_value_t = 500)]
    pub poll_ms: u64,
}

/// Where observations come from.
enum Source {
    File {
        follower: FileFollower,
        filter: MetricsFilter,
        json: bool,
    },
    Events(TfEventFollower),
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::File { follower, json, .. } => f
                .debug_struct("File")
                .field("path", &follower.path())
                .field("json", json)
                .finish(),
            Source::Events(e) => f.debug_tuple("Events").field(&e.root()).finish(),
        }
    }
}

/// One reading of the source: the logs to report and what could not be read.
#[derive(Debug, Default)]
struct Read {
    logs: Vec<MetricLog>,
    warnings: Vec<String>,
}

impl Source {
    fn new(args: &CollectArgs) -> anyhow::Result<Source> {
        if !args.path.is_absolute() {
            bail!(
                "--path value {:?} is not absolute; hint: give the path as the trial's container sees it, e.g. /var/log/katib/metrics.log",
                args.path.display().to_string()
            );
        }
        match args.kind {
            Kind::File => {
                let json = args.file_format == Some(FileFormat::Json);
                if json && !args.metrics_format.is_empty() {
                    bail!(
                        "--metrics-format value {:?} cannot be used with --file-format JSON; hint: JSON lines name their metrics, drop --metrics-format",
                        args.metrics_format[0]
                    );
                }
                let filter = MetricsFilter::from_formats(&args.metrics_format)
                    .map_err(|e| anyhow!("--metrics-format: {e}"))?;
                Ok(Source::File {
                    follower: FileFollower::new(&args.path),
                    filter,
                    json,
                })
            }
            Kind::TensorFlowEvent => {
                if let Some(format) = args.file_format {
                    bail!(
                        "--file-format value {format:?} does not apply to --kind TensorFlowEvent; hint: drop --file-format, event files have one format"
                    );
                }
                if let Some(format) = args.metrics_format.first() {
                    bail!(
                        "--metrics-format value {format:?} does not apply to --kind TensorFlowEvent; hint: metrics are matched by summary tag, drop --metrics-format"
                    );
                }
                Ok(Source::Events(TfEventFollower::new(
                    &args.path,
                    args.metric_names.clone(),
                )))
            }
        }
    }

    /// What was written since the last call; with `last`, an unterminated final line too.
    fn read(&mut self, wanted: &[String], last: bool) -> Read {
        let mut out = Read::default();
        match self {
            Source::File {
                follower,
                filter,
                json,
            } => {
                let mut lines = match follower.poll() {
                    Ok(lines) => lines,
                    Err(e) => {
                        out.warnings.push(format!(
                            "cannot read metrics file {}: {e}",
                            follower.path().display()
                        ));
                        Vec::new()
                    }
                };
                if last {
                    lines.extend(follower.finish());
                }
                let now = chrono::Utc::now().timestamp_micros();
                for line in lines {
                    let metrics = if *json {
                        match parse_json_line(&line, wanted) {
                            Ok(m) => m,
                            Err(e) => {
                                out.warnings.push(e.to_string());
                                continue;
                            }
                        }
                    } else {
                        let parsed = filter.parse_line(&line, wanted);
                        out.warnings.extend(parsed.rejected.into_iter().map(|r| {
                            format!("metric {} value {:?} is not a number", r.name, r.raw)
                        }));
                        parsed.metrics
                    };
                    out.logs.extend(
                        metrics
                            .into_iter()
                            .map(|m| log(m.name, m.value, m.timestamp_us.unwrap_or(now))),
                    );
                }
            }
            Source::Events(follower) => {
                let polled = follower.poll();
                out.warnings.extend(polled.rejected);
                out.warnings.extend(polled.errors);
                if polled.corrupt_records > 0 {
                    out.warnings.push(format!(
                        "{} corrupt event record(s) under {} (bad checksum or not an Event)",
                        polled.corrupt_records,
                        follower.root().display()
                    ));
                }
                out.logs.extend(
                    polled
                        .scalars
                        .into_iter()
                        .map(|s| log(s.metric, s.value, s.timestamp_us)),
                );
            }
        }
        out
    }
}

fn log(name: String, value: String, timestamp_us: i64) -> MetricLog {
    MetricLog {
        time_stamp: format_rfc3339_us(timestamp_us),
        metric: Some(Metric { name, value }),
    }
}

/// The DBManager endpoint for `--db-manager-address` (HOST:PORT, or a full http(s) URL).
fn endpoint(address: &str) -> anyhow::Result<Endpoint> {
    let url = if address.starts_with("http://") || address.starts_with("https://") {
        address.to_string()
    } else {
        format!("http://{address}")
    };
    let bad = |why: String| {
        anyhow!(
            "--db-manager-address value {address:?} {why}; hint: write HOST:PORT, e.g. vernier-db-manager.vernier-system:6789"
        )
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

/// The `--started-file` marker, removed when the collector exits so that a later pod of the
/// same trial on a shared volume is not taken as started before it is.
#[derive(Debug)]
struct StartedFile(PathBuf);

impl StartedFile {
    fn create(path: &std::path::Path) -> anyhow::Result<StartedFile> {
        let write = || -> std::io::Result<()> {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(path, b"started\n")
        };
        write().map_err(|e| {
            anyhow!(
                "--started-file value {:?} cannot be written: {e}; hint: it must be on a writable volume of the collector's container",
                path.display().to_string()
            )
        })?;
        Ok(StartedFile(path.to_path_buf()))
    }
}

impl Drop for StartedFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Splits the KEY=VALUE values of `flag`.
fn pairs<'a>(flag: &str, values: &'a [String]) -> anyhow::Result<Vec<(&'a str, &'a str)>> {
    values
        .iter()
        .map(|v| {
            v.split_once('=').ok_or_else(|| {
                anyhow!("{flag} value {v:?} has no '='; hint: write KEY=VALUE, e.g. training.kubeflow.org/job-role=master")
            })
        })
        .collect()
}

/// Does this pod carry every --primary-label, as --pod-label says?
fn is_primary(args: &CollectArgs) -> anyhow::Result<bool> {
    let wanted = pairs("--primary-label", &args.primary_label)?;
    let actual = pairs("--pod-label", &args.pod_label)?;
    Ok(wanted
        .iter()
        .all(|(k, v)| actual.iter().any(|(ak, av)| ak == k && av == v)))
}

pub async fn collect(args: CollectArgs) -> anyhow::Result<Exit> {
    if args.trial.is_empty() {
        bail!("--trial value \"\" is empty; hint: pass the trial's name (or set KATIB_TRIAL_NAME)");
    }
    let wanted: Vec<String> = args
        .metric_names
        .iter()
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty())
        .collect();
    if wanted.is_empty() {
        bail!(
            "--metric-names value {:?} names no metric; hint: give the objective metric first, e.g. --metric-names loss,accuracy",
            args.metric_names.join(",")
        );
    }
    let mut source = Source::new(&args)?;
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("cannot listen for SIGTERM")?;
    let _started = match &args.started_file {
        Some(path) => Some(StartedFile::create(path)?),
        None => None,
    };
    if !is_primary(&args)? {
        // A native sidecar that exits is restarted, so one with nothing to do waits.
        errln!(
            "vernier collect: this pod is not trial {}'s primary pod ({}); nothing to collect",
            args.trial,
            args.pod_label.join(",")
        );
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        return Ok(Exit::Succeeded);
    }
    let mut client = DbManagerClient::new(endpoint(&args.db_manager_address)?.connect_lazy());
    errln!(
        "vernier collect: trial {} metrics {} from {} ({:?}) to {}",
        args.trial,
        wanted.join(","),
        args.path.display(),
        args.kind,
        args.db_manager_address
    );
    let mut ticker = tokio::time::interval(Duration::from_millis(args.poll_ms.max(10)));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut pending: Vec<MetricLog> = Vec::new();
    let mut last_error = String::new();
    let mut reported = 0usize;
    loop {
        let last = tokio::select! {
            _ = ticker.tick() => false,
            _ = term.recv() => true,
            _ = tokio::signal::ctrl_c() => true,
        };
        let read = source.read(&wanted, last);
        for w in read.warnings {
            errln!("warning: {w}");
        }
        pending.extend(read.logs);
        if !last {
            match report(&mut client, &args.trial, &mut pending).await {
                Ok(n) => {
                    reported += n;
                    last_error.clear();
                }
                // Kept for the next tick: the DBManager may be restarting.
                Err(e) => {
                    let e = format!("{e:#}");
                    if e != last_error {
                        errln!("warning: {e}; retrying");
                        last_error = e;
                    }
                }
            }
            continue;
        }
        let mut attempt = 1;
        loop {
            match report(&mut client, &args.trial, &mut pending).await {
                Ok(n) => {
                    reported += n;
                    break;
                }
                Err(e) if attempt >= FINAL_ATTEMPTS => {
                    return Err(e.context(format!(
                        "{} observation(s) of trial {} were not reported",
                        pending.len(),
                        args.trial
                    )));
                }
                Err(e) => {
                    errln!("warning: {e:#}; retrying");
                    attempt += 1;
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
        errln!(
            "vernier collect: reported {reported} observation(s) of trial {}",
            args.trial
        );
        return Ok(Exit::Succeeded);
    }
}

/// Sends `pending` in order, removing what was accepted; returns how many were sent.
async fn report(
    client: &mut DbManagerClient<Channel>,
    trial: &str,
    pending: &mut Vec<MetricLog>,
) -> anyhow::Result<usize> {
    let mut sent = 0;
    while !pending.is_empty() {
        let n = pending.len().min(MAX_LOGS_PER_CALL);
        let metric_logs = pending[..n].to_vec();
        client
            .report_observation_log(ReportObservationLogRequest {
                trial_name: trial.to_string(),
                observation_log: Some(ObservationLog { metric_logs }),
            })
            .await
            .map_err(|s| {
                anyhow!(
                    "reporting to the db manager failed: {}: {}; hint: check --db-manager-address and that the operator's gRPC API listens there",
                    s.code(),
                    s.message()
                )
            })?;
        pending.drain(..n);
        sent += n;
    }
    Ok(sent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: CollectArgs,
    }

    fn args(extra: &[&str]) -> CollectArgs {
        let mut all = vec![
            "collect",
            "--trial",
            "t1",
            "--metric-names",
            "loss,accuracy",
            "--db-manager-address",
            "127.0.0.1:6789",
        ];
        all.extend_from_slice(extra);
        Cli::parse_from(all).args
    }

    #[test]
    fn text_lines_become_logs_and_the_last_partial_line_waits_for_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("metrics.log");
        let a = args(&["--kind", "File", "--path", path.to_str().unwrap()]);
        let mut source = Source::new(&a).unwrap();
        let wanted = a.metric_names.clone();
        std::fs::write(
            &path,
            "2024-05-01T12:00:00Z loss=0.5 accuracy=nan\nloss=0.25",
        )
        .unwrap();
        let read = source.read(&wanted, false);
        let got: Vec<(String, String, String)> = read
            .logs
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
        assert_eq!(read.warnings.len(), 1, "{:?}", read.warnings);
        let read = source.read(&wanted, true);
        assert_eq!(read.logs.len(), 1);
        assert_eq!(read.logs[0].metric.as_ref().unwrap().value, "0.25");
    }

    #[test]
    fn json_lines_keep_their_timestamps() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("metrics.json");
        let a = args(&[
            "--kind",
            "file",
            "--file-format",
            "json",
            "--path",
            path.to_str().unwrap(),
        ]);
        let mut source = Source::new(&a).unwrap();
        std::fs::write(
            &path,
            "{\"loss\": \"0.5\", \"timestamp\": 1700000000}\nnot json\n",
        )
        .unwrap();
        let read = source.read(&a.metric_names, false);
        assert_eq!(read.logs.len(), 1);
        assert_eq!(read.logs[0].time_stamp, "2023-11-14T22:13:20Z");
        assert_eq!(read.warnings.len(), 1);
    }

    #[test]
    fn bad_flags_are_named_with_their_values_and_a_hint() {
        let e = Source::new(&args(&[
            "--kind",
            "File",
            "--path",
            "/m.log",
            "--metrics-format",
            "(oops",
        ]))
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("--metrics-format") && e.contains("(oops"),
            "{e}"
        );
        let e = Source::new(&args(&["--kind", "File", "--path", "rel/m.log"]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--path value \"rel/m.log\"") && e.contains("hint:"),
            "{e}"
        );
        let e = Source::new(&args(&[
            "--kind",
            "TensorFlowEvent",
            "--path",
            "/ev",
            "--file-format",
            "TEXT",
        ]))
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("--file-format") && e.contains("hint:"), "{e}");
        let e = endpoint("no-port").unwrap_err().to_string();
        assert!(
            e.contains("--db-manager-address value \"no-port\"") && e.contains("hint:"),
            "{e}"
        );
        assert!(endpoint("vernier-db-manager.vernier-system:6789").is_ok());
    }

    #[test]
    fn only_the_pod_with_every_primary_label_collects() {
        let base = ["--kind", "File", "--path", "/m.log"];
        let with = |labels: &[&str]| {
            let mut all = base.to_vec();
            all.extend_from_slice(labels);
            is_primary(&args(&all))
        };
        assert!(with(&[]).unwrap());
        let role = "training.kubeflow.org/job-role";
        let want = format!("{role}=master");
        let unset = format!("{role}=");
        assert!(with(&["--primary-label", &want, "--pod-label", &want]).unwrap());
        assert!(!with(&["--primary-label", &want, "--pod-label", &unset]).unwrap());
        assert!(!with(&["--primary-label", &want]).unwrap());
        let e = with(&["--primary-label", "nolabel"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--primary-label value \"nolabel\"") && e.contains("hint:"),
            "{e}"
        );
    }
}
