//! Runs one trial as a local child process in its own process group: no shell, output kept in
//! a log file, metric lines parsed and recorded as they arrive, and a stop that reaches every
//! process of the trial.

pub use crate::child::TrialCommand;
use crate::child::{SharedLog, signal_group, write_log};
use crate::custom::CustomCollector;
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::unix::pipe;
use tokio::process::Command;
use tokio::sync::{mpsc, watch};
use vernier_collector::{
    FollowedSource, LineReader, MetricsFilter, ReadSink, ScrapedSource, SourceFormat, SourceRead,
    follow_until, scrape_until,
};
use vernier_core::Observation;
use vernier_store::SqlStore;

/// How long a trial gets between SIGTERM and SIGKILL when it is stopped.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// How long output readers may lag behind the exit of the main process before the rest of
/// its process group is killed (processes left behind would otherwise hold the pipes open).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// How often lagging readers are looked at once the grace is over.
const DRAIN_POLL: Duration = Duration::from_millis(50);

/// Parsed batches (one per line, poll or scrape) queued between the readers and the store;
/// a full queue makes the readers wait, so memory stays bounded whatever a trial prints.
const BATCH_QUEUE: usize = 256;

/// How many rejected values a trial's report keeps (all are counted).
pub const REJECTED_KEPT: usize = 20;

/// How much of each rejected value is kept and shown.
pub const REJECTED_SHOWN_CHARS: usize = 160;

/// Where metrics are read from.
#[derive(Debug, Clone, PartialEq)]
pub enum MetricSource {
    /// The trial's stdout and stderr (Katib `StdOut`).
    Output,
    /// A file the trial writes, TEXT lines (Katib `File`, format TEXT).
    TextFile,
    /// A file the trial writes, one JSON object per line (Katib `File`, format JSON).
    JsonFile,
    /// TensorFlow event files under a directory the trial writes (Katib `TensorFlowEvent`).
    TfEventDir,
    /// Prometheus text served by the trial on `http://127.0.0.1:<port><path>`
    /// (Katib `PrometheusMetric`), scraped every [`SCRAPE_EVERY`] while it runs (sooner
    /// while nothing listens yet).
    Prometheus { port: u16, path: String },
    /// Nothing is read locally: metrics are pushed to the DBManager API (Katib `Push`).
    Pushed,
    /// The user's collector runs beside the trial and reports to the DBManager API itself
    /// (Katib `Custom`).
    Custom(Box<CustomCollector>),
}

impl MetricSource {
    /// Whether the metrics path is a directory the trial writes into (TensorFlow event files,
    /// or a Custom collector's `fileSystemPath` of kind Directory) rather than a file.
    pub fn path_is_dir(&self) -> bool {
        match self {
            MetricSource::TfEventDir => true,
            MetricSource::Custom(c) => c.shared.as_ref().is_some_and(|s| s.directory),
            _ => false,
        }
    }
}

/// How often a Prometheus endpoint is scraped.
pub const SCRAPE_EVERY: Duration = Duration::from_secs(1);

/// How often a metrics file is checked for new lines.
const FILE_POLL: Duration = Duration::from_millis(100);

/// How the collector should read metrics from the output.
#[derive(Debug, Clone)]
pub struct Collection {
    pub filter: MetricsFilter,
    /// Metric names to record, objective first.
    pub metrics: Vec<String>,
    pub source: MetricSource,
    /// Told after each batch of observations is recorded, so the driver's early-stopping
    /// rule looks at once rather than at its next tick (Katib's collector applies a rule to
    /// each value it reads); `None` when nobody listens.
    pub recorded: Option<std::sync::Arc<tokio::sync::Notify>>,
}

impl Collection {
    /// Metrics in one output line, with the matches that were not numbers.
    fn parse(&self, line: &str) -> Option<ParsedBatch> {
        let parsed = self.filter.parse_line(line, &self.metrics);
        ParsedBatch::of(SourceRead {
            metrics: parsed.metrics,
            rejected: parsed.rejected,
            ..SourceRead::default()
        })
    }
}

