//! Interoperability with code no one here wrote: the api.v1.beta1 stubs and `report_metrics`
//! shipped in the PyPI package `kubeflow-katib`, driven with grpcio against `vernier serve`,
//! inside trials of `vernier run`, and as an external suggestion plugin. Where the package (or
//! grpcio) is missing these tests print a `SKIPPED` line, or fail under
//! `VERNIER_TEST_REQUIRE=1` (CI installs it).

use crate::harness::{Sandbox, python_experiment, text, trials_in};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

pub(crate) fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("e2e")
        .join("python")
        .join(name)
}

/// A child process killed when the test ends, pass or fail.
pub(crate) struct Guard(pub(crate) Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `vernier serve` on a free loopback port and returns it with its address.
pub(crate) fn serve(sb: &Sandbox) -> (Guard, String) {
    let mut child = sb
        .cmd(&["serve", "--listen", "127.0.0.1:0", "--create-db"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start vernier serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read the serve banner");
    let addr = line
        .split(" on ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    (Guard(child), addr)
}

/// Whether python3 can import the Katib SDK's stubs and grpcio; else a `SKIPPED` line.
pub(crate) fn katib_sdk(test: &str) -> bool {
    let found = Command::new("python3")
        .args(["-c", "import grpc, kubeflow.katib.katib_api_pb2_grpc"])
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .is_ok_and(|o| o.status.success());
    crate::harness::available_or_skip(
        found,
        test,
        "python3 cannot import the kubeflow-katib package and grpcio",
        "python3 -m pip install --user 'kubeflow-katib==0.19.0' grpcio",
    )
}

fn python(args: &[&str]) -> std::process::Output {
    Command::new("python3")
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run python3")
}

#[test]
fn katib_stubs_call_every_service_of_vernier_serve() {
    if !katib_sdk("katib_stubs_call_every_service_of_vernier_serve") {
        return;
    }
    let sb = Sandbox::new();
    let (_server, addr) = serve(&sb);
    let algorithms = "random,grid,sobol,tpe,multivariate-tpe,bayesianoptimization,cmaes,hyperband,bohb,pbt,darts,enas";
    let checks = script("katib_client_checks.py");
    let out = python(&[checks.to_str().unwrap(), &addr, algorithms]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for algorithm in algorithms.split(',') {
        let wanted = match algorithm {
            "darts" => "algorithm-settings, num-layers, search-space".to_string(),
            "enas" => "architecture, nn_config".to_string(),
            _ => "2 then 1".to_string(),
        };
        assert!(
            stdout.contains(&format!("GetSuggestions {algorithm}: ok ({wanted})")),
            "{stdout}"
        );
    }
    assert!(stdout.contains("DBManager report/get: ok"), "{stdout}");
    assert!(stdout.contains("health: SERVING"), "{stdout}");
    assert_eq!(stdout.matches("INVALID_ARGUMENT").count(), 5, "{stdout}");
}

#[test]
fn katib_sdk_report_metrics_in_a_local_trial_lands_in_the_store() {
    if !katib_sdk("katib_sdk_report_metrics_in_a_local_trial_lands_in_the_store") {
        return;
    }
    let sb = Sandbox::new();
    let trial = script("report_metrics_trial.py");
    let python_dir = trial.parent().unwrap().display().to_string();
    let yaml = python_experiment(
        "pushed",
        &format!(
            "import sys, runpy; sys.path.insert(0, {python_dir:?}); sys.argv = ['t', sys.argv[1]]; runpy.run_path({:?}, run_name='__main__')",
            trial.display().to_string()
        ),
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n    additionalMetricNames: [epoch]\n  metricsCollectorSpec:\n    collector:\n      kind: Push\n  parallelTrialCount: 2\n  maxTrialCount: 3",
    );
    let file = sb.write("pushed.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap(), "--seed", "4"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("pushed");
    let succeeded = trials_in(&r, "Succeeded");
    assert_eq!(succeeded.len(), 3, "{r:#}");
    for t in &succeeded {
        let x: f64 = t["spec"]["parameterAssignments"][0]["value"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let metrics = t["status"]["observation"]["metrics"].as_array().unwrap();
        let loss = metrics
            .iter()
            .find(|m| m["name"] == "loss")
            .expect("loss pushed");
        let min: f64 = loss["min"].as_str().unwrap().parse().unwrap();
        // The last of three reports is (1 - x) + 0 and the smallest.
        assert!((min - (1.0 - x)).abs() < 1e-9, "x {x}, min {min}");
        let epoch = metrics
            .iter()
            .find(|m| m["name"] == "epoch")
            .expect("epoch pushed");
        assert_eq!(epoch["latest"], "2");
    }
}

/// Starts `suggestion_plugin.py` with `args` after its log path; returns it with its port.
pub(crate) fn start_plugin(log: &std::path::Path, args: &[&str]) -> (Guard, String) {
    let mut child = Command::new("python3")
        .arg(script("suggestion_plugin.py"))
        .arg(log)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the plugin");
    let mut port = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut port)
        .unwrap();
    let mut plugin = Guard(child);
    if port.trim().is_empty() {
        let mut err = String::new();
        use std::io::Read;
        plugin
            .0
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        panic!("the plugin did not start:\n{err}");
    }
    (plugin, port.trim().to_string())
}

#[test]
fn a_python_suggestion_plugin_drives_vernier_run_to_the_end() {
    if !katib_sdk("a_python_suggestion_plugin_drives_vernier_run_to_the_end") {
        return;
    }
    let sb = Sandbox::new();
    let log = sb.path().join("plugin.log");
    let (_plugin, port) = start_plugin(&log, &[]);
    let yaml = python_experiment(
        "plugged",
        "import sys; print('score=' + sys.argv[1])",
        "  objective:\n    type: maximize\n    objectiveMetricName: score\n  parallelTrialCount: 2\n  maxTrialCount: 5",
    );
    let file = sb.write("plugged.yaml", &yaml);
    let flag = format!("random=127.0.0.1:{port}");
    let out = sb.run(&["run", file.to_str().unwrap(), "--suggestion-plugin", &flag]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("suggestions come from suggestion plugin random at 127.0.0.1:"),
        "{}",
        text(&out)
    );
    let r = sb.report("plugged");
    let mut xs: Vec<String> = trials_in(&r, "Succeeded")
        .iter()
        .map(|t| {
            t["spec"]["parameterAssignments"][0]["value"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    xs.sort();
    assert_eq!(xs, ["0.1", "0.2", "0.3", "0.4", "0.5"], "{r:#}");
    let requests = std::fs::read_to_string(&log).unwrap();
    // Katib's semantics: the first request has no trials and asks for the parallel count.
    assert!(
        requests.starts_with("plugged trials=0 current=2 total=2 names=x\n"),
        "{requests}"
    );
    assert!(requests.lines().count() >= 3, "{requests}");
}

/// An algorithm Vernier does not have, served by a plugin, as a katib-config entry would serve
/// it on a cluster: accepted, run, and reported.
#[test]
fn a_plugin_serves_an_algorithm_vernier_does_not_have() {
    if !katib_sdk("a_plugin_serves_an_algorithm_vernier_does_not_have") {
        return;
    }
    let sb = Sandbox::new();
    let log = sb.path().join("plugin.log");
    let (_plugin, port) = start_plugin(&log, &[]);
    let yaml = python_experiment(
        "ladder",
        "import sys; print('score=' + sys.argv[1])",
        "  objective:\n    type: maximize\n    objectiveMetricName: score\n  parallelTrialCount: 1\n  maxTrialCount: 2",
    )
    .replace("algorithmName: random", "algorithmName: my-ladder");
    let file = sb.write("ladder.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("\"my-ladder\""), "{}", text(&out));
    let flag = format!("my-ladder=127.0.0.1:{port}");
    // `validate` takes the plugin as `run` does: runnable locally, and on a cluster whose
    // operator is given a plugin serving the algorithm.
    let out = sb.run(&["validate", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = sb.run(&[
        "validate",
        file.to_str().unwrap(),
        "--suggestion-plugin",
        &flag,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("local: runnable")
            && text(&out).contains(
                "cluster: valid for `vernier operator --suggestion-plugin my-ladder=HOST:PORT` (a suggestion service serving its algorithm"
            ),
        "{}",
        text(&out)
    );
    let out = sb.run(&["run", file.to_str().unwrap(), "--suggestion-plugin", &flag]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(trials_in(&sb.report("ladder"), "Succeeded").len(), 2);
    // `resume` asks the plugin the experiment was run with, without the flag again.
    let out = sb.run(&["resume", "ladder", "--max-trial-count", "3"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains(&format!(
            "the experiment was run with the suggestion plugin at 127.0.0.1:{port}, asked again"
        )),
        "{}",
        text(&out)
    );
    assert_eq!(trials_in(&sb.report("ladder"), "Succeeded").len(), 3);
}

/// Katib's controller refuses a reply that does not hold the assignments it asked for and asks
/// again; an empty reply is no end of the search.
#[test]
fn a_plugin_reply_short_of_the_request_is_asked_again() {
    if !katib_sdk("a_plugin_reply_short_of_the_request_is_asked_again") {
        return;
    }
    let sb = Sandbox::new();
    let log = sb.path().join("plugin.log");
    let (_plugin, port) = start_plugin(&log, &["short-once"]);
    let yaml = python_experiment(
        "hiccup",
        "import sys; print('score=' + sys.argv[1])",
        "  objective:\n    type: maximize\n    objectiveMetricName: score\n  parallelTrialCount: 2\n  maxTrialCount: 3",
    );
    let file = sb.write("hiccup.yaml", &yaml);
    let flag = format!("random=127.0.0.1:{port}");
    let out = sb.run(&["run", file.to_str().unwrap(), "--suggestion-plugin", &flag]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("its reply holds 0 assignment(s) where 2 were asked for"),
        "{}",
        text(&out)
    );
    assert_eq!(trials_in(&sb.report("hiccup"), "Succeeded").len(), 3);
}

/// A plugin that refuses the algorithm settings in ValidateAlgorithmSettings stops `vernier run`
/// before anything is recorded or asked for, and its own words reach the user, as Katib's
/// webhook passes them on.
#[test]
fn a_plugin_that_refuses_the_settings_stops_the_run_with_its_reason() {
    if !katib_sdk("a_plugin_that_refuses_the_settings_stops_the_run_with_its_reason") {
        return;
    }
    let sb = Sandbox::new();
    let log = sb.path().join("plugin.log");
    let (_plugin, port) = start_plugin(&log, &[]);
    let yaml = python_experiment(
        "unsettled",
        "import sys; print('score=' + sys.argv[1])",
        "  objective:\n    type: maximize\n    objectiveMetricName: score\n  parallelTrialCount: 1\n  maxTrialCount: 2",
    )
    .replace(
        "    algorithmName: random\n",
        "    algorithmName: random\n    algorithmSettings:\n      - name: step_size\n        value: \"2\"\n",
    );
    let file = sb.write("unsettled.yaml", &yaml);
    let flag = format!("random=127.0.0.1:{port}");
    // `validate` asks the plugin too, and says what `run` says.
    for command in ["validate", "run"] {
        let out = sb.run(&[
            command,
            file.to_str().unwrap(),
            "--suggestion-plugin",
            &flag,
        ]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!(
                "spec.algorithm: checking the settings with suggestion plugin random at 127.0.0.1:{port} failed:"
            )) && err.contains("unknown setting step_size for algorithm random"),
            "{command}: {}",
            text(&out)
        );
    }
    // Refused before the experiment was recorded or a suggestion asked for.
    if std::path::Path::new(&sb.db()).exists() {
        let listed = sb.run(&["list"]);
        assert_eq!(listed.status.code(), Some(0), "{}", text(&listed));
        assert!(
            !String::from_utf8_lossy(&listed.stdout).contains("unsettled"),
            "{}",
            text(&listed)
        );
    }
    assert!(
        std::fs::read_to_string(&log).unwrap_or_default().is_empty(),
        "no GetSuggestions call is expected"
    );
}

/// A reply the run must refuse ends it with that error, and the trial still running is stopped
/// and recorded Killed, the experiment Interrupted, as after Ctrl-C: nothing is left Running.
#[test]
fn a_refused_plugin_reply_stops_and_records_the_running_trials() {
    if !katib_sdk("a_refused_plugin_reply_stops_and_records_the_running_trials") {
        return;
    }
    let sb = Sandbox::new();
    let log = sb.path().join("plugin.log");
    let (_plugin, port) = start_plugin(&log, &["bad-later"]);
    let yaml = python_experiment(
        "refused",
        "import sys, time\nx = float(sys.argv[1])\ntime.sleep(0.2 if x < 0.15 else 30)\nprint('score=' + sys.argv[1])",
        "  objective:\n    type: maximize\n    objectiveMetricName: score\n  parallelTrialCount: 2\n  maxTrialCount: 4",
    );
    let file = sb.write("refused.yaml", &yaml);
    let flag = format!("random=127.0.0.1:{port}");
    let out = sb.run(&["run", file.to_str().unwrap(), "--suggestion-plugin", &flag]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("\"bogus\""), "{}", text(&out));
    let r = sb.report("refused");
    assert_eq!(trials_in(&r, "Succeeded").len(), 1, "{r:#}");
    assert_eq!(trials_in(&r, "Killed").len(), 1, "{r:#}");
    assert_eq!(trials_in(&r, "Running").len(), 0, "{r:#}");
    let message = r["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Running")
        .unwrap()["message"]
        .to_string();
    assert!(message.contains("interrupted by an error"), "{r:#}");
}

#[test]
fn a_plugin_that_is_down_makes_the_experiment_wait_and_say_so() {
    let sb = Sandbox::new();
    // A port nobody listens on: bind, note it, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let yaml = python_experiment(
        "waiting",
        "import sys; print('score=' + sys.argv[1])",
        "  objective:\n    type: maximize\n    objectiveMetricName: score\n  parallelTrialCount: 1\n  maxTrialCount: 2",
    );
    let file = sb.write("waiting.yaml", &yaml);
    let flag = format!("random=127.0.0.1:{port}");
    let mut child = sb
        .cmd(&["run", file.to_str().unwrap(), "--suggestion-plugin", &flag])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    // Progress lines, warnings included, go to stdout when it is not a terminal.
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    let mut line = String::new();
    // Read until the driver reports the wait (the warning comes within the first backoff).
    while stdout.read_line(&mut line).unwrap() > 0 {
        seen.push_str(&line);
        if line.contains("is unavailable") {
            break;
        }
        line.clear();
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert!(
        seen.contains(&format!(
            "suggestion plugin random at 127.0.0.1:{port} is unavailable"
        )),
        "{seen}"
    );
    assert!(seen.contains("the experiment waits and retries"), "{seen}");
    assert_eq!(
        status.code(),
        Some(130),
        "interrupted while waiting; {seen}"
    );
}

/// Katib's `SetTrialStatus`, sent to `vernier serve` on the run's database (as a custom
/// collector applying its own rule would), stops the running trial of `vernier run` and ends it
/// EarlyStopped, instead of being overwritten when the trial finishes.
#[test]
fn set_trial_status_stops_a_trial_of_vernier_run() {
    if !katib_sdk("set_trial_status_stops_a_trial_of_vernier_run") {
        return;
    }
    let sb = Sandbox::new();
    let (_server, addr) = serve(&sb);
    let trial = format!(
        "import os, time, grpc\nfrom kubeflow.katib import katib_api_pb2 as pb, katib_api_pb2_grpc as pbg\nopen('pid', 'w').write(str(os.getpid()))\nprint('loss=0.5', flush=True)\nstub = pbg.EarlyStoppingStub(grpc.insecure_channel('{addr}'))\nstub.SetTrialStatus(pb.SetTrialStatusRequest(trial_name=os.environ['KATIB_TRIAL_NAME']), timeout=20)\ntime.sleep(30)"
    );
    let yaml = python_experiment(
        "told",
        &trial,
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 1\n  maxTrialCount: 1",
    );
    let file = sb.write("told.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let pid: i32 = std::fs::read_to_string(sb.path().join("pid"))
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        !crate::harness::pid_alive(pid),
        "trial process {pid} survived"
    );
    let r = sb.report("told");
    assert_eq!(trials_in(&r, "EarlyStopped").len(), 1, "{r:#}");
}
