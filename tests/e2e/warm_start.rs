//! Warm start, enqueued configurations and ASHA through the real binary: earlier results are
//! history (never re-run by grid, never counted, still there after a resume), enqueued
//! configurations run first, and `vernier enqueue` adds one to an interrupted experiment that
//! `resume` then runs.

use crate::harness::{Sandbox, last_condition, python_experiment, text};

const OBJECTIVE: &str = "  objective:\n    type: minimize\n    objectiveMetricName: loss\n";

/// `python_experiment` minimising `loss`, with `extra` in its spec.
fn experiment(name: &str, script: &str, extra: &str) -> String {
    python_experiment(name, script, &format!("{OBJECTIVE}{extra}"))
}

const LOSS: &str = "import sys; x = float(sys.argv[1]); print(f'loss={(x - 0.3) ** 2}')";

/// Reports like `LOSS`; if the file `stop-once` exists, removes it and stops its own driver,
/// as Ctrl-C would, leaving the experiment interrupted. It then waits to be killed: a trial
/// that exited before the driver saw the signal would rightly end Succeeded, and a loaded
/// machine made that race go either way.
const STOPS_ONCE: &str = "import os, signal, sys, time\nx = float(sys.argv[1])\nprint(f'loss={(x - 0.3) ** 2}')\n\
                          if os.path.exists('stop-once'):\n    os.remove('stop-once')\n    \
                          os.kill(os.getppid(), signal.SIGTERM)\n    time.sleep(60)";

/// A grid over x in {0, 0.25, 0.5, 0.75, 1}.
fn grid_experiment(name: &str, script: &str, extra: &str) -> String {
    experiment(name, script, extra)
        .replace("algorithmName: random", "algorithmName: grid")
        .replace("max: \"1\"", "max: \"1\"\n        step: \"0.25\"")
}

