//! Report formats on a fixed experiment stored in a real SQLite database: snapshot tests of
//! the table and CSV, a structural (schema) check of the Katib JSON, and counts of the marks
//! in the HTML plots. Set `UPDATE_SNAPSHOTS=1` to rewrite the snapshots after a deliberate
//! change, then review the diff.

use super::table::TableOptions;
use super::*;
use serde_json::Value;
use vernier_core::Observation;
use vernier_store::ExperimentStatusRow;

const SPEC: &str = r#"
apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: fixture
spec:
  objective:
    type: minimize
    objectiveMetricName: loss
    additionalMetricNames: [accuracy]
    metricStrategies:
      - name: accuracy
        value: max
  algorithm:
    algorithmName: random
  maxTrialCount: 5
  parameters:
    - name: lr
      parameterType: double
      feasibleSpace: {min: "0.001", max: "0.1", distribution: logUniform}
    - name: optimizer
      parameterType: categorical
      feasibleSpace: {list: [sgd, adam]}
  trialTemplate:
    primaryContainerName: training
    trialParameters:
      - {name: lr, reference: lr}
      - {name: optimizer, reference: optimizer}
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
                command: [python3, train.py, "${trialParameters.lr}", "${trialParameters.optimizer}"]
"#;

const T0: i64 = 1_700_000_000_000_000;

/// (lr, optimizer, state, loss curve, accuracy) per trial.
type TrialFixture = (&'static str, &'static str, TrialState, &'static [f64], f64);

const TRIALS: [TrialFixture; 5] = [
    (
        "0.01",
        "sgd",
        TrialState::Succeeded,
        &[0.9, 0.5, 0.31],
        0.81,
    ),
    (
        "0.05",
        "adam",
        TrialState::Succeeded,
        &[0.8, 0.3, 0.12],
        0.9,
    ),
    ("0.002", "sgd", TrialState::EarlyStopped, &[1.2, 1.1], 0.4),
    ("0.09", "adam", TrialState::Failed, &[0.05], 0.2),
    (
        "0.02",
        "adam",
        TrialState::Succeeded,
        &[0.7, 0.4, 0.2],
        0.85,
    ),
];

pub(crate) async fn fixture() -> (tempfile::TempDir, ExperimentReport) {
    fixture_from(SPEC).await
}

/// The fixture's trials under another objective section.
async fn fixture_from(spec_text: &str) -> (tempfile::TempDir, ExperimentReport) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqlStore::connect(&dir.path().join("r.db").display().to_string())
        .await
        .unwrap();
    let spec = vernier_spec::parse_experiment(spec_text).unwrap();
    let ended = ExperimentStatusRow {
        phase: "Succeeded".into(),
        reason: "ExperimentMaxTrialsReached".into(),
        message: "Experiment has succeeded because max trial count has reached".into(),
        started_us: Some(T0),
        completed_us: Some(T0 + 600_000_000),
        algorithm_state: None,
        conditions_json: "[]".into(),
    };
    // Recorded as a run records it: the experiment ends after its trials' observations, which
    // are final from then on.
    let running = ExperimentStatusRow {
        phase: "Running".into(),
        completed_us: None,
        ..ended.clone()
    };
    store
        .create_experiment(&ExperimentRow {
            name: "fixture".into(),
            spec_json: serde_json::to_string(&spec).unwrap(),
            seed: 7,
            created_us: T0,
            work_dir: ".".into(),
            log_dir: "logs".into(),
            status: running,
        })
        .await
        .unwrap();
    for (seq, (lr, opt, state, curve, acc)) in TRIALS.iter().enumerate() {
        let name = format!("fixture-{seq}");
        let start = T0 + seq as i64 * 60_000_000;
        store
            .insert_trial(&TrialRow {
                experiment: "fixture".into(),
                name: name.clone(),
                seq: seq as i64,
                assignment: vec![
                    ("lr".into(), lr.to_string()),
                    ("optimizer".into(), opt.to_string()),
                ],
                labels: Default::default(),
                state: *state,
                reason: format!("Trial{}", state.as_str()),
                message: String::new(),
                created_us: start,
                started_us: Some(start + 1_000_000),
                completed_us: Some(start + 1_000_000 + (seq as i64 + 1) * 2_500_000),
                attempt: 1,
                early_stopping_rules: None,
                stop_step: None,
            })
            .await
            .unwrap();
        let mut obs: Vec<Observation> = curve
            .iter()
            .enumerate()
            .map(|(k, v)| Observation {
                metric: "loss".into(),
                timestamp_us: start + 2_000_000 + k as i64 * 1_000_000,
                value: v.to_string(),
            })
            .collect();
        obs.push(Observation {
            metric: "accuracy".into(),
            timestamp_us: start + 9_000_000,
            value: acc.to_string(),
        });
        store.report_observations(&name, &obs).await.unwrap();
    }
    store
        .update_experiment_status("fixture", &ended)
        .await
        .unwrap();
    let mut report = load(&store, "fixture").await.unwrap();
    load_curves(&store, &mut report, html::MAX_CURVES)
        .await
        .unwrap();
    (dir, report)
}