/// Requests sent to a running trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StopLevel {
    Run,
    /// SIGTERM now, SIGKILL after [`STOP_GRACE`].
    Terminate,
    /// SIGKILL now.
    Kill,
}

/// How the trial's main process ended.
#[derive(Debug, Clone, PartialEq)]
pub enum ProcessEnd {
    Exited(i32),
    Signaled(String),
    /// It could not be started at all.
    SpawnFailed(String),
    /// Stopped on request (Ctrl-C, experiment completed).
    Stopped,
    /// A distributed job failed by its operator's rules; the message names the replica.
    JobFailed(String),
}

/// The result of one trial process.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessReport {
    pub end: ProcessEnd,
    /// Names of the metrics recorded at least once, or reported with values that were all
    /// rejected (the verdict then says every value was unusable).
    pub metrics_seen: HashSet<String>,
    /// The first [`REJECTED_KEPT`] metric matches whose value was not a number, as
    /// `name=raw` shortened to [`REJECTED_SHOWN_CHARS`] characters.
    pub rejected: Vec<String>,
    /// How many were rejected in all.
    pub rejected_total: usize,
    /// A failure to record observations (the trial still ran).
    pub store_error: Option<String>,
    /// The output or metrics files the collector read: the process's own, or the primary
    /// replicas' of a distributed trial.
    pub collected_from: Vec<PathBuf>,
    /// When the trial ended (microseconds since the Unix epoch), taken as it ended rather
    /// than when its verdict is written, which may wait for a locked database or for the
    /// last lines to be recorded; `None` when the end was not observed (a stop before start).
    pub ended_us: Option<i64>,
}

impl ProcessReport {
    /// A report of nothing run yet: stopped, nothing seen; the usual start a supervisor fills in.
    pub fn stopped(collected_from: Vec<PathBuf>) -> ProcessReport {
        ProcessReport {
            end: ProcessEnd::Stopped,
            metrics_seen: HashSet::new(),
            rejected: Vec::new(),
            rejected_total: 0,
            store_error: None,
            collected_from,
            ended_us: None,
        }
    }

    /// Takes what the metrics recorder saw, or notes that it stopped.
    fn absorb_recorder(&mut self, recorded: Result<Recorded, tokio::task::JoinError>) {
        match recorded {
            Ok(rec) => {
                self.metrics_seen = rec.seen;
                self.rejected = rec.rejected;
                self.rejected_total = rec.rejected_total;
                self.store_error = rec.error;
            }
            Err(e) => self.store_error = Some(format!("metrics recorder stopped: {e}")),
        }
    }

    /// Adds another process's problems to this report: its rejected values (each prefixed
    /// with `from`, kept while there is room for [`REJECTED_KEPT`]), their count, and its store
    /// error when this report has none yet.
    pub(crate) fn absorb_problems(&mut self, other: &ProcessReport, from: &str) {
        let room = REJECTED_KEPT.saturating_sub(self.rejected.len());
        self.rejected.extend(
            other
                .rejected
                .iter()
                .take(room)
                .map(|x| format!("{from}{x}")),
        );
        self.rejected_total += other.rejected_total;
        if self.store_error.is_none() {
            self.store_error.clone_from(&other.store_error);
        }
    }
}

/// Microseconds since the Unix epoch.
pub fn now_us() -> i64 {
    chrono::Utc::now().timestamp_micros()
}

/// Spawns and supervises the trial until it ends, recording every metric it prints.
pub async fn run_process(
    cmd: TrialCommand,
    collection: Collection,
    store: SqlStore,
    stop: watch::Receiver<StopLevel>,
) -> ProcessReport {
    run_process_then(cmd, collection, store, stop, |_| {}).await
}

