//! `vernier dashboard` through the real binary: its JSON API and loopback guard over plain
//! HTTP, then its pages in headless Chromium driven over the DevTools protocol: every page
//! loads without a console error or failed request, the plots hold one mark per trial, and
//! a running experiment's page shows a new trial without reloading.
//!
//! The DevTools protocol runs over `--remote-debugging-pipe` (NUL-separated JSON on the
//! browser's descriptors 3 and 4, wired to its stdin and stdout here) rather than a
//! WebSocket: no client library is needed, and no port can clash.

use crate::harness::{Sandbox, python_experiment, text};
use crate::reports::chromium;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// Each trial waits until the file `GATE` exists (when `GATE` is not empty), then logs `loss`
/// three times, `SLEEP` seconds apart, and `accuracy` once. The gate holds a running
/// experiment at its first trial until the test has its page open, however slowly the
/// browser starts.
const SCRIPT: &str = "import os, sys, time\nx = float(sys.argv[1])\nwhile 'GATE' and not os.path.exists('GATE'):\n    time.sleep(0.05)\nfor i in range(3):\n    print(f'loss={(x - 0.3) ** 2 + 1.0 / (i + 1)}', flush=True)\n    time.sleep(SLEEP)\nprint(f'accuracy={1 - x}')";

/// How long a wait for the page may take before the test gives up (a hang guard, not a
/// speed requirement).
const PATIENCE: Duration = Duration::from_secs(90);

/// An experiment of `trials` trials running [`SCRIPT`]; `gate` is the file its trials wait
/// for, or `None` for trials that start at once.
fn experiment(sb: &Sandbox, name: &str, trials: u32, sleep: f64, gate: Option<&Path>) -> String {
    let gate = gate.map_or(String::new(), |g| g.display().to_string());
    let yaml = python_experiment(
        name,
        &SCRIPT
            .replace("SLEEP", &sleep.to_string())
            .replace("GATE", &gate),
        &format!(
            "  objective:\n    type: minimize\n    objectiveMetricName: loss\n    additionalMetricNames: [accuracy]\n  parallelTrialCount: 1\n  maxTrialCount: {trials}"
        ),
    );
    sb.write(&format!("{name}.yaml"), &yaml)
        .display()
        .to_string()
}

/// A `vernier dashboard --port 0` child and the address it printed.
struct Dashboard {
    child: Child,
    addr: String,
    /// Kept open so the server never writes to a closed pipe.
    _stdout: BufReader<std::process::ChildStdout>,
}

impl Dashboard {
    fn start(sb: &Sandbox) -> Dashboard {
        let mut child = sb
            .cmd(&["dashboard", "--port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start vernier dashboard");
        let mut line = String::new();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        stdout.read_line(&mut line).unwrap();
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|r| r.split('/').next())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        Dashboard {
            child,
            addr,
            _stdout: stdout,
        }
    }

    /// `GET path` with `Host: host`; returns the status code and body.
    fn get_as(&self, path: &str, host: &str) -> (u16, String) {
        let mut s = TcpStream::connect(&self.addr).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut raw = String::new();
        s.read_to_string(&mut raw).unwrap();
        let status = raw[9..12].parse().unwrap();
        let body = raw.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        (status, body.to_string())
    }

    fn get(&self, path: &str) -> (u16, String) {
        self.get_as(path, &self.addr)
    }