fn snapshot(name: &str, actual: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/snapshots")
        .join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run with UPDATE_SNAPSHOTS=1", path.display()));
    assert_eq!(
        actual, expected,
        "{name} changed; if intended, rerun with UPDATE_SNAPSHOTS=1 and review the diff"
    );
}

/// A long parameter value is cut in the table, which says where it is whole: one such value
/// widened every row to its length.
#[tokio::test]
async fn a_long_value_is_cut_in_the_table_and_whole_in_json() {
    let (_dir, mut r) = fixture().await;
    let long = "x".repeat(5000);
    r.trials[1].row.assignment[1].1 = long.clone();
    let text = table::render(&r, TableOptions::default());
    assert!(text.lines().all(|l| l.chars().count() < 400), "{text}");
    assert!(
        text.contains(&format!("{}... (5000 chars)", "x".repeat(80))),
        "{text}"
    );
    assert!(
        text.contains("`vernier report fixture --format json` or `--format csv` shows them whole")
    );
    assert!(r.to_katib_json().to_string().contains(&long));
}

#[tokio::test]
async fn table_snapshot_ranks_best_first_with_strategies_and_durations() {
    let (_dir, r) = fixture().await;
    let plain = table::render(&r, TableOptions::default());
    snapshot("table.txt", &plain);
    let top = table::render(
        &r,
        TableOptions {
            top: Some(2),
            highlight: false,
            width: None,
        },
    );
    snapshot("table_top2.txt", &top);
    // On a terminal the best row is styled; nowhere else.
    let styled = table::render(
        &r,
        TableOptions {
            top: None,
            highlight: true,
            width: None,
        },
    );
    assert!(styled.contains("\u{1b}["), "{styled}");
    assert!(!plain.contains('\u{1b}'));
}

#[tokio::test]
async fn a_table_fitted_to_a_narrow_terminal_wraps_cells_and_loses_no_trial() {
    let (_dir, r) = fixture().await;
    for width in [80u16, 100] {
        let text = table::render(
            &r,
            TableOptions {
                width: Some(width),
                ..TableOptions::default()
            },
        );
        let table_lines = text
            .lines()
            .filter(|l| l.starts_with(['┌', '│', '╞', '├', '└']));
        for line in table_lines {
            assert!(
                line.chars().count() <= usize::from(width),
                "{width}: {line}\n{text}"
            );
        }
        for t in &r.trials {
            assert!(
                text.contains(&t.row.name),
                "{} missing at {width}\n{text}",
                t.row.name
            );
        }
    }
}

#[tokio::test]
async fn csv_snapshot_has_one_row_per_trial_and_a_column_per_parameter_and_metric() {
    let (_dir, r) = fixture().await;
    let text = csv::render(&r);
    snapshot("report.csv", &text);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + TRIALS.len());
    assert!(lines[0].starts_with("trial,index,condition,best,lr,optimizer,loss,accuracy,"));
}