/// [`run_process`], calling `on_start` with the process id once the process has started, so
/// a supervisor's log says "started" only of a process that did (not of one whose program
/// was not found).
pub async fn run_process_then(
    cmd: TrialCommand,
    collection: Collection,
    store: SqlStore,
    mut stop: watch::Receiver<StopLevel>,
    on_start: impl FnOnce(u32) + Send,
) -> ProcessReport {
    let mut report = ProcessReport::stopped(collected_from(&cmd, &collection.source));
    let log = match open_log(&cmd).and_then(|log| {
        create_metrics_dir(&cmd, &collection.source)?;
        crate::volumes::make_private_dirs(&cmd.volume_dirs)?;
        Ok(log)
    }) {
        Ok(log) => log,
        Err(why) => {
            report.end = ProcessEnd::SpawnFailed(why);
            report.ended_us = Some(now_us());
            return report;
        }
    };
    let (mut child, output) = match spawn(&cmd) {
        Ok(spawned) => spawned,
        Err(e) => {
            let why = spawn_error(&cmd, &e);
            write_log(&log, format!("vernier: {why}\n").as_bytes());
            report.end = ProcessEnd::SpawnFailed(why);
            report.ended_us = Some(now_us());
            return report;
        }
    };
    if let Some(id) = child.id() {
        on_start(id);
    }
    let pgid = child.id().map(|id| Pid::from_raw(id as i32));
    if let (Some(path), Some(pid)) = (&cmd.pid_file, pgid) {
        // Best effort: without the file only the resume-time cleanup is lost.
        let _ = std::fs::write(path, pid.to_string());
    }

    let (tx, rx) = mpsc::channel::<ParsedBatch>(BATCH_QUEUE);
    let backlog = tx.downgrade();
    let recorded = collection.recorded.clone();
    let recorder = tokio::spawn(record(cmd.trial.clone(), store, rx, stop.clone(), recorded));
    let (ended_tx, ended_rx) = watch::channel(false);
    let readers = start_readers(output, &cmd, &collection, &log, tx, &ended_rx);
    let collector = match &collection.source {
        MetricSource::Custom(custom) => Some(tokio::spawn(crate::custom::run_beside(
            custom.command_for(&cmd),
            cmd.work_dir.clone(),
            log.clone(),
            ended_rx,
        ))),
        _ => None,
    };
    let (status, stopped) = wait_or_stop(&mut child, pgid, &mut stop).await;
    report.ended_us = Some(now_us());
    let _ = ended_tx.send(true);
    drain_readers(readers, pgid, &backlog).await;
    if let Some(collector) = collector {
        // It reports to the store itself: the trial is judged once it is done.
        let _ = collector.await;
    }
    if let Some(path) = &cmd.pid_file {
        let _ = std::fs::remove_file(path);
    }
    report.absorb_recorder(recorder.await);
    report.end = match (stopped, status) {
        (true, _) => ProcessEnd::Stopped,
        (false, Ok(s)) => exit_kind(s),
        (false, Err(e)) => {
            ProcessEnd::SpawnFailed(format!("waiting for the trial process failed: {e}"))
        }
    };
    report
}

/// The files the collector reads for this source: the log, the metrics file, or none.
fn collected_from(cmd: &TrialCommand, source: &MetricSource) -> Vec<PathBuf> {
    match source {
        MetricSource::Output => vec![cmd.log_path.clone()],
        MetricSource::TextFile | MetricSource::JsonFile => {
            cmd.metrics_path.iter().cloned().collect()
        }
        _ => Vec::new(),
    }
}

/// The trial's log file, appended to when the trial is an attempt after the first. The log
/// directory is made again if it went (deleted while the run went on): a machine-side loss is
/// no reason to fail the trial.
fn open_log(cmd: &TrialCommand) -> Result<SharedLog, String> {
    if let Some(dir) = cmd.log_path.parent()
        && !dir.exists()
    {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot make the log directory {} again: {e}", dir.display()))?;
        tracing::warn!(
            "the log directory {} was gone and is made again; logs written before are lost",
            dir.display()
        );
    }
    let opened = if cmd.append_log {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&cmd.log_path)
    } else {
        std::fs::File::create(&cmd.log_path)
    };
    match opened {
        Ok(f) => Ok(Arc::new(Mutex::new(f))),
        Err(e) => Err(format!(
            "cannot create log file {}: {e}",
            cmd.log_path.display()
        )),
    }
}

