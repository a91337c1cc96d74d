//! Checkpoint directories end to end: PBT's example continues members from their parents'
//! checkpoints, and ASHA's promotions continue instead of re-training.

use crate::harness::{Sandbox, text, trials_in};
use std::path::Path;

/// An example experiment from `examples/`, with its trainer paths made absolute.
fn example(name: &str) -> String {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let yaml = std::fs::read_to_string(examples.join(name)).unwrap();
    yaml.replace(
        "\"trainers/",
        &format!("\"{}/", examples.join("trainers").display()),
    )
}

fn label<'a>(t: &'a serde_json::Value, key: &str) -> Option<&'a str> {
    t["metadata"]["labels"][key].as_str()
}

fn trial_log(sb: &Sandbox, exp: &str, trial: &str) -> String {
    std::fs::read_to_string(sb.path().join(format!("vernier-logs/{exp}/{trial}.log"))).unwrap()
}

#[test]
fn pbt_example_continues_members_from_their_parents_checkpoints() {
    let sb = Sandbox::new();
    let yaml = example("pbt-schedule.yaml").replace("maxTrialCount: 80", "maxTrialCount: 16");
    let file = sb.write("pbt.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap(), "--seed", "3"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("pbt-schedule");
    let ok = trials_in(&r, "Succeeded");
    assert_eq!(ok.len(), 16, "{r:#}");
    let generation = |g: &str| -> Vec<&serde_json::Value> {
        ok.iter()
            .filter(|t| label(t, "pbt.suggestion.katib.kubeflow.org/generation") == Some(g))
            .collect()
    };
    assert_eq!(generation("0").len(), 8);
    let second = generation("1");
    assert_eq!(second.len(), 8);
    let first_names: Vec<&str> = generation("0")
        .iter()
        .map(|t| t["metadata"]["name"].as_str().unwrap())
        .collect();
    let mut exploited = 0;
    for t in second {
        let name = t["metadata"]["name"].as_str().unwrap();
        let parent = label(t, "pbt.suggestion.katib.kubeflow.org/parent").unwrap();
        assert!(first_names.contains(&parent), "{parent} is not a member");
        if label(t, "vernier.pbt/member").unwrap()
            != label(
                ok.iter().find(|p| p["metadata"]["name"] == parent).unwrap(),
                "vernier.pbt/member",
            )
            .unwrap()
        {
            exploited += 1;
        }
        // The trainer found the parent's checkpoint at suggestion_trial_dir and went on.
        let log = trial_log(&sb, "pbt-schedule", name);
        assert!(log.contains("resumed after epoch 2"), "{log}");
        assert!(log.contains("epoch 4 "), "{log}");
        let own = sb.path().join(format!(
            "vernier-logs/pbt-schedule/checkpoints/{name}/training.json"
        ));
        assert!(own.exists(), "{}", own.display());
    }
    // floor(8 · 0.25) = 2 members take a better member's checkpoint.
    assert_eq!(exploited, 2);
}

#[test]
fn asha_promotions_continue_from_the_parent_checkpoint() {
    let sb = Sandbox::new();
    let yaml = example("asha-census.yaml").replace("maxTrialCount: 40", "maxTrialCount: 14");
    let file = sb.write("asha.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap(), "--seed", "4"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("asha-census");
    let ok = trials_in(&r, "Succeeded");
    let promoted: Vec<_> = ok
        .iter()
        .filter(|t| label(t, "vernier.asha/parent").is_some())
        .collect();
    assert!(!promoted.is_empty(), "{r:#}");
    for t in promoted {
        let name = t["metadata"]["name"].as_str().unwrap();
        let log = trial_log(&sb, "asha-census", name);
        // Rung 1 runs 3 epochs, continuing after its parent's 1 (rung 2: 9 after 3).
        assert!(
            log.contains("resumed from") && log.contains("after epoch 1")
                || log.contains("after epoch 3"),
            "{log}"
        );
    }
}

/// A PBT experiment of 5 members, one at a time, whose trainer writes a file into its
/// checkpoint directory. The last member of the first generation replaces the experiment's
/// `checkpoints` folder with a regular file as it ends, so no child can get a copy of its
/// parent's checkpoint (a file stops the copy for root too, unlike permissions).
const PBT_CHECKPOINTS_GONE: &str = r#"apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: ckpt
spec:
  maxTrialCount: 7
  parallelTrialCount: 1
  maxFailedTrialCount: 1
  objective:
    type: minimize
    objectiveMetricName: loss
  algorithm:
    algorithmName: pbt
    algorithmSettings:
      - name: suggestion_trial_dir
        value: /var/log/katib/checkpoints/
      - name: n_population
        value: "5"
      - name: truncation_threshold
        value: "0.2"
  parameters:
    - name: lr
      parameterType: double
      feasibleSpace:
        min: "0.01"
        max: "0.1"
  trialTemplate:
    primaryContainerName: training
    trialParameters:
      - name: lr
        reference: lr
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
                  - |
                    import os, sys
                    own = sys.argv[2]
                    open(os.path.join(own, 'model'), 'w').write(sys.argv[1])
                    root = os.path.dirname(own.rstrip('/'))
                    if len(os.listdir(root)) == 5:
                        os.rename(root, root + '.moved')
                        open(root, 'w').close()
                    print('loss=' + sys.argv[1])
                  - "${trialParameters.lr}"
                  - /var/log/katib/checkpoints/
"#;

/// A child whose checkpoint directory cannot be prepared is recorded Failed with the path and
/// the reason, not lost and not started; the members before it keep their results.
#[test]
fn a_checkpoint_that_cannot_be_prepared_fails_the_trial_and_names_its_directory() {
    let sb = Sandbox::new();
    let file = sb.write("ckpt.yaml", PBT_CHECKPOINTS_GONE);
    let out = sb.run(&["run", file.to_str().unwrap(), "--seed", "5"]);
    // maxFailedTrialCount 1 is reached: the experiment fails.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let r = sb.report("ckpt");
    assert_eq!(trials_in(&r, "Succeeded").len(), 5, "{r:#}");
    let failed = trials_in(&r, "Failed");
    assert_eq!(failed.len(), 1, "{r:#}");
    let child = &failed[0];
    let name = child["metadata"]["name"].as_str().unwrap();
    assert_eq!(
        label(child, "pbt.suggestion.katib.kubeflow.org/generation"),
        Some("1"),
        "{r:#}"
    );
    assert!(
        label(child, "pbt.suggestion.katib.kubeflow.org/parent").is_some(),
        "{r:#}"
    );
    let own = sb
        .path()
        .canonicalize()
        .unwrap()
        .join(format!("vernier-logs/ckpt/checkpoints/{name}"));
    let message = crate::harness::last_condition(child)["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.starts_with(&format!(
            "cannot prepare checkpoint directory {}: ",
            own.display()
        )) && message.contains("Not a directory")
            && message.contains("hint: check that the log directory is writable"),
        "{message}"
    );
    // The run's output says it too, with the trial's name.
    let shown = text(&out);
    assert!(
        shown.lines().any(|l| l.starts_with("Failed")
            && l.contains(name)
            && l.contains(&format!(
                "cannot prepare checkpoint directory {}",
                own.display()
            ))),
        "{shown}"
    );
    // It never ran, so no log is pointed at; and the checkpoint mount the command names is
    // the trial's own folder here, not a missing path of the image.
    assert!(
        !shown.contains(&format!("log: {}", own.with_file_name("").display())),
        "{shown}"
    );
    assert!(!shown.contains(&format!("{name}.log")), "{shown}");
    assert!(
        !shown.contains("names a path that does not exist"),
        "{shown}"
    );
}