/// An algorithm's labels (here Hyperband's) become the last columns, one per key, empty
/// where a trial lacks one; a key that is already a column's name says it is a label.
#[tokio::test]
async fn csv_has_a_column_per_trial_label() {
    let (_dir, mut r) = fixture().await;
    let labels = [("vernier.hyperband/rung", "0"), ("loss", "x")];
    r.trials[1].row.labels = labels.map(|(k, v)| (k.into(), v.into())).into();
    r.trials[3].row.labels = [("vernier.hyperband/rung".into(), "1".into())].into();
    let text = csv::render(&r);
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(
        rows[0][rows[0].len() - 2..],
        ["loss (label)", "vernier.hyperband/rung"]
    );
    let tail: Vec<&[&str]> = rows[1..].iter().map(|r| &r[r.len() - 2..]).collect();
    let expected: [&[&str]; 5] = [&["", ""], &["x", "0"], &["", ""], &["", "1"], &["", ""]];
    assert_eq!(tail, expected);
}

/// Checks `v` has every key with the JSON type named: `s` string, `n` number, `a` array,
/// `o` object, `s?` string or null.
fn require(v: &Value, path: &str, fields: &[(&str, &str)]) {
    for (key, ty) in fields {
        let f = &v[*key];
        let ok = match *ty {
            "s" => f.is_string(),
            "s?" => f.is_string() || f.is_null(),
            "n" => f.is_u64(),
            "a" => f.is_array(),
            "o" => f.is_object(),
            _ => unreachable!(),
        };
        assert!(ok, "{path}.{key} should be {ty}, is {f}");
    }
}

#[tokio::test]
async fn json_report_has_katibs_shape() {
    let (_dir, r) = fixture().await;
    let j = r.to_katib_json();
    require(
        &j,
        "",
        &[
            ("apiVersion", "s"),
            ("kind", "s"),
            ("metadata", "o"),
            ("spec", "o"),
            ("status", "o"),
            ("trials", "a"),
        ],
    );
    assert_eq!(j["kind"], "Experiment");
    require(&j["metadata"], "metadata", &[("name", "s")]);
    require(
        &j["spec"],
        "spec",
        &[
            ("objective", "o"),
            ("parameters", "a"),
            ("trialTemplate", "o"),
        ],
    );
    let st = &j["status"];
    require(
        st,
        "status",
        &[
            ("startTime", "s?"),
            ("completionTime", "s?"),
            ("conditions", "a"),
            ("currentOptimalTrial", "o"),
            ("succeededTrialList", "a"),
            ("trials", "n"),
            ("trialsSucceeded", "n"),
            ("trialsFailed", "n"),
            ("trialsKilled", "n"),
            ("trialsPending", "n"),
            ("trialsRunning", "n"),
            ("trialsEarlyStopped", "n"),
            ("trialMetricsUnavailable", "n"),
        ],
    );
    let best = &st["currentOptimalTrial"];
    require(
        best,
        "currentOptimalTrial",
        &[
            ("bestTrialName", "s"),
            ("parameterAssignments", "a"),
            ("observation", "o"),
        ],
    );
    assert_eq!(best["bestTrialName"], "fixture-1");
    let metric_fields = [("name", "s"), ("min", "s"), ("max", "s"), ("latest", "s")];
    for m in best["observation"]["metrics"].as_array().unwrap() {
        require(
            m,
            "currentOptimalTrial.observation.metrics[]",
            &metric_fields,
        );
    }
    let trials = j["trials"].as_array().unwrap();
    assert_eq!(trials.len(), TRIALS.len());
    for t in trials {
        require(
            t,
            "trials[]",
            &[
                ("apiVersion", "s"),
                ("kind", "s"),
                ("metadata", "o"),
                ("spec", "o"),
                ("status", "o"),
            ],
        );
        assert_eq!(t["kind"], "Trial");
        for a in t["spec"]["parameterAssignments"].as_array().unwrap() {
            require(
                a,
                "parameterAssignments[]",
                &[("name", "s"), ("value", "s")],
            );
        }
        for c in t["status"]["conditions"].as_array().unwrap() {
            require(
                c,
                "trials[].status.conditions[]",
                &[
                    ("type", "s"),
                    ("status", "s"),
                    ("reason", "s"),
                    ("message", "s"),
                    ("lastUpdateTime", "s"),
                    ("lastTransitionTime", "s"),
                ],
            );
        }
        for m in t["status"]["observation"]["metrics"].as_array().unwrap() {
            require(m, "trials[].status.observation.metrics[]", &metric_fields);
        }
    }
}

