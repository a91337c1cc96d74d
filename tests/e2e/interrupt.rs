//! Interruption: Ctrl-C stops trials and records them Killed; `kill -9` of the driver loses no
//! recorded observation and `vernier resume` finishes within maxTrialCount.

use crate::harness::{
    Sandbox, first_trial_log, last_condition, pid_alive, python_experiment, sqlite, text,
    trials_in, wait_exit, wait_for_lines,
};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn ctrl_c_kills_running_trials_and_records_them() {
    interrupt_kills_running_trials_and_records_them(Signal::SIGINT);
}

/// A closed terminal or a dropped ssh session (SIGHUP) stops the run as Ctrl-C does, instead of
/// ending it at once with its trials left running and the experiment marked Running.
#[test]
fn a_hangup_kills_running_trials_and_records_them() {
    interrupt_kills_running_trials_and_records_them(Signal::SIGHUP);
}

fn interrupt_kills_running_trials_and_records_them(signal: Signal) {
    let sb = Sandbox::new();
    // Each trial records its pid, reports a metric, then trains "forever".
    let yaml = python_experiment(
        "sigint",
        "import os, sys, time; open('pid-' + os.environ['KATIB_TRIAL_NAME'], 'w').write(str(os.getpid())); print('loss=0.5', flush=True); time.sleep(120)",
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 2\n  maxTrialCount: 4",
    );
    let file = sb.write("sigint.yaml", &yaml);
    let mut child = sb.spawn(&["run", file.to_str().unwrap()]);
    wait_for_lines(&mut child, "started", 2);
    // Wait until both trials wrote their pid file and metric.
    let deadline = Instant::now() + Duration::from_secs(30);
    let pids = loop {
        let pids: Vec<i32> = std::fs::read_dir(sb.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with("pid-"))
            .filter_map(|e| std::fs::read_to_string(e.path()).ok()?.trim().parse().ok())
            .collect();
        if pids.len() == 2 {
            break pids;
        }
        assert!(Instant::now() < deadline, "trials did not start");
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_millis(300));
    kill(Pid::from_raw(child.id() as i32), signal).unwrap();
    let code = wait_exit(&mut child, Duration::from_secs(20));
    assert_eq!(code, Some(130), "after {signal}");
    for pid in pids {
        assert!(!pid_alive(pid), "trial process {pid} survived {signal}");
    }
    let r = sb.report("sigint");
    let killed = trials_in(&r, "Killed");
    assert_eq!(killed.len(), 2, "{r:#}");
    assert_eq!(r["status"]["trials"], 2, "no trial started after Ctrl-C");
    let last = last_condition(&r);
    assert_eq!(last["reason"], "ExperimentInterrupted");
    // The recorded message names a command that reaches this database, pasted anywhere.
    let resume = format!("`vernier resume sigint --db {}` continues it", sb.db());
    assert!(
        last["message"].as_str().unwrap().contains(&resume),
        "{last:#}"
    );
    // The metric printed before the interruption is kept.
    assert_eq!(
        killed[0]["status"]["observation"]["metrics"][0]["latest"],
        "0.5"
    );
}

