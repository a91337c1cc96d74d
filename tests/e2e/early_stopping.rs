//! `spec.earlyStopping` (medianstop and ASHA) in a local run: trials that break the rule are
//! stopped and recorded EarlyStopped with Katib's reason and message.

use crate::harness::{Sandbox, last_condition, python_experiment, text, trials_in};

#[test]
fn medianstop_stops_trials_worse_than_the_succeeded_ones() {
    let sb = Sandbox::new();
    // Five epochs, one second apart, each reporting acc = x: a trial's best value is x.
    let yaml = python_experiment(
        "median",
        "import sys, time\nx = float(sys.argv[1])\nfor e in range(5):\n    print(f'acc={x}', flush=True)\n    time.sleep(1)",
        "  objective:\n    type: maximize\n    objectiveMetricName: acc\n  earlyStopping:\n    algorithmName: medianstop\n    algorithmSettings:\n      - name: min_trials_required\n        value: \"2\"\n      - name: start_step\n        value: \"1\"\n  parallelTrialCount: 1\n  maxTrialCount: 6",
    );
    let file = sb.write("median.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap(), "--seed", "11"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("median");
    let x = |t: &serde_json::Value| -> f64 {
        t["spec"]["parameterAssignments"][0]["value"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap()
    };
    let trials = r["trials"].as_array().unwrap();
    // The rule: mean of the first value (= x) of every trial that succeeded before.
    let mut succeeded_xs: Vec<f64> = Vec::new();
    let mut stopped = 0;
    for t in trials {
        let last = last_condition(t);
        match crate::harness::condition_state(last) {
            "Succeeded" => succeeded_xs.push(x(t)),
            "EarlyStopped" => {
                stopped += 1;
                assert_eq!(last["reason"], "TrialEarlyStopped", "{last}");
                assert_eq!(last["message"], "Trial is early stopped", "{last}");
                assert!(
                    succeeded_xs.len() >= 2,
                    "stopped before min_trials_required: {r:#}"
                );
                let mean = succeeded_xs.iter().sum::<f64>() / succeeded_xs.len() as f64;
                assert!(x(t) < mean, "x {} not below the rule's {mean}", x(t));
            }
            other => panic!("unexpected trial state {other}: {r:#}"),
        }
    }
    assert!(stopped >= 1, "seed 11 stops at least one trial: {r:#}");
    assert_eq!(trials_in(&r, "EarlyStopped").len(), stopped);
}

#[test]
fn asha_stops_trials_outranked_at_a_rung() {
    let sb = Sandbox::new();
    // Six epochs each reporting acc = x: at every rung a trial ranks by x against all earlier
    // trials that reached the same step.
    let yaml = python_experiment(
        "asha-es",
        "import sys, time\nx = float(sys.argv[1])\nfor e in range(6):\n    print(f'acc={x}', flush=True)\n    time.sleep(0.7)",
        "  objective:\n    type: maximize\n    objectiveMetricName: acc\n  earlyStopping:\n    algorithmName: asha\n    algorithmSettings:\n      - name: min_resource\n        value: \"1\"\n      - name: eta\n        value: \"2\"\n  parallelTrialCount: 1\n  maxTrialCount: 6",
    );
    let file = sb.write("asha-es.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap(), "--seed", "11"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("asha-es");
    let trials = r["trials"].as_array().unwrap();
    let mut earlier_best = f64::NEG_INFINITY;
    let mut stopped = 0;
    for (i, t) in trials.iter().enumerate() {
        let x: f64 = t["spec"]["parameterAssignments"][0]["value"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let last = last_condition(t);
        match crate::harness::condition_state(last) {
            "Succeeded" => {}
            "EarlyStopped" => {
                stopped += 1;
                assert!(i > 0, "the first trial has no one to rank against: {r:#}");
                assert_eq!(last["reason"], "TrialEarlyStopped", "{last}");
                // The message says where the trial stood, which the rule's name alone does not.
                let message = last["message"].as_str().unwrap();
                assert!(
                    message.starts_with("Trial is early stopped: its acc ")
                        && message.contains(" trials that reached that rung, where asha keeps")
                        && message.ends_with("(eta 2)"),
                    "{message}"
                );
                assert!(
                    x < earlier_best,
                    "x {x} was stopped though no earlier trial beat it ({earlier_best})"
                );
            }
            other => panic!("unexpected trial state {other}: {r:#}"),
        }
        earlier_best = earlier_best.max(x);
    }
    assert!(stopped >= 1, "seed 11 stops at least one trial: {r:#}");
}

/// A trial that reports every value at once and exits before the next check is still judged
/// by its rule, as Katib's collector reads each value as it comes: the verdict does not hang
/// on the driver's one-second polling.
#[test]
fn medianstop_judges_a_trial_that_ended_between_two_checks() {
    let sb = Sandbox::new();
    let yaml = python_experiment(
        "median-fast",
        "import sys\nx = float(sys.argv[1])\nfor e in range(3):\n    print(f'acc={x}')",
        "  objective:\n    type: maximize\n    objectiveMetricName: acc\n  earlyStopping:\n    algorithmName: medianstop\n    algorithmSettings:\n      - name: min_trials_required\n        value: \"2\"\n      - name: start_step\n        value: \"1\"\n  parallelTrialCount: 1\n  maxTrialCount: 8",
    );
    let file = sb.write("median-fast.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap(), "--seed", "11"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("median-fast");
    // One at a time, each trial's rule is the mean x of the trials succeeded before it.
    let mut succeeded_xs: Vec<f64> = Vec::new();
    for t in r["trials"].as_array().unwrap() {
        let x: f64 = t["spec"]["parameterAssignments"][0]["value"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let mean = succeeded_xs.iter().sum::<f64>() / succeeded_xs.len() as f64;
        let breaks = succeeded_xs.len() >= 2 && x < mean;
        let state = crate::harness::condition_state(last_condition(t));
        let want = if breaks { "EarlyStopped" } else { "Succeeded" };
        assert_eq!(
            state, want,
            "x {x}, succeeded before {succeeded_xs:?}: {r:#}"
        );
        // The rule frozen for it is in its spec, as Katib's Trial carries it.
        let rules = &t["spec"]["earlyStoppingRules"];
        if succeeded_xs.len() < 2 {
            assert!(rules.is_null(), "{t:#}");
        } else {
            assert_eq!(rules[0]["name"], "acc", "{t:#}");
            assert_eq!(rules[0]["comparison"], "less", "{t:#}");
            assert_eq!(rules[0]["startStep"], 1, "{t:#}");
            let value: f64 = rules[0]["value"].as_str().unwrap().parse().unwrap();
            assert!((value - mean).abs() < 1e-12, "{value} against {mean}");
        }
        if state == "Succeeded" {
            succeeded_xs.push(x);
        }
    }
    assert!(
        !trials_in(&r, "EarlyStopped").is_empty(),
        "seed 11 stops at least one trial: {r:#}"
    );
}

/// Values a trial printed past the rung ASHA stopped it at do not compete at later rungs: the
/// second trial is stopped at step 1 but printed its better later values at once; the third
/// leads every rung among the trials that reached it, and succeeds as it does with a slow
/// trainer (it was stopped at step 2, ranked behind the stopped trial's step-2 value).
#[test]
fn asha_ranks_a_stopped_trial_only_up_to_the_step_it_was_stopped_at() {
    let sb = Sandbox::new();
    let queued: String = ["0.4", "0.6", "0.8"]
        .iter()
        .map(|c| format!("    - parameterAssignments: [{{name: x, value: \"{c}\"}}]\n"))
        .collect();
    let trainer = "import sys\ncurves = {'0.4': [0.5] * 4, '0.6': [1, 0.25, 0.1, 0.05], '0.8': [0.3] * 4}\n\
                   for v in curves[sys.argv[1]]:\n    print(f'loss={v}')";
    let yaml = python_experiment(
        "asha-past",
        trainer,
        &format!(
            "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  earlyStopping:\n    algorithmName: asha\n    algorithmSettings:\n      - {{name: eta, value: \"2\"}}\n  parallelTrialCount: 1\n  maxTrialCount: 3\n  enqueuedTrials:\n{queued}"
        ),
    );
    let file = sb.write("asha-past.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("asha-past");
    let states: Vec<&str> = (0..3)
        .map(|i| crate::harness::condition_state(last_condition(&r["trials"][i])))
        .collect();
    assert_eq!(states, ["Succeeded", "EarlyStopped", "Succeeded"], "{r:#}");
}

/// ASHA holds a trial that prints faster than the driver looks to every rung it passed: the
/// last trial is the worst of four at step 1 and the best by step 3, and prints all its values
/// at once, so the driver first sees it past both rungs. Judged at its highest rung alone it
/// ran to the end and became the best trial; Optuna's pruner stops it at step 1.
#[test]
fn asha_judges_the_rungs_a_fast_trial_passed_between_two_checks() {
    let sb = Sandbox::new();
    let queued: String = ["0.4", "0.6", "0.8", "0.1"]
        .iter()
        .map(|c| format!("    - parameterAssignments: [{{name: x, value: \"{c}\"}}]\n"))
        .collect();
    let yaml = python_experiment(
        "asha-fast",
        "import sys\nc = float(sys.argv[1])\nfor e in range(1, 7):\n    print(f'loss={5.0 if e == 1 and c < 0.2 else c}')",
        &format!(
            "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  earlyStopping:\n    algorithmName: asha\n  parallelTrialCount: 1\n  maxTrialCount: 4\n  enqueuedTrials:\n{queued}"
        ),
    );
    let file = sb.write("asha-fast.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("asha-fast");
    let last = last_condition(&r["trials"][3]);
    assert_eq!(
        crate::harness::condition_state(last),
        "EarlyStopped",
        "{r:#}"
    );
    let message = last["message"].as_str().unwrap();
    assert!(
        message.contains("its loss 5 at step 1 ranked 4 of the 4 trials"),
        "{message}"
    );
}