/// Until a trial has a value of the objective there is nothing to plot: a line says so
/// instead of empty axes.
#[tokio::test]
async fn html_without_an_objective_value_says_so_instead_of_plotting() {
    let (_dir, mut r) = fixture().await;
    for t in &mut r.trials {
        t.objective = None;
    }
    let page = html::render(&r, html::HtmlOptions::default());
    assert!(!page.contains("<div class=\"plots\">"), "no empty charts");
    assert!(page.contains("No trial has a value of loss yet"));
}

/// The page says why each trial that did not succeed ended so: its message (with the hint on
/// a line of its own) and an early-stopped trial's rule; succeeded trials are not listed.
#[tokio::test]
async fn html_says_why_trials_did_not_succeed() {
    let (_dir, mut r) = fixture().await;
    r.trials[3].row.message = "the trial process exited with code 3\nhint: read its log".into();
    r.trials[2].row.message = "Trial is early stopped".into();
    r.trials[2].row.early_stopping_rules =
        Some(r#"[{"name":"loss","value":"0.9","comparison":"greater","startStep":2}]"#.into());
    let page = html::render(&r, html::HtmlOptions::default());
    let start = page
        .find("<h2>Trials that did not succeed</h2>")
        .expect("the section");
    let section = &page[start..];
    assert!(section.contains("2 of 5 trials."), "{section}");
    assert!(section.contains(
        "<tr><td>fixture-2</td><td>EarlyStopped</td><td class=\"why\">Trial is early stopped<br>rule: stop when loss &gt; 0.9 from its value 2 on</td></tr>"
    ), "{section}");
    assert!(section.contains(
        "<tr><td>fixture-3</td><td>Failed</td><td class=\"why\">the trial process exited with code 3<br>hint: read its log</td></tr>"
    ), "{section}");
    assert!(!section.contains("fixture-0"), "{section}");
    // The dashboard's trial page gets the rule in the same words.
    let trial = crate::dashboard::trial_json(&r, 2, &[], serde_json::Value::Null);
    assert_eq!(
        trial["trial"]["rule"],
        "stop when loss > 0.9 from its value 2 on"
    );
    // A failed trial ran under a rule too, but the rule did not end it: not shown.
    r.trials[3].row.early_stopping_rules = r.trials[2].row.early_stopping_rules.clone();
    let trial = crate::dashboard::trial_json(&r, 3, &[], serde_json::Value::Null);
    assert!(trial["trial"]["rule"].is_null());
    let page = html::render(&r, html::HtmlOptions::default());
    assert_eq!(page.matches("rule: stop when").count(), 1);
    for t in &mut r.trials {
        t.row.state = TrialState::Succeeded;
    }
    let page = html::render(&r, html::HtmlOptions::default());
    assert!(!page.contains("Trials that did not succeed"));
}

#[tokio::test]
async fn html_has_every_plot_with_one_mark_per_datum() {
    let (_dir, r) = fixture().await;
    let page = html::render(&r, html::HtmlOptions::default());
    let count = |id: &str, mark: &str| {
        let start = page
            .find(&format!("id=\"{id}\""))
            .unwrap_or_else(|| panic!("{id}"));
        let end = start + page[start..].find("</svg>").unwrap();
        page[start..end].matches(mark).count()
    };
    // All five trials report loss (the failed one is drawn grey); four succeeded or stopped
    // early and count as results.
    assert_eq!(count("plot-history", "class=\"point\""), 5);
    assert_eq!(count("plot-parallel", "class=\"trace\""), 4);
    assert_eq!(count("plot-slice-lr", "class=\"point\""), 4);
    assert_eq!(count("plot-slice-optimizer", "class=\"point\""), 4);
    assert_eq!(count("plot-importance", "class=\"bar\""), 2);
    assert_eq!(count("plot-curves", "class=\"curve\""), 3);
    assert_eq!(count("plot-curves", "class=\"curve early-stopped\""), 1);
    assert!(
        !page.contains("http-equiv=\"refresh\""),
        "finished: no refresh"
    );
    assert!(!page.contains("<script"), "no scripts");
    assert_eq!(page.matches("<tr class=\"trial").count(), TRIALS.len());
    // Importance bars are shares that add up to 100%.
    let start = page.find("id=\"plot-importance\"").unwrap();
    let plot = &page[start..start + page[start..].find("</svg>").unwrap()];
    let shares: f64 = plot
        .split("class=\"value\"")
        .skip(1)
        .filter_map(|t| t.split('>').nth(1)?.split('%').next()?.parse::<f64>().ok())
        .sum();
    assert!((shares - 100.0).abs() < 0.15, "{shares}");
    // Four results are few: the chart says what its shares rest on.
    assert!(
        plot.contains("Parameter importance: rough, from 4 trials (under 50)"),
        "{plot}"
    );
    // And how much the shares divide: the largest ε², what one parameter explains alone.
    let strongest = r
        .importance()
        .iter()
        .filter_map(|(_, e)| *e)
        .fold(0.0, f64::max);
    assert!(strongest > 0.0 && strongest <= 1.0);
    assert!(
        plot.contains(&format!(
            "; the strongest alone explains {:.1}%",
            100.0 * strongest
        )),
        "{plot}"
    );
    assert!(
        !page.contains("id=\"failure\""),
        "succeeded: no failure banner"
    );
}

#[tokio::test]
async fn a_failed_experiments_page_says_why_first() {
    let (_dir, mut r) = fixture().await;
    r.row.status.phase = "Failed".into();
    r.row.status.reason = "ExperimentMaxFailedTrialsReached".into();
    r.row.status.message = "3 trials failed; trial fixture-4: exit code 1".into();
    let page = html::render(&r, html::HtmlOptions::default());
    let banner = page.find("id=\"failure\"").expect("failure banner");
    assert!(banner < page.find("<h2>Summary").unwrap());
    assert!(
        page[banner..].contains("ExperimentMaxFailedTrialsReached</strong><br>3 trials failed")
    );
}

#[tokio::test]
async fn comparison_reports_when_the_best_was_reached() {
    let (_dir, r) = fixture().await;
    let c = compare::Convergence::of(&r);
    assert_eq!(
        c.best_so_far,
        vec![Some(0.31), Some(0.12), Some(0.12), Some(0.12), Some(0.12)]
    );
    assert_eq!(c.best_at(), Some(2));
    assert_eq!(c.at(10), None);
    let j = compare::json(std::slice::from_ref(&c));
    assert_eq!(j[0]["bestAtTrial"], 2);
    assert_eq!(j[0]["bestSoFarAt"]["all"], 0.12);
}

/// Two objectives (loss and, for the test's sake, accuracy both minimised) and a constraint
/// `accuracy >= 0.5`: trials 0, 1 and 4 trade one off against the other; trial 2 would join
/// them with the lowest accuracy but breaks the constraint; trial 3 failed.
fn multi_objective_spec() -> String {
    SPEC.replace(
        "    type: minimize\n    objectiveMetricName: loss\n    additionalMetricNames: [accuracy]\n    metricStrategies:\n      - name: accuracy\n        value: max\n",
        "    objectives:\n      - {metricName: loss, type: minimize}\n      - {metricName: accuracy, type: minimize}\n    constraints:\n      - {metricName: accuracy, op: \">=\", value: 0.5}\n    metricStrategies:\n      - name: accuracy\n        value: max\n",
    )
    .replace("algorithmName: random", "algorithmName: nsga2")
}

/// A text objective (a DARTS genotype) has no order, but the best trial (the latest that
/// succeeded) still ranks first, as every format's "best first" says.
#[tokio::test]
async fn the_best_trial_ranks_first_when_the_objective_is_text() {
    let (_dir, mut r) = fixture().await;
    for t in &mut r.trials {
        t.objective = None;
        t.values.clear();
    }
    let last = r.trials.len() - 1;
    r.best = Some(last);
    assert_eq!(r.ranked()[0], last);
}

/// A trial that reported only the first of two objectives is never ranked first: it cannot be
/// the experiment's result, as `best_trial` decides.
#[tokio::test]
async fn with_two_objectives_a_trial_missing_one_is_not_ranked_first() {
    let spec = multi_objective_spec().replace(
        "    constraints:\n      - {metricName: accuracy, op: \">=\", value: 0.5}\n",
        "",
    );
    let (_dir, mut r) = fixture_from(&spec).await;
    assert_eq!(r.ranked()[0], 1);
    r.trials[1].values.remove("accuracy");
    assert!(!r.is_result(&r.trials[1]));
    assert_ne!(r.ranked()[0], 1);
}

/// With two objectives the front's members come first: here trial 1 dominates trials 0 and 4,
/// so trial 2 (worst loss, lowest accuracy) is on the front and ranks before them.
#[tokio::test]
async fn with_two_objectives_the_front_is_ranked_first() {
    let spec = multi_objective_spec().replace(
        "    constraints:\n      - {metricName: accuracy, op: \">=\", value: 0.5}\n",
        "",
    );
    let (_dir, mut r) = fixture_from(&spec).await;
    assert_eq!(r.front, vec![0, 1, 2, 4]);
    r.trials[1].values.insert("accuracy".into(), 0.5);
    r.front = vec![1, 2];
    assert_eq!(r.ranked(), vec![1, 2, 4, 0, 3]);
}

#[tokio::test]
async fn multi_objective_reports_show_the_feasible_front() {
    let spec = multi_objective_spec();
    assert!(
        spec.contains("objectives:"),
        "the fixture's objective section moved"
    );
    let (_dir, r) = fixture_from(&spec).await;
    assert!(r.objective.is_multi());
    assert_eq!(r.front, vec![0, 1, 4]);
    assert_eq!(r.best, Some(1));

    let text = table::render(&r, TableOptions::default());
    snapshot("table_multi.txt", &text);
    let marked = text.lines().filter(|l| l.starts_with("│ * ")).count();
    assert_eq!(marked, 3, "{text}");
    // The early-stopped and the failed trial both break the accuracy constraint.
    assert_eq!(
        text.lines().filter(|l| l.starts_with("│ ! ")).count(),
        2,
        "{text}"
    );

    let csv_text = csv::render(&r);
    snapshot("report_multi.csv", &csv_text);
    let header: Vec<&str> = csv_text.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<&str>> = csv_text
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    let on_front: Vec<&str> = rows.iter().map(|r| r[col("pareto_front")]).collect();
    assert_eq!(on_front, ["true", "true", "false", "false", "true"]);
    assert_eq!(rows[2][col("feasible")], "false");

    let json = r.to_katib_json();
    let front: Vec<&str> = json["status"]["paretoFront"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["trialName"].as_str().unwrap())
        .collect();
    assert_eq!(front, ["fixture-0", "fixture-1", "fixture-4"]);
    assert_eq!(
        json["status"]["currentOptimalTrial"]["bestTrialName"],
        "fixture-1"
    );

    let page = html::render(&r, html::HtmlOptions::default());
    let start = page
        .find("id=\"plot-pareto-loss-accuracy\"")
        .expect("front plot");
    let end = start + page[start..].find("</svg>").unwrap();
    let plot = &page[start..end];
    // Every finished trial with both values: the failed one too (it reported both).
    assert_eq!(plot.matches("class=\"front\"").count(), 3);
    assert_eq!(plot.matches("class=\"infeasible\"").count(), 2);
    assert_eq!(plot.matches("class=\"front-line\"").count(), 1);
    assert!(page.contains("<tr><th>Other objectives</th><td>minimize accuracy</td></tr>"));
    assert!(page.contains("<tr><th>Constraints</th><td>accuracy &gt;= 0.5</td></tr>"));
}

#[tokio::test]
async fn single_objective_reports_have_no_front_extras() {
    let (_dir, r) = fixture().await;
    assert_eq!(r.front, r.best.into_iter().collect::<Vec<_>>());
    assert!(r.to_katib_json()["status"].get("paretoFront").is_none());
    let page = html::render(&r, html::HtmlOptions::default());
    assert!(!page.contains("Pareto front") && !page.contains("Constraints"));
    assert!(!csv::render(&r).contains("pareto_front"));
}

/// One objective under the constraint `accuracy <= 0.85`: trial 1 has the lowest loss but breaks
/// it, so trial 4 is the best, and every view ranks and draws it so, not only the headline.
#[tokio::test]
async fn a_trial_breaking_a_constraint_is_never_ranked_or_drawn_as_best() {
    let spec = SPEC.replace(
        "      - name: accuracy\n        value: max\n",
        "      - name: accuracy\n        value: max\n    constraints:\n      - {metricName: accuracy, op: \"<=\", value: 0.85}\n",
    );
    assert!(
        spec.contains("constraints:"),
        "the fixture's objective moved"
    );
    let (_dir, r) = fixture_from(&spec).await;
    assert_eq!(r.best, Some(4));
    assert_eq!(r.ranked(), vec![4, 0, 2, 1, 3]);
    assert_eq!(
        r.best_so_far(),
        vec![Some(0.31), Some(0.31), Some(0.31), Some(0.31), Some(0.2)]
    );
    let c = compare::Convergence::of(&r);
    assert_eq!(c.best_at(), Some(5));

    let text = table::render(&r, TableOptions::default());
    let first_row = text.lines().find(|l| l.contains("fixture-")).unwrap();
    assert!(first_row.contains("fixture-4"), "{text}");
    let dash = dashboard::experiment_json(&r);
    assert_eq!(dash["trials"][4]["rank"], 1);
    assert_eq!(dash["trials"][1]["rank"], 4);
}

/// Categorical values are labels: the dashboard learns the choices in spec order, so `"007"` is
/// never shown as 7, and numeric parameters have none.
#[tokio::test]
async fn the_dashboard_knows_which_parameters_are_categorical() {
    let (_dir, r) = fixture().await;
    let dash = dashboard::experiment_json(&r);
    assert_eq!(dash["parameters"][0]["choices"], Value::Null);
    assert_eq!(
        dash["parameters"][1]["choices"],
        serde_json::json!(["sgd", "adam"])
    );
}

/// A database written before the store kept observation summaries (simulated: the summaries
/// removed and every trial marked pending, as migration 0002 leaves such a database) gives
/// the same report, reduced from the raw logs.
#[tokio::test]
async fn databases_without_summaries_report_the_same_from_raw_logs() {
    use sqlx::{Connection, Executor};
    let (dir, from_summaries) = fixture().await;
    let path = dir.path().join("r.db").display().to_string();
    let mut raw = sqlx::SqliteConnection::connect(&format!("sqlite://{path}"))
        .await
        .unwrap();
    raw.execute(
        "DELETE FROM observation_summaries; \
         INSERT INTO observation_summaries_pending (trial_name) \
         SELECT DISTINCT trial_name FROM observation_logs;",
    )
    .await
    .unwrap();
    let _ = raw.close().await;
    let store = SqlStore::connect(&path).await.unwrap();
    assert_eq!(
        store
            .experiment_summaries("fixture")
            .await
            .unwrap()
            .unreduced
            .len(),
        TRIALS.len()
    );
    let mut from_raw = load(&store, "fixture").await.unwrap();
    load_curves(&store, &mut from_raw, html::MAX_CURVES)
        .await
        .unwrap();
    assert_eq!(from_raw.to_katib_json(), from_summaries.to_katib_json());
    assert_eq!(csv::render(&from_raw), csv::render(&from_summaries));
    assert_eq!(
        html::render(&from_raw, Default::default()),
        html::render(&from_summaries, Default::default())
    );
    let points: Vec<i64> = from_raw.trials.iter().map(|t| t.curve_points).collect();
    assert_eq!(points, vec![3, 3, 2, 1, 3]);
}

/// As Katib's controller writes a Trial's observation: a metric with a strategy that the
/// trial did not report is listed as `unavailable`, once the trial reported anything.
#[tokio::test]
async fn an_unreported_metric_is_unavailable_in_the_katib_observation() {
    let (_dir, mut r) = fixture().await;
    r.trials[0].metrics.retain(|m| m.name != "accuracy");
    r.trials[1].metrics.clear();
    let json = r.to_katib_json();
    let metrics = |i: usize| json["trials"][i]["status"]["observation"]["metrics"].clone();
    let accuracy = metrics(0)
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "accuracy")
        .cloned()
        .expect("accuracy listed");
    assert_eq!(
        accuracy,
        serde_json::json!({"name": "accuracy", "min": "unavailable", "max": "unavailable", "latest": "unavailable"})
    );
    assert_eq!(metrics(1), serde_json::json!([]));
    assert_eq!(metrics(2).as_array().unwrap().len(), 2);
}

