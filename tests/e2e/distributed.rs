//! Distributed trials on one machine: the TFJob and PyTorchJob examples exchange data between
//! their replicas and finish; each restart policy, the backoff limit, a parameter server that
//! never exits and Ctrl-C behave as the training operator would.

use crate::harness::{Sandbox, pid_alive, text, trials_in, wait_exit};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// An example with its trainer paths made absolute, so it runs from the sandbox.
fn example(name: &str) -> String {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let yaml = std::fs::read_to_string(examples.join(name)).unwrap();
    yaml.replace(
        "\"trainers/",
        &format!("\"{}/", examples.join("trainers").display()),
    )
}

fn metric<'a>(trial: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    trial["status"]["observation"]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {trial}"))
}

fn number(v: &serde_json::Value) -> f64 {
    v.as_str().unwrap().parse().unwrap()
}

fn trial_logs(sb: &Sandbox, experiment: &str, trial: &serde_json::Value) -> (String, PathBuf) {
    let name = trial["metadata"]["name"].as_str().unwrap();
    let dir = sb.path().join("vernier-logs").join(experiment);
    let summary = std::fs::read_to_string(dir.join(format!("{name}.log"))).unwrap();
    (summary, dir.join(name))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn tfjob_example_trains_through_its_parameter_server_and_stops_it() {
    let sb = Sandbox::new();
    let yaml =
        example("tfjob-parameter-server.yaml").replace("maxTrialCount: 4", "maxTrialCount: 2");
    let file = sb.write("tfjob.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("tfjob-parameter-server");
    let ok = trials_in(&r, "Succeeded");
    assert_eq!(ok.len(), 2, "{r:#}");
    for t in &ok {
        // Weights start at 0 (held-out mse about 4.6); only gradients pushed by the workers
        // and applied by the parameter server bring the chief's loss down.
        let loss = metric(t, "loss");
        assert!(number(&loss["latest"]) < 1.0, "{loss}");
        let (summary, dir) = trial_logs(&sb, "tfjob-parameter-server", t);
        assert!(read(&dir.join("ps-0.log")).contains("ps serving on 127.0.0.1:"));
        for w in ["worker-0.log", "worker-1.log"] {
            assert!(read(&dir.join(w)).contains("ps updates"), "{w}");
        }
        assert!(read(&dir.join("chief-0.log")).contains("loss="));
        assert!(summary.contains("chief-0 exited with code 0"), "{summary}");
        assert!(summary.contains("stopping ps-0"), "{summary}");
        assert!(summary.contains("ps-0 stopped"), "{summary}");
        assert!(summary.contains("chief-0: port"), "{summary}");
    }
}

#[test]
fn pytorchjob_example_all_reduces_through_the_master() {
    let sb = Sandbox::new();
    let yaml = example("pytorchjob-allreduce.yaml").replace("maxTrialCount: 3", "maxTrialCount: 2");
    let file = sb.write("pytorch.yaml", &yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = sb.report("pytorchjob-allreduce");
    let ok = trials_in(&r, "Succeeded");
    assert_eq!(ok.len(), 2, "{r:#}");
    for t in &ok {
        assert_eq!(metric(t, "replicas_in_sync")["latest"], "1", "{t}");
        assert!(number(&metric(t, "loss")["min"]) < 1.0, "{t}");
        let (_, dir) = trial_logs(&sb, "pytorchjob-allreduce", t);
        assert!(read(&dir.join("master-0.log")).contains("2 workers joined"));
        for (w, rank) in [("worker-0.log", 1), ("worker-1.log", 2)] {
            assert!(
                read(&dir.join(w)).contains(&format!("worker rank {rank}: done")),
                "{w}"
            );
        }
    }
}

/// One trainer for every replica of the policy tests. Each run leaves `marks/<trial>/<replica>.runN`
/// holding its pid. The chief waits for the file named by CHIEF_WAITS, prints the metric and
/// exits 0 (MODE `silent`: without the metric). Other replicas act by MODE: `ok` (mark done,
/// exit 0), `loud` (print a metric, then as ok), `crash-once` (exit CODE on the first run, then
/// as ok), `fail` (exit CODE), `always` (exit 0, mark done from the second run on), `forever`
/// (sleep).
const SCRIPT: &str = r#"import json, os, pathlib, sys, time
task = json.loads(os.environ['TF_CONFIG'])['task']
me = f"{task['type']}-{task['index']}"
d = pathlib.Path('marks') / os.environ['KATIB_TRIAL_NAME']
d.mkdir(parents=True, exist_ok=True)
runs = len(list(d.glob(me + '.run*')))
(d / f'{me}.run{runs}').write_text(str(os.getpid()))
print(f'{me} run {runs}', flush=True)
mode, code = os.environ.get('MODE', 'ok'), int(os.environ.get('CODE', '0'))
if task['type'] == 'chief':
    wait = os.environ.get('CHIEF_WAITS', '')
    while wait and not (d / wait).exists():
        time.sleep(0.05)
    if mode != 'silent':
        print('loss=0.25', flush=True)
    sys.exit(0)
if mode == 'loud':
    print('loss=0.5', flush=True)
if mode == 'forever':
    time.sleep(600)
if mode == 'fail' or (mode == 'crash-once' and runs == 0):
    sys.exit(code)
if mode != 'always' or runs >= 1:
    (d / f'{me}.done').write_text('')
"#;

/// A replica spec running [`SCRIPT`] with `env`.
fn replica(kind: &str, replicas: u32, policy: &str, env: &[(&str, &str)]) -> String {
    let env: String = env
        .iter()
        .map(|(k, v)| {
            format!("\n                      - name: {k}\n                        value: \"{v}\"")
        })
        .collect();
    let script = serde_json::to_string(SCRIPT).unwrap();
    format!(
        r#"          {kind}:
            replicas: {replicas}
            restartPolicy: {policy}
            template:
              spec:
                containers:
                  - name: tensorflow
                    image: docker.io/library/python:3.11-slim
                    command: ["python3", "-c", {script}, "${{trialParameters.x}}"]
                    env:
                      - name: X
                        value: "1"{env}
"#
    )
}

/// A one-trial TFJob experiment with the given replica specs and `runPolicy`.
fn tfjob(name: &str, run_policy: &str, replicas: &[String]) -> String {
    format!(
        r#"apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: {name}
spec:
  objective:
    type: minimize
    objectiveMetricName: loss
  algorithm:
    algorithmName: random
  maxTrialCount: 1
  parallelTrialCount: 1
  maxFailedTrialCount: 1
  parameters:
    - name: x
      parameterType: double
      feasibleSpace: {{min: "0", max: "1"}}
  trialTemplate:
    primaryContainerName: tensorflow
    trialParameters:
      - name: x
        reference: x
    trialSpec:
      apiVersion: kubeflow.org/v1
      kind: TFJob
      spec:
{run_policy}        tfReplicaSpecs:
{}"#,
        replicas.concat()
    )
}

/// Runs a one-trial experiment; returns the exit code, the trial, its summary log and the
/// directory of its replica logs.
fn run_one(
    sb: &Sandbox,
    name: &str,
    yaml: &str,
) -> (Option<i32>, serde_json::Value, String, PathBuf) {
    let file = sb.write(&format!("{name}.yaml"), yaml);
    let out = sb.run(&["run", file.to_str().unwrap()]);
    let r = sb.report(name);
    let trial = r["trials"][0].clone();
    assert!(trial.is_object(), "{}", text(&out));
    let (summary, dir) = trial_logs(sb, name, &trial);
    (out.status.code(), trial, summary, dir)
}

fn condition(trial: &serde_json::Value) -> (String, String) {
    let c = trial["status"]["conditions"]
        .as_array()
        .unwrap()
        .last()
        .unwrap();
    (
        crate::harness::condition_state(c).to_string(),
        c["message"].as_str().unwrap_or("").to_string(),
    )
}

/// How many times a replica of the trial was started.
fn runs(sb: &Sandbox, trial: &serde_json::Value, replica: &str) -> usize {
    let dir = sb
        .path()
        .join("marks")
        .join(trial["metadata"]["name"].as_str().unwrap());
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .starts_with(&format!("{replica}.run"))
                })
                .count()
        })
        .unwrap_or(0)
}

