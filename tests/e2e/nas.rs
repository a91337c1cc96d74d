//! Neural architecture search end to end: the DARTS and ENAS examples run locally with their
//! standard-library trial programs; DARTS's text objective is kept and makes the best trial.

use crate::harness::{Sandbox, text, trials_in};
use std::path::Path;

/// An example from `examples/` with its trainer paths made absolute, `edit` applied.
fn example(name: &str, edit: impl Fn(String) -> String) -> String {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let yaml = std::fs::read_to_string(examples.join(name)).unwrap();
    edit(yaml.replace(
        "\"trainers/",
        &format!("\"{}/", examples.join("trainers").display()),
    ))
}

fn assignment<'a>(trial: &'a serde_json::Value, name: &str) -> &'a str {
    trial["spec"]["parameterAssignments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == name)
        .and_then(|a| a["value"].as_str())
        .unwrap_or_else(|| panic!("no {name} in {trial}"))
}

/// `validate` renders the first trial with what the NAS algorithm proposes (its trial
/// parameters, such as DARTS's `algorithm-settings`, exist only in its proposals), so it
/// accepts what `run` runs.
#[test]
fn validate_accepts_the_nas_examples_that_run_runs() {
    for name in ["darts-toy.yaml", "enas-toy.yaml"] {
        let sb = Sandbox::new();
        let file = sb.write(name, &example(name, |y| y));
        let out = sb.run(&["validate", file.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out));
        assert!(text(&out).contains("local: runnable"), "{}", text(&out));
    }
}

/// A NAS trial parameter referring to a name the algorithm does not assign is refused by
/// `run` before anything is recorded, as `validate` refuses it, naming the names there are.
#[test]
fn run_refuses_a_nas_reference_the_algorithm_does_not_assign() {
    let sb = Sandbox::new();
    let yaml = example("enas-toy.yaml", |y| {
        y.replace("reference: architecture", "reference: arch")
    });
    let file = sb.write("enas-badref.yaml", &yaml);
    for command in ["validate", "run"] {
        let out = sb.run(&[command, file.to_str().unwrap()]);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{command}: {said}");
        assert!(
            said.contains("spec.trialTemplate.trialParameters[0].reference: parameter \"arch\" has no value in the trial's assignment")
                && said.contains("hint: its assignment has architecture, nn_config"),
            "{command}: {said}"
        );
    }
    assert!(
        !text(&sb.run(&["list"])).contains("enas"),
        "nothing recorded"
    );
}

#[test]
fn darts_example_records_the_genotype_as_the_best_trial() {
    let sb = Sandbox::new();
    let file = sb.write("darts.yaml", &example("darts-toy.yaml", |y| y));
    let out = sb.run(&["run", file.to_str().unwrap(), "--seed", "3"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("best trial darts-toy-") && text(&out).contains("=Genotype(normal="),
        "{}",
        text(&out)
    );
    // The trial's own line shows its text objective, cut to a line's worth.
    let finished = text(&out)
        .lines()
        .find(|l| l.starts_with("Succeeded darts-toy-"))
        .map(str::to_owned)
        .unwrap_or_default();
    assert!(
        finished.contains("  Best-Genotype=Genotype(normal=") && finished.ends_with("..."),
        "{}",
        text(&out)
    );
    let r = sb.report("darts-toy");
    let done = trials_in(&r, "Succeeded");
    assert_eq!(done.len(), 1, "{r:#}");
    assert_eq!(assignment(&done[0], "num-layers"), "1");
    assert!(assignment(&done[0], "search-space").starts_with("['separable_convolution_3x3', "));
    let best = &r["status"]["currentOptimalTrial"];
    assert_eq!(best["bestTrialName"], done[0]["metadata"]["name"], "{r:#}");
    let genotype = best["observation"]["metrics"][0]["latest"]
        .as_str()
        .unwrap();
    assert!(genotype.starts_with("Genotype(normal=[[('"), "{genotype}");
    let page = sb.path().join("darts.html");
    let out = sb.run(&[
        "report",
        "darts-toy",
        "--format",
        "html",
        "--output",
        page.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("Genotype(normal=[[(&#39;"),
        "the genotype is not shown"
    );
}

#[test]
fn enas_example_runs_trials_with_katibs_assignments() {
    let sb = Sandbox::new();
    let yaml = example("enas-toy.yaml", |y| {
        y.replace("maxTrialCount: 12", "maxTrialCount: 4")
    });
    let file = sb.write("enas.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap(), "--seed", "5"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("enas-toy");
    let done = trials_in(&r, "Succeeded");
    assert_eq!(done.len(), 4, "{r:#}");
    for t in &done {
        let arch = assignment(t, "architecture");
        let rows: Vec<Vec<i64>> = serde_json::from_str(arch).unwrap();
        assert_eq!(rows.iter().map(Vec::len).collect::<Vec<_>>(), vec![1, 2, 3]);
        let config = assignment(t, "nn_config");
        assert!(config.starts_with("{'num_layers': 3, 'input_sizes': [32, 32, 3], 'output_sizes': [10], 'embedding': {'"), "{config}");
    }
    assert!(r["status"]["currentOptimalTrial"]["bestTrialName"].is_string());
}
