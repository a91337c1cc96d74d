//! Reports through the real binary: CSV and table on a real run, `--watch` rewriting an HTML
//! page until the experiment ends, `compare`, and the HTML page opened in headless Chromium
//! (no console errors, the right number of marks per plot, a screenshot kept as an artifact).

use crate::harness::{Sandbox, python_experiment, text, vernier_bin, wait_exit};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Each trial reports `loss` five times (a learning curve) and `accuracy` once.
const CURVE_SCRIPT: &str = "import sys, time\nx = float(sys.argv[1])\nfor i in range(5):\n    print(f'loss={(x - 0.3) ** 2 + 1.0 / (i + 1)}', flush=True)\n    time.sleep(SLEEP)\nprint(f'accuracy={1 - x}')";

fn experiment(sb: &Sandbox, name: &str, trials: u32, sleep: f64) -> PathBuf {
    let yaml = python_experiment(
        name,
        &CURVE_SCRIPT.replace("SLEEP", &sleep.to_string()),
        &format!(
            "  objective:\n    type: minimize\n    objectiveMetricName: loss\n    additionalMetricNames: [accuracy]\n  parallelTrialCount: 1\n  maxTrialCount: {trials}"
        ),
    );
    sb.write(&format!("{name}.yaml"), &yaml)
}

