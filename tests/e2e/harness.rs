//! Shared helpers: locating the binary, writing experiment files, running commands.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The `vernier` binary built by the same `cargo test` invocation (the CLI package has its
/// own integration tests, so cargo builds the binary before any test runs).
pub fn vernier_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("VERNIER_BIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("test executable path");
    // target/<profile>/deps/e2e-<hash> -> target/<profile>/vernier
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target profile dir");
    let bin = profile_dir.join("vernier");
    assert!(
        bin.exists(),
        "{} is missing: run `cargo test --workspace` (it builds the binary) or set VERNIER_BIN",
        bin.display()
    );
    bin
}

/// A scratch directory with a database, experiment files and trial scripts.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        Sandbox {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn db(&self) -> String {
        self.path().join("vernier.db").display().to_string()
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path().join(name);
        std::fs::write(&p, text).expect("write file");
        p
    }

    /// A `vernier` command run in the sandbox with its database.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(vernier_bin());
        c.current_dir(self.path())
            .env("VERNIER_DB", self.db())
            .env_remove("RUST_LOG")
            .args(args);
        c
    }

    /// [`Sandbox::cmd`] started in the background, its stdout and stderr piped (for
    /// [`wait_for_lines`] and the output once it ends).
    pub fn spawn(&self, args: &[&str]) -> Child {
        self.cmd(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start vernier")
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("run vernier")
    }

    /// `vernier report NAME --format json`, parsed.
    pub fn report(&self, name: &str) -> serde_json::Value {
        let out = self.run(&["report", name, "--format", "json"]);
        assert!(
            out.status.code() == Some(0) || out.status.code() == Some(1),
            "report failed: {}",
            text(&out)
        );
        serde_json::from_slice(&out.stdout).expect("report is JSON")
    }
}

/// Stdout and stderr together, for assertion messages.
pub fn text(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// An experiment whose trial runs `python3 -c SCRIPT x`, with `x` a double in [0, 1].
/// `extra` is inserted into `spec` (indented by 2 spaces).
pub fn python_experiment(name: &str, script: &str, extra: &str) -> String {
    let script = script
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n");
    format!(
        r#"apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: {name}
spec:
{extra}
  algorithm:
    algorithmName: random
  parameters:
    - name: x
      parameterType: double
      feasibleSpace:
        min: "0"
        max: "1"
  trialTemplate:
    primaryContainerName: training
    trialParameters:
      - name: x
        reference: x
    trialSpec:
      apiVersion: batch/v1
      kind: Job
      spec:
        template:
          spec:
            restartPolicy: Never
            containers:
              - name: training
                image: python:3.11
                command:
                  - python3
                  - -c
                  - "{script}"
                  - "${{trialParameters.x}}"
"#
    )
}

/// The log of the experiment's first trial found under `vernier-logs/EXPERIMENT/`.
pub fn first_trial_log(sb: &Sandbox, experiment: &str) -> String {
    std::fs::read_dir(sb.path().join("vernier-logs").join(experiment))
        .expect("the experiment's log directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "log"))
        .map(|p| std::fs::read_to_string(p).expect("a trial log"))
        .expect("a trial log")
}

/// The last condition of a reported experiment or trial (`status.conditions`).
pub fn last_condition(resource: &serde_json::Value) -> &serde_json::Value {
    resource["status"]["conditions"]
        .as_array()
        .and_then(|c| c.last())
        .unwrap_or_else(|| panic!("no conditions in {resource:#}"))
}

/// Trials of `report` whose last condition stands for `state` ([`condition_state`]).
pub fn trials_in(report: &serde_json::Value, state: &str) -> Vec<serde_json::Value> {
    report["trials"]
        .as_array()
        .expect("trials array")
        .iter()
        .filter(|t| {
            t["status"]["conditions"]
                .as_array()
                .and_then(|c| c.last())
                .is_some_and(|c| condition_state(c) == state)
        })
        .cloned()
        .collect()
}

/// The state a trial's last condition stands for: its type, as Katib's trial controller
/// writes it (a MetricsUnavailable trial ends with a `MetricsUnavailable` condition).
pub fn condition_state(c: &serde_json::Value) -> &str {
    c["type"].as_str().unwrap_or_default()
}

/// Waits for a `vernier` child to exit, failing the test after `limit`; its exit code.
pub fn wait_exit(child: &mut Child, limit: Duration) -> Option<i32> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status.code();
        }
        assert!(
            Instant::now() < deadline,
            "vernier did not exit within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether a process exists (signal 0 reaches it).
pub fn pid_alive(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

/// Whether a test that needs something a fresh machine lacks (Chromium, the `kubeflow-katib`
/// Python package) may run: `true` when `available`; otherwise it prints a `SKIPPED` line
/// (past the harness's output capture) and returns `false`, or fails the test when
/// `VERNIER_TEST_REQUIRE=1` (set by CI, which installs everything).
pub fn available_or_skip(available: bool, test: &str, missing: &str, hint: &str) -> bool {
    if available {
        return true;
    }
    if std::env::var("VERNIER_TEST_REQUIRE").as_deref() == Ok("1") {
        panic!("{test}: {missing}, and VERNIER_TEST_REQUIRE=1 forbids skipping\nhint: {hint}");
    }
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: {missing} (hint: {hint}; VERNIER_TEST_REQUIRE=1 makes this a failure)"
    );
    false
}

/// Reads the child's stdout until `count` lines containing `needle` were seen.
pub fn wait_for_lines(child: &mut Child, needle: &str, count: usize) -> Vec<String> {
    let stdout = child.stdout.take().expect("piped stdout");
    let mut reader = std::io::BufReader::new(stdout);
    let mut seen = Vec::new();
    let mut hits = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    while hits < count {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {needle:?}: {seen:?}"
        );
        let mut line = String::new();
        if reader.read_line(&mut line).expect("read stdout") == 0 {
            panic!("vernier exited before {count} x {needle:?}: {seen:?}");
        }
        if line.contains(needle) {
            hits += 1;
        }
        seen.push(line);
    }
    // Keep draining so the child never blocks on a full pipe.
    std::thread::spawn(move || for _ in reader.lines() {});
    seen
}

/// Runs `script` with `con`, a connection to the sandbox's database, and `sys.argv[2..]` =
/// `args`; its stdout, trimmed.
pub fn sqlite(sb: &Sandbox, script: &str, args: &[&str]) -> String {
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(format!(
            "import sqlite3, sys\ncon = sqlite3.connect(sys.argv[1])\n{script}"
        ))
        .arg(sb.db())
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}
