//! `vernier collect`: the metrics-collector sidecar the operator puts beside a trial's primary
//! container for the File and TensorFlowEvent collectors. This command parses its flags and
//! says when to stop (SIGTERM or Ctrl-C); the sidecar itself is `vernier_collector::sidecar`.

use crate::Exit;
use anyhow::Context as _;
use std::path::PathBuf;
use std::time::Duration;
use vernier_collector::sidecar::{self, SidecarOptions};

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

impl CollectArgs {
    fn options(self) -> SidecarOptions {
        SidecarOptions {
            trial: self.trial,
            metric_names: self.metric_names,
            kind: match self.kind {
                Kind::File => sidecar::SidecarKind::File,
                Kind::TensorFlowEvent => sidecar::SidecarKind::TensorFlowEvent,
            },
            path: self.path,
            file_format: self.file_format.map(|f| match f {
                FileFormat::Text => sidecar::FileFormat::Text,
                FileFormat::Json => sidecar::FileFormat::Json,
            }),
            metrics_format: self.metrics_format,
            db_manager_address: self.db_manager_address,
            primary_label: self.primary_label,
            pod_label: self.pod_label,
            started_file: self.started_file,
            poll: Duration::from_millis(self.poll_ms),
        }
    }
}

pub async fn collect(args: CollectArgs) -> anyhow::Result<Exit> {
    let options = args.options();
    // Listening before the sidecar starts: its started file promises SIGTERM is handled.
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("cannot listen for SIGTERM")?;
    let stop = async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    };
    sidecar::run(&options, stop).await?;
    Ok(Exit::Succeeded)
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

    #[test]
    fn kinds_and_formats_parse_in_any_case() {
        let args = Cli::parse_from([
            "collect",
            "--trial",
            "t1",
            "--metric-names",
            "loss,accuracy",
            "--db-manager-address",
            "127.0.0.1:6789",
            "--kind",
            "file",
            "--file-format",
            "json",
            "--path",
            "/m.json",
        ])
        .args;
        let o = args.options();
        assert_eq!(o.kind, sidecar::SidecarKind::File);
        assert_eq!(o.file_format, Some(sidecar::FileFormat::Json));
        assert_eq!(o.metric_names, ["loss", "accuracy"]);
        assert_eq!(o.poll, Duration::from_millis(500));
    }
}