/// Runs `file` until its first trial has written its pid to `pid` in the sandbox, then kills
/// the driver with SIGKILL; the trial's pid.
fn run_then_kill_9(sb: &Sandbox, file: &std::path::Path) -> i32 {
    let mut child = sb
        .cmd(&["run", file.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_lines(&mut child, "started", 1);
    let deadline = Instant::now() + Duration::from_secs(30);
    let pid: i32 = loop {
        if let Some(pid) = std::fs::read_to_string(sb.path().join("pid"))
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            break pid;
        }
        assert!(Instant::now() < deadline, "the trial did not start");
        std::thread::sleep(Duration::from_millis(50));
    };
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    let _ = child.wait();
    pid
}

/// A trial that never writes again does not notice its driver's `kill -9`; `resume` stops it
/// before marking it Killed, so it does not run on unseen beside the new trials.
#[test]
fn resume_after_kill_9_stops_a_trial_left_sleeping() {
    let sb = Sandbox::new();
    // The first trial records its pid and sleeps; later ones report at once.
    let yaml = python_experiment(
        "sleeper",
        "import os, time\nif not os.path.exists('pid'):\n    open('pid', 'w').write(str(os.getpid())); print('loss=0.5', flush=True); time.sleep(120)\nprint('loss=0.4')",
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 1\n  maxTrialCount: 2",
    );
    let file = sb.write("sleeper.yaml", &yaml);
    let pid = run_then_kill_9(&sb, &file);
    assert!(
        pid_alive(pid),
        "the sleeping trial should outlive its driver"
    );
    // What the trial printed is in its log at once, not in a buffer the driver took with it.
    let log = first_trial_log(&sb, "sleeper");
    assert!(log.contains("loss=0.5"), "{log:?}");
    // Readers say the experiment is not really running, at once (the driver's pid is gone).
    // The command it names reaches the same database, pasted where VERNIER_DB is not set.
    let list = text(&sb.run(&["list"]));
    assert!(
        list.contains(&format!(
            "(no driver: vernier resume sleeper --db {})",
            sb.db()
        )),
        "{list}"
    );
    let table = text(&sb.run(&["report", "sleeper"]));
    let hint = format!("hint: vernier resume sleeper --db {} continues it", sb.db());
    assert!(
        table.contains("no longer runs: nothing runs its trials") && table.contains(&hint),
        "{table}"
    );
    // Time passes before the resume; the killed trial's end is when its driver was last
    // heard of, not when the resume found it.
    std::thread::sleep(Duration::from_secs(2));
    let resumed_at = chrono::Utc::now();
    let out = sb.run(&["resume", "sleeper"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!pid_alive(pid), "trial process {pid} survived the resume");
    let r = sb.report("sleeper");
    let killed = trials_in(&r, "Killed");
    assert_eq!(killed.len(), 1, "{r:#}");
    let ended = killed[0]["status"]["completionTime"]
        .as_str()
        .unwrap_or_default();
    let ended = chrono::DateTime::parse_from_rfc3339(ended).expect("completionTime");
    assert!(
        ended < resumed_at,
        "{ended} is not before the resume at {resumed_at}"
    );
    assert_eq!(trials_in(&r, "Succeeded").len(), 1, "{r:#}");
    assert!(!text(&sb.run(&["list"])).contains("no driver"));
}

#[test]
fn kill_9_then_resume_finishes_without_losing_or_double_counting() {
    let sb = Sandbox::new();
    // Trials print three observations, then sleep a little so some are running at the kill.
    let yaml = python_experiment(
        "crash",
        "import sys, time; x = float(sys.argv[1])\nfor i in range(3): print(f'loss={x + i}', flush=True)\ntime.sleep(0.4)",
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 2\n  maxTrialCount: 8",
    );
    let file = sb.write("crash.yaml", &yaml);
    let mut child = sb.spawn(&["run", file.to_str().unwrap(), "--seed", "11"]);
    wait_for_lines(&mut child, "Succeeded", 3);
    std::thread::sleep(Duration::from_millis(150));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    let _ = child.wait();

    let before = sb.report("crash");
    let finished: Vec<(String, serde_json::Value)> = before["trials"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| crate::harness::condition_state(last_condition(t)) == "Succeeded")
        .map(|t| {
            (
                t["metadata"]["name"].as_str().unwrap().to_string(),
                t["status"]["observation"].clone(),
            )
        })
        .collect();
    assert!(finished.len() >= 3, "{before:#}");
    let trials_before = before["status"]["trials"].as_u64().unwrap();

    // A second run of the same file is refused; resume is the way on.
    let again = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));

    let out = sb.run(&["resume", "crash"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let after = sb.report("crash");
    assert_eq!(after["status"]["trials"], 8, "maxTrialCount is respected");
    for (name, observation) in &finished {
        let t = after["trials"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["metadata"]["name"] == name.as_str())
            .expect("trial survives resume");
        assert_eq!(
            &t["status"]["observation"], observation,
            "observations of {name} changed"
        );
    }
    // Trials that were running at the kill are Killed with a reason, never re-counted.
    let interrupted: Vec<_> = trials_in(&after, "Killed");
    for t in &interrupted {
        let last = last_condition(t);
        assert_eq!(last["reason"], "TrialInterrupted");
    }
    assert_eq!(
        after["status"]["trialsSucceeded"].as_u64().unwrap() + interrupted.len() as u64,
        8
    );
    assert!(trials_before <= 8);
    let last = last_condition(&after);
    assert_eq!(last["reason"], "ExperimentMaxTrialsReached");
    // Resuming a finished experiment says so.
    let done = sb.run(&["resume", "crash"]);
    assert_eq!(done.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&done.stderr).contains("already finished"));
}

#[test]
fn a_second_driver_is_refused_while_the_first_runs() {
    let sb = Sandbox::new();
    // Trials report, then wait for the test's go-ahead, so both stay running meanwhile.
    let yaml = python_experiment(
        "leased",
        "import os, time; print('loss=0.5', flush=True)\nwhile not os.path.exists('go'): time.sleep(0.05)",
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 2\n  maxTrialCount: 2",
    );
    let file = sb.write("leased.yaml", &yaml);
    let mut child = sb.spawn(&["run", file.to_str().unwrap()]);
    wait_for_lines(&mut child, "started", 2);
    let holder = format!("pid {}", child.id());

    for args in [vec!["resume", "leased"], vec!["delete", "leased"]] {
        let out = sb.run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("is held by another vernier (a run or resume driving it")
                && err.contains(&holder),
            "{args:?}: {}",
            text(&out)
        );
        assert!(err.contains("hint:"), "{}", text(&out));
    }
    // Running the same file again says the experiment runs now, not "resume it".
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("\"leased\" is running now") && err.contains(&holder),
        "{}",
        text(&out)
    );
    // Enqueue-then-resume: the configuration is recorded, the resume refused.
    let out = sb.run(&["enqueue", "leased", "--param", "x=0.25"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&holder),
        "{}",
        text(&out)
    );
    let out = sb.run(&["resume", "leased"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));

    // Readers need no lease; the first driver's trials were left alone.
    let during = sb.report("leased");
    assert_eq!(trials_in(&during, "Running").len(), 2, "{during:#}");
    let listed = sb.run(&["list"]);
    assert_eq!(listed.status.code(), Some(0), "{}", text(&listed));

    sb.write("go", "");
    assert_eq!(wait_exit(&mut child, Duration::from_secs(30)), Some(0));
    let after = sb.report("leased");
    assert_eq!(trials_in(&after, "Succeeded").len(), 2, "{after:#}");
    assert_eq!(after["status"]["trials"], 2, "{after:#}");
    // The lease was released: the enqueued configuration can now be driven... but the
    // experiment already finished, which is what resume says.
    let out = sb.run(&["resume", "leased"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("already finished"),
        "{}",
        text(&out)
    );
    let out = sb.run(&["delete", "leased"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn a_name_the_operator_drives_in_a_shared_database_is_refused_and_nothing_recorded() {
    // A first run makes the database; then the operator, sharing it, holds `shared`.
    let sb = database_with_one_run();
    hold_lease(
        &sb,
        "shared",
        "vernier-operator",
        "vernier-operator-7d9f",
        1,
    );
    let shared = sb.write("shared.yaml", &one_trial("shared"));
    let out = sb.run(&["run", shared.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("driven by the Kubernetes operator (pod vernier-operator-7d9f"),
        "{}",
        text(&out)
    );
    assert!(err.contains("hint:"), "{}", text(&out));
    let listed = sb.run(&["list"]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains("first") && !listed.contains("shared"),
        "{listed}"
    );
}

/// An experiment of one trial that reports at once.
fn one_trial(name: &str) -> String {
    python_experiment(
        name,
        "print('loss=0.5', flush=True)",
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 1\n  maxTrialCount: 1",
    )
}

/// A sandbox whose database one finished run made.
fn database_with_one_run() -> Sandbox {
    let sb = Sandbox::new();
    let first = sb.write("first.yaml", &one_trial("first"));
    let out = sb.run(&["run", first.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    sb
}

/// Writes the lease of `experiment` as another driver holds it, heard from just now; an empty
/// `host` is this machine.
fn hold_lease(sb: &Sandbox, experiment: &str, owner: &str, host: &str, pid: u32) {
    sqlite(
        sb,
        "import socket, time\n\
         now = int(time.time() * 1e6)\n\
         host = sys.argv[4] or socket.gethostname()\n\
         con.execute('INSERT INTO experiment_leases VALUES (?, ?, ?, ?, ?, ?)', \
         (sys.argv[2], sys.argv[3], host, int(sys.argv[5]), now, now))\n\
         con.commit()",
        &[experiment, owner, host, &pid.to_string()],
    );
}

/// Two `vernier run` of one name at once: the one that finds the other's lease before its
/// record is told the name is being started, not to run the command again once it ends (it
/// would then be refused as existing).
#[test]
fn a_run_that_meets_another_starting_the_same_name_is_told_so() {
    let sb = database_with_one_run();
    // The other run holds the lease and has not recorded the experiment yet.
    hold_lease(&sb, "twin", "other-run", "", std::process::id());
    let twin = sb.write("twin.yaml", &one_trial("twin"));
    let out = sb.run(&["run", twin.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("experiment \"twin\" is being started in")
            && err.contains(&format!("pid {}", std::process::id())),
        "{}",
        text(&out)
    );
    assert!(
        err.contains("change metadata.name") && !err.contains("run this command again"),
        "{}",
        text(&out)
    );
}

/// Ctrl-C during the last batch: its Killed trials use up maxTrialCount (Katib counts them), so
/// a plain `resume` would end at once; the interruption names the `--max-trial-count` that runs
/// them again, and following it does. The logs hold what the trials printed while they ran.
#[test]
fn an_interruption_that_uses_up_the_budget_names_the_count_that_runs_its_trials_again() {
    let sb = Sandbox::new();
    let yaml = python_experiment(
        "budget",
        "import os, time\nif os.path.exists('resumed'):\n    print('loss=0.4')\nelse:\n    print('loss=0.5', flush=True); time.sleep(120)",
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 2\n  maxTrialCount: 2",
    );
    let file = sb.write("budget.yaml", &yaml);
    let child = sb.spawn(&["run", file.to_str().unwrap()]);
    let logs = sb.path().join("vernier-logs").join("budget");
    let deadline = Instant::now() + Duration::from_secs(60);
    while logged(&logs, "loss=0.5") < 2 {
        assert!(
            Instant::now() < deadline,
            "both trials' logs should show their metric line while they run"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("the 2 Killed trial(s) count towards maxTrialCount 2")
            && said.contains("vernier resume budget --max-trial-count 4"),
        "{said}"
    );
    std::fs::write(sb.path().join("resumed"), "").unwrap();
    let out = sb.run(&["resume", "budget", "--max-trial-count", "4"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("budget");
    assert_eq!(trials_in(&r, "Killed").len(), 2, "{r:#}");
    assert_eq!(trials_in(&r, "Succeeded").len(), 2, "{r:#}");
}

/// How many trial logs under `dir` contain `needle`.
fn logged(dir: &std::path::Path, needle: &str) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
                .filter(|e| std::fs::read_to_string(e.path()).is_ok_and(|t| t.contains(needle)))
                .count()
        })
        .unwrap_or(0)
}

/// `delete` after a `kill -9` stops the trial the dead driver left running: once the
/// experiment is gone nothing else would know of it.
#[test]
fn delete_after_kill_9_stops_a_trial_left_sleeping() {
    let sb = Sandbox::new();
    let yaml = python_experiment(
        "orphan",
        "import os, time\nopen('pid', 'w').write(str(os.getpid())); print('loss=0.5', flush=True); time.sleep(120)",
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 1\n  maxTrialCount: 1",
    );
    let file = sb.write("orphan.yaml", &yaml);
    let pid = run_then_kill_9(&sb, &file);
    assert!(pid_alive(pid), "the trial should outlive its driver");
    let out = sb.run(&["delete", "orphan"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("left running by a vernier that is gone"),
        "{}",
        text(&out)
    );
    assert!(!pid_alive(pid), "trial process {pid} survived the delete");
}

/// Another process holds the database's write lock for 6 s from the moment the trial ends: the
/// verdict waits for it, but the trial's completion time is when it ended, not when the
/// verdict could be written.
#[test]
fn a_trial_ends_when_it_ended_not_when_a_locked_database_let_its_verdict_in() {
    let sb = Sandbox::new();
    let locker = sb.write(
        "locker.py",
        "import sqlite3, sys, time\n\
         con = sqlite3.connect(sys.argv[1], isolation_level=None)\n\
         con.execute('BEGIN IMMEDIATE')\n\
         open(sys.argv[2], 'w').close()\n\
         time.sleep(6)\n\
         con.execute('ROLLBACK')\n",
    );
    let flag = sb.path().join("locked");
    let script = format!(
        "import os, subprocess, sys, time\n\
         print('loss=0.5', flush=True)\n\
         time.sleep(0.5)\n\
         subprocess.Popen([sys.executable, '{}', '{}', '{}'], start_new_session=True)\n\
         while not os.path.exists('{}'): time.sleep(0.02)",
        locker.display(),
        sb.db(),
        flag.display(),
        flag.display()
    );
    let yaml = python_experiment(
        "locked",
        &script,
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 1\n  maxTrialCount: 1",
    );
    let file = sb.write("locked.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("locked");
    let done = trials_in(&r, "Succeeded");
    assert_eq!(done.len(), 1, "{r:#}");
    let time = |field: &str| {
        let at = done[0]["status"][field].as_str().unwrap_or_default();
        chrono::DateTime::parse_from_rfc3339(at).unwrap_or_else(|e| panic!("{field} {at:?}: {e}"))
    };
    let took = time("completionTime") - time("startTime");
    assert!(
        took < chrono::TimeDelta::seconds(4),
        "the trial ran about 0.6 s but is recorded as {took}"
    );
}

/// Stopping waits for the database to record how the trials ended; when another session
/// holds a lock on it, a third Ctrl-C leaves at once, as `kill -9` would, and `resume` takes
/// over without losing what was recorded.
#[test]
fn a_third_ctrl_c_leaves_a_stop_that_waits_for_a_locked_database() {
    let sb = Sandbox::new();
    let script = "import time\nfor i in range(600):\n    print(f'loss={1 / (i + 1)}', flush=True)\n    time.sleep(0.05)";
    let yaml = python_experiment(
        "stuck",
        script,
        "  objective:\n    type: minimize\n    objectiveMetricName: loss\n  parallelTrialCount: 1\n  maxTrialCount: 1",
    );
    let file = sb.write("stuck.yaml", &yaml);
    let mut run = sb.spawn(&["run", file.to_str().unwrap()]);
    wait_for_lines(&mut run, "started", 1);
    std::thread::sleep(Duration::from_millis(500));
    let mut lock = lock_database(&sb);
    let pid = Pid::from_raw(run.id() as i32);
    for _ in 0..3 {
        kill(pid, Signal::SIGINT).unwrap();
        std::thread::sleep(Duration::from_millis(300));
    }
    let code = wait_exit(&mut run, Duration::from_secs(20));
    drop(lock.stdin.take());
    lock.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut run.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(code, Some(130), "{stderr}");
    assert!(
        stderr.contains("left without recording the end of the run"),
        "{stderr}"
    );
    let out = sb.run(&["resume", "stuck"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("stuck");
    assert_eq!(trials_in(&r, "Killed").len(), 1, "{r:#}");
}

/// Starts a process that holds the sandbox database's write lock until its stdin closes;
/// returns once the lock is held.
fn lock_database(sb: &Sandbox) -> std::process::Child {
    let locker = sb.write(
        "locker.py",
        "import sqlite3, sys, time\n\
         con = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=60)\n\
         con.execute('BEGIN IMMEDIATE')\n\
         print('locked', flush=True)\n\
         sys.stdin.read()\n\
         con.execute('ROLLBACK')\n",
    );
    let mut lock = std::process::Command::new("python3")
        .args([locker.to_str().unwrap(), &sb.db()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = String::new();
    BufReader::new(lock.stdout.take().unwrap())
        .read_line(&mut said)
        .unwrap();
    assert_eq!(said.trim(), "locked");
    lock
}

/// `--lock-timeout` bounds how long a command waits for a database another session holds
/// locked: the delete gives up naming the wait it was given, and deletes nothing.
#[test]
fn the_lock_timeout_bounds_the_wait_for_a_locked_database() {
    let sb = database_with_one_run();
    let mut lock = lock_database(&sb);
    let out = sb.run(&["--lock-timeout", "0.5", "delete", "first"]);
    drop(lock.stdin.take());
    lock.wait().unwrap();
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("stayed locked by another session for more than 500ms"),
        "{}",
        text(&out)
    );
    assert_eq!(trials_in(&sb.report("first"), "Succeeded").len(), 1);
    let out = sb.run(&["--lock-timeout", "0", "list"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("a lock timeout is a number of seconds above 0"),
        "{}",
        text(&out)
    );
}