fn pids(sb: &Sandbox, trial: &serde_json::Value) -> Vec<i32> {
    let dir = sb
        .path()
        .join("marks")
        .join(trial["metadata"]["name"].as_str().unwrap());
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().contains(".run"))
        .map(|e| {
            std::fs::read_to_string(e.path())
                .unwrap()
                .trim()
                .parse()
                .unwrap()
        })
        .collect()
}

#[test]
fn on_failure_restarts_a_worker_that_crashes_once() {
    let sb = Sandbox::new();
    let yaml = tfjob(
        "onfailure",
        "",
        &[
            replica("Chief", 1, "Never", &[("CHIEF_WAITS", "worker-0.done")]),
            replica(
                "Worker",
                1,
                "OnFailure",
                &[("MODE", "crash-once"), ("CODE", "1")],
            ),
        ],
    );
    let (code, trial, summary, dir) = run_one(&sb, "onfailure", &yaml);
    assert_eq!(code, Some(0), "{summary}");
    assert_eq!(condition(&trial).0, "Succeeded", "{trial}");
    assert_eq!(runs(&sb, &trial, "worker-0"), 2, "{summary}");
    assert!(
        summary.contains(
            "worker-0 exited with code 1 (attempt 1); restartPolicy OnFailure: restarting"
        ),
        "{summary}"
    );
    // Both runs' output is in the replica's one log, with the restart marked.
    let log = read(&dir.join("worker-0.log"));
    assert!(
        log.contains("worker-0 run 0") && log.contains("worker-0 run 1"),
        "{log}"
    );
    assert!(
        log.contains("--- vernier: exited with code 1; restart 1 (restartPolicy OnFailure) ---"),
        "{log}"
    );
    assert_eq!(metric(&trial, "loss")["latest"], "0.25");
}