/// A report read again (a live dashboard page) takes an ended trial's curve from the earlier
/// report when it has as many values, and reads any other curve from the store.
#[tokio::test]
async fn curves_of_ended_trials_are_taken_from_an_earlier_report() {
    let (dir, first) = fixture().await;
    let store = SqlStore::connect(&dir.path().join("r.db").display().to_string())
        .await
        .unwrap();
    let mut earlier = first.clone();
    // Marked values: taken only where the earlier report may stand for the store.
    for t in &mut earlier.trials {
        for point in &mut t.curve {
            point.1 = -1.0;
        }
    }
    let with_curve = |r: &ExperimentReport, name: &str| {
        let t = r.trials.iter().find(|t| t.row.name == name).unwrap();
        t.curve.iter().map(|p| p.1).collect::<Vec<f64>>()
    };
    let mut again = load(&store, "fixture").await.unwrap();
    load_curves_keeping(&store, &mut again, html::MAX_CURVES, Some(&earlier))
        .await
        .unwrap();
    assert_eq!(with_curve(&again, "fixture-0"), [-1.0; 3]);
    // The trial was still running when read before: its values may have grown since.
    earlier.trials[0].row.state = TrialState::Running;
    let mut again = load(&store, "fixture").await.unwrap();
    load_curves_keeping(&store, &mut again, html::MAX_CURVES, Some(&earlier))
        .await
        .unwrap();
    assert_eq!(with_curve(&again, "fixture-0"), [0.9, 0.5, 0.31]);
    // As many values differently counted (a report of another run of that name): read again.
    earlier.trials[0].row.state = TrialState::Succeeded;
    earlier.trials[0].curve_points = 2;
    let mut again = load(&store, "fixture").await.unwrap();
    load_curves_keeping(&store, &mut again, html::MAX_CURVES, Some(&earlier))
        .await
        .unwrap();
    assert_eq!(with_curve(&again, "fixture-0"), [0.9, 0.5, 0.31]);
    assert_eq!(with_curve(&again, "fixture-1"), [-1.0; 3]);
}