fn xs(report: &serde_json::Value) -> Vec<String> {
    report["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t["spec"]["parameterAssignments"][0]["value"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn warm_start_results_are_history_and_enqueued_trials_run_first() {
    let sb = Sandbox::new();
    let first = sb.write(
        "first.yaml",
        &grid_experiment("first", LOSS, "  parallelTrialCount: 1\n  maxTrialCount: 2"),
    );
    let out = sb.run(&["run", first.to_str().unwrap(), "--seed", "3"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let first_xs = xs(&sb.report("first"));
    assert_eq!(first_xs.len(), 2);

    sb.write("known.jsonl", "{\"x\": 1, \"loss\": 0.49}\n");
    let extra = "  parallelTrialCount: 1\n  maxTrialCount: 10\n  warmStart:\n    \
                 experiments: [first]\n    file: known.jsonl\n  enqueuedTrials:\n    - \
                 parameterAssignments:\n        - {name: x, value: \"0.75\"}";
    let second = sb.write("second.yaml", &grid_experiment("second", LOSS, extra));
    let out = sb.run(&["run", second.to_str().unwrap(), "--seed", "4"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("second");
    let second_xs = xs(&r);
    // The enqueued configuration ran first, labelled with its index.
    assert_eq!(second_xs[0], "0.75");
    assert_eq!(
        r["trials"][0]["metadata"]["labels"]["vernier.enqueue/index"],
        "0"
    );
    // Grid never re-ran a configuration the history already had ...
    for x in second_xs.iter().skip(1) {
        assert!(
            !first_xs.contains(x) && x != "1" && x != "0.75",
            "{x} re-ran: {second_xs:?}"
        );
    }
    // ... and ran out once all five points were known: warm results are not its trials.
    let mut all: Vec<f64> = first_xs
        .iter()
        .chain(&second_xs)
        .map(|x| x.parse().unwrap())
        .chain([1.0])
        .collect();
    all.sort_by(f64::total_cmp);
    all.dedup();
    assert_eq!(all, [0.0, 0.25, 0.5, 0.75, 1.0]);
    assert_eq!(
        last_condition(&r)["reason"],
        "ExperimentSuggestionEndReached"
    );
    assert_eq!(r["status"]["trials"], second_xs.len());

    // A missing earlier experiment is named before any trial runs.
    let bad = sb.write(
        "third.yaml",
        &grid_experiment("third", LOSS, "  warmStart:\n    experiments: [nope]"),
    );
    let out = sb.run(&["run", bad.to_str().unwrap()]);
    assert_ne!(out.status.code(), Some(0));
    let t = text(&out);
    assert!(
        t.contains("spec.warmStart: experiment \"nope\" does not exist"),
        "{t}"
    );
    // ... and leaves no experiment behind: fixing the file and running again just works.
    let listed = text(&sb.run(&["list"]));
    assert!(!listed.contains("third"), "{listed}");
    let unreadable = sb.write(
        "fourth.yaml",
        &grid_experiment("fourth", LOSS, "  warmStart:\n    file: no-such-file.csv"),
    );
    let out = sb.run(&["run", unreadable.to_str().unwrap()]);
    assert_ne!(out.status.code(), Some(0));
    assert!(text(&out).contains("no-such-file.csv"), "{}", text(&out));
    let listed = text(&sb.run(&["list"]));
    assert!(!listed.contains("fourth"), "{listed}");
}

#[test]
fn enqueue_adds_a_configuration_that_resume_runs_first() {
    let sb = Sandbox::new();
    // The first trial stops its own driver (as Ctrl-C would), leaving the experiment
    // interrupted; later trials just report.
    sb.write("stop-once", "");
    let file = sb.write(
        "exp.yaml",
        &experiment(
            "queued",
            STOPS_ONCE,
            "  parallelTrialCount: 1\n  maxTrialCount: 3",
        ),
    );
    let out = sb.run(&["run", file.to_str().unwrap(), "--seed", "5"]);
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));

    let out = sb.run(&["enqueue", "queued", "--param", "x=1.5"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let t = text(&out);
    assert!(
        t.contains("--param: parameter x: value \"1.5\" is not valid"),
        "{t}"
    );
    assert!(
        t.contains("hint: pick a value inside the feasible space"),
        "{t}"
    );
    let out = sb.run(&["enqueue", "queued", "--param", "y=0.5"]);
    assert!(
        text(&out).contains("parameter \"y\" is not in the search space"),
        "{}",
        text(&out)
    );
    let out = sb.run(&["enqueue", "queued", "--param", "x"]);
    assert!(
        text(&out).contains("--param \"x\" is not NAME=VALUE"),
        "{}",
        text(&out)
    );
    let out = sb.run(&["enqueue", "missing", "--param", "x=0.5"]);
    assert!(
        text(&out).contains("experiment \"missing\" does not exist"),
        "{}",
        text(&out)
    );

    let out = sb.run(&["enqueue", "queued", "--param", "x=0.125"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("enqueued x=0.125 as spec.enqueuedTrials[0] of experiment queued"),
        "{}",
        text(&out)
    );
    let before = xs(&sb.report("queued")).len();
    let out = sb.run(&["resume", "queued"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("queued");
    let after = xs(&r);
    assert_eq!(after[before], "0.125", "{after:?}");
    assert_eq!(
        r["trials"][before]["metadata"]["labels"]["vernier.enqueue/index"],
        "0"
    );
    assert_eq!(after.iter().filter(|x| *x == "0.125").count(), 1);

    // Ended at its budget, it runs a new configuration only once reopened, and says how.
    let out = sb.run(&["enqueue", "queued", "--param", "x=0.5"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("--max-trial-count N`, with N above its 3 trials"),
        "{}",
        text(&out)
    );
}

/// Interrupted with its budget spent (its killed trial counts, as in Katib), a plain resume
/// would end at once: enqueue says to raise maxTrialCount, and that runs the configuration.
#[test]
fn enqueue_into_an_interrupted_experiment_at_its_budget_says_to_raise_it() {
    let sb = Sandbox::new();
    sb.write("stop-once", "");
    let extra = "  parallelTrialCount: 1\n  maxTrialCount: 1";
    let file = sb.write("exp.yaml", &grid_experiment("spent", STOPS_ONCE, extra));
    let out = sb.run(&["run", file.to_str().unwrap(), "--seed", "2"]);
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    let out = sb.run(&["enqueue", "spent", "--param", "x=0.75"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("its 1 trial(s) already reach maxTrialCount 1: `vernier resume spent")
            && said.contains("--max-trial-count N`, with N above 1, runs it first"),
        "{said}"
    );
    let out = sb.run(&["resume", "spent", "--max-trial-count", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(xs(&sb.report("spent"))[1], "0.75");
}

/// A budget smaller than the queue says which entries it left, and how to run them.
#[test]
fn a_run_that_ends_before_its_queue_names_what_is_left() {
    let sb = Sandbox::new();
    let entry =
        |x: &str| format!("    - parameterAssignments:\n        - {{name: x, value: \"{x}\"}}\n");
    let extra = format!(
        "  parallelTrialCount: 1\n  maxTrialCount: 2\n  enqueuedTrials:\n{}{}{}",
        entry("0.25"),
        entry("0.5"),
        entry("0.75")
    );
    let file = sb.write("exp.yaml", &grid_experiment("left", LOSS, &extra));
    let out = sb.run(&["run", file.to_str().unwrap(), "--seed", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains(
            "note: 1 configuration(s) of spec.enqueuedTrials did not run before maxTrialCount \
             was reached\nhint: "
        ) && said.contains("`vernier resume left --max-trial-count 3"),
        "{said}"
    );
    let out = sb.run(&["resume", "left", "--max-trial-count", "3"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!text(&out).contains("did not run"), "{}", text(&out));
    assert_eq!(xs(&sb.report("left")), ["0.25", "0.5", "0.75"]);
}

/// An enqueued configuration whose trial was killed by an interruption runs again on resume:
/// the user asked for its result, and the killed trial has none.
#[test]
fn a_killed_enqueued_configuration_runs_again_on_resume() {
    let sb = Sandbox::new();
    sb.write("stop-once", "");
    let extra = "  parallelTrialCount: 1\n  maxTrialCount: 3\n  enqueuedTrials:\n    \
                 - parameterAssignments:\n        - {name: x, value: \"0.25\"}\n";
    let file = sb.write("exp.yaml", &grid_experiment("again", STOPS_ONCE, extra));
    let out = sb.run(&["run", file.to_str().unwrap(), "--seed", "2"]);
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    let out = sb.run(&["resume", "again"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("again");
    assert_eq!(xs(&r)[..2], ["0.25", "0.25"], "{r:#}");
    let states: Vec<&str> = r["trials"].as_array().unwrap()[..2]
        .iter()
        .map(|t| crate::harness::condition_state(last_condition(t)))
        .collect();
    assert_eq!(states, ["Killed", "Succeeded"], "{r:#}");
    for t in &r["trials"].as_array().unwrap()[..2] {
        assert_eq!(t["metadata"]["labels"]["vernier.enqueue/index"], "0");
    }
}

#[test]
fn a_resumed_experiment_still_starts_from_its_warm_start() {
    let sb = Sandbox::new();
    // The first trial stops its own driver, as Ctrl-C would; `resume` then reads the warm
    // start itself, where `run` had handed the driver the copy it checked.
    sb.write("stop-once", "");
    sb.write(
        "known.jsonl",
        "{\"x\": 0, \"loss\": 0.09}\n{\"x\": 1, \"loss\": 0.49}\n",
    );
    let extra = "  parallelTrialCount: 1\n  maxTrialCount: 10\n  warmStart:\n    file: known.jsonl";
    let file = sb.write("exp.yaml", &grid_experiment("resumed", STOPS_ONCE, extra));
    let out = sb.run(&["run", file.to_str().unwrap(), "--seed", "6"]);
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    let before = xs(&sb.report("resumed"));
    assert_eq!(before.len(), 1, "{before:?}");

    let out = sb.run(&["resume", "resumed"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("resumed");
    let mut ran = xs(&r);
    // Grid ran each of the three points the warm start did not know, then ran out; the point
    // whose trial the stop killed had no verdict, so it ran again.
    ran.sort();
    assert_eq!(ran, ["0.25", "0.5", "0.5", "0.75"], "{}", text(&out));
    assert_eq!(
        last_condition(&r)["reason"],
        "ExperimentSuggestionEndReached"
    );
}

/// A warm-start file gone when a finished experiment is reopened stops the resume before the
/// new maxTrialCount is written: the experiment is as it was, and reopens once the file is back.
#[test]
fn a_resume_whose_warm_start_file_is_gone_changes_nothing() {
    let sb = Sandbox::new();
    sb.write("known.csv", "x,loss\n0,0.09\n");
    let extra = "  parallelTrialCount: 1\n  maxTrialCount: 1\n  warmStart:\n    file: known.csv";
    let file = sb.write("exp.yaml", &experiment("gone", LOSS, extra));
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    std::fs::rename(sb.path().join("known.csv"), sb.path().join("moved.csv")).unwrap();

    // A limit the experiment cannot take is said first: restoring the file would not help.
    let out = sb.run(&["resume", "gone", "--max-trial-count", "1"]);
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!text(&out).contains("spec.warmStart"), "{}", text(&out));
    let out = sb.run(&["resume", "gone", "--max-trial-count", "2"]);
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("spec.warmStart: cannot read file")
            && !text(&out).contains("maxTrialCount 1 →"),
        "{}",
        text(&out)
    );
    let r = sb.report("gone");
    assert_eq!(r["spec"]["maxTrialCount"], 1, "{r:#}");
    assert_eq!(last_condition(&r)["reason"], "ExperimentMaxTrialsReached");

    std::fs::rename(sb.path().join("moved.csv"), sb.path().join("known.csv")).unwrap();
    let out = sb.run(&["resume", "gone", "--max-trial-count", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(xs(&sb.report("gone")).len(), 2);
}

/// A source experiment deleted after the warm-started one began does not make it impossible
/// to resume: the resume says so and goes on without it. A new experiment still refuses it.
#[test]
fn a_resume_goes_on_without_a_deleted_warm_start_source() {
    let sb = Sandbox::new();
    let source = sb.write(
        "source.yaml",
        &experiment(
            "source",
            LOSS,
            "  parallelTrialCount: 1\n  maxTrialCount: 2",
        ),
    );
    let out = sb.run(&["run", source.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    sb.write("stop-once", "");
    let extra =
        "  parallelTrialCount: 1\n  maxTrialCount: 3\n  warmStart:\n    experiments: [source]";
    let file = sb.write("exp.yaml", &experiment("warmed", STOPS_ONCE, extra));
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    let out = sb.run(&["delete", "source"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = sb.run(&["resume", "warmed"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("experiment \"source\" no longer exists"),
        "{}",
        text(&out)
    );
    let again = sb.write("again.yaml", &experiment("again", LOSS, extra));
    let out = sb.run(&["run", again.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("does not exist in the store"),
        "{}",
        text(&out)
    );
}

#[test]
fn asha_runs_rungs_with_labelled_promotions() {
    let sb = Sandbox::new();
    let script = "import sys\nx, n = float(sys.argv[1]), int(sys.argv[2])\n\
                  for e in range(1, n + 1):\n    print(f'loss={(x - 0.3) ** 2 + 1 / e}')";
    let yaml = experiment("asha-run", script, "  parallelTrialCount: 3\n  maxTrialCount: 24")
        .replace(
            "algorithmName: random",
            "algorithmName: asha\n    algorithmSettings:\n      - {name: resource_name, value: n}\n      \
             - {name: max_resource, value: \"9\"}",
        )
        .replace(
            "  trialTemplate:",
            "    - name: n\n      parameterType: int\n      feasibleSpace:\n        min: \"1\"\n        \
             max: \"9\"\n  trialTemplate:",
        )
        .replace(
            "      - name: x\n        reference: x",
            "      - name: x\n        reference: x\n      - name: n\n        reference: n",
        )
        .replace(
            "                  - \"${trialParameters.x}\"",
            "                  - \"${trialParameters.x}\"\n                  - \"${trialParameters.n}\"",
        );
    let file = sb.write("asha.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap(), "--seed", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("asha-run");
    let trials = r["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 24);
    let mut promoted = 0;
    for t in trials {
        let labels = &t["metadata"]["labels"];
        let rung = labels["vernier.asha/rung"].as_str().unwrap();
        let n = t["spec"]["parameterAssignments"][1]["value"]
            .as_str()
            .unwrap();
        assert_eq!(n, ["1", "3", "9"][rung.parse::<usize>().unwrap()], "{t}");
        if let Some(parent) = labels["vernier.asha/parent"].as_str() {
            promoted += 1;
            assert!(trials.iter().any(|p| p["metadata"]["name"] == parent));
        }
    }
    assert!(promoted >= 3, "only {promoted} promotions in 24 trials");
}

/// `validate` reads `spec.warmStart.file` as `run` does, so a missing or unusable file is
/// reported there instead of "runnable" followed by a refusal from `run`.
#[test]
fn validate_reads_the_warm_start_file() {
    let sb = Sandbox::new();
    let extra = "  parallelTrialCount: 1\n  maxTrialCount: 2\n  warmStart:\n    file: known.jsonl";
    let file = sb.write("warm.yaml", &experiment("warm", LOSS, extra));
    let out = sb.run(&["validate", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("spec.warmStart: cannot read file")
            && text(&out).contains("known.jsonl"),
        "{}",
        text(&out)
    );
    sb.write("known.jsonl", "{\"x\": 1, \"loss\": 0.49}\n");
    let out = sb.run(&["validate", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // The operator has neither the local database nor the file: it refuses the field.
    assert!(
        text(&out).contains(
            "cluster: refused by `vernier operator`: spec.warmStart: is not run by the operator"
        ),
        "{}",
        text(&out)
    );
}

/// CMA-ES replays only its own generations: a warm start is said to steer nothing.
#[test]
fn a_warm_start_of_an_algorithm_that_cannot_learn_from_it_says_so() {
    let sb = Sandbox::new();
    sb.write("known.jsonl", "{\"x\": 0.5, \"y\": 0.5, \"loss\": 0.04}\n");
    let extra = "  parallelTrialCount: 1\n  maxTrialCount: 2\n  warmStart:\n    file: known.jsonl";
    let yaml = experiment("cma", LOSS, extra)
        .replace("algorithmName: random", "algorithmName: cmaes")
        .replace(
            "  parameters:\n",
            "  parameters:\n    - name: y\n      parameterType: double\n      feasibleSpace:\n        min: \"0\"\n        max: \"1\"\n",
        )
        .replace(
            "    trialParameters:\n",
            "    trialParameters:\n      - name: y\n        reference: y\n",
        )
        .replace(
            "                  - \"${trialParameters.x}\"\n",
            "                  - \"${trialParameters.x}\"\n                  - \"${trialParameters.y}\"\n",
        );
    let file = sb.write("cma.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains(
            "warm start: cmaes starts from the best 10 % of the earlier results, so it needs at least 10; the 1 earlier result(s) count as configurations already tried"
        ),
        "{}",
        text(&out)
    );

    // Ten results are enough: the run starts from them, says how many, and warns of nothing.
    let lines: String = (0..10)
        .map(|i| format!("{{\"x\": 0.{i}5, \"y\": 0.5, \"loss\": {i}}}\n"))
        .collect();
    sb.write("known.jsonl", &lines);
    let yaml = yaml.replace("name: cma\n", "name: cma-ten\n");
    let file = sb.write("cma-ten.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        !text(&out).contains("warning: warm start"),
        "{}",
        text(&out)
    );
    assert!(
        text(&out).contains("warm start: 10 earlier result(s) (10 from file/known.jsonl)\n"),
        "{}",
        text(&out)
    );
}

/// A warm start of a search with two objectives and a constraint: the earlier experiment's
/// results carry every metric the search reads, so `nsga2` breeds its first trials from the
/// best of them (generation 1 at once) instead of sampling a generation of its own; a result
/// that lacks one of the metrics is skipped and counted.
#[test]
fn nsga2_breeds_from_an_earlier_experiment_with_every_objective() {
    let sb = Sandbox::new();
    let objectives = "  objective:\n    objectives:\n      - {metricName: f1, type: minimize}\n      \
                      - {metricName: f2, type: minimize}\n    constraints:\n      \
                      - {metricName: c, op: \"<=\", value: 0.8}\n";
    // x below 0.1 reports no f2: those results cannot seed a search of both objectives
    // (the enqueued 0.05 makes sure there is one).
    let script = "import sys\nx = float(sys.argv[1])\nprint(f'f1={x} c={x}')\n\
                  if x >= 0.1:\n    print(f'f2={(1 - x) ** 2}')";
    let enqueued =
        "  enqueuedTrials:\n    - parameterAssignments:\n        - {name: x, value: \"0.05\"}\n";
    let first = python_experiment(
        "first",
        script,
        &format!("{objectives}{enqueued}  parallelTrialCount: 1\n  maxTrialCount: 12"),
    );
    let file = sb.write("first.yaml", &first);
    let out = sb.run(&["run", file.to_str().unwrap(), "--seed", "4"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let lacking = sb.report("first")["trials"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| {
            let x = t["spec"]["parameterAssignments"][0]["value"]
                .as_str()
                .unwrap();
            x.parse::<f64>().unwrap() < 0.1
        })
        .count();

    let second = python_experiment(
        "second",
        script,
        &format!(
            "{objectives}  parallelTrialCount: 1\n  maxTrialCount: 4\n  warmStart:\n    experiments: [first]"
        ),
    )
    .replace(
        "algorithmName: random",
        "algorithmName: nsga2\n    algorithmSettings:\n      - {name: population_size, value: \"4\"}",
    );
    let file = sb.write("second.yaml", &second);
    let out = sb.run(&["run", file.to_str().unwrap(), "--seed", "4"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!text(&out).contains("steer nothing"), "{}", text(&out));
    assert!(lacking > 0);
    let skipped =
        format!("warm start: {lacking} earlier result(s) skipped (no f1 or f2 or c value");
    assert!(text(&out).contains(&skipped), "{}", text(&out));
    for t in sb.report("second")["trials"].as_array().unwrap() {
        assert_eq!(
            t["metadata"]["labels"]["vernier.nsga2/generation"], "1",
            "{t}"
        );
    }
}

/// An enqueued configuration may leave parameters out, as Optuna's `enqueue_trial` may: they
/// are drawn inside their space when the trial is made, the given ones run as written.
#[test]
fn an_enqueued_configuration_may_leave_parameters_out() {
    let sb = Sandbox::new();
    let two_params = experiment(
        "partial",
        "import sys; x, y = float(sys.argv[1]), float(sys.argv[2]); print(f'loss={x + y}')",
        "  parallelTrialCount: 1\n  maxTrialCount: 2\n  enqueuedTrials:\n    - parameterAssignments:\n        - {name: x, value: \"0.125\"}\n",
    )
    .replace(
        "  trialTemplate:\n",
        "    - name: y\n      parameterType: double\n      feasibleSpace: {min: \"0\", max: \"1\"}\n  trialTemplate:\n",
    )
    .replace(
        "      - name: x\n        reference: x\n",
        "      - name: x\n        reference: x\n      - name: y\n        reference: y\n",
    )
    .replace(
        "                  - \"${trialParameters.x}\"\n",
        "                  - \"${trialParameters.x}\"\n                  - \"${trialParameters.y}\"\n",
    );
    let file = sb.write("exp.yaml", &two_params);
    let out = sb.run(&["run", file.to_str().unwrap(), "--seed", "3"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let value = |r: &serde_json::Value, trial: usize, name: &str| -> f64 {
        let pairs = r["trials"][trial]["spec"]["parameterAssignments"]
            .as_array()
            .unwrap();
        let pair = pairs.iter().find(|p| p["name"] == name).unwrap();
        pair["value"].as_str().unwrap().parse().unwrap()
    };
    let r = sb.report("partial");
    assert_eq!(value(&r, 0, "x"), 0.125, "{r:#}");
    assert!((0.0..=1.0).contains(&value(&r, 0, "y")), "{r:#}");

    let out = sb.run(&["enqueue", "partial", "--param", "y=0.5"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("enqueued x=(drawn), y=0.5 as spec.enqueuedTrials[1]"),
        "{}",
        text(&out)
    );
    let out = sb.run(&["resume", "partial", "--max-trial-count", "3"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("partial");
    assert_eq!(value(&r, 2, "y"), 0.5, "{r:#}");
    assert!((0.0..=1.0).contains(&value(&r, 2, "x")), "{r:#}");
}

/// `validate` looks in the database `run` would read for the experiments a warm start names:
/// one that is not there is named before `run` refuses it.
#[test]
fn validate_names_a_warm_start_source_the_database_lacks() {
    let sb = Sandbox::new();
    let extra =
        "  parallelTrialCount: 1\n  maxTrialCount: 2\n  warmStart:\n    experiments: [source]";
    let file = sb.write("later.yaml", &experiment("later", LOSS, extra));
    let said = text(&sb.run(&["validate", file.to_str().unwrap()]));
    assert!(
        said.contains(
            "spec.warmStart.experiments[0]: experiment \"source\" is not in the database"
        ),
        "{said}"
    );
    let source = sb.write(
        "source.yaml",
        &experiment(
            "source",
            LOSS,
            "  parallelTrialCount: 1\n  maxTrialCount: 1",
        ),
    );
    let out = sb.run(&["run", source.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let said = text(&sb.run(&["validate", file.to_str().unwrap()]));
    assert!(!said.contains("spec.warmStart.experiments"), "{said}");
}