#[test]
fn never_fails_the_job_on_the_first_error_and_stops_the_chief() {
    let sb = Sandbox::new();
    let yaml = tfjob(
        "never",
        "",
        &[
            replica("Chief", 1, "Never", &[("CHIEF_WAITS", "worker-0.done")]),
            replica("Worker", 1, "Never", &[("MODE", "fail"), ("CODE", "3")]),
        ],
    );
    let (code, trial, summary, _) = run_one(&sb, "never", &yaml);
    assert_eq!(code, Some(1), "{summary}");
    let (state, message) = condition(&trial);
    assert_eq!(state, "Failed");
    assert!(
        message.contains("replica worker-0 exited with code 3 (restartPolicy Never)"),
        "{message}"
    );
    assert_eq!(runs(&sb, &trial, "worker-0"), 1);
    // The chief, waiting for a worker that will never finish, was stopped.
    assert!(summary.contains("stopping chief-0"), "{summary}");
    for pid in pids(&sb, &trial) {
        assert!(!pid_alive(pid), "replica process {pid} survived the job");
    }
}

#[test]
fn exit_code_retries_codes_from_128_and_fails_on_lower_ones() {
    let sb = Sandbox::new();
    let retryable = tfjob(
        "exitcode-retry",
        "",
        &[
            replica("Chief", 1, "Never", &[("CHIEF_WAITS", "worker-0.done")]),
            replica(
                "Worker",
                1,
                "ExitCode",
                &[("MODE", "crash-once"), ("CODE", "137")],
            ),
        ],
    );
    let (code, trial, summary, _) = run_one(&sb, "exitcode-retry", &retryable);
    assert_eq!(code, Some(0), "{summary}");
    assert_eq!(condition(&trial).0, "Succeeded");
    assert_eq!(runs(&sb, &trial, "worker-0"), 2);
    assert!(
        summary.contains("exited with code 137 (attempt 1); restartPolicy ExitCode: restarting"),
        "{summary}"
    );

    let permanent = tfjob(
        "exitcode-permanent",
        "",
        &[
            replica("Chief", 1, "Never", &[("CHIEF_WAITS", "worker-0.done")]),
            replica(
                "Worker",
                1,
                "ExitCode",
                &[("MODE", "crash-once"), ("CODE", "3")],
            ),
        ],
    );
    let (code, trial, summary, _) = run_one(&sb, "exitcode-permanent", &permanent);
    assert_eq!(code, Some(1), "{summary}");
    let (state, message) = condition(&trial);
    assert_eq!(state, "Failed");
    assert!(
        message.contains("worker-0 exited with code 3 (restartPolicy ExitCode)"),
        "{message}"
    );
    assert_eq!(
        runs(&sb, &trial, "worker-0"),
        1,
        "code 3 is permanent: no restart"
    );
}