/// The trial may expect its metrics directory to exist, as the Katib sidecar's shared
/// volume does: the directory itself, or the metrics file's parent.
fn create_metrics_dir(cmd: &TrialCommand, source: &MetricSource) -> Result<(), String> {
    let metrics_dir = match cmd.metrics_path.as_deref() {
        Some(dir) if source.path_is_dir() => Some(dir),
        path => path.and_then(|p| p.parent()),
    };
    match metrics_dir.map(|dir| (dir, std::fs::create_dir_all(dir))) {
        Some((dir, Err(e))) => Err(format!(
            "cannot create the metrics directory {}: {e}",
            dir.display()
        )),
        _ => Ok(()),
    }
}

/// The trial's process, leading its own process group so a stop reaches all it starts, and
/// the read end of the one pipe its stdout and stderr both write to: Katib's collector reads
/// the container's `1>file 2>&1`, so lines keep the order they were written in across the
/// two streams (a `print` after a `logging` line is the later value), which two pipes read
/// side by side would not.
fn spawn(cmd: &TrialCommand) -> std::io::Result<(tokio::process::Child, pipe::Receiver)> {
    let (reader, writer) = std::io::pipe()?;
    let child = Command::new(&cmd.program)
        .args(&cmd.args)
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .env(vernier_spec::trial::TRIAL_NAME_ENV, &cmd.trial)
        .current_dir(&cmd.work_dir)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .kill_on_drop(true)
        .spawn()?;
    // The command, and with it this process's write ends, is gone: the reader sees the end of
    // the output once the trial and whatever it started have closed theirs.
    Ok((child, pipe::Receiver::from_owned_fd(reader.into())?))
}

/// One task reading the trial's output, and one following the metrics file, event directory
/// or Prometheus endpoint when metrics come from there.
fn start_readers(
    output: pipe::Receiver,
    cmd: &TrialCommand,
    collection: &Collection,
    log: &SharedLog,
    tx: mpsc::Sender<ParsedBatch>,
    ended: &watch::Receiver<bool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let pumped = pump(output, log.clone(), collection.clone(), tx.clone());
    let mut readers = vec![tokio::spawn(pumped)];
    let followed = cmd
        .metrics_path
        .as_deref()
        .and_then(|path| followed_source(collection, path));
    if let Some(source) = followed {
        readers.push(tokio::spawn(follow(source, tx, ended.clone())));
    } else if let MetricSource::Prometheus { port, path } = &collection.source {
        let source = ScrapedSource::new(*port, path, collection.metrics.clone());
        readers.push(tokio::spawn(scrape(source, tx, ended.clone())));
    }
    readers
}

/// Waits for the process to end, stopping its group when asked (or when the driver goes
/// away); the second value says whether it was stopped.
async fn wait_or_stop(
    child: &mut tokio::process::Child,
    pgid: Option<Pid>,
    stop: &mut watch::Receiver<StopLevel>,
) -> (std::io::Result<std::process::ExitStatus>, bool) {
    loop {
        if *stop.borrow() != StopLevel::Run {
            return (stop_group(child, pgid, stop).await, true);
        }
        tokio::select! {
            status = child.wait() => return (status, false),
            changed = stop.changed() => {
                if changed.is_err() {
                    // The driver went away: treat it as a stop request.
                    return (stop_group(child, pgid, stop).await, true);
                }
            }
        }
    }
}

