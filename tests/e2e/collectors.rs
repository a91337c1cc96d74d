//! Metrics collectors other than stdout, locally: the File collector in TEXT and JSON formats
//! with Katib's absolute default path mapped into the trial's own directory.

use crate::harness::{Sandbox, python_experiment, text};

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