#[test]
fn always_restarts_even_after_success_until_the_chief_ends_the_job() {
    let sb = Sandbox::new();
    let yaml = tfjob(
        "always",
        "",
        &[
            replica("Chief", 1, "Never", &[("CHIEF_WAITS", "worker-0.done")]),
            replica("Worker", 1, "Always", &[("MODE", "always")]),
        ],
    );
    let (code, trial, summary, _) = run_one(&sb, "always", &yaml);
    assert_eq!(code, Some(0), "{summary}");
    assert_eq!(condition(&trial).0, "Succeeded");
    // The worker exited 0 and was started again; its second run let the chief finish.
    assert!(runs(&sb, &trial, "worker-0") >= 2, "{summary}");
    assert!(
        summary
            .contains("worker-0 exited with code 0 (attempt 1); restartPolicy Always: restarting"),
        "{summary}"
    );
}

#[test]
fn the_backoff_limit_caps_restarts_across_the_job() {
    let sb = Sandbox::new();
    let yaml = tfjob(
        "backoff",
        "        runPolicy:\n          backoffLimit: 2\n",
        &[
            replica("Chief", 1, "Never", &[("CHIEF_WAITS", "worker-0.done")]),
            replica("Worker", 1, "OnFailure", &[("MODE", "fail"), ("CODE", "2")]),
        ],
    );
    let (code, trial, summary, _) = run_one(&sb, "backoff", &yaml);
    assert_eq!(code, Some(1), "{summary}");
    let (state, message) = condition(&trial);
    assert_eq!(state, "Failed");
    assert!(
        message.contains("runPolicy.backoffLimit of 2 restart(s)"),
        "{message}"
    );
    // As the training operator counts: the job fails at its second restart, so the worker
    // runs twice (one restart runs on) and its second failure ends the job.
    assert_eq!(runs(&sb, &trial, "worker-0"), 2, "{summary}");
}

/// Katib reads metrics from the chief only: a worker's value does not count, and the message
/// says the objective was never reported (not that what was printed was unusable).
#[test]
fn a_metric_only_a_worker_prints_leaves_the_trial_metrics_unavailable() {
    let sb = Sandbox::new();
    let yaml = tfjob(
        "worker-metric",
        "",
        &[
            replica(
                "Chief",
                1,
                "Never",
                &[("CHIEF_WAITS", "worker-0.done"), ("MODE", "silent")],
            ),
            replica("Worker", 1, "Never", &[("MODE", "loud")]),
        ],
    );
    let (_, trial, summary, _) = run_one(&sb, "worker-metric", &yaml);
    let (state, message) = condition(&trial);
    assert_eq!(state, "MetricsUnavailable", "{summary}");
    assert!(
        message.contains("never reported the objective metric"),
        "{message}"
    );
}

#[test]
fn a_job_past_its_active_deadline_fails_as_on_the_operator() {
    let sb = Sandbox::new();
    let yaml = tfjob(
        "deadline",
        "        runPolicy:\n          activeDeadlineSeconds: 1\n",
        &[
            replica("Chief", 1, "Never", &[("CHIEF_WAITS", "never.done")]),
            replica("PS", 1, "Never", &[("MODE", "forever")]),
        ],
    );
    let (code, trial, summary, _) = run_one(&sb, "deadline", &yaml);
    assert_eq!(code, Some(1), "{summary}");
    let (state, message) = condition(&trial);
    assert_eq!(state, "Failed");
    assert!(
        message.contains("runPolicy.activeDeadlineSeconds of 1 s"),
        "{message}"
    );
}

