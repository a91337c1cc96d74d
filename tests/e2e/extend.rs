//! `vernier resume NAME --max-trial-count N`: an experiment that ended by reaching its budget
//! continues with its history and seed, proposing exactly what one uninterrupted run with the
//! larger budget proposes.

use crate::harness::{Sandbox, last_condition, python_experiment, text};

/// TPE after two random trials, one trial at a time: every later proposal depends on the
/// history, so equal proposals show the history and the seed stream were both kept.
fn experiment(max: u32) -> String {
    python_experiment(
        "extended",
        "import sys; x = float(sys.argv[1]); print(f'loss={(x - 0.3) ** 2}')",
        &format!(
            "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 1\n  maxTrialCount: {max}"
        ),
    )
    .replace(
        "    algorithmName: random\n",
        "    algorithmName: tpe\n    algorithmSettings:\n      - name: n_startup_trials\n        value: \"2\"\n",
    )
}

/// Trial names and assignments, in creation order.
fn trials(sb: &Sandbox) -> Vec<(String, String)> {
    let r = sb.report("extended");
    r["trials"]
        .as_array()
        .expect("trials")
        .iter()
        .map(|t| {
            (
                t["metadata"]["name"].as_str().expect("name").to_string(),
                t["spec"]["parameterAssignments"].to_string(),
            )
        })
        .collect()
}

#[test]
fn a_finished_experiment_continues_as_one_run_with_the_larger_budget() {
    let extended = Sandbox::new();
    let file = extended.write("e.yaml", &experiment(3));
    let out = extended.run(&["run", file.to_str().unwrap(), "--seed", "11"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let first = trials(&extended);
    assert_eq!(first.len(), 3);

    // Without a larger budget it stays finished, and says how to continue it.
    let again = extended.run(&["resume", "extended"]);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    assert!(
        text(&again).contains("--max-trial-count"),
        "{}",
        text(&again)
    );
    let same = extended.run(&["resume", "extended", "--max-trial-count", "3"]);
    assert_eq!(same.status.code(), Some(2), "{}", text(&same));
    assert!(
        text(&same).contains("a maxTrialCount of 3 does not reopen it")
            && text(&same).contains("hint: pass --max-trial-count above 3"),
        "{}",
        text(&same)
    );

    // Counts a spec cannot hold are refused by the flag's name, before anything is touched.
    for bad in ["0", "3000000000"] {
        let out = extended.run(&["resume", "extended", "--max-trial-count", bad]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(
            text(&out).contains("--max-trial-count") && text(&out).contains("1..=2147483647"),
            "{}",
            text(&out)
        );
    }

    let more = extended.run(&["resume", "extended", "--max-trial-count", "6"]);
    assert_eq!(more.status.code(), Some(0), "{}", text(&more));
    let r = extended.report("extended");
    assert_eq!(last_condition(&r)["reason"], "ExperimentMaxTrialsReached");
    let continued = trials(&extended);
    assert_eq!(continued.len(), 6);
    assert_eq!(continued[..3], first[..], "the history is kept");

    let straight = Sandbox::new();
    let file = straight.write("e.yaml", &experiment(6));
    let out = straight.run(&["run", file.to_str().unwrap(), "--seed", "11"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(continued, trials(&straight));
}

/// `vernier enqueue` takes a configuration for an experiment that ended at its budget, and the
/// resume that reopens it runs that configuration first.
#[test]
fn a_configuration_enqueued_after_the_budget_runs_first_when_reopened() {
    let sb = Sandbox::new();
    let file = sb.write("e.yaml", &experiment(3));
    let out = sb.run(&["run", file.to_str().unwrap(), "--seed", "11"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = sb.run(&["enqueue", "extended", "--param", "x=0.3"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("--max-trial-count N`, with N above its 3 trials, reopens it"),
        "{}",
        text(&out)
    );
    let out = sb.run(&["resume", "extended", "--max-trial-count", "4"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let all = trials(&sb);
    assert_eq!(all.len(), 4);
    assert!(all[3].1.contains("\"0.3\""), "{all:?}");
}

#[test]
fn an_experiment_that_reached_its_goal_does_not_continue() {
    let sb = Sandbox::new();
    let yaml = experiment(4).replace(
        "    objectiveMetricName: loss\n",
        "    objectiveMetricName: loss\n    goal: 10\n",
    );
    let file = sb.write("e.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap(), "--seed", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let more = sb.run(&["resume", "extended", "--max-trial-count", "8"]);
    assert_eq!(more.status.code(), Some(2), "{}", text(&more));
    // The hint says how a new experiment keeps what this one learnt.
    assert!(
        text(&more).contains("ExperimentGoalReached")
            && text(&more).contains("with `warmStart: {experiments: [extended]}` in its spec"),
        "{}",
        text(&more)
    );
    // Nothing would reopen it, so a configuration is refused too.
    let queued = sb.run(&["enqueue", "extended", "--param", "x=0.5"]);
    assert_eq!(queued.status.code(), Some(2), "{}", text(&queued));
    assert!(
        text(&queued).contains("has already finished"),
        "{}",
        text(&queued)
    );
    assert_eq!(trials(&sb).len(), 1);
}

#[test]
fn a_failed_experiment_without_results_is_not_offered_as_a_warm_start() {
    let sb = Sandbox::new();
    let yaml = experiment(4)
        .replace("print(f'loss={(x - 0.3) ** 2}')", "sys.exit('no data')")
        .replace(
            "  maxTrialCount: 4",
            "  maxTrialCount: 4\n  maxFailedTrialCount: 1",
        );
    let file = sb.write("e.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap(), "--seed", "2"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let more = sb.run(&["resume", "extended", "--max-trial-count", "8"]);
    assert_eq!(more.status.code(), Some(2), "{}", text(&more));
    assert!(
        text(&more).contains("no trial of this one succeeded")
            && !text(&more).contains("warmStart"),
        "{}",
        text(&more)
    );
}
