//! Experiments that run to completion: each of Katib's completion reasons, metric strategies,
//! custom metric formats, trial logs and environment, and re-running a recorded name.

use crate::harness::{Sandbox, last_condition, python_experiment, text, trials_in};

#[test]
fn goal_reached_ends_the_experiment_early() {
    let sb = Sandbox::new();
    let yaml = python_experiment(
        "goal",
        "import sys; print('loss=' + sys.argv[1])",
        "  objective:\n    type: minimize\n    goal: 0.5\n    objectiveMetricName: loss\n  parallelTrialCount: 1\n  maxTrialCount: 60",
    );
    let file = sb.write("goal.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap(), "--seed", "3"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("best trial goal-"), "{stdout}");
    let r = sb.report("goal");
    let cond = last_condition(&r);
    assert_eq!(cond["type"], "Succeeded");
    assert_eq!(cond["reason"], "ExperimentGoalReached");
    let best = &r["status"]["currentOptimalTrial"];
    let value: f64 = best["observation"]["metrics"][0]["min"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(value <= 0.5, "best {value}");
    let trials = r["status"]["trials"].as_u64().unwrap();
    assert!(trials < 60, "{trials} trials");
    // The best trial's parameter is what it printed.
    let x: f64 = best["parameterAssignments"][0]["value"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(x, value);
}

#[test]
fn max_trial_count_bounds_the_experiment() {
    let sb = Sandbox::new();
    let yaml = python_experiment(
        "maxtrials",
        "import sys; x = float(sys.argv[1]); print(f'accuracy={x}'); print(f'loss={1 - x}')",
        "  objective:\n    type: maximize\n    objectiveMetricName: accuracy\n    additionalMetricNames: [loss]\n  parallelTrialCount: 2\n  maxTrialCount: 5",
    );
    let file = sb.write("max.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("maxtrials");
    assert_eq!(last_condition(&r)["reason"], "ExperimentMaxTrialsReached");
    assert_eq!(r["status"]["trials"], 5);
    assert_eq!(r["status"]["trialsSucceeded"], 5);
    let trials = r["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 5);
    // The optimal trial has the largest accuracy of all.
    let acc = |t: &serde_json::Value| -> f64 {
        t["status"]["observation"]["metrics"][0]["max"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap()
    };
    let best_name = r["status"]["currentOptimalTrial"]["bestTrialName"]
        .as_str()
        .unwrap();
    let best = trials
        .iter()
        .find(|t| t["metadata"]["name"] == best_name)
        .unwrap();
    assert!(trials.iter().all(|t| acc(t) <= acc(best)));
    // The additional metric is recorded too.
    assert_eq!(best["status"]["observation"]["metrics"][1]["name"], "loss");
    // Table report names the best trial.
    let table = sb.run(&["report", "maxtrials"]);
    assert!(String::from_utf8_lossy(&table.stdout).contains(&format!("best trial {best_name}")));
}

#[test]
fn max_failed_trial_count_fails_the_experiment() {
    let sb = Sandbox::new();
    let yaml = python_experiment(
        "failing",
        "import sys; print('loss=0.1'); sys.exit(3)",
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 1\n  maxTrialCount: 10\n  maxFailedTrialCount: 2",
    );
    let file = sb.write("fail.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let r = sb.report("failing");
    let cond = last_condition(&r);
    assert_eq!(cond["type"], "Failed");
    assert_eq!(cond["reason"], "ExperimentFailed");
    assert_eq!(r["status"]["trialsFailed"], 2);
    let failed = trials_in(&r, "Failed");
    assert_eq!(failed.len(), 2);
    let msg = last_condition(&failed[0])["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(msg.contains("exited with code 3"), "{msg}");
    // A failed trial's metrics are kept, but it is never the best trial.
    assert!(r["status"]["currentOptimalTrial"].is_null());
    // Every format of the report of a failed experiment exits as such.
    for format in ["table", "json", "csv", "observations"] {
        let out = sb.run(&["report", "failing", "--format", format]);
        assert_eq!(out.status.code(), Some(1), "{format}: {}", text(&out));
    }
    let out = sb.run(&["report", "failing", "--format", "observations"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains(",loss,1,"));
}

#[test]
fn exit_zero_without_the_objective_is_metrics_unavailable() {
    let sb = Sandbox::new();
    let yaml = python_experiment(
        "nometrics",
        "print('training done, accuracy not printed')",
        "  objective:\n    type: maximize\n    objectiveMetricName: accuracy\n  parallelTrialCount: 1\n  maxTrialCount: 3\n  maxFailedTrialCount: 2",
    );
    let file = sb.write("nometrics.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    // Katib counts trials without metrics as failures for maxFailedTrialCount.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    // The run's own lines say how to report the metric, not only the stored message.
    assert!(
        text(&out).contains("          hint: print a line such as `accuracy=0.5`"),
        "{}",
        text(&out)
    );
    let r = sb.report("nometrics");
    assert_eq!(r["status"]["trialMetricsUnavailable"], 2);
    let t = &trials_in(&r, "MetricsUnavailable")[0];
    let m = &t["status"]["observation"]["metrics"][0];
    assert_eq!(m["name"], "accuracy");
    assert_eq!(m["latest"], "unavailable");
    let msg = last_condition(t)["message"].as_str().unwrap().to_string();
    assert!(
        msg.contains("never reported the objective metric \"accuracy\""),
        "{msg}"
    );
}

#[test]
fn metrics_unavailable_says_which_metrics_the_trial_did_report() {
    let sb = Sandbox::new();
    let yaml = python_experiment(
        "othermetrics",
        "print('val_accuracy=0.9')\nprint('val_loss=0.2')",
        "  objective:\n    type: maximize\n    objectiveMetricName: accuracy\n  parallelTrialCount: 1\n  maxTrialCount: 1",
    );
    let file = sb.write("othermetrics.yaml", &yaml);
    sb.run(&["run", file.to_str().unwrap()]);
    let r = sb.report("othermetrics");
    let t = &trials_in(&r, "MetricsUnavailable")[0];
    let msg = last_condition(t)["message"].as_str().unwrap();
    assert!(
        msg.contains("objective metric \"accuracy\" (saw val_accuracy, val_loss)"),
        "{msg}"
    );
}

/// A trial that prints its objective only as `nan` or an infinity printed the name but
/// reported no value: MetricsUnavailable, as a trial that printed nothing, and never the best.
#[test]
fn an_objective_printed_only_as_nan_or_infinity_is_metrics_unavailable() {
    let sb = Sandbox::new();
    let yaml = python_experiment(
        "nanmetrics",
        "print('accuracy=nan')\nprint('accuracy=-inf')\nprint('loss=0.3')",
        "  objective:\n    type: maximize\n    objectiveMetricName: accuracy\n    additionalMetricNames: [loss]\n  parallelTrialCount: 1\n  maxTrialCount: 2\n  maxFailedTrialCount: 2",
    );
    let file = sb.write("nanmetrics.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let printed = text(&out);
    assert!(
        printed.contains("accuracy=nan") && printed.contains("accuracy=-inf"),
        "{printed}"
    );
    let r = sb.report("nanmetrics");
    assert_eq!(r["status"]["trialMetricsUnavailable"], 2);
    assert_eq!(r["status"]["trialsSucceeded"], 0);
    assert!(r["status"]["currentOptimalTrial"].is_null());
    let t = &trials_in(&r, "MetricsUnavailable")[0];
    let metrics = t["status"]["observation"]["metrics"].as_array().unwrap();
    let accuracy = metrics.iter().find(|m| m["name"] == "accuracy").unwrap();
    assert_eq!(accuracy["latest"], "unavailable");
    let msg = last_condition(t)["message"].as_str().unwrap();
    assert!(
        msg.contains("never reported a usable value of the objective metric \"accuracy\""),
        "{msg}"
    );
}

#[test]
fn custom_metrics_format_and_strategies() {
    let sb = Sandbox::new();
    let yaml = python_experiment(
        "custom",
        "for v in (3, 1, 2): print('{metricName: loss, metricValue: %d.5}' % v)\nprint('loss=0.001')",
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n    metricStrategies:\n      - name: loss\n        value: latest\n  parallelTrialCount: 1\n  maxTrialCount: 2\n  metricsCollectorSpec:\n    collector:\n      kind: StdOut\n    source:\n      filter:\n        metricsFormat:\n          - \"{metricName: ([\\\\w|-]+), metricValue: ((-?\\\\d+)(\\\\.\\\\d+)?)}\"",
    );
    let file = sb.write("custom.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("custom");
    let m = &r["trials"][0]["status"]["observation"]["metrics"][0];
    // The default `name=value` format is replaced, so `loss=0.001` is not read.
    assert_eq!(m["min"], "1.5");
    assert_eq!(m["max"], "3.5");
    assert_eq!(m["latest"], "2.5");
    let best = &r["status"]["currentOptimalTrial"]["observation"]["metrics"][0];
    assert_eq!(best["latest"], "2.5");
}

#[test]
fn trials_get_logs_and_katib_environment_without_a_shell() {
    let sb = Sandbox::new();
    let yaml = python_experiment(
        "envcheck",
        "import os, sys; print('trial ' + os.environ['KATIB_TRIAL_NAME']); print('argv ' + repr(sys.argv[1:])); print('loss=1', file=sys.stderr)",
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 1\n  maxTrialCount: 1",
    )
    .replace("- \"${trialParameters.x}\"", "- \"${trialParameters.x}; touch pwned $(touch pwned2)\"");
    let file = sb.write("env.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("envcheck");
    let name = r["trials"][0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let log = std::fs::read_to_string(
        sb.path()
            .join("vernier-logs/envcheck")
            .join(format!("{name}.log")),
    )
    .expect("trial log");
    assert!(log.contains(&format!("trial {name}")), "{log}");
    assert!(log.contains("; touch pwned $(touch pwned2)"), "{log}");
    // Metrics printed on stderr count, as with Katib's StdOut collector (2>&1).
    assert_eq!(r["status"]["trialsSucceeded"], 1);
    assert!(!sb.path().join("pwned").exists() && !sb.path().join("pwned2").exists());
}

#[test]
fn running_a_recorded_name_again_is_refused_with_a_hint() {
    let sb = Sandbox::new();
    let yaml = python_experiment(
        "twice",
        "print('loss=1')",
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 1\n  maxTrialCount: 1",
    );
    let file = sb.write("twice.yaml", &yaml);
    assert_eq!(
        sb.run(&["run", file.to_str().unwrap()]).status.code(),
        Some(0)
    );
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("\"twice\" already exists"), "{err}");
    // It used its budget: resumed, it needs a larger one.
    assert!(
        err.contains("vernier resume twice") && err.contains("--max-trial-count N` continues"),
        "{err}"
    );
    assert!(err.contains("vernier delete twice"), "{err}");
    // Nothing recorded was touched.
    assert_eq!(sb.report("twice")["status"]["trials"], 1);
    let del = sb.run(&["delete", "twice"]);
    assert_eq!(del.status.code(), Some(0), "{}", text(&del));
    // The logs stay unless asked for, and the output says how to remove them.
    let logs = sb.path().join("vernier-logs/twice");
    let said = String::from_utf8_lossy(&del.stdout);
    assert!(
        said.contains("hint: `rm -r ") && said.contains("vernier-logs/twice`"),
        "{said}"
    );
    assert_eq!(std::fs::read_dir(&logs).unwrap().count(), 1);
    // The kept logs are not overwritten: the new run writes its own beside them.
    let again = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert!(
        text(&again).contains("already exists (the logs of an earlier experiment named twice"),
        "{}",
        text(&again)
    );
    assert_eq!(std::fs::read_dir(&logs).unwrap().count(), 1);
    assert_eq!(
        std::fs::read_dir(sb.path().join("vernier-logs/twice.2"))
            .unwrap()
            .count(),
        1
    );
    let list = sb.run(&["list"]);
    assert!(String::from_utf8_lossy(&list.stdout).contains("twice"));
    // --logs removes this run's log; the first run's (from the deleted experiment) stays.
    let del = sb.run(&["delete", "twice", "--logs"]);
    assert_eq!(del.status.code(), Some(0), "{}", text(&del));
    assert!(
        String::from_utf8_lossy(&del.stdout).contains("removed the logs of 1 trial from"),
        "{}",
        text(&del)
    );
    assert_eq!(std::fs::read_dir(&logs).unwrap().count(), 1);
}