#[test]
fn a_parameter_server_that_never_exits_is_stopped_when_the_chief_finishes() {
    let sb = Sandbox::new();
    let yaml = tfjob(
        "forever-ps",
        "",
        &[
            replica("Chief", 1, "Never", &[("CHIEF_WAITS", "ps-0.run0")]),
            replica("PS", 1, "Never", &[("MODE", "forever")]),
        ],
    );
    let (code, trial, summary, _) = run_one(&sb, "forever-ps", &yaml);
    assert_eq!(code, Some(0), "{summary}");
    assert_eq!(condition(&trial).0, "Succeeded", "{trial}");
    assert!(
        summary.contains("job succeeded (the job succeeds when chief-0 succeeds)"),
        "{summary}"
    );
    assert!(summary.contains("stopping ps-0"), "{summary}");
    assert!(
        summary.contains("ps-0 was killed by signal SIGTERM") || summary.contains("ps-0 stopped"),
        "{summary}"
    );
    for pid in pids(&sb, &trial) {
        assert!(!pid_alive(pid), "replica process {pid} survived the job");
    }
}

#[test]
fn ctrl_c_stops_every_replica() {
    let sb = Sandbox::new();
    let yaml = tfjob(
        "ctrlc",
        "",
        &[
            replica("Chief", 1, "Never", &[("CHIEF_WAITS", "never")]),
            replica("PS", 1, "Never", &[("MODE", "forever")]),
            replica("Worker", 2, "OnFailure", &[("MODE", "forever")]),
        ],
    );
    let file = sb.write("ctrlc.yaml", &yaml);
    let mut child = sb
        .cmd(&["run", file.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pids = wait_for_replicas(&sb, 4);
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    assert_eq!(wait_exit(&mut child, Duration::from_secs(30)), Some(130));
    for pid in pids {
        assert!(!pid_alive(pid), "replica process {pid} survived Ctrl-C");
    }
    let r = sb.report("ctrlc");
    assert_eq!(trials_in(&r, "Killed").len(), 1, "{r:#}");
}

/// Waits until `count` replicas of the sandbox's trials have written their pid marks.
fn wait_for_replicas(sb: &Sandbox, count: usize) -> Vec<i32> {
    let marks = sb.path().join("marks");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let found: Vec<i32> = std::fs::read_dir(&marks)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .flat_map(|t| std::fs::read_dir(t.path()).into_iter().flatten())
            .filter_map(Result::ok)
            .filter_map(|e| std::fs::read_to_string(e.path()).ok()?.trim().parse().ok())
            .collect();
        if found.len() == count {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "{count} replicas did not start: {found:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn resume_after_kill_9_stops_the_replicas_the_dead_driver_left_running() {
    let sb = Sandbox::new();
    let yaml = tfjob(
        "orphans",
        "",
        &[
            replica("Chief", 1, "Never", &[("CHIEF_WAITS", "never")]),
            replica("PS", 1, "Never", &[("MODE", "forever")]),
        ],
    );
    let file = sb.write("orphans.yaml", &yaml);
    let mut child = sb
        .cmd(&["run", file.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pids = wait_for_replicas(&sb, 2);
    child.kill().unwrap();
    child.wait().unwrap();
    // Neither replica writes any more, so nothing tells them their driver is gone.
    for pid in &pids {
        assert!(
            pid_alive(*pid),
            "replica {pid} should outlive the killed driver"
        );
    }
    let out = sb.run(&["resume", "orphans"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    for pid in pids {
        assert!(!pid_alive(pid), "replica process {pid} survived the resume");
    }
    let r = sb.report("orphans");
    let killed = trials_in(&r, "Killed");
    assert_eq!(killed.len(), 1, "{r:#}");
}

#[test]
fn xgboost_and_mpi_replicas_get_their_operator_environment() {
    let sb = Sandbox::new();
    // The master accepts a connection from each worker on MASTER_PORT and adds up their RANKs.
    let xgb = r#"import os, socket, sys
rank, world = int(os.environ['RANK']), int(os.environ['WORLD_SIZE'])
addr, port = os.environ['MASTER_ADDR'], int(os.environ['MASTER_PORT'])
if rank == 0:
    s = socket.create_server((addr, port))
    total = 0
    for _ in range(world - 1):
        c, _ = s.accept()
        total += int(c.makefile().readline())
    print(f'rank_sum={total} world={world}', flush=True)
    print('endpoints=' + os.environ['VERNIER_WORKER_ENDPOINTS'].replace(',', ' '), flush=True)
else:
    import time
    for _ in range(600):
        try:
            c = socket.create_connection((addr, port)); break
        except OSError:
            time.sleep(0.05)
    c.sendall(f'{rank}\n'.encode())
"#;
    let container = |script: &str| {
        format!(
            "                containers:\n                  - name: xgboost\n                    image: docker.io/library/python:3.11-slim\n                    command: [\"python3\", \"-c\", {}, \"${{trialParameters.x}}\"]\n",
            serde_json::to_string(script).unwrap()
        )
    };
    let spec = |name: &str, objective: &str, kind: &str, body: &str| {
        format!(
            "apiVersion: kubeflow.org/v1beta1\nkind: Experiment\nmetadata:\n  name: {name}\nspec:\n  objective:\n    type: maximize\n    objectiveMetricName: {objective}\n  algorithm:\n    algorithmName: random\n  maxTrialCount: 1\n  parallelTrialCount: 1\n  parameters:\n    - name: x\n      parameterType: double\n      feasibleSpace: {{min: \"0\", max: \"1\"}}\n  trialTemplate:\n    primaryContainerName: xgboost\n    trialParameters:\n      - name: x\n        reference: x\n    trialSpec:\n      apiVersion: kubeflow.org/v1\n      kind: {kind}\n      spec:\n{body}"
        )
    };
    // The workers ask for a GPU: read, reported, and either assigned or refused with a note.
    let body = format!(
        "        xgbReplicaSpecs:\n          Master:\n            replicas: 1\n            template:\n              spec:\n{m}          Worker:\n            replicas: 2\n            template:\n              spec:\n{m}                    resources:\n                      limits:\n                        nvidia.com/gpu: 1\n",
        m = container(xgb)
    );
    let file = sb.write("xgb.yaml", &spec("xgb", "rank_sum", "XGBoostJob", &body));
    let out = sb.run(&["run", file.to_str().unwrap()]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    let trial = sb.report("xgb")["trials"][0].clone();
    let (summary, _) = trial_logs(&sb, "xgb", &trial);
    assert!(summary.contains("nvidia.com/gpu: 1"), "{summary}");
    let no_gpu = shown.contains("requests GPUs (Worker × 1 GPU(s)) but this machine has none")
        && summary.contains("worker-1 requests 1 GPU(s) but this machine has none");
    let with_gpu = summary.contains("CUDA_VISIBLE_DEVICES=");
    assert!(no_gpu || with_gpu, "{shown}\n{summary}");
    // Workers are ranks 1 and 2 after the master.
    assert_eq!(metric(&trial, "rank_sum")["latest"], "3", "{trial}");

    // The launcher reads the hostfile mpirun would use; the workers have no command.
    let launcher = "import os\nprint(open(os.environ['OMPI_MCA_orte_default_hostfile']).read().strip())\nslots = open(os.environ['VERNIER_MPI_HOSTFILE']).read().split('slots=')[1]\nprint(f'slots={slots}', flush=True)\n";
    let body = format!(
        "        slotsPerWorker: 2\n        mpiReplicaSpecs:\n          Launcher:\n            replicas: 1\n            template:\n              spec:\n{}          Worker:\n            replicas: 2\n            template:\n              spec:\n                containers:\n                  - name: xgboost\n                    image: docker.io/horovod/horovod:latest\n",
        container(launcher)
    );
    let (code, trial, summary, dir) = run_one(&sb, "mpi", &spec("mpi", "slots", "MPIJob", &body));
    assert_eq!(code, Some(0), "{summary}");
    assert_eq!(metric(&trial, "slots")["latest"], "4", "{trial}");
    assert_eq!(read(&dir.join("hostfile")), "localhost slots=4\n");
    // MPICH's and Intel MPI's Hydra launcher refuses `slots=`: theirs says `host:slots`.
    assert_eq!(read(&dir.join("hostfile.hydra")), "localhost:4\n");
    assert!(summary.contains("worker-1: port"), "{summary}");
    assert!(
        summary.contains("not started (the launcher's mpirun starts its ranks)"),
        "{summary}"
    );
}