/// Lets readers drain what the process wrote, then clears out anything it left running.
/// Readers that lag [`DRAIN_GRACE`] behind the exit get the process group killed (processes
/// left behind would hold the pipes open); what is still in the pipes is read all the same.
/// They are abandoned only once they make no way for another [`DRAIN_GRACE`] while the queue
/// to the store has room: a full queue means the store is behind (a lock, an outage), and
/// what the trial printed waits for it, as it does while the trial runs.
async fn drain_readers(
    mut readers: Vec<tokio::task::JoinHandle<()>>,
    pgid: Option<Pid>,
    backlog: &mpsc::WeakSender<ParsedBatch>,
) {
    let drained = tokio::time::timeout(DRAIN_GRACE, async {
        for reader in readers.iter_mut() {
            let _ = reader.await;
        }
    })
    .await
    .is_ok();
    if !drained {
        signal_group(pgid, Signal::SIGKILL);
        let mut idle = Duration::ZERO;
        loop {
            readers.retain(|r| !r.is_finished());
            if readers.is_empty() {
                break;
            }
            let store_behind = backlog.upgrade().is_some_and(|tx| tx.capacity() == 0);
            idle = if store_behind {
                Duration::ZERO
            } else {
                idle + DRAIN_POLL
            };
            if idle >= DRAIN_GRACE {
                readers.iter().for_each(|r| r.abort());
                break;
            }
            tokio::time::sleep(DRAIN_POLL).await;
        }
    }
    signal_group(pgid, Signal::SIGKILL);
}

/// Why the trial's program could not be started; a missing program names the field that
/// names it.
fn spawn_error(cmd: &TrialCommand, e: &std::io::Error) -> String {
    if e.kind() != std::io::ErrorKind::NotFound {
        return format!("cannot start command {:?}: {e}", cmd.program);
    }
    // A missing working directory fails the start with the same error as a missing program.
    if !cmd.work_dir.is_dir() {
        return format!(
            "cannot start command {:?}: its working directory {} does not exist\nhint: local \
             mode runs trials in the experiment file's directory; restore it, or run the \
             experiment from where its files are",
            cmd.program,
            cmd.work_dir.display()
        );
    }
    let field = if cmd.command_field.is_empty() {
        "the container's command in spec.trialTemplate.trialSpec"
    } else {
        cmd.command_field.as_str()
    };
    format!(
        "command {:?} was not found (working directory {})\nhint: local mode runs the container's command on this machine and ignores its image; check {field}, or install {:?} here",
        cmd.program,
        cmd.work_dir.display(),
        cmd.program
    )
}

fn exit_kind(status: std::process::ExitStatus) -> ProcessEnd {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = status.code() {
        ProcessEnd::Exited(code)
    } else if let Some(sig) = status.signal() {
        ProcessEnd::Signaled(
            Signal::try_from(sig).map_or_else(|_| format!("signal {sig}"), |s| s.to_string()),
        )
    } else {
        ProcessEnd::Exited(-1)
    }
}

/// SIGTERM the whole group, escalate to SIGKILL after the grace period or on request.
async fn stop_group(
    child: &mut tokio::process::Child,
    pgid: Option<Pid>,
    stop: &mut watch::Receiver<StopLevel>,
) -> std::io::Result<std::process::ExitStatus> {
    if *stop.borrow() == StopLevel::Kill {
        signal_group(pgid, Signal::SIGKILL);
    } else {
        signal_group(pgid, Signal::SIGTERM);
    }
    let deadline = tokio::time::sleep(STOP_GRACE);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            status = child.wait() => return status,
            _ = &mut deadline => {
                signal_group(pgid, Signal::SIGKILL);
                return child.wait().await;
            }
            changed = stop.changed() => {
                if changed.is_err() || *stop.borrow() == StopLevel::Kill {
                    signal_group(pgid, Signal::SIGKILL);
                    return child.wait().await;
                }
            }
        }
    }
}

/// Metrics parsed from one line, event-file poll or scrape.
#[derive(Debug)]
struct ParsedBatch {
    /// Each observation, and whether its time is the source's own (an event's wall time, a
    /// line's leading timestamp), kept as it is even when it goes backwards, as Katib keeps it.
    observations: Vec<(Observation, bool)>,
    rejected: Vec<String>,
    /// The metric names of the rejected values: a trial whose every objective value was
    /// rejected is told so, whichever collector read it.
    rejected_names: Vec<String>,
}