fn run(sb: &Sandbox, name: &str, trials: u32, seed: &str) {
    let file = experiment(sb, name, trials, 0.0);
    let out = sb.run(&["run", file.to_str().unwrap(), "--seed", seed]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn csv_and_table_hold_every_trial_and_top_limits_the_table() {
    let sb = Sandbox::new();
    run(&sb, "rep", 6, "11");
    let out = sb.run(&["report", "rep", "--format", "csv"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let csv = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 7, "{csv}");
    assert!(lines[0].starts_with("trial,index,condition,best,x,loss,accuracy,"));
    assert_eq!(lines.iter().filter(|l| l.contains(",true,")).count(), 1);
    let out = sb.run(&["report", "rep", "--top", "2"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("(2 of 6 trials shown)"), "{table}");
    assert!(
        table.contains("loss (min)") && table.contains("DURATION"),
        "{table}"
    );
    // --top makes no sense for JSON; --watch needs an HTML file.
    let out = sb.run(&["report", "rep", "--format", "json", "--top", "2"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--top only limits the table")
            && err.contains("not --format json")
            && err.contains("hint: drop --top"),
        "{err}"
    );
    let out = sb.run(&["report", "rep", "--watch"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--output"));
    // A directory as --output is refused by name and leaves no temporary file beside it.
    std::fs::create_dir(sb.path().join("out")).unwrap();
    let out = sb.run(&["report", "rep", "--format", "html", "--output", "out"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("--output out is a directory"),
        "{}",
        text(&out)
    );
    assert!(!sb.path().join("out.tmp").exists());
}

/// Each trial carries the experiment's labels, as Katib's `TrialLabels` copies them, under its
/// own experiment label (an experiment's label of that key does not win).
#[test]
fn trials_carry_the_experiments_labels() {
    let sb = Sandbox::new();
    let yaml = std::fs::read_to_string(experiment(&sb, "lab", 2, 0.0)).unwrap();
    let yaml = yaml.replacen(
        "  name: lab\n",
        "  name: lab\n  labels:\n    team: a\n    katib.kubeflow.org/experiment: other\n",
        1,
    );
    let file = sb.write("lab.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap(), "--seed", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("lab");
    let trials = r["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 2);
    for t in trials {
        let labels = &t["metadata"]["labels"];
        assert_eq!(labels["team"], "a", "{labels}");
        assert_eq!(labels["katib.kubeflow.org/experiment"], "lab", "{labels}");
    }
    let csv = sb.run(&["report", "lab", "--format", "csv"]);
    let header = String::from_utf8_lossy(&csv.stdout);
    assert!(
        header.lines().next().unwrap().ends_with(",team"),
        "{header}"
    );
}

/// `--format observations` holds every value each trial printed, numbered per metric, in the
/// order printed; written to a file it matches what stdout shows.
#[test]
fn observations_hold_every_reported_value_in_order() {
    let sb = Sandbox::new();
    run(&sb, "obs", 3, "5");
    let out = sb.run(&["report", "obs", "--format", "observations"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let csv = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows[0], ["trial", "metric", "step", "time", "value"]);
    // Three trials, each five loss values then one accuracy.
    assert_eq!(rows.len(), 1 + 3 * 6, "{csv}");
    for trial in rows[1..].chunks(6) {
        let steps: Vec<&str> = trial.iter().map(|r| r[2]).collect();
        assert_eq!(steps, ["1", "2", "3", "4", "5", "1"], "{csv}");
        let x: f64 = 1.0 - trial[5][4].parse::<f64>().unwrap();
        for (i, r) in trial[..5].iter().enumerate() {
            assert_eq!(r[1], "loss");
            let want = (x - 0.3) * (x - 0.3) + 1.0 / (i as f64 + 1.0);
            let got: f64 = r[4].parse().unwrap();
            assert!((got - want).abs() < 1e-9, "{csv}");
        }
        assert!(
            trial
                .iter()
                .all(|r| r[0] == trial[0][0] && r[3].ends_with('Z'))
        );
    }
    let out = sb.run(&["report", "obs", "--format", "observations", "-o", "obs.csv"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("wrote 18 observation(s) to obs.csv"));
    assert_eq!(
        std::fs::read_to_string(sb.path().join("obs.csv")).unwrap(),
        csv
    );
    let out = sb.run(&[
        "report",
        "none",
        "--format",
        "observations",
        "-o",
        "none.csv",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("experiment \"none\" does not exist"));
    assert!(!sb.path().join("none.csv").exists() && !sb.path().join("none.csv.tmp").exists());
}

/// A watched page that cannot be written is refused at once, not after the experiment
/// appears and runs.
#[test]
fn watch_refuses_an_unwritable_output_before_waiting() {
    let sb = Sandbox::new();
    run(&sb, "other", 1, "1");
    let out = sb.run(&[
        "report",
        "--watch",
        "not-yet",
        "--format",
        "html",
        "--output",
        "missing-dir/x.html",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("cannot write the report to missing-dir/x.html"),
        "{}",
        text(&out)
    );
}

/// `--output` through a symlink writes its target and keeps the link; through a link to the
/// process's own stdout (as `/dev/stdout` is) it prints, where a rename would replace it.
#[test]
fn output_through_a_symlink_writes_its_target() {
    let sb = Sandbox::new();
    run(&sb, "rep", 2, "3");
    let (target, link) = (sb.path().join("target.html"), sb.path().join("report.html"));
    std::fs::write(&target, "keep").unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let out = sb.run(&[
        "report",
        "rep",
        "--format",
        "html",
        "--output",
        "report.html",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(link.is_symlink(), "the link was replaced by a file");
    assert!(std::fs::read_to_string(&target).unwrap().contains("<html"));

    let to_stdout = sb.path().join("stdout");
    std::os::unix::fs::symlink("/proc/self/fd/1", &to_stdout).unwrap();
    let out = sb.run(&["report", "rep", "--format", "csv", "--output", "stdout"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(to_stdout.is_symlink(), "the link was replaced by a file");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("trial,index,"));
}

/// Waits until the watched page is written, failing the test at `deadline`.
fn wait_for_file(page: &Path, deadline: Instant) {
    while !page.exists() {
        assert!(
            Instant::now() < deadline,
            "the watched page was never written"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn watch_refreshes_the_page_while_running_and_exits_when_the_experiment_ends() {
    let sb = Sandbox::new();
    // Another experiment, so the database exists but `watched` does not yet.
    run(&sb, "other", 1, "1");
    let file = experiment(&sb, "watched", 4, 0.25);
    let deadline = Instant::now() + Duration::from_secs(60);
    let page = sb.path().join("watched.html");
    let mut watch = sb
        .cmd(&[
            "report",
            "--watch",
            "watched",
            "--format",
            "html",
            "--output",
            page.to_str().unwrap(),
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(watch.stderr.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
    assert!(
        line.contains("does not exist yet; waiting for it"),
        "{line}"
    );
    // The page is there while it waits (written before the note is read back here).
    let waiting = std::fs::read_to_string(&page).unwrap();
    assert!(
        waiting.contains("Waiting for experiment watched"),
        "{waiting}"
    );
    let mut runner = sb
        .cmd(&["run", file.to_str().unwrap(), "--seed", "5"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_file(&page, deadline);
    let first = std::fs::read_to_string(&page).unwrap();
    assert!(
        first.contains("<meta http-equiv=\"refresh\""),
        "a running experiment's page reloads itself"
    );
    assert_eq!(runner.wait().unwrap().code(), Some(0));
    let status = loop {
        if let Some(s) = watch.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "--watch did not exit");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status.code(), Some(0));
    let mut said = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut said).unwrap();
    assert!(
        said.contains("writing ") && said.contains(" until experiment watched ends"),
        "{said}"
    );
    assert!(said.contains(": watched Running, "), "{said}");
    assert!(said.contains("experiment watched is Succeeded"), "{said}");
    let last = std::fs::read_to_string(&page).unwrap();
    assert!(
        !last.contains("http-equiv=\"refresh\""),
        "a finished page is final"
    );
    assert_eq!(last.matches("<tr class=\"trial").count(), 4);
}

#[test]
fn compare_shows_experiments_side_by_side() {
    let sb = Sandbox::new();
    run(&sb, "cmp-a", 5, "1");
    run(&sb, "cmp-b", 5, "2");
    let out = sb.run(&["compare", "cmp-a", "cmp-b"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("cmp-a") && table.contains("cmp-b") && table.contains("BEST AT"));
    let out = sb.run(&["compare", "cmp-a", "cmp-b", "--format", "json"]);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j.as_array().unwrap().len(), 2);
    for e in j.as_array().unwrap() {
        assert_eq!(e["trials"], 5);
        let at = e["bestAtTrial"].as_u64().unwrap();
        assert!((1..=5).contains(&at));
        assert_eq!(e["bestSoFar"].as_array().unwrap().len(), 5);
        assert!(e["bestSoFarAt"]["10"].is_null());
    }
    let page = sb.path().join("cmp.html");
    let out = sb.run(&[
        "compare",
        "cmp-a",
        "cmp-b",
        "--format",
        "html",
        "-o",
        page.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("class=\"series\"").count(), 2);
    let out = sb.run(&["compare", "cmp-a", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("\"nope\""));
}

/// Chromium on PATH, or `None` after a `SKIPPED` line (a failure under VERNIER_TEST_REQUIRE=1).
pub(crate) fn chromium(test: &str) -> Option<PathBuf> {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if let Ok(out) = Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
            && out.status.success()
        {
            return Some(PathBuf::from(
                String::from_utf8_lossy(&out.stdout).trim().to_string(),
            ));
        }
    }
    crate::harness::available_or_skip(
        false,
        test,
        "chromium is not installed and this test opens the HTML report in a real browser",
        "apt-get install -y chromium",
    );
    None
}

/// Runs headless Chromium on `page` with `extra` arguments; returns (stdout, stderr).
fn headless(browser: &Path, page: &Path, extra: &[&str]) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new("timeout")
        .arg("120")
        .arg(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "chromium failed:\n{stderr}");
    (stdout, stderr)
}

/// How many elements of `class` lie inside the `<svg>` with `id` in a dumped DOM.
fn marks(dom: &str, id: &str, class: &str) -> usize {
    let start = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("plot {id} missing from the rendered page"));
    let end = start + dom[start..].find("</svg>").expect("closed svg");
    dom[start..end]
        .matches(&format!("class=\"{class}\""))
        .count()
}

#[test]
fn html_report_renders_in_a_headless_browser() {
    let sb = Sandbox::new();
    run(&sb, "browsed", 8, "3");
    let page = sb.path().join("browsed.html");
    let out = sb.run(&[
        "report",
        "browsed",
        "--format",
        "html",
        "--output",
        page.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let Some(browser) = chromium("html_report_renders_in_a_headless_browser") else {
        return;
    };
    let (dom, log) = headless(&browser, &page, &["--dump-dom"]);
    for line in log.lines() {
        assert!(
            !line.contains("Uncaught") && !line.contains("ERROR:CONSOLE"),
            "console error while loading the report: {line}"
        );
    }
    assert!(dom.contains("<h1>Experiment browsed</h1>"), "{dom}");
    assert_eq!(marks(&dom, "plot-history", "point"), 8);
    assert_eq!(marks(&dom, "plot-history", "best-so-far"), 1);
    assert_eq!(marks(&dom, "plot-parallel", "trace"), 8);
    assert_eq!(marks(&dom, "plot-slice-x", "point"), 8);
    assert_eq!(marks(&dom, "plot-importance", "bar"), 1);
    assert_eq!(marks(&dom, "plot-curves", "curve"), 8);
    assert_eq!(dom.matches("<tr class=\"trial").count(), 8);
    // The screenshot is kept beside the binary under test, for people to look at.
    let artifacts = vernier_bin().parent().unwrap().join("e2e-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join("report-screenshot.png");
    let _ = std::fs::remove_file(&shot);
    headless(
        &browser,
        &page,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1400,2400",
            "--hide-scrollbars",
        ],
    );
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );
    eprintln!("report screenshot: {}", shot.display());
}

/// Two objectives that trade off along x (`f1 = x`, `f2 = (1 - x)²`), so every feasible trial
/// is on the front, and a constraint `x <= 0.8` that some trials break.
fn multi_objective_experiment(sb: &Sandbox, name: &str, trials: u32) -> PathBuf {
    let yaml = python_experiment(
        name,
        "import sys\nx = float(sys.argv[1])\nprint(f'f1={x} f2={(1 - x) ** 2} c={x}')",
        &format!(
            "  objective:\n    objectives:\n      - {{metricName: f1, type: minimize}}\n      - {{metricName: f2, type: minimize}}\n    constraints:\n      - {{metricName: c, op: \"<=\", value: 0.8}}\n  parallelTrialCount: 2\n  maxTrialCount: {trials}"
        ),
    );
    sb.write(&format!("{name}.yaml"), &yaml)
}

#[test]
fn multi_objective_reports_show_the_front_in_every_format_and_the_browser() {
    let sb = Sandbox::new();
    let file = multi_objective_experiment(&sb, "front", 10);
    let out = sb.run(&["run", file.to_str().unwrap(), "--seed", "5"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let run_said = text(&out);

    let out = sb.run(&["report", "front", "--format", "csv"]);
    let csv = String::from_utf8(out.stdout).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 10, "{csv}");
    let feasible = rows.iter().filter(|r| r[col("feasible")] == "true").count();
    // Every feasible trial trades f1 against f2, so the front is exactly the feasible set.
    for r in &rows {
        assert_eq!(r[col("pareto_front")], r[col("feasible")], "{csv}");
        let x: f64 = r[col("x")].parse().unwrap();
        assert_eq!(r[col("feasible")] == "true", x <= 0.8, "{csv}");
    }
    assert!(
        feasible > 0 && feasible < 10,
        "seed 5 should give both kinds: {csv}"
    );
    // The run's last words name the front and the best trial's value of every objective.
    let best = rows
        .iter()
        .filter(|r| r[col("feasible")] == "true")
        .min_by(|a, b| {
            a[col("x")]
                .parse::<f64>()
                .unwrap()
                .total_cmp(&b[col("x")].parse().unwrap())
        })
        .unwrap();
    let summary = format!(
        "best trial {} (best f1 of the {feasible} trial(s) on the Pareto front): f1=",
        best[col("trial")]
    );
    assert!(run_said.contains(&summary), "{summary}\n{run_said}");
    assert!(run_said.contains(", f2="), "{run_said}");
    // Each progress line counts the front as it grows.
    assert!(
        run_said.contains(" on the Pareto front, best f1="),
        "{run_said}"
    );
    let said = text(&sb.run(&["validate", file.to_str().unwrap()]));
    assert!(
        said.contains("objectives: minimize f1, minimize f2\n  constraints: c <= 0.8\n"),
        "{said}"
    );

    let out = sb.run(&["report", "front", "--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        json["status"]["paretoFront"].as_array().unwrap().len(),
        feasible
    );
    let out = sb.run(&["report", "front"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains(&format!("pareto front ({feasible} trials")),
        "{table}"
    );

    let page = sb.path().join("front.html");
    let out = sb.run(&[
        "report",
        "front",
        "--format",
        "html",
        "--output",
        page.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(marks(&html, "plot-pareto-f1-f2", "front"), feasible);
    assert_eq!(
        marks(&html, "plot-pareto-f1-f2", "infeasible"),
        10 - feasible
    );
    let Some(browser) =
        chromium("multi_objective_reports_show_the_front_in_every_format_and_the_browser")
    else {
        return;
    };
    let (dom, log) = headless(&browser, &page, &["--dump-dom"]);
    for line in log.lines() {
        assert!(
            !line.contains("Uncaught") && !line.contains("ERROR:CONSOLE"),
            "console error while loading the report: {line}"
        );
    }
    assert_eq!(marks(&dom, "plot-pareto-f1-f2", "front"), feasible);
    assert_eq!(marks(&dom, "plot-pareto-f1-f2", "front-line"), 1);
    assert_eq!(
        marks(&dom, "plot-pareto-f1-f2", "infeasible"),
        10 - feasible
    );
}

/// A watch of `name`'s HTML page whose experiment is left Running with no driver (its run
/// killed once the first trial runs: a resume may follow, so the watch keeps watching), and the
/// page once written.
fn watch_a_driverless_experiment(sb: &Sandbox, name: &str) -> (std::process::Child, PathBuf) {
    let file = experiment(sb, name, 3, 1.0);
    let mut runner = sb
        .cmd(&["run", file.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !String::from_utf8_lossy(&sb.run(&["list"]).stdout).contains("Running") {
        assert!(Instant::now() < deadline, "the run never started");
        std::thread::sleep(Duration::from_millis(100));
    }
    runner.kill().unwrap();
    runner.wait().unwrap();
    let output = format!("{name}.html");
    let watch = sb
        .cmd(&[
            "report", "--watch", name, "--format", "html", "--output", &output,
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let page = sb.path().join(output);
    wait_for_file(&page, deadline);
    (watch, page)
}

/// The exit code and standard error of a watch that must end, and its page's last text.
fn watch_ending(mut watch: std::process::Child, page: &Path) -> (Option<i32>, String, String) {
    let code = wait_exit(&mut watch, Duration::from_secs(60));
    let mut said = String::new();
    std::io::Read::read_to_string(&mut watch.stderr.take().unwrap(), &mut said).unwrap();
    (code, said, std::fs::read_to_string(page).unwrap())
}

/// A database file deleted while a report watches it: the watch says so and ends, and the
/// page stops reloading, instead of rewriting the old file's data as if it were current.
#[test]
fn watch_ends_when_the_database_file_is_deleted() {
    let sb = Sandbox::new();
    let (watch, page) = watch_a_driverless_experiment(&sb, "lost");
    std::fs::remove_file(sb.path().join("vernier.db")).unwrap();
    let (code, said, last) = watch_ending(watch, &page);
    assert_eq!(code, Some(2), "{said}");
    assert!(
        said.contains("vernier.db` was deleted after it was opened")
            && said.contains("hint: run the command again"),
        "{said}"
    );
    assert!(
        last.contains("The database file it was read from was deleted")
            && !last.contains("http-equiv"),
        "{last}"
    );
}

/// A database file replaced while a report watches it: the watch reads the file now at the
/// path, where (another experiment's database here) the experiment is gone, so it ends saying so.
#[test]
fn watch_follows_a_database_file_replaced_under_it() {
    let sb = Sandbox::new();
    let other = experiment(&sb, "other", 1, 1.0);
    let out = sb.run(&["--db", "fresh.db", "run", other.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let (watch, page) = watch_a_driverless_experiment(&sb, "swapped");
    std::fs::rename(sb.path().join("fresh.db"), sb.path().join("vernier.db")).unwrap();
    let (code, said, last) = watch_ending(watch, &page);
    assert_eq!(code, Some(2), "{said}");
    assert!(
        said.contains("vernier.db` was replaced after it was opened; reading the file now")
            && said.contains("experiment swapped was deleted while it was watched"),
        "{said}"
    );
    assert!(last.contains("was deleted"), "{last}");
}

/// An experiment deleted while watched will not come back: the watch says so and ends, and the
/// page stops reloading, instead of waiting for it as for one not created yet.
#[test]
fn watch_ends_when_the_watched_experiment_is_deleted() {
    let sb = Sandbox::new();
    let (watch, page) = watch_a_driverless_experiment(&sb, "doomed");
    let out = sb.run(&["delete", "doomed"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let (code, said, last) = watch_ending(watch, &page);
    assert_eq!(code, Some(2), "{said}");
    assert!(
        said.contains("experiment doomed was deleted while it was watched"),
        "{said}"
    );
    assert!(
        last.contains("was deleted") && !last.contains("http-equiv"),
        "{last}"
    );
}
