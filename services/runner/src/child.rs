//! What every local child process of a trial shares, whoever starts it (the trial's own
//! process, a replica of a distributed job, a Custom collector beside it): its command line,
//! its log file, how its process group is signalled, and how the spec's metrics path maps to
//! the trial's own copy. A leaf module, so the modules that start processes need not import
//! each other.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use vernier_spec::template::downward_api::PodFacts;
pub use vernier_spec::trial::PUSH_ADDRESS_ENV;

/// What to run for one trial.
#[derive(Debug, Clone)]
pub struct TrialCommand {
    pub trial: String,
    pub program: String,
    pub args: Vec<String>,
    /// Where the program is written in the experiment file (the container's `command`, or its
    /// `args` when it has no command), for the hint when it cannot be started; empty when not
    /// known.
    pub command_field: String,
    pub env: Vec<(String, String)>,
    pub work_dir: PathBuf,
    pub log_path: PathBuf,
    /// Where this trial writes its metrics file (`File` collector) or event directory
    /// (`TensorFlowEvent` collector).
    pub metrics_path: Option<PathBuf>,
    /// Append to the log file instead of starting it afresh (a restarted replica).
    pub append_log: bool,
    /// Where to keep the process group's id while it runs, so `vernier resume` can stop what a
    /// killed driver left behind.
    pub pid_file: Option<PathBuf>,
    /// The pod the trial's container would run in on a cluster, which a `Custom` collector
    /// beside it shares (its downward-API variables read it).
    pub pod: Box<PodFacts>,
    /// The directories standing for its `emptyDir` volumes, made when it starts.
    pub volume_dirs: Vec<PathBuf>,
}

/// A trial's log file, written by every reader of its output. Unbuffered: each line is in
/// the file as soon as the trial prints it, for `tail -f` and the dashboard while it runs,
/// and nothing printed is lost if the driver is killed.
pub(crate) type SharedLog = Arc<Mutex<std::fs::File>>;

pub(crate) fn write_log(log: &Mutex<std::fs::File>, bytes: &[u8]) {
    if let Ok(mut f) = log.lock()
        // A full disk must not kill the trial; its metrics still reach the store. It is said
        // once per run: every later line would fail the same way.
        && let Err(e) = f.write_all(bytes)
        && !LOG_WRITE_FAILED.swap(true, std::sync::atomic::Ordering::Relaxed)
    {
        tracing::warn!(
            "a trial's log file could not be written ({e}): output from then on is missing \
             from trial logs, while metrics are still recorded\nhint: free space where \
             --log-dir points"
        );
    }
}

/// Whether a log write has failed in this run (said once).
static LOG_WRITE_FAILED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub(crate) fn signal_group(pgid: Option<Pid>, signal: Signal) {
    if let Some(pgid) = pgid {
        // ESRCH (the group is already gone) is the common, harmless case.
        let _ = killpg(pgid, signal);
    }
}

/// `text` with the collector's spec path `from` replaced by the trial's copy `to`. A directory
/// is matched without its trailing '/', so `/var/log/katib/tfevent/` in the spec also maps
/// `--logdir=/var/log/katib/tfevent/train` and `/var/log/katib/tfevent` as written.
pub(crate) fn map_spec_path(text: &str, from: &str, to: &str) -> String {
    replace_path(text, trim_dir_slash(from), trim_dir_slash(to))
}

/// `text` with each whole occurrence of the path `from` replaced by `to`, as a volume mounted
/// at `from` would move it: `/data`, `/data/x`, `--dir=/data` and `file:///data` (or
/// `file://localhost/data`) are,
/// `/database`, `/data.csv` and the `/data/` of `https://host/data/` are not.
pub(crate) fn replace_path(text: &str, from: &str, to: &str) -> String {
    replace_paths(text, &[(from.to_string(), to.to_string())])
}

