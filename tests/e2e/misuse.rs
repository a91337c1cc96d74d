//! Misuse that must not corrupt or create anything: reading commands pointed at a database
//! that does not exist (a typo), a database nobody may write, and a closed stdout.

use crate::harness::{Sandbox, python_experiment, sqlite, text, wait_for_lines};
use std::process::Stdio;
use std::time::{Duration, Instant};

fn files_in(sb: &Sandbox) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(sb.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn commands_other_than_run_never_create_a_database() {
    let sb = Sandbox::new();
    let commands: [&[&str]; 7] = [
        &["report", "exp"],
        &["list"],
        &["compare", "exp"],
        &["delete", "exp"],
        &["resume", "exp"],
        &["enqueue", "exp", "--param", "x=0.5"],
        &["serve", "--listen", "127.0.0.1:0"],
    ];
    for args in commands {
        for (flag, source) in [(true, "--db"), (false, "VERNIER_DB")] {
            let mut cmd = sb.cmd(args);
            if flag {
                cmd.args(["--db", "vernir.db"]);
            } else {
                cmd.env("VERNIER_DB", "vernir.db");
            }
            let mut child = cmd
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            // `serve` on a database it created would run until stopped.
            let deadline = Instant::now() + Duration::from_secs(20);
            while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            assert_eq!(
                out.status.code(),
                Some(2),
                "{args:?} {source}: {}",
                text(&out)
            );
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("database `vernir.db` does not exist")
                    && err.contains(&format!("path from {source}")),
                "{args:?}: {}",
                text(&out)
            );
            assert!(
                files_in(&sb).is_empty(),
                "{args:?} created {:?}",
                files_in(&sb)
            );
        }
    }
}

#[test]
fn a_database_nobody_may_write_can_still_be_listed_and_reported() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let sb = Sandbox::new();
    if std::fs::metadata(sb.path()).unwrap().uid() == 0 {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED a_database_nobody_may_write_can_still_be_listed_and_reported: running as root, which file permissions do not stop (the store's read_only_mode_reads_and_never_writes checks the open mode)"
        );
        return;
    }
    let yaml = python_experiment(
        "ro",
        "print('loss=0.5')",
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  maxTrialCount: 1",
    );
    let file = sb.write("ro.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let db = std::path::PathBuf::from(sb.db());
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(sb.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
    let listed = sb.run(&["list"]);
    let reported = sb.run(&["report", "ro", "--format", "csv"]);
    std::fs::set_permissions(sb.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(listed.status.code(), Some(0), "{}", text(&listed));
    assert!(String::from_utf8_lossy(&listed.stdout).contains("ro"));
    assert_eq!(reported.status.code(), Some(0), "{}", text(&reported));
}

/// A stdout whose reader is already gone, as after `| head` exits.
fn closed_stdout() -> Stdio {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    Stdio::from(writer)
}

#[test]
fn a_closed_stdout_never_panics_and_a_run_still_finishes() {
    let sb = Sandbox::new();
    let yaml = python_experiment(
        "piped",
        "import sys; print(f'loss={sys.argv[1]}')",
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  maxTrialCount: 3",
    );
    let file = sb.write("piped.yaml", &yaml);
    let run = sb
        .cmd(&["run", file.to_str().unwrap()])
        .stdout(closed_stdout())
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    let r = sb.report("piped");
    assert_eq!(r["status"]["trialsSucceeded"], 3, "{r:#}");

    let readers: [&[&str]; 6] = [
        &["report", "piped", "--format", "json"],
        &["report", "piped", "--format", "csv"],
        &["report", "piped", "--format", "table"],
        &["compare", "piped"],
        &["list"],
        &["validate", file.to_str().unwrap()],
    ];
    for args in readers {
        let out = sb.cmd(args).stdout(closed_stdout()).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {}", text(&out));
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
        assert!(err.is_empty(), "{args:?} stops quietly: {}", text(&out));
    }
}

#[test]
fn a_database_deleted_under_a_run_stops_it_and_says_so() {
    let sb = Sandbox::new();
    let yaml = python_experiment(
        "vanishing",
        "import sys, time; time.sleep(0.5); print(f'loss={sys.argv[1]}')",
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  maxTrialCount: 40\n  parallelTrialCount: 2",
    );
    let file = sb.write("vanishing.yaml", &yaml);
    let run = sb.spawn(&["run", file.to_str().unwrap()]);
    std::thread::sleep(Duration::from_millis(1500));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", sb.db()));
    }
    let out = run.wait_with_output().unwrap();
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(2), "{shown}");
    assert!(
        shown.contains("was deleted while vernier had it open"),
        "{shown}"
    );
    assert!(!shown.contains("panicked"), "{shown}");
}