impl ParsedBatch {
    /// What a read of a followed source records; `None` when it found nothing.
    fn of(read: SourceRead) -> Option<ParsedBatch> {
        if read.is_empty() {
            return None;
        }
        let now = now_us();
        let rejected_names = read.rejected.iter().map(|r| r.name.clone()).collect();
        let mut rejected: Vec<String> = read.rejected.into_iter().map(|r| r.to_string()).collect();
        rejected.extend(read.warnings);
        Some(ParsedBatch {
            observations: read
                .metrics
                .into_iter()
                .map(|m| {
                    let own_time = read.exact_time || m.timestamp_us.is_some();
                    (m.into_observation(now), own_time)
                })
                .collect(),
            rejected,
            rejected_names,
        })
    }
}

/// Reads one output stream: raw bytes to the log, parsed metrics to the recorder when metrics
/// come from the output.
async fn pump<R: tokio::io::AsyncRead + Unpin>(
    reader: R,
    log: SharedLog,
    collection: Collection,
    tx: mpsc::Sender<ParsedBatch>,
) {
    let parse = collection.source == MetricSource::Output;
    let mut lines = LineReader::new(reader).ending_at_carriage_returns();
    let mut on_raw = |raw: &[u8]| write_log(&log, raw);
    while let Ok(Some(line)) = lines.next_line(&mut on_raw).await {
        if parse && let Some(bytes) = lines.last_cut() {
            let warning = SourceRead {
                warnings: vec![vernier_collector::cut_line_warning(bytes)],
                ..SourceRead::default()
            };
            if let Some(batch) = ParsedBatch::of(warning) {
                let _ = tx.send(batch).await;
            }
        }
        if parse && let Some(batch) = collection.parse(&line) {
            // Waiting here when the recorder is behind is the back-pressure: the trial then
            // waits on its pipe.
            let _ = tx.send(batch).await;
        }
    }
}

/// The metrics file or event directory the trial writes, when the collector follows one.
fn followed_source(collection: &Collection, path: &Path) -> Option<FollowedSource> {
    let format = match collection.source {
        MetricSource::TextFile => SourceFormat::Text(collection.filter.clone()),
        MetricSource::JsonFile => SourceFormat::Json,
        MetricSource::TfEventDir => SourceFormat::Events,
        _ => return None,
    };
    Some(FollowedSource::new(
        path,
        format,
        collection.metrics.clone(),
    ))
}

/// Follows the trial's metrics file or event directory until the trial has ended, then reads
/// what is left.
async fn follow(
    mut source: FollowedSource,
    tx: mpsc::Sender<ParsedBatch>,
    mut ended: watch::Receiver<bool>,
) {
    let ended = async move {
        let _ = ended.wait_for(|ended| *ended).await;
    };
    follow_until(&mut source, FILE_POLL, ended, &mut Batches(tx)).await;
}

/// Reads of a followed or scraped source, queued for the recorder.
struct Batches(mpsc::Sender<ParsedBatch>);

impl ReadSink for Batches {
    async fn take(&mut self, read: SourceRead, _last: bool) {
        if let Some(batch) = ParsedBatch::of(read) {
            let _ = self.0.send(batch).await;
        }
    }
}

/// Scrapes the trial's Prometheus endpoint until the trial has ended.
async fn scrape(
    mut source: ScrapedSource,
    tx: mpsc::Sender<ParsedBatch>,
    mut ended: watch::Receiver<bool>,
) {
    let ended = async move {
        let _ = ended.wait_for(|ended| *ended).await;
    };
    scrape_until(&mut source, SCRAPE_EVERY, ended, &mut Batches(tx)).await;
}

#[derive(Debug, Default)]
struct Recorded {
    seen: HashSet<String>,
    rejected: Vec<String>,
    rejected_total: usize,
    error: Option<String>,
}

impl Recorded {
    /// Counts every rejected value but keeps only the first few, each shortened: a trial
    /// printing 300 one-megabyte `nan` values must not hold 300 MB.
    fn reject(&mut self, what: String) {
        self.rejected_total += 1;
        if self.rejected.len() < REJECTED_KEPT {
            self.rejected.push(shorten(&what, REJECTED_SHOWN_CHARS));
        }
    }
}