/// [`replace_path`] for several paths at once, in one pass: where two start at the same place
/// the longer (the inner mount) is taken, and a replacement is never looked at again.
pub(crate) fn replace_paths(text: &str, paths: &[(String, String)]) -> String {
    let is_path_char = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/');
    let mut paths: Vec<&(String, String)> = paths.iter().filter(|(f, _)| !f.is_empty()).collect();
    paths.sort_by_key(|(from, _)| std::cmp::Reverse(from.len()));
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let found = paths
            .iter()
            .filter_map(|(from, to)| rest.find(from.as_str()).map(|i| (i, from, to)))
            .min_by_key(|(i, from, _)| (*i, std::cmp::Reverse(from.len())));
        let Some((i, _, _)) = found else { break };
        let before = &rest[..i];
        let file_uri = ["file://", "file://localhost"]
            .iter()
            .any(|p| before.ends_with(p) || (before.is_empty() && out.ends_with(p)));
        let starts = file_uri
            || out
                .chars()
                .chain(before.chars())
                .last()
                .is_none_or(|c| !is_path_char(c));
        out.push_str(before);
        let here = &rest[i..];
        let whole = paths.iter().find(|(from, _)| {
            here.strip_prefix(from.as_str()).is_some_and(|after| {
                after
                    .chars()
                    .next()
                    .is_none_or(|c| c == '/' || !is_path_char(c))
            })
        });
        let (taken, with) = match (starts, whole) {
            (true, Some((from, to))) => (from.len(), to.as_str()),
            _ => {
                let shortest = paths.iter().filter(|(f, _)| here.starts_with(f.as_str()));
                let len = shortest.map(|(f, _)| f.len()).min().unwrap_or(1);
                (len, &here[..len])
            }
        };
        out.push_str(with);
        rest = &here[taken..];
    }
    out.push_str(rest);
    out
}

/// A directory above the spec path given whole, alone or as an option's value
/// (`/logs`, `--logdir=/logs`), mapped to the same directory above the trial's copy, which
/// is `local_root` plus the spec path: Katib's TFJob example passes the parent of its event
/// directory, where the trainer writes `train/` and `test/`. Only whole values are mapped, so
/// `/var/data.csv` is left alone when the spec path is under `/var`; `/` never is.
pub(crate) fn map_spec_ancestor(text: &str, spec_path: &str, local_root: &Path) -> String {
    let (prefix, value) = match text.rfind('=') {
        Some(i) => text.split_at(i + 1),
        None => ("", text),
    };
    let value = trim_dir_slash(value);
    let is_ancestor = Path::new(spec_path)
        .ancestors()
        .skip(1)
        .any(|a| a.as_os_str().len() > 1 && a.as_os_str() == value);
    if !is_ancestor {
        return text.to_string();
    }
    let mapped = local_root.join(value.trim_start_matches('/'));
    format!("{prefix}{}", mapped.display())
}

/// `path` without trailing slashes, unless that would leave nothing (`/`).
pub(crate) fn trim_dir_slash(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() { path } else { trimmed }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log write that fails (here `/dev/full`, a full disk) is noted, not fatal.
    #[test]
    fn a_failed_log_write_is_noted_and_the_trial_goes_on() {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        write_log(&Mutex::new(full), b"loss=0.5\n");
        assert!(LOG_WRITE_FAILED.load(std::sync::atomic::Ordering::Relaxed));
    }

    #[test]
    fn a_path_is_replaced_only_where_a_mount_would_move_it() {
        let table = [
            ("/data", "/L"),
            ("/data/", "/L/"),
            ("/data/x.pt", "/L/x.pt"),
            ("--dir=/data", "--dir=/L"),
            ("a:/data,b:/data", "a:/L,b:/L"),
            ("/database", "/database"),
            ("/data.csv", "/data.csv"),
            ("file:///data/m.log", "file:///L/m.log"),
            ("--uri=file:///data", "--uri=file:///L"),
            ("file://localhost/data/m.log", "file://localhost/L/m.log"),
            ("https://host/data/", "https://host/data/"),
            ("/x/data", "/x/data"),
            ("https://host/data/f", "https://host/data/f"),
            ("/database /data", "/database /L"),
        ];
        for (text, want) in table {
            assert_eq!(replace_path(text, "/data", "/L"), want, "{text}");
        }
        assert_eq!(replace_path("/data", "", "/L"), "/data");
    }
}