fn quick_experiment(sb: &Sandbox, name: &str) -> std::path::PathBuf {
    let yaml = python_experiment(
        name,
        "import sys; print('loss=' + sys.argv[1])",
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 1\n  maxTrialCount: 2",
    );
    sb.write(&format!("{name}.yaml"), &yaml)
}

/// A SQLite file in WAL mode holds recent writes in `vernier.db-wal` until its connections close
/// cleanly; every command closes them, so `vernier.db` alone, copied or moved after a command
/// ended, holds the whole experiment.
#[test]
fn the_database_file_alone_holds_everything_once_a_command_ends() {
    let sb = Sandbox::new();
    let file = quick_experiment(&sb, "walled");
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let copy = Sandbox::new();
    std::fs::copy(sb.db(), copy.db()).unwrap();
    let r = copy.report("walled");
    assert_eq!(r["status"]["trials"], 2, "{r:#}");
    assert!(
        !sb.path().join("vernier.db-wal").exists()
            || std::fs::metadata(sb.path().join("vernier.db-wal"))
                .unwrap()
                .len()
                == 0,
        "a write-ahead log with content was left behind"
    );
}

/// A `--log-dir` that cannot be made is refused before the experiment is recorded, so a second
/// run with a good one is not refused as "already exists".
#[test]
fn a_log_dir_that_cannot_be_made_records_nothing() {
    let sb = Sandbox::new();
    let file = quick_experiment(&sb, "logless");
    sb.write("afile", "");
    let out = sb.run(&["run", file.to_str().unwrap(), "--log-dir", "afile"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("cannot create log directory") && text(&out).contains("afile"),
        "{}",
        text(&out)
    );
    let out = sb.run(&["run", file.to_str().unwrap(), "--log-dir", "logs"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// A `--log-dir` holding an earlier run's trial logs is refused before anything is recorded:
/// an experiment of the same name and seed would name its trials alike and overwrite them.
#[test]
fn a_log_dir_holding_trial_logs_is_refused() {
    let sb = Sandbox::new();
    let file = quick_experiment(&sb, "twice");
    let file = file.to_str().unwrap();
    let run = |db: &str, logs: &str| {
        let args = ["--db", db, "run", file, "--log-dir", logs, "--seed", "5"];
        sb.run(&args)
    };
    let out = run("vernier.db", "logs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let count = || std::fs::read_dir(sb.path().join("logs")).unwrap().count();
    let before = count();
    let other = run("other.db", "logs");
    assert_eq!(other.status.code(), Some(2), "{}", text(&other));
    assert!(
        text(&other).contains("--log-dir: value")
            && text(&other).contains("already holds trial logs")
            && text(&other).contains("hint: choose a new or empty folder"),
        "{}",
        text(&other)
    );
    assert_eq!(count(), before);
    // Nothing was recorded, so the same command with a fresh folder runs.
    let fresh = run("other.db", "logs2");
    assert_eq!(fresh.status.code(), Some(0), "{}", text(&fresh));
}

/// A refused `resume` (the experiment has finished) leaves no lease behind: the next command
/// does not report taking over from a process that is gone.
#[test]
fn a_refused_resume_leaves_the_experiment_free() {
    let sb = Sandbox::new();
    let file = quick_experiment(&sb, "done");
    assert_eq!(
        sb.run(&["run", file.to_str().unwrap()]).status.code(),
        Some(0)
    );
    for _ in 0..2 {
        let out = sb.run(&["resume", "done"]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(
            text(&out).contains("has already finished"),
            "{}",
            text(&out)
        );
        assert!(!text(&out).contains("took over"), "{}", text(&out));
    }
}

/// The rows the database holds for experiment `name`: its spec, phase, trial and observation
/// counts.
fn stored(sb: &Sandbox, name: &str) -> String {
    sqlite(
        sb,
        "n = sys.argv[2]\n\
         print(con.execute('SELECT spec_json, phase FROM experiments WHERE name = ?', (n,)).fetchone())\n\
         print(con.execute('SELECT count(*) FROM trials WHERE experiment = ?', (n,)).fetchone())\n\
         print(con.execute('SELECT count(*) FROM observation_logs o JOIN trials t ON o.trial_name = t.name WHERE t.experiment = ?', (n,)).fetchone())",
        &[name],
    )
}

/// An experiment whose stored spec no longer parses (edited by hand, or written by another
/// version) is refused by every command that needs it, with its name, and nothing of it is
/// changed: `report`, `resume`, `resume --max-trial-count` and `enqueue`.
#[test]
fn a_stored_experiment_that_is_unreadable_is_named_and_left_as_it_is() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let sb = Sandbox::new();
    let yaml = python_experiment(
        "e1",
        "import sys, time; print('loss=' + sys.argv[1], flush=True); time.sleep(60)",
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 1\n  maxTrialCount: 2",
    );
    let file = sb.write("e1.yaml", &yaml);
    // Interrupted while its trial runs, so `resume` and `enqueue` would go on with it.
    let mut run = sb.spawn(&["run", file.to_str().unwrap()]);
    let seen = wait_for_lines(&mut run, "started", 1).concat();
    kill(Pid::from_raw(run.id() as i32), Signal::SIGINT).unwrap();
    let out = run.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{seen}{}", text(&out));

    let spec = sqlite(
        &sb,
        "print(con.execute('SELECT spec_json FROM experiments').fetchone()[0])",
        &[],
    );
    // A write torn halfway, and a document that is JSON but no experiment.
    let torn = &spec[..spec.len() / 2];
    for damaged in [torn, "{}"] {
        sqlite(
            &sb,
            "con.execute('UPDATE experiments SET spec_json = ? WHERE name = ?', (sys.argv[2], 'e1'))\n\
             con.commit()",
            &[damaged],
        );
        let before = stored(&sb, "e1");
        assert!(before.contains("'Interrupted'"), "{before}");
        assert!(before.contains("\n(1,)\n"), "one trial: {before}");
        let commands: [&[&str]; 4] = [
            &["report", "e1"],
            &["resume", "e1"],
            &["resume", "e1", "--max-trial-count", "5"],
            &["enqueue", "e1", "--param", "x=0.5"],
        ];
        for args in commands {
            let out = sb.run(args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
            assert!(
                err.starts_with("error: stored experiment \"e1\" is unreadable: "),
                "{args:?}: {}",
                text(&out)
            );
            assert!(!err.contains("took over"), "{args:?}: {}", text(&out));
            assert_eq!(stored(&sb, "e1"), before, "{args:?} changed the records");
        }
    }
    let listed = sb.run(&["list"]);
    assert_eq!(listed.status.code(), Some(0), "{}", text(&listed));
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("e1"),
        "{}",
        text(&listed)
    );
}

/// A katib-config entry with an image and no address is for `vernier operator`, which deploys
/// it. Locally, Vernier's own algorithm of that name runs instead, with a warning (so Katib's
/// whole katib-config may be passed); another name is refused by `run` naming the entry, before
/// anything is recorded, and `validate` calls it valid for the operator only. The operator refuses a malformed entry the same way,
/// before it talks to any cluster.
#[test]
fn an_image_only_suggestion_entry_is_refused_locally_and_named() {
    let sb = Sandbox::new();
    let file = quick_experiment(&sb, "imaged");
    let config = sb.write(
        "suggestions.yaml",
        "runtime:\n  suggestions:\n    - algorithmName: random\n      image: docker.io/kubeflowkatib/suggestion-hyperopt:v0.19.0\n    - algorithmName: my-ladder\n      image: docker.io/example/ladder:1\n",
    );
    let laddered = std::fs::read_to_string(&file)
        .unwrap()
        .replace("algorithmName: random", "algorithmName: my-ladder");
    let laddered = sb.write("laddered.yaml", &laddered);
    let with_config = |command: &str, file: &std::path::Path| {
        let config = config.to_str().unwrap();
        sb.run(&[
            command,
            file.to_str().unwrap(),
            "--suggestion-config",
            config,
        ])
    };
    let out = with_config("run", &laddered);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert!(
        all.contains("suggestions.yaml: suggestions[1].address is missing or empty (image docker.io/example/ladder:1 cannot run locally; `vernier operator` deploys it)")
            && all.contains("hint: give the host:port"),
        "{all}"
    );
    // `validate` says the same as its local verdict, and what the operator needs to run it.
    let out = with_config("validate", &laddered);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(3), "{all}");
    assert!(
        all.contains("local: `vernier run` cannot run it:\n  spec.algorithm.algorithmName: value \"my-ladder\" is served only by the image docker.io/example/ladder:1 (")
            && all.contains("cluster: valid for `vernier operator --suggestion-config FILE` (its entry's image, which the operator deploys per experiment as Katib does)"),
        "{all}"
    );
    let listed = text(&sb.run(&["list"]));
    assert!(!listed.contains("imaged"), "nothing is recorded: {listed}");
    let out = with_config("run", &file);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(
        all.contains("warning: the suggestion image for random cannot run locally; Vernier's built-in random runs instead"),
        "{all}"
    );
    let bad = sb.write(
        "bad.yaml",
        "suggestions:\n  - algorithmName: random\n    image: x\n    imagePullPolicys: Always\n",
    );
    let out = sb.run(&[
        "operator",
        "--kube-url",
        "http://127.0.0.1:9",
        "--suggestion-config",
        bad.to_str().unwrap(),
    ]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert!(
        all.contains("suggestions[0].imagePullPolicys is not a field of a suggestion entry"),
        "{all}"
    );
}
