//! Metrics collectors other than stdout, locally: the File collector in TEXT and JSON formats
//! and the TensorFlowEvent collector with Katib's absolute default paths mapped into the
//! trial's own directory, the PrometheusMetric scraper, and what Push and Custom do locally.

use crate::harness::{Sandbox, last_condition, python_experiment, sqlite, text, trials_in};
use std::path::Path;

const WRITE_TEXT: &str = "import os, sys, time\npath = sys.argv[2].split('=', 1)[1]\nassert path == os.environ['VERNIER_METRICS_FILE'], path\nf = open(path, 'w')\nfor i in range(3):\n    f.write(f'epoch {i}: loss=0.{3 - i}\\n'); f.flush(); time.sleep(0.15)\nf.write('loss=0.05')\nprint('loss=99')";

#[test]
fn file_collector_reads_text_lines_from_the_mapped_katib_path() {
    let sb = Sandbox::new();
    let yaml = python_experiment(
        "filetext",
        WRITE_TEXT,
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 2\n  maxTrialCount: 2\n  metricsCollectorSpec:\n    collector:\n      kind: File\n    source:\n      fileSystemPath:\n        path: /var/log/katib/metrics.log\n        kind: File",
    )
    .replace(
        "- \"${trialParameters.x}\"",
        "- \"${trialParameters.x}\"\n                  - \"--metrics=/var/log/katib/metrics.log\"",
    );
    let file = sb.write("filetext.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("filetext");
    for t in r["trials"].as_array().unwrap() {
        let m = &t["status"]["observation"]["metrics"][0];
        // Stdout is not read; the unterminated last line of the file is.
        assert_eq!(m["min"], "0.05", "{m}");
        assert_eq!(m["max"], "0.3", "{m}");
        assert_eq!(m["latest"], "0.05", "{m}");
        let name = t["metadata"]["name"].as_str().unwrap();
        let local = sb
            .path()
            .join("vernier-logs/filetext")
            .join(name)
            .join("var/log/katib/metrics.log");
        assert!(local.exists(), "{} missing", local.display());
    }
}

/// A deleted experiment's trials left their metrics files; the same name and seed run again
/// gives its trials the same names, and they must not read those files as their own.
#[test]
fn a_trial_never_reads_a_metrics_file_left_by_a_deleted_namesake() {
    let sb = Sandbox::new();
    let extra = "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 1\n  maxTrialCount: 1\n  metricsCollectorSpec:\n    collector:\n      kind: File\n    source:\n      fileSystemPath:\n        path: /var/log/katib/metrics.log\n        kind: File";
    let writes = python_experiment(
        "namesake",
        "import os\nopen(os.environ['VERNIER_METRICS_FILE'], 'w').write('loss=0.5\\n')",
        extra,
    );
    let silent = python_experiment("namesake", "pass", extra);
    let first = sb.write("writes.yaml", &writes);
    let out = sb.run(&["run", first.to_str().unwrap(), "--seed", "7"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = sb.run(&["delete", "namesake"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let second = sb.write("silent.yaml", &silent);
    let out = sb.run(&["run", second.to_str().unwrap(), "--seed", "7"]);
    let r = sb.report("namesake");
    assert_eq!(
        trials_in(&r, "MetricsUnavailable").len(),
        1,
        "{}\n{r:#}",
        text(&out)
    );
}

#[test]
fn file_collector_reads_json_lines_and_skips_malformed_ones() {
    let sb = Sandbox::new();
    let script = "import json, os\nwith open(os.environ['VERNIER_METRICS_FILE'], 'w') as f:\n    f.write(json.dumps({'accuracy': '0.5', 'timestamp': 1638422847.5}) + '\\n')\n    f.write('not json at all\\n')\n    f.write(json.dumps({'accuracy': 0.75}) + '\\n')";
    let yaml = python_experiment(
        "filejson",
        script,
        "  objective:\n    type: maximize\n    objectiveMetricName: accuracy\n  parallelTrialCount: 1\n  maxTrialCount: 1\n  metricsCollectorSpec:\n    collector:\n      kind: File\n    source:\n      fileSystemPath:\n        path: /var/log/katib/metrics.json\n        kind: File\n        format: JSON",
    );
    let file = sb.write("filejson.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("not json at all"),
        "the malformed line is reported: {stdout}"
    );
    let r = sb.report("filejson");
    let m = &r["trials"][0]["status"]["observation"]["metrics"][0];
    assert_eq!(m["max"], "0.75");
    assert_eq!(m["min"], "0.5");
}

/// JSON lines follow the TEXT rule: a `"nan"`, an infinity or an empty string is skipped with a
/// warning, and a trial that wrote nothing else for its objective ends MetricsUnavailable.
#[test]
fn file_collector_rejects_nan_and_empty_json_values() {
    let sb = Sandbox::new();
    let script = "import json, os\nwith open(os.environ['VERNIER_METRICS_FILE'], 'w') as f:\n    for v in ('nan', '-Infinity', ''):\n        f.write(json.dumps({'accuracy': v}) + '\\n')";
    let yaml = python_experiment(
        "jsonnan",
        script,
        "  objective:\n    type: maximize\n    objectiveMetricName: accuracy\n  parallelTrialCount: 1\n  maxTrialCount: 1\n  metricsCollectorSpec:\n    collector:\n      kind: File\n    source:\n      fileSystemPath:\n        path: /var/log/katib/metrics.json\n        kind: File\n        format: JSON",
    );
    let file = sb.write("jsonnan.yaml", &yaml);
    sb.run(&["run", file.to_str().unwrap()]);
    let r = sb.report("jsonnan");
    assert_eq!(r["status"]["trialMetricsUnavailable"], 1, "{r:#}");
    let t = &r["trials"][0];
    let m = &t["status"]["observation"]["metrics"][0];
    assert_eq!(m["latest"], "unavailable");
    let msg = last_condition(t)["message"].as_str().unwrap();
    assert!(msg.contains("never reported a usable value"), "{msg}");
}

/// A metric at the end of a line longer than the collector's 1 MiB cap is not read, and the
/// run says so instead of dropping it silently; the next line's value is recorded.
#[test]
fn a_metric_on_a_line_cut_for_length_is_warned_about() {
    let sb = Sandbox::new();
    let yaml = python_experiment(
        "longline",
        "import sys\nsys.stdout.write('x' * 2000000 + ' loss=0.3\\n')\nprint('loss=0.5')",
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 1\n  maxTrialCount: 1",
    );
    let file = sb.write("longline.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("a line of 2000010 bytes was cut at 1 MiB"),
        "{}",
        text(&out)
    );
    let r = sb.report("longline");
    let m = &r["trials"][0]["status"]["observation"]["metrics"][0];
    assert_eq!(m["latest"], "0.5", "{r:#}");
}

/// An example experiment from `examples/`, with its trainer paths made absolute so it runs
/// from the sandbox.
fn example(name: &str) -> String {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let yaml = std::fs::read_to_string(examples.join(name)).unwrap();
    yaml.replace(
        "\"trainers/",
        &format!("\"{}/", examples.join("trainers").display()),
    )
}

/// The observation of `metric` in a reported trial.
fn metric<'a>(trial: &'a serde_json::Value, metric: &str) -> &'a serde_json::Value {
    trial["status"]["observation"]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == metric)
        .unwrap_or_else(|| panic!("no {metric} in {trial}"))
}

fn number(v: &serde_json::Value) -> f64 {
    v.as_str().unwrap().parse().unwrap()
}

#[test]
fn tfevent_collector_runs_the_example_with_stdlib_event_files() {
    let sb = Sandbox::new();
    let yaml =
        example("tfevent-metrics-collector.yaml").replace("maxTrialCount: 6", "maxTrialCount: 2");
    let file = sb.write("tfevent.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("tfevent-collector");
    let ok = trials_in(&r, "Succeeded");
    assert_eq!(ok.len(), 2, "{r}");
    for t in &ok {
        let acc = metric(t, "test/accuracy");
        let loss = metric(t, "train/loss");
        // The test split scores below the train split by construction, and accuracy rises
        // while loss falls over the 5 epochs, so latest is the max for accuracy and the min
        // for loss: the right directory's tag was read, in step order.
        assert_eq!(acc["latest"], acc["max"], "{acc}");
        assert_eq!(loss["latest"], loss["min"], "{loss}");
        assert!(
            number(&acc["max"]) < 1.0 / (1.0 + number(&loss["min"])),
            "{acc} {loss}"
        );
        let name = t["metadata"]["name"].as_str().unwrap();
        let dir = sb
            .path()
            .join("vernier-logs/tfevent-collector")
            .join(name)
            .join("var/log/katib/tfevent/train");
        assert!(dir.is_dir(), "{} missing", dir.display());
    }
}

#[test]
fn tfevent_collector_skips_corrupt_records_and_reads_the_rest() {
    let sb = Sandbox::new();
    let trainer = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/trainers");
    // Writes one good record, one with a broken payload checksum, then another good one.
    let script = format!(
        "import os, sys, time\nsys.path.insert(0, {trainer:?})\nimport tfevent_trainer as t\nd = os.environ['VERNIER_METRICS_DIR']\nos.makedirs(d, exist_ok=True)\nf = open(os.path.join(d, 'events.out.tfevents.1.test'), 'wb')\nf.write(t.tfrecord(t.event(1700000000.0, 1, scalars=[('loss', 0.5)])))\nbad = bytearray(t.tfrecord(t.event(1700000001.0, 2, scalars=[('loss', 0.25)])))\nbad[-1] ^= 0xff\nf.write(bad)\nf.write(t.tfrecord(t.event(1700000002.0, 3, scalars=[('loss', 0.75)])))\nf.close()",
        trainer = trainer.display().to_string()
    );
    let yaml = python_experiment(
        "tfcorrupt",
        &script,
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 1\n  maxTrialCount: 1\n  metricsCollectorSpec:\n    collector:\n      kind: TensorFlowEvent",
    );
    let file = sb.write("tfcorrupt.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("1 corrupt event record"), "{stdout}");
    let r = sb.report("tfcorrupt");
    let m = metric(&r["trials"][0], "loss");
    assert_eq!(
        (m["min"].as_str(), m["max"].as_str()),
        (Some("0.5"), Some("0.75")),
        "{m}"
    );
    // Timestamps are the events' wall times, so latest is the last step written.
    assert_eq!(m["latest"], "0.75");
}

/// A port nobody listens on right now (the kernel's choice, released at once).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[test]
fn prometheus_collector_scrapes_the_example_while_it_runs() {
    let sb = Sandbox::new();
    let port = free_port().to_string();
    let yaml = example("prometheus-metrics-collector.yaml")
        .replace("maxTrialCount: 4", "maxTrialCount: 1")
        .replace("maxFailedTrialCount: 2", "maxFailedTrialCount: 1")
        .replace("8080", &port);
    let file = sb.write("prom.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("prometheus-collector");
    let t = &trials_in(&r, "Succeeded")[0];
    let loss = metric(t, "loss");
    let acc = metric(t, "accuracy");
    // Loss falls every epoch and the last value is served for over a second, so the final
    // scrape sees the minimum; several scrapes happened, so min < max.
    assert_eq!(loss["latest"], loss["min"], "{loss}");
    assert!(number(&loss["min"]) < number(&loss["max"]), "{loss}");
    // accuracy only has a labelled sample, which is taken.
    assert_eq!(acc["latest"], acc["max"], "{acc}");
}

/// Serves `loss NaN` on the port in the first argument for two seconds.
const SERVE_NAN: &str = "import http.server, sys, threading, time\nclass H(http.server.BaseHTTPRequestHandler):\n    def do_GET(self):\n        self.send_response(200); self.end_headers(); self.wfile.write(b'loss NaN\\n')\n    def log_message(self, *a): pass\ns = http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H)\nthreading.Thread(target=s.serve_forever, daemon=True).start()\ntime.sleep(2.5)";

#[test]
fn a_scraped_objective_whose_every_value_is_nan_is_called_unusable() {
    let sb = Sandbox::new();
    let port = free_port().to_string();
    let spec = format!(
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 1\n  maxTrialCount: 1\n  metricsCollectorSpec:\n    collector:\n      kind: PrometheusMetric\n    source:\n      httpGet:\n        path: /metrics\n        port: {port}"
    );
    let yaml = python_experiment("prom-nan", SERVE_NAN, &spec).replace(
        "\"${trialParameters.x}\"",
        &format!("\"{port}\"\n                  - \"${{trialParameters.x}}\""),
    );
    let file = sb.write("prom-nan.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    let r = sb.report("prom-nan");
    let t = trials_in(&r, "MetricsUnavailable");
    assert_eq!(t.len(), 1, "{}\n{r:#}", text(&out));
    let message = last_condition(&t[0])["message"].as_str().unwrap();
    assert!(
        message.contains("every value printed for it was unusable"),
        "{message}"
    );
}

#[test]
fn push_collector_reads_nothing_locally_and_ends_metrics_unavailable() {
    let sb = Sandbox::new();
    let yaml = python_experiment(
        "pushed",
        "print('loss=0.5')",
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 1\n  maxTrialCount: 1\n  metricsCollectorSpec:\n    collector:\n      kind: Push",
    );
    let file = sb.write("pushed.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    let r = sb.report("pushed");
    let t = trials_in(&r, "MetricsUnavailable");
    assert_eq!(t.len(), 1, "{}\n{r}", text(&out));
    let m = metric(&t[0], "loss");
    assert_eq!(m["latest"], "unavailable", "{m}");
}

/// A trainer writing three losses to the path in its second argument, the last line
/// unterminated, slowly enough that the collector reads it in more than one pass; it first
/// waits (up to a minute) for the collector to say its imports are done.
const WRITE_LOSSES: &str = "import os, sys, time\npath = sys.argv[2].split('=', 1)[1]\nt = time.time()\nwhile not os.path.exists(path + '.ready') and time.time() - t < 60:\n    time.sleep(0.05)\nf = open(path, 'w')\nfor loss in ['0.3', '0.2']:\n    f.write(f'loss={loss}\\n'); f.flush(); time.sleep(0.3)\nf.write('loss=0.1')";

#[test]
fn custom_collector_runs_beside_the_trial_and_reports_to_the_db_manager() {
    let test = "custom_collector_runs_beside_the_trial_and_reports_to_the_db_manager";
    if !crate::katib_interop::katib_sdk(test) {
        return;
    }
    let sb = Sandbox::new();
    let collector = crate::katib_interop::script("custom_collector.py");
    let collector_spec = format!(
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 2\n  maxTrialCount: 2\n  metricsCollectorSpec:\n    source:\n      fileSystemPath:\n        path: /katib/metrics.log\n        kind: File\n    collector:\n      kind: Custom\n      customCollector:\n        name: my-collector\n        image: registry.example/collector:1\n        command: [python3, {:?}, /katib/metrics.log]",
        collector.display().to_string()
    );
    let yaml = python_experiment("custom", WRITE_LOSSES, &collector_spec).replace(
        "- \"${trialParameters.x}\"",
        "- \"${trialParameters.x}\"\n                  - \"--log=/katib/metrics.log\"",
    );
    let file = sb.write("custom.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("custom");
    let succeeded = trials_in(&r, "Succeeded");
    assert_eq!(succeeded.len(), 2, "{r:#}");
    for t in &succeeded {
        let m = metric(t, "loss");
        // The last, unterminated line is read after SIGTERM, when the trial has ended.
        assert_eq!(m["min"], "0.1", "{m}");
        assert_eq!(m["max"], "0.3", "{m}");
        assert_eq!(m["latest"], "0.1", "{m}");
        let name = t["metadata"]["name"].as_str().unwrap();
        let log = std::fs::read_to_string(
            sb.path()
                .join("vernier-logs/custom")
                .join(format!("{name}.log")),
        )
        .unwrap();
        assert!(
            log.contains(&format!(
                "custom collector: reported 3 value(s) of trial {name}"
            )),
            "{log}"
        );
    }
}

/// A collector whose imports come before its SIGTERM handler, as a real one's gRPC import
/// does: it prints a line when the handler runs.
const SLOW_START_COLLECTOR: &str = "import time\ntime.sleep(0.3)\nimport signal, sys\ndef on_term(signum, frame):\n    print('collector: SIGTERM handled', flush=True)\n    sys.exit(0)\nsignal.signal(signal.SIGTERM, on_term)\nwhile True:\n    time.sleep(0.05)\n";

/// A trial shorter than the collector's start-up does not kill the collector before its
/// handler is in place: SIGTERM waits until the collector has run for a while, as a native
/// sidecar on a cluster has started before the training container.
#[test]
fn a_trial_shorter_than_the_collectors_start_up_leaves_it_time_for_its_handler() {
    let sb = Sandbox::new();
    let collector = sb.write("slow_collector.py", SLOW_START_COLLECTOR);
    let yaml = python_experiment(
        "short",
        "print('loss=0.5')",
        &format!(
            "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 1\n  maxTrialCount: 1\n  metricsCollectorSpec:\n    collector:\n      kind: Custom\n      customCollector:\n        name: my-collector\n        image: example.invalid/collector:1\n        command: [python3, {:?}]",
            collector.display().to_string()
        ),
    );
    let file = sb.write("short.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    let log = crate::harness::first_trial_log(&sb, "short");
    assert!(
        log.contains("collector: SIGTERM handled"),
        "{log}\n{}",
        text(&out)
    );
    assert!(!log.contains("custom collector ended with"), "{log}");
}

#[test]
fn custom_collector_is_refused_locally_with_a_hint() {
    let sb = Sandbox::new();
    let yaml = python_experiment(
        "custom",
        "print('loss=0.5')",
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 1\n  maxTrialCount: 1\n  metricsCollectorSpec:\n    collector:\n      kind: Custom\n      customCollector:\n        name: my-collector\n        image: example.invalid/collector:1",
    );
    let file = sb.write("custom.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let all = text(&out);
    assert!(all.contains("\"Custom\" cannot run locally"), "{all}");
    assert!(all.contains("hint:"), "{all}");
}

/// A line's own leading timestamp dates it even when it is earlier than the line before, as
/// in Katib's collector, so `latest` is the value with the latest time, not the last printed.
#[test]
fn a_lines_own_timestamp_is_kept_when_it_goes_backwards() {
    let sb = Sandbox::new();
    let yaml = python_experiment(
        "own-time",
        "print('2024-01-01T00:00:05Z loss=0.1'); print('2024-01-01T00:00:01Z loss=0.9'); print('loss=0.5')",
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n    metricStrategies:\n      - {name: loss, value: latest}\n  parallelTrialCount: 1\n  maxTrialCount: 1",
    );
    let file = sb.write("e.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("own-time");
    let metric = &r["status"]["currentOptimalTrial"]["observation"]["metrics"][0];
    // The untimed line is dated by the clock, today: the latest of the three.
    assert_eq!(metric["latest"], "0.5", "{metric}");
    let trial = r["status"]["currentOptimalTrial"]["bestTrialName"]
        .as_str()
        .unwrap();
    let query = "for (t,) in con.execute('select time from observation_logs where trial_name = ? order by id', (sys.argv[2],)): print(t)";
    let times: Vec<i64> = sqlite(&sb, query, &[trial])
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(
        times[..2],
        [1_704_067_205_000_000, 1_704_067_201_000_000],
        "{times:?}"
    );
    assert!(times[2] > 1_704_067_205_000_000, "{times:?}");
}

/// A collector still starting when a short trial ends dies of the SIGTERM it could not yet
/// handle; the trial's log says so and what to do.
#[test]
fn a_collector_stopped_before_it_handles_sigterm_is_told_why() {
    let sb = Sandbox::new();
    let collector_spec = "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 1\n  maxTrialCount: 1\n  metricsCollectorSpec:\n    collector:\n      kind: Custom\n      customCollector:\n        name: slow-start\n        image: registry.example/collector:1\n        command: [python3, -c, \"import time; time.sleep(30)\"]";
    let yaml = python_experiment("slow-start", "print('loss=0.5')", collector_spec);
    let file = sb.write("e.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert!(text(&out).contains("MetricsUnavailable"), "{}", text(&out));
    let log = crate::harness::first_trial_log(&sb, "slow-start");
    assert!(
        log.contains("the custom collector ended with signal: 15"),
        "{log}"
    );
    assert!(
        log.contains("hint: it was sent SIGTERM when the trial ended"),
        "{log}"
    );
}