    fn json(&self, path: &str) -> Value {
        let (status, body) = self.get(path);
        assert_eq!(status, 200, "{path}: {body}");
        serde_json::from_str(&body).unwrap()
    }
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Headless Chromium and one page session of the DevTools protocol.
struct Browser {
    child: Child,
    input: ChildStdin,
    messages: Receiver<Value>,
    next_id: u64,
    session: String,
    /// Console errors, uncaught exceptions and failed loads seen so far.
    errors: Vec<String>,
    _profile: tempfile::TempDir,
}

impl Browser {
    fn launch(binary: &Path) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        // fd 3 is what the browser reads, fd 4 what it writes.
        let mut child = Command::new("sh")
            .arg("-c")
            .arg("exec \"$0\" \"$@\" 3<&0 4>&1 0</dev/null 1>&2")
            .arg(binary)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-pipe",
                "--window-size=1400,1800",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromium");
        let input = child.stdin.take().unwrap();
        let mut output = BufReader::new(child.stdout.take().unwrap());
        let (tx, messages) = channel();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            while output.read_until(0, &mut buf).is_ok_and(|n| n > 0) {
                buf.pop_if(|b| *b == 0);
                if let Ok(v) = serde_json::from_slice::<Value>(&buf)
                    && tx.send(v).is_err()
                {
                    return;
                }
                buf.clear();
            }
        });
        let mut b = Browser {
            child,
            input,
            messages,
            next_id: 0,
            session: String::new(),
            errors: Vec::new(),
            _profile: profile,
        };
        let targets = b.call("Target.getTargets", json!({}));
        let page = targets["targetInfos"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["type"] == "page")
            .expect("a page target")["targetId"]
            .clone();
        let attached = b.call(
            "Target.attachToTarget",
            json!({"targetId": page, "flatten": true}),
        );
        b.session = attached["sessionId"].as_str().unwrap().to_string();
        for domain in ["Runtime.enable", "Log.enable", "Page.enable"] {
            b.call(domain, json!({}));
        }
        b
    }

    /// Sends a command (to the page session once attached) and waits for its answer,
    /// noting the error events that arrive meanwhile.
    fn call(&mut self, method: &str, params: Value) -> Value {
        match self.try_call(method, params) {
            Ok(v) => v,
            Err(e) => panic!("{method} failed: {e}"),
        }
    }

    fn try_call(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            msg["sessionId"] = json!(self.session);
        }
        self.input.write_all(msg.to_string().as_bytes()).unwrap();
        self.input.write_all(b"\0").unwrap();
        self.input.flush().unwrap();
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = match self.messages.recv_timeout(left) {
                Ok(v) => v,
                Err(RecvTimeoutError::Timeout) => panic!("no answer to {method}"),
                Err(RecvTimeoutError::Disconnected) => panic!("chromium exited during {method}"),
            };
            if v["id"] == id {
                return match v["error"].is_null() {
                    true => Ok(v["result"].clone()),
                    false => Err(v["error"].clone()),
                };
            }
            self.note(&v);
        }
    }

    fn note(&mut self, v: &Value) {
        let p = &v["params"];
        let error = match v["method"].as_str() {
            Some("Runtime.exceptionThrown") => Some(p["exceptionDetails"].to_string()),
            Some("Runtime.consoleAPICalled")
                if matches!(p["type"].as_str(), Some("error" | "assert")) =>
            {
                Some(p["args"].to_string())
            }
            Some("Log.entryAdded") if p["entry"]["level"] == "error" => {
                Some(p["entry"].to_string())
            }
            _ => None,
        };
        self.errors.extend(error);
    }

    fn eval(&mut self, expression: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
        );
        assert!(r["exceptionDetails"].is_null(), "{expression}: {r}");
        r["result"]["value"].clone()
    }

    /// Like `eval`, but `None` while a navigation has no document to evaluate in yet.
    fn try_eval(&mut self, expression: &str) -> Option<Value> {
        let r = self
            .try_call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true}),
            )
            .ok()?;
        r["exceptionDetails"]
            .is_null()
            .then(|| r["result"]["value"].clone())
    }

    fn open(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url}));
    }

    /// Evaluates `expression` every 100 ms until it is true.
    fn wait_for(&mut self, what: &str, expression: &str) {
        let deadline = Instant::now() + PATIENCE;
        while self.try_eval(expression) != Some(json!(true)) {
            assert!(
                Instant::now() < deadline,
                "the page never showed {what}: {:?}",
                self.try_eval("document.body.innerText.slice(0, 2000)")
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn count(&mut self, selector: &str) -> u64 {
        self.eval(&format!("document.querySelectorAll({selector:?}).length"))
            .as_u64()
            .unwrap()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A database file deleted or replaced under a running dashboard: the open handle would go on
/// reading the old file, so every read says the file is gone instead of showing its data,
/// until a database is at the path again, which the dashboard then reads.
#[test]
fn a_dashboard_whose_database_file_is_deleted_says_so_then_reads_the_next() {
    let sb = Sandbox::new();
    let file = experiment(&sb, "moved", 2, 0.0, None);
    let out = sb.run(&["run", &file]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let d = Dashboard::start(&sb);
    assert_eq!(d.json("/api/experiments")[0]["name"], "moved");
    let db = sb.path().join("vernier.db");
    std::fs::rename(&db, sb.path().join("kept.db")).unwrap();
    for path in ["/api/experiments", "/api/experiments/moved"] {
        let (status, body) = d.get(path);
        assert_eq!(status, 500, "{path}: {body}");
        assert!(
            body.contains(&format!(
                "database `{}` was deleted after it was opened",
                db.display()
            )) && body.contains(&format!(
                "hint: a database put at {} is read from then on, without a restart",
                db.display()
            )),
            "{path}: {body}"
        );
    }
    // Another file at the path is the one read from then on: here an empty file, which the
    // dashboard reads nothing from and leaves as it is.
    std::fs::write(&db, b"").unwrap();
    let (status, body) = d.get("/api/experiments/moved");
    assert_eq!(status, 500, "{body}");
    assert!(
        body.contains("holds no vernier experiments: it is empty"),
        "{body}"
    );
    assert_eq!(
        std::fs::metadata(&db).unwrap().len(),
        0,
        "the dashboard wrote to it"
    );
    // A restored copy.
    std::fs::remove_file(&db).unwrap();
    std::fs::copy(sb.path().join("kept.db"), &db).unwrap();
    assert_eq!(d.json("/api/experiments")[0]["name"], "moved");
    assert_eq!(
        d.json("/api/experiments/moved")["trials"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn dashboard_api_answers_and_guards_loopback() {
    let sb = Sandbox::new();
    let file = experiment(&sb, "api", 4, 0.0, None);
    let out = sb.run(&["run", &file, "--seed", "7"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let d = Dashboard::start(&sb);
    let list = d.json("/api/experiments");
    assert_eq!(list[0]["name"], "api");
    assert_eq!(list[0]["done"], 4);
    assert_eq!(list[0]["counts"]["Succeeded"], 4);
    let exp = d.json("/api/experiments/api");
    assert_eq!(exp["trials"].as_array().unwrap().len(), 4);
    let shares: f64 = exp["importance"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["share"].as_f64())
        .sum();
    assert!(shares == 0.0 || (shares - 1.0).abs() < 1e-9, "{shares}");
    assert_eq!(exp["curves"]["trials"].as_array().unwrap().len(), 4);
    let best = exp["summary"]["best"]["trial"].as_str().unwrap();
    let trial = d.json(&format!("/api/experiments/api/trials/{best}"));
    assert_eq!(trial["best"], true);
    let metrics: Vec<&str> = trial["curves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["metric"].as_str().unwrap())
        .collect();
    assert_eq!(metrics, ["loss", "accuracy"]);
    assert!(
        trial["log"]["lines"].as_array().unwrap().len() >= 4,
        "{trial}"
    );
    let (status, body) = d.get("/api/experiments/nope");
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("nope"), "{body}");
    // Its hint names a command that reaches the dashboard's database.
    assert!(body.contains("`vernier list --db "), "{body}");
    let (status, _) = d.get("/api/experiments/api/trials/nope");
    assert_eq!(status, 404);
    // A pasted page address with a trailing slash is the page.
    let (status, body) = d.get("/experiments/api/");
    assert_eq!(status, 200, "{body}");
    let (status, _) = d.get_as("/api/experiments", "rebound.example:80");
    assert_eq!(status, 403);
    // A finished experiment's stream says so and ends.
    let (status, body) = d.get("/api/experiments/api/events");
    assert_eq!(status, 200);
    assert!(body.contains("event: end"), "{body}");
}

#[test]
fn dashboard_pages_load_cleanly_and_a_running_experiment_updates_in_place() {
    let sb = Sandbox::new();
    let file = experiment(&sb, "done", 6, 0.0, None);
    let out = sb.run(&["run", &file, "--seed", "3"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let Some(binary) =
        chromium("dashboard_pages_load_cleanly_and_a_running_experiment_updates_in_place")
    else {
        return;
    };
    let gate = sb.path().join("live-trials-may-go");
    let live_file = experiment(&sb, "live", 6, 0.2, Some(&gate));
    let mut run = sb
        .cmd(&["run", &live_file, "--seed", "4"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let d = Dashboard::start(&sb);
    let mut b = Browser::launch(&binary);
    let base = format!("http://{}", d.addr);

    b.open(&format!("{base}/"));
    b.wait_for(
        "both experiments",
        "document.querySelectorAll('tr.experiment').length === 2",
    );

    b.open(&format!("{base}/experiments/done"));
    b.wait_for(
        "the trial table",
        "document.querySelectorAll('tr.trial').length === 6",
    );
    assert_eq!(b.count("#plot-history circle.point"), 6);
    assert_eq!(b.count("#plot-history .best-so-far"), 1);
    assert_eq!(b.count("#plot-parallel .trace"), 6);
    assert_eq!(b.count("#plot-curves .curve"), 6);
    assert_eq!(b.count("#plot-timeline .span"), 6);
    assert_eq!(b.count("#plot-slice-x circle.point"), 6);
    assert_eq!(b.count("#plot-importance .bar"), 1);
    assert_eq!(b.count("tr.trial.best"), 1);
    // Sorting by a column header (#, the creation number) reorders the table in place.
    b.eval("[...document.querySelectorAll('#trials th')].find(t => t.textContent.startsWith('#')).click()");
    b.wait_for(
        "the table sorted by #",
        "document.querySelector('tr.trial td:nth-child(2)').textContent === '1'",
    );

    // The best trial's page, reached by clicking its point.
    b.eval("document.querySelector('#plot-history circle[r=\"5\"]').dispatchEvent(new MouseEvent('click', {bubbles: true}))");
    b.wait_for("the trial page", "!!document.querySelector('#log pre')");
    assert!(
        b.eval("document.querySelector('h1').textContent")
            .as_str()
            .unwrap()
            .contains("(best trial)")
    );
    assert_eq!(b.count("svg[id^='plot-metric-']"), 2);

    // The running experiment: wait until it has a trial, open its page, mark the document,
    // and wait for more trials to appear; the mark proves there was no reload.
    let deadline = Instant::now() + PATIENCE;
    while d.json("/api/experiments/live")["trials"]
        .as_array()
        .unwrap()
        .is_empty()
    {
        assert!(
            Instant::now() < deadline,
            "the live experiment never started a trial"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    b.open(&format!("{base}/experiments/live"));
    b.wait_for(
        "the first render",
        "document.body.dataset.firstTrials !== undefined",
    );
    b.eval("window.vernierTestMark = 'same document'");
    let first = b
        .eval("Number(document.body.dataset.firstTrials)")
        .as_u64()
        .unwrap();
    assert_eq!(
        first, 1,
        "only the gated first trial exists before the gate opens"
    );
    std::fs::write(&gate, "").unwrap();
    b.wait_for(
        "a trial added without reload",
        &format!("document.querySelectorAll('tr.trial').length > {first}"),
    );
    assert_eq!(b.eval("window.vernierTestMark"), json!("same document"));
    assert_eq!(
        b.eval("performance.getEntriesByType('navigation').length"),
        json!(1)
    );
    // And it follows the experiment to its end, then stops listening.
    b.wait_for(
        "the finished experiment",
        "document.getElementById('live').textContent === 'finished'",
    );
    assert_eq!(b.count("tr.trial"), 6);
    assert_eq!(b.eval("window.vernierTestMark"), json!("same document"));
    assert!(run.wait().unwrap().success());

    let errors = std::mem::take(&mut b.errors);
    assert!(errors.is_empty(), "console errors: {errors:#?}");
}

/// An open experiment page of a Running experiment with a log-scaled parameter and no value
/// yet draws its plots (an empty log axis once looped until the browser ran out of memory);
/// when the database file goes it says so, and it comes back when the file is put back.
#[test]
fn an_open_page_survives_no_values_yet_and_a_database_that_goes_and_comes_back() {
    let Some(binary) =
        chromium("an_open_page_survives_no_values_yet_and_a_database_that_goes_and_comes_back")
    else {
        return;
    };
    let sb = Sandbox::new();
    let gate = sb.path().join("go");
    let file = experiment(&sb, "logx", 2, 0.0, Some(&gate));
    let yaml = std::fs::read_to_string(&file).unwrap().replace(
        "min: \"0\"\n        max: \"1\"",
        "min: \"0.001\"\n        max: \"1\"\n        distribution: logUniform",
    );
    assert!(yaml.contains("logUniform"));
    std::fs::write(&file, yaml).unwrap();
    // Without a driver, whose exit would tidy the database's WAL files away by their names
    // while the test moves them; the page stays live for an experiment left Running.
    let d = killed_after_its_first_trial(&sb, "logx", &file);
    let mut b = Browser::launch(&binary);
    b.open(&format!("http://{}/experiments/logx", d.addr));
    b.wait_for(
        "the trial table",
        "document.querySelectorAll('tr.trial').length === 1",
    );
    assert_eq!(b.count("#error"), 0);
    assert_eq!(b.count("#plot-slice-x"), 1);

    // The database with its WAL files; the side files move first and come back first, as a
    // dashboard that finds the database gone removes the side files it holds at the path.
    let files = ["-wal", "-shm", ""].map(|tail| {
        let (at, kept) = (format!("vernier.db{tail}"), format!("kept.db{tail}"));
        (sb.path().join(at), sb.path().join(kept))
    });
    for (at, kept) in &files {
        std::fs::rename(at, kept).unwrap();
    }
    b.wait_for(
        "the page saying the database went",
        "(document.getElementById('error') || {}).textContent?.includes('was deleted after it was opened')",
    );
    assert_eq!(b.count("#error p"), 2, "the hint is a paragraph of its own");
    for (at, kept) in &files {
        std::fs::rename(kept, at).unwrap();
    }
    b.wait_for(
        "the page back",
        "document.querySelectorAll('tr.trial').length >= 1",
    );
    assert_eq!(b.count("#error"), 0);
    std::fs::write(&gate, "").unwrap();
    // The reads made while the file was away were answered 500, as they should be; nothing else.
    let errors = std::mem::take(&mut b.errors);
    assert!(
        errors
            .iter()
            .all(|e| e.contains("status of 500") && e.contains("/api/experiments/logx")),
        "console errors: {errors:#?}"
    );
}

/// Runs experiment `name` of `file`, starts a dashboard on its database, waits until the
/// experiment has a trial and kills the run with `kill -9`: the experiment stays Running with
/// nothing driving it.
fn killed_after_its_first_trial(sb: &Sandbox, name: &str, file: &str) -> Dashboard {
    let mut run = sb
        .cmd(&["run", file, "--seed", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    while !sb.path().join("vernier.db").exists() {
        assert!(Instant::now() < deadline, "the run never made its database");
        std::thread::sleep(Duration::from_millis(50));
    }
    let d = Dashboard::start(sb);
    // The file exists a moment before the run records the experiment in it (404 until then).
    loop {
        let (status, body) = d.get(&format!("/api/experiments/{name}"));
        let started = status == 200
            && serde_json::from_str::<Value>(&body).unwrap()["trials"]
                .as_array()
                .is_some_and(|t| !t.is_empty());
        if started {
            break;
        }
        assert!(status == 200 || status == 404, "{status}: {body}");
        assert!(Instant::now() < deadline, "the run never started a trial");
        std::thread::sleep(Duration::from_millis(100));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(run.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    run.wait().unwrap();
    d
}

/// A run killed with `kill -9` leaves its experiment Running with nothing driving it: the
/// pages say so and how to continue, instead of showing it live forever.
#[test]
fn an_experiment_whose_driver_was_killed_says_so() {
    let sb = Sandbox::new();
    let gate = sb.path().join("never-yet");
    let file = experiment(&sb, "orphaned", 3, 0.0, Some(&gate));
    let d = killed_after_its_first_trial(&sb, "orphaned", &file);
    let summary = d.json("/api/experiments/orphaned")["summary"].clone();
    let note = summary["unattended"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // The gated trial is released either way, so nothing outlives the test.
    std::fs::write(&gate, "").unwrap();
    assert!(
        note.contains("no longer runs") && note.contains("vernier resume orphaned"),
        "{summary:#}"
    );
    let Some(binary) = chromium("an_experiment_whose_driver_was_killed_says_so") else {
        return;
    };
    let mut b = Browser::launch(&binary);
    b.open(&format!("http://{}/experiments/orphaned", d.addr));
    b.wait_for(
        "the no-driver panel",
        "!!document.getElementById('unattended')",
    );
    assert_eq!(
        b.eval("document.getElementById('live').textContent"),
        json!("no driver")
    );
    let errors = std::mem::take(&mut b.errors);
    assert!(errors.is_empty(), "console errors: {errors:#?}");
}