/// `text` cut to `max` characters, saying how long it was.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    match vernier_core::first_chars(text, max) {
        None => text.to_string(),
        Some(head) => format!("{head}... ({} bytes)", text.len()),
    }
}

/// Writes observations to the store in arrival order, batching whatever is queued.
async fn record(
    trial: String,
    store: SqlStore,
    mut rx: mpsc::Receiver<ParsedBatch>,
    stop: watch::Receiver<StopLevel>,
    recorded: Option<std::sync::Arc<tokio::sync::Notify>>,
) -> Recorded {
    let mut rec = Recorded::default();
    let mut last_ts = i64::MIN;
    let mut backlog = crate::locked_write::Backlog::default();
    while let Some(first) = rx.recv().await {
        let mut pending = vec![first];
        while let Ok(more) = rx.try_recv() {
            pending.push(more);
        }
        let mut logs = Vec::new();
        for batch in pending {
            batch.rejected.into_iter().for_each(|r| rec.reject(r));
            rec.seen.extend(batch.rejected_names);
            for (mut o, own_time) in batch.observations {
                // Keep read order even when the clock does not advance between lines, so
                // "latest" is the last value printed.
                if !own_time {
                    if o.timestamp_us <= last_ts {
                        o.timestamp_us = last_ts + 1;
                    }
                    last_ts = o.timestamp_us;
                }
                rec.seen.insert(o.metric.clone());
                logs.push(o);
            }
        }
        if logs.is_empty() {
            continue;
        }
        let stopping = || *stop.borrow() != StopLevel::Run;
        // A batch a stop gave up on goes first with the next one; the error stands only
        // while something is unwritten.
        rec.error = backlog
            .write(&store, &trial, logs, stopping)
            .await
            .err()
            .map(|e| e.to_string());
        if let (None, Some(listener)) = (&rec.error, &recorded) {
            listener.notify_one();
        }
    }
    rec
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The log directory deleted while the run goes on is made again for the next trial.
    #[test]
    fn a_log_directory_deleted_mid_run_is_made_again() {
        let root = tempfile::tempdir().unwrap();
        let log_path = root.path().join("logs").join("t.log");
        let cmd = TrialCommand {
            trial: "t".into(),
            program: "true".into(),
            args: vec![],
            command_field: String::new(),
            env: vec![],
            work_dir: root.path().to_path_buf(),
            log_path: log_path.clone(),
            metrics_path: None,
            append_log: false,
            pid_file: None,
            pod: Default::default(),
            volume_dirs: Vec::new(),
        };
        assert!(open_log(&cmd).is_ok());
        assert!(log_path.is_file());
    }

    /// Stdout and stderr share one pipe, as the `2>&1` of Katib's collector: what the trial
    /// writes alternately to each is read in the order it was written.
    #[tokio::test]
    async fn stdout_and_stderr_are_read_in_the_order_written() {
        use tokio::io::AsyncReadExt;
        let root = tempfile::tempdir().unwrap();
        let cmd = TrialCommand {
            trial: "t".into(),
            program: "sh".into(),
            args: vec![
                "-c".into(),
                "i=0; while [ $i -lt 200 ]; do echo out=$i; echo err=$i >&2; i=$((i+1)); done"
                    .into(),
            ],
            command_field: String::new(),
            env: vec![],
            work_dir: root.path().to_path_buf(),
            log_path: root.path().join("t.log"),
            metrics_path: None,
            append_log: false,
            pid_file: None,
            pod: Default::default(),
            volume_dirs: Vec::new(),
        };
        let (mut child, mut output) = spawn(&cmd).unwrap();
        let mut text = String::new();
        output.read_to_string(&mut text).await.unwrap();
        assert!(child.wait().await.unwrap().success());
        let want: String = (0..200).map(|i| format!("out={i}\nerr={i}\n")).collect();
        assert_eq!(text, want);
    }

    #[test]
    fn a_program_not_found_names_the_field_that_names_it() {
        let cmd = |field: &str| TrialCommand {
            trial: "t".into(),
            program: "mpirun".into(),
            args: vec![],
            command_field: field.into(),
            env: vec![],
            work_dir: PathBuf::from("/w"),
            log_path: PathBuf::from("/l/t.log"),
            metrics_path: None,
            append_log: false,
            pid_file: None,
            pod: Default::default(),
            volume_dirs: Vec::new(),
        };
        let not_found = std::io::Error::from(std::io::ErrorKind::NotFound);
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let field = "spec.trialTemplate.trialSpec.spec.template.spec.containers[0].command";
        // (the command's field, the error, what the message must say)
        let table = [
            (
                field,
                &not_found,
                format!("check {field}, or install \"mpirun\" here"),
            ),
            (
                "",
                &not_found,
                "check the container's command in spec.trialTemplate.trialSpec,".to_string(),
            ),
            (
                field,
                &denied,
                "cannot start command \"mpirun\": ".to_string(),
            ),
        ];
        let work_dir = tempfile::tempdir().unwrap();
        let cmd = |field: &str| TrialCommand {
            work_dir: work_dir.path().to_path_buf(),
            ..cmd(field)
        };
        for (field, error, want) in table {
            let said = spawn_error(&cmd(field), error);
            assert!(said.contains(&want) && !said.contains("..."), "{said}");
        }
        // A working directory that is gone is named, not the program.
        let gone = TrialCommand {
            work_dir: work_dir.path().join("gone"),
            ..cmd(field)
        };
        let said = spawn_error(&gone, &not_found);
        assert!(
            said.contains("its working directory") && said.contains("does not exist"),
            "{said}"
        );
        let said = spawn_error(&cmd(field), &not_found);
        let want = format!(
            "command \"mpirun\" was not found (working directory {})\nhint: ",
            work_dir.path().display()
        );
        assert!(said.starts_with(&want), "{said}");
    }

    /// A trial that prints more than the queue holds and exits while another session holds the
    /// database's write lock past the drain grace: every line still reaches the store.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_store_locked_when_the_trial_ends_loses_nothing_it_printed() {
        use sqlx::{Connection, Executor};
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("v.db").display());
        let options = vernier_store::StoreOptions {
            lock_timeout: Duration::from_millis(200),
            ..Default::default()
        };
        let store = SqlStore::connect_with(&url, options).await.unwrap();
        crate::test_store::with_trial(&store, vernier_core::TrialState::Running).await;
        let mut other = sqlx::SqliteConnection::connect(&url).await.unwrap();
        other.execute("BEGIN IMMEDIATE").await.unwrap();
        let holder = tokio::spawn(async move {
            tokio::time::sleep(DRAIN_GRACE * 3).await;
            other.execute("ROLLBACK").await.unwrap();
        });
        let cmd = TrialCommand {
            trial: "e-0".into(),
            program: "python3".into(),
            args: vec![
                "-c".into(),
                "for i in range(1, 3001): print(f'loss={1000 / i}')".into(),
            ],
            command_field: String::new(),
            env: vec![],
            work_dir: dir.path().to_path_buf(),
            log_path: dir.path().join("t.log"),
            metrics_path: None,
            append_log: false,
            pid_file: None,
            pod: Default::default(),
            volume_dirs: Vec::new(),
        };
        let collection = Collection {
            filter: MetricsFilter::katib_default(),
            metrics: vec!["loss".into()],
            source: MetricSource::Output,
            recorded: None,
        };
        let (_stop, stop_rx) = watch::channel(StopLevel::Run);
        let report = run_process(cmd, collection, store.clone(), stop_rx).await;
        holder.await.unwrap();
        assert_eq!(report.store_error, None);
        let logs = store.observations("e-0", None, None, None).await.unwrap();
        assert_eq!(logs.len(), 3000);
        let log = std::fs::read_to_string(dir.path().join("t.log")).unwrap();
        assert_eq!(log.lines().count(), 3000);
    }
}
