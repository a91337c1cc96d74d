#!/usr/bin/env python3
"""The adversarial pass: hostile inputs and faults thrown at a built `vernier`, with figures.

Each attack runs the binary in a fresh temporary directory and checks what a user is owed:
no panic (exit 101), a clear error naming the field or the file, bounded time and memory, and
nothing recorded lost. It prints one row per attack (held or FAILED, wall time, the peak RSS of
the vernier process, what was seen) and exits 1 if any attack was not held. The figures in the
README's integrity section and BENCHMARKS.md come from this script.

    cargo build --release -p vernier-cli
    python3 bench/adversarial/attack.py --vernier target/release/vernier [--only NAME,...]

Peak memory is the child's own `ru_maxrss` (os.wait4), so it is the vernier process and not
the trials it starts. Timings are wall clock on whatever machine runs it: they are figures for a
write-up, never thresholds; the checks are about outcomes.
"""
import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time

PANIC = 101


class Result:
    def __init__(self, code, out, err, wall, rss_mb):
        self.code, self.out, self.err, self.wall, self.rss_mb = code, out, err, wall, rss_mb

    @property
    def text(self):
        return self.out + self.err


def run(vernier, args, cwd, timeout=120):
    """Runs vernier to its end (killed after `timeout`); no memory figure."""
    start = time.monotonic()
    p = subprocess.Popen([vernier, *args], cwd=cwd, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        err += f"\n[killed after {timeout} s]".encode()
    return Result(p.returncode, out.decode(errors="replace"), err.decode(errors="replace"),
                  time.monotonic() - start, 0)


def run_measured(vernier, args, cwd, timeout=300):
    """Like `run`, with the peak RSS of the vernier process itself, read by GNU time: a child
    forked from this (large) Python process would report Python's RSS as its own."""
    with tempfile.NamedTemporaryFile(mode="r") as rss:
        r = run("/usr/bin/time", ["-f", "%M", "-o", rss.name, vernier, *args], cwd, timeout)
        kib = rss.read().strip().splitlines()
    r.rss_mb = int(kib[-1]) / 1024 if kib and kib[-1].isdigit() else 0
    return r


def experiment(name, params, command, extra="", objective="loss", trials=1, parallel=1,
               algorithm="random", settings=""):
    """A Katib v1beta1 Experiment running `command` (a list) for each trial."""
    params_yaml = textwrap.indent(params.strip("\n"), "    ")
    names = param_names(params)
    if command:
        # Every trial parameter must be used in the template (Katib's rule): pass the unused
        # ones as trailing arguments.
        command = command + [f"${{trialParameters.{p}}}" for p in names
                             if f"${{trialParameters.{p}}}" not in " ".join(command)]
    refs = "".join(f"      - name: {p}\n        reference: {p}\n" for p in names)
    return f"""apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: {name}
spec:
  objective:
    type: minimize
    objectiveMetricName: {objective}
  algorithm:
    algorithmName: {algorithm}
{settings}  parallelTrialCount: {parallel}
  maxTrialCount: {trials}
  maxFailedTrialCount: {trials}
{extra}  parameters:
{params_yaml}
  trialTemplate:
    primaryContainerName: training
    trialParameters:
{refs}    trialSpec:
      apiVersion: batch/v1
      kind: Job
      spec:
        template:
          spec:
            restartPolicy: Never
            containers:
              - name: training
                image: python:3.11
                command: {json.dumps(command)}
"""


def param_names(params):
    return [line.split(":", 1)[1].strip() for line in params.splitlines()
            if line.strip().startswith("- name:")]


X_PARAM = """
- name: x
  parameterType: double
  feasibleSpace: {min: "0", max: "1"}
"""
# Two tunable parameters: cmaes refuses a one-dimensional space before it reads its settings.
XY_PARAMS = X_PARAM + """- name: y
  parameterType: double
  feasibleSpace: {min: "0", max: "1"}
"""


def python_trial(script):
    return ["python3", "-c", script]


def report_json(vernier, cwd, name):
    r = run(vernier, ["report", name, "--format", "json"], cwd)
    return json.loads(r.out) if r.code == 0 else None


def condition(obj):
    """The last condition whose status is True: a trial's state, an experiment's phase."""
    true = [c["type"] for c in obj.get("status", {}).get("conditions", []) if c["status"] == "True"]
    return true[-1] if true else None


def trial_states(vernier, cwd, name):
    rep = report_json(vernier, cwd, name)
    out = {}
    for t in (rep or {}).get("trials", []):
        state = condition(t)
        out[state] = out.get(state, 0) + 1
    return out


def phase(vernier, cwd, name):
    rep = report_json(vernier, cwd, name)
    return None if rep is None else condition(rep)


def refused(r, needle=""):
    """An error exit that is not a panic and names `needle`."""
    return r.code not in (0, PANIC) and needle in r.text


def refusal(r, needle=""):
    """The attack's row for a command that must be refused naming `needle`."""
    return refused(r, needle), f"exit {r.code}: {first_line(r.err)}", r


# --- attacks: each returns (held: bool, seen: str, Result for its figures) ---

def a_full_i64_range(v, d):
    p = """
- name: n
  parameterType: int
  feasibleSpace: {min: "-9223372036854775808", max: "9223372036854775807"}
"""
    write(d, "x.yaml", experiment("wide", p, ["/usr/bin/printf", "loss=1 n=%s\\n",
                                                 "${trialParameters.n}"], trials=4))
    r = run_measured(v, ["run", "x.yaml"], d)
    states = trial_states(v, d, "wide")
    return r.code == 0 and states.get("Succeeded") == 4, f"exit {r.code}, trials {states}", r


def big_categorical(n):
    values = ", ".join(f'"v{i}"' for i in range(n))
    return f"""
- name: c
  parameterType: categorical
  feasibleSpace: {{list: [{values}]}}
"""


def a_categorical_100k(v, d):
    write(d, "x.yaml", experiment("cat", big_categorical(100_000), ["true"]))
    r = run_measured(v, ["validate", "x.yaml"], d)
    return r.code == 0, f"exit {r.code}", r


def a_categorical_1m(v, d):
    write(d, "x.yaml", experiment("cat", big_categorical(1_000_000), ["true"]))
    r = run_measured(v, ["validate", "x.yaml"], d)
    named = "feasibleSpace.list" in r.text and "200000" in r.text.replace(",", "")
    return named and refused(r), f"exit {r.code}: {first_line(r.err)}", r


def a_flow_nesting(v, d):
    write(d, "x.yaml", "a: " + "[" * 100_000 + "]" * 100_000 + "\n")
    r = run_measured(v, ["validate", "x.yaml"], d)
    return refusal(r, "x.yaml")


def a_json_nesting(v, d):
    write(d, "x.json", "[" * 50_000 + "]" * 50_000)
    r = run_measured(v, ["validate", "x.json"], d)
    return refusal(r)


def a_validate_dev_zero(v, d):
    r = run_measured(v, ["validate", "/dev/zero"], d, timeout=60)
    return refusal(r, "/dev/zero")


def a_warm_start_dev_zero(v, d):
    extra = "  warmStart:\n    file: /dev/zero\n"
    write(d, "x.yaml", experiment("warm", X_PARAM, ["true"], extra=extra))
    r = run_measured(v, ["run", "x.yaml"], d, timeout=60)
    ph = phase(v, d, "warm")
    held = refused(r, "/dev/zero") and ph in (None, "Failed")
    return held, f"exit {r.code}, phase {ph}: {first_line(r.err)}", r


def a_million_metric_lines(v, d):
    script = "import sys\nw=sys.stdout.write\nfor i in range(1000000): w(f'loss={i}\\n')\n"
    write(d, "x.yaml", experiment("flood", X_PARAM, python_trial(script)))
    r = run_measured(v, ["run", "x.yaml"], d, timeout=600)
    rep = report_json(v, d, "flood")
    latest = None
    if rep:
        metrics = rep["trials"][0]["status"].get("observation", {}).get("metrics", [])
        latest = metrics[0]["latest"] if metrics else None
    return r.code == 0 and latest == "999999", f"exit {r.code}, latest loss {latest}", r


def a_huge_non_numbers(v, d):
    script = ("import sys\nfor i in range(300): sys.stdout.write('loss=' + 'n'*1000000 + '\\n')\n"
              "sys.stdout.write('loss=0.5\\n')\n")
    write(d, "x.yaml", experiment("nan", X_PARAM, python_trial(script)))
    r = run_measured(v, ["run", "x.yaml"], d, timeout=300)
    longest = max((len(l) for l in r.text.splitlines()), default=0)
    return r.code == 0 and longest < 2000, f"exit {r.code}, longest output line {longest} B", r


def a_cut_line(v, d):
    script = ("import sys\nsys.stdout.write('x' * (1024 * 1024 - 8) + ' loss=123456789\\n')\n"
              "sys.stdout.write('loss=0.5\\n')\n")
    write(d, "x.yaml", experiment("cut", X_PARAM, python_trial(script)))
    r = run_measured(v, ["run", "x.yaml"], d)
    rep = report_json(v, d, "cut")
    m = rep["trials"][0]["status"]["observation"]["metrics"][0] if rep else {}
    return r.code == 0 and m.get("min") == "0.5", f"exit {r.code}, loss min {m.get('min')}", r


def a_tiny_step(v, d):
    p = """
- name: x
  parameterType: double
  feasibleSpace: {min: "0", max: "1", step: "1e-300"}
"""
    write(d, "x.yaml", experiment("step", p, ["/usr/bin/printf", "loss=%s\\n",
                                                 "${trialParameters.x}"], trials=3))
    r = run_measured(v, ["run", "x.yaml"], d)
    states = trial_states(v, d, "step")
    held = (r.code == 0 and states.get("Succeeded") == 3) or refused(r, "step")
    return held, f"exit {r.code}, trials {states}", r


def a_huge_grid(v, d):
    p = """
- name: x
  parameterType: double
  feasibleSpace: {min: "-1.7e308", max: "1.7e308", step: "1"}
"""
    write(d, "x.yaml", experiment("grid", p, ["true"], algorithm="grid"))
    r = run_measured(v, ["validate", "x.yaml"], d)
    return refusal(r, "step")


def a_widest_uniform(v, d):
    p = """
- name: x
  parameterType: double
  feasibleSpace: {min: "-1.7e308", max: "1.7e308"}
"""
    write(d, "x.yaml", experiment("wideu", p, ["/usr/bin/printf", "loss=1 x=%s\\n",
                                                  "${trialParameters.x}"], trials=6))
    r = run_measured(v, ["run", "x.yaml"], d)
    rep = report_json(v, d, "wideu") or {"trials": []}
    xs = {a["value"] for t in rep["trials"] for a in t["spec"]["parameterAssignments"]}
    return r.code == 0 and len(xs) == 6, f"exit {r.code}, {len(xs)} distinct x of 6", r


def a_collector_escape(v, d):
    extra = ("  metricsCollectorSpec:\n    collector:\n      kind: File\n    source:\n"
             "      fileSystemPath:\n        path: /../../../../tmp/escape/metrics.log\n        kind: File\n")
    write(d, "x.yaml", experiment("esc", X_PARAM, ["true"], extra=extra))
    r = run_measured(v, ["validate", "x.yaml"], d)
    return refusal(r, "fileSystemPath")


def a_settings_out_of_range(v, d):
    cases = [("tpe", "n_ei_candidates", "1e9"), ("bayesianoptimization", "n_initial_points", "-5"),
             ("cmaes", "sigma", "inf")]
    seen = []
    ok = True
    for algo, key, value in cases:
        s = f"    algorithmSettings:\n      - name: {key}\n        value: \"{value}\"\n"
        write(d, "x.yaml", experiment("s", XY_PARAMS, ["true"], algorithm=algo, settings=s))
        r = run_measured(v, ["validate", "x.yaml"], d)
        ok &= refused(r, key)
        seen.append(f"{key}={value}: exit {r.code}")
    return ok, "; ".join(seen), r


def a_empty_command(v, d):
    """An empty command runs the image's entrypoint on a cluster (valid there, exit 3); the
    local verdict must name the field `run` refuses, and `run` must refuse it."""
    yaml = experiment("empty", X_PARAM, ["true"]).replace(
        'command: ["true", "${trialParameters.x}"]',
        'command: []\n                env: [{name: X, value: "${trialParameters.x}"}]')
    write(d, "x.yaml", yaml)
    r = run_measured(v, ["validate", "x.yaml"], d)
    ran = run(v, ["run", "x.yaml"], d)
    held = r.code == 3 and "command" in r.text and ran.code not in (0, PANIC)
    return held, f"validate exit {r.code}, run exit {ran.code}: {first_line(ran.err)}", r


def a_odd_parameter_names(v, d):
    p = """
- name: "a=b"
  parameterType: double
  feasibleSpace: {min: "0", max: "1"}
"""
    write(d, "x.yaml", experiment("odd", p, ["true"]))
    r = run_measured(v, ["validate", "x.yaml"], d)
    return refusal(r, "a=b")


def a_closed_stdout(v, d):
    write(d, "x.yaml", experiment("pipe", X_PARAM, ["/usr/bin/printf", "loss=%s\\n",
                                                     "${trialParameters.x}"], trials=6, parallel=2))
    start = time.monotonic()
    shell = f"{v} run x.yaml | head -c 1 > /dev/null; echo ${{PIPESTATUS[0]}}"
    p = subprocess.run(["bash", "-c", shell], cwd=d, capture_output=True, text=True, timeout=120)
    code = int(p.stdout.strip().splitlines()[-1])
    ph, states = phase(v, d, "pipe"), trial_states(v, d, "pipe")
    r = Result(code, p.stdout, p.stderr, time.monotonic() - start, 0)
    held = code != PANIC and ph in ("Succeeded", "Interrupted") and "Running" not in states
    return held, f"exit {code}, phase {ph}, trials {states}", r


def a_typo_db(v, d):
    r = run_measured(v, ["--db", "vernir.db", "report", "x"], d)
    created = [f for f in os.listdir(d) if f.startswith("vernir")]
    return refused(r, "vernir.db") and not created, \
        f"exit {r.code}, files created {created}: {first_line(r.err)}", r


def slow_experiment(name, trials, parallel, seconds="0.3"):
    script = f"import time,random\ntime.sleep({seconds})\nprint('loss=%f' % random.random())\n"
    return experiment(name, X_PARAM, python_trial(script), trials=trials, parallel=parallel)


def a_two_drivers(v, d):
    write(d, "x.yaml", slow_experiment("two", 6, 2, seconds="1"))
    first = subprocess.Popen([v, "run", "x.yaml"], cwd=d, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    time.sleep(1.5)
    second = run(v, ["resume", "two"], d, timeout=60)
    first.wait(timeout=120)
    states = trial_states(v, d, "two")
    held = (second.code not in (0, PANIC) and "pid" in second.text and first.returncode == 0
            and states.get("Succeeded") == 6)
    return held, f"second exit {second.code}: {first_line(second.err)}; first exit {first.returncode}, trials {states}", second


TRIALS_K9 = 120


def a_kill9_and_resume(v, d, rounds=6):
    """kill -9 the driver at random moments while 8 trials run at a time; resume until done."""
    write(d, "x.yaml", slow_experiment("k9", TRIALS_K9, 8, seconds="0.5"))
    rng = random.Random(7)
    start = time.monotonic()
    finished_before = {}
    args = ["run", "x.yaml"]
    kills = 0
    lost = []
    for _ in range(rounds):
        p = subprocess.Popen([v, *args], cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.5, 2.5))
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            kills += 1
        p.wait()
        args = ["resume", "k9"]
        now = finished(v, d, "k9")
        lost += [n for n, s in finished_before.items() if now.get(n) != s]
        finished_before = now
    # The rounds may have finished it already; then resume says so and changes nothing.
    last = run(v, ["resume", "k9"], d, timeout=300)
    now = finished(v, d, "k9")
    lost += [n for n, s in finished_before.items() if now.get(n) != s]
    states = trial_states(v, d, "k9")
    total = sum(states.values())
    ph = phase(v, d, "k9")
    r = Result(last.code, last.out, last.err, time.monotonic() - start, last.rss_mb)
    held = (ph == "Succeeded" and last.code in (0, 2) and not lost and total == TRIALS_K9
            and "Running" not in states)
    return held, (f"{kills} kills, last resume exit {last.code}, phase {ph}, trials {states}, "
                  f"finished trials changed by a later driver: {lost or 'none'}"), r


def finished(v, d, name):
    rep = report_json(v, d, name) or {"trials": []}
    out = {}
    for t in rep["trials"]:
        state = condition(t)
        if state not in (None, "Running", "Created", "Pending"):
            out[t["metadata"]["name"]] = (state, json.dumps(t["status"].get("observation")))
    return out


def a_db_deleted_while_running(v, d):
    write(d, "x.yaml", slow_experiment("gone", 40, 2))
    start = time.monotonic()
    p = subprocess.Popen([v, "run", "x.yaml"], cwd=d, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(1.0)
    for f in os.listdir(d):
        if f.startswith("vernier.db"):
            os.remove(os.path.join(d, f))
    out, err = p.communicate(timeout=120)
    text = (out + err).decode(errors="replace")
    r = Result(p.returncode, out.decode(), err.decode(), time.monotonic() - start, 0)
    held = p.returncode not in (0, PANIC) and "was deleted" in text
    return held, f"exit {p.returncode}: {first_line(err.decode()) or first_line(text)}", r


def a_db_locked(v, d):
    write(d, "x.yaml", slow_experiment("lock", 4, 2))
    first = run(v, ["run", "x.yaml"], d)
    con = sqlite3.connect(os.path.join(d, "vernier.db"), timeout=0)
    con.execute("BEGIN EXCLUSIVE")
    try:
        r = run_measured(v, ["report", "lock"], d, timeout=120)
    finally:
        con.rollback()
        con.close()
    after = trial_states(v, d, "lock")
    held = first.code == 0 and r.code not in (PANIC,) and after.get("Succeeded") == 4
    return held, f"report under an exclusive lock: exit {r.code}: {first_line(r.err)}; after: {after}", r


def cpu_seconds(pid):
    """User plus system CPU time of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def katib_server(v, d):
    """`vernier serve` on a free port and a Suggestion stub from Katib's own package, or None
    where the package is missing."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "e2e", "python"))
    try:
        from katib_stubs import grpc, pb, pb_grpc
    except SystemExit:
        return None
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen([v, "--db", os.path.join(d, "v.db"), "serve", "--create-db",
                               "--listen", f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}",
                                    options=[("grpc.max_send_message_length", 64 << 20),
                                             ("grpc.max_receive_message_length", 64 << 20)])
    grpc.channel_ready_future(channel).result(timeout=20)
    return server, grpc, pb, pb_grpc.SuggestionStub(channel)


def katib_experiment(pb, algorithm, params):
    return pb.Experiment(name="attack", spec=pb.ExperimentSpec(
        parameter_specs=pb.ExperimentSpec.ParameterSpecs(parameters=params),
        objective=pb.ObjectiveSpec(type=pb.MINIMIZE, objective_metric_name="loss"),
        algorithm=pb.AlgorithmSpec(algorithm_name=algorithm),
        parallel_trial_count=1, max_trial_count=100000))


def katib_trials(pb, n, running=0):
    """`n` succeeded trials with a random `x` and `loss`, then `running` running ones."""
    rng = random.Random(3)

    def trial(i, condition, metrics):
        return pb.Trial(
            name=f"t{i}",
            spec=pb.TrialSpec(parameter_assignments=pb.TrialSpec.ParameterAssignments(
                assignments=[pb.ParameterAssignment(name="x", value=repr(rng.random()))])),
            status=pb.TrialStatus(condition=condition, observation=pb.Observation(metrics=metrics)))
    done = [trial(i, pb.TrialStatus.SUCCEEDED, [pb.Metric(name="loss", value=repr(rng.random()))])
            for i in range(n)]
    return done + [trial(n + i, pb.TrialStatus.RUNNING, []) for i in range(running)]


def peak_rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def a_grpc_gp_whole_batch(v, d):
    """A GP request for 10,000 proposals over 10,000 finished and 1,000 running trials, with no
    deadline. Held if it is answered with 10,000 distinct proposals (the work per request is
    bounded by the algorithm itself, not by a deadline)."""
    started = katib_server(v, d)
    if started is None:
        return None, "skipped: the kubeflow-katib package is missing", Result(None, "", "", 0, 0)
    server, grpc, pb, stub = started
    x = pb.ParameterSpec(name="x", parameter_type=pb.DOUBLE,
                         feasible_space=pb.FeasibleSpace(min="0", max="1"))
    request = pb.GetSuggestionsRequest(
        experiment=katib_experiment(pb, "bayesianoptimization", [x]),
        trials=katib_trials(pb, 10_000, running=1_000), current_request_number=10_000)
    start = time.monotonic()
    try:
        reply = stub.GetSuggestions(request, timeout=1800)
        answer = f"OK with {len(reply.parameter_assignments)} proposals"
        distinct = len({a.assignments[0].value for a in reply.parameter_assignments})
    except grpc.RpcError as e:
        answer, distinct = e.code().name, 0
    wall = time.monotonic() - start
    rss = peak_rss_mb(server.pid)
    server.terminate()
    server.wait()
    held = distinct == 10_000
    return held, f"{answer} ({distinct} distinct)", Result(0, "", "", wall, rss)


def a_grpc_heavy_and_concurrent(v, d):
    """`vernier serve` under Katib's own stubs: a 150,000-value categorical to validate, a GP
    request over 10,000 trials with a 2 s deadline and 8 clients asking for random
    suggestions, all at once. Held if every call gets an answer that is not INTERNAL, the
    small calls keep being answered meanwhile, and the GP work stops after its deadline."""
    started = katib_server(v, d)
    if started is None:
        return None, "skipped: the kubeflow-katib package is missing", Result(None, "", "", 0, 0)
    server, grpc, pb, stub = started
    import threading

    def experiment(algorithm, params):
        return katib_experiment(pb, algorithm, params)

    x = pb.ParameterSpec(name="x", parameter_type=pb.DOUBLE,
                         feasible_space=pb.FeasibleSpace(min="0", max="1"))
    big = pb.ParameterSpec(name="c", parameter_type=pb.CATEGORICAL,
                           feasible_space=pb.FeasibleSpace(list=[f"v{i}" for i in range(150_000)]))
    trials = katib_trials(pb, 10_000)
    outcomes, small = {}, []

    def call(key, fn):
        start = time.monotonic()
        try:
            fn()
            outcomes[key] = ("OK", time.monotonic() - start)
        except grpc.RpcError as e:
            outcomes[key] = (e.code().name, time.monotonic() - start)

    def small_calls(k):
        for _ in range(20):
            start = time.monotonic()
            try:
                stub.GetSuggestions(pb.GetSuggestionsRequest(
                    experiment=experiment("random", [x]), current_request_number=1), timeout=60)
                small.append(time.monotonic() - start)
            except grpc.RpcError as e:
                outcomes[f"small-{k}"] = (e.code().name, 0)

    start = time.monotonic()
    threads = [threading.Thread(target=call, args=("validate 150k", lambda: stub.ValidateAlgorithmSettings(
        pb.ValidateAlgorithmSettingsRequest(experiment=experiment("tpe", [x, big])), timeout=120))),
        threading.Thread(target=call, args=("gp 10k trials, 2 s deadline", lambda: stub.GetSuggestions(
            pb.GetSuggestionsRequest(experiment=experiment("bayesianoptimization", [x]), trials=trials,
                                     current_request_number=50), timeout=2)))]
    threads += [threading.Thread(target=small_calls, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - start
    cpu_then = cpu_seconds(server.pid)
    time.sleep(3)
    cpu_spent_after = cpu_seconds(server.pid) - cpu_then
    alive = server.poll() is None
    server.terminate()
    server.wait()
    internal = {k: o for k, o in outcomes.items() if o[0] in ("INTERNAL", "UNKNOWN", "UNAVAILABLE")}
    worst = max(small) if small else None
    held = alive and not internal and len(small) == 160 and cpu_spent_after < 1.0
    slowest = f"{worst:.2f} s" if worst is not None else "none answered"
    seen = ", ".join(f"{k}: {o[0]} in {o[1]:.2f} s" for k, o in sorted(outcomes.items()))
    seen += f"; 160 small calls: {len(small)} answered, slowest {slowest}"
    seen += f"; server CPU in the 3 s after: {cpu_spent_after:.2f} s"
    return held, seen, Result(0, "", "", wall, 0)


ATTACKS = [
    ("int over the whole i64 range (run)", a_full_i64_range),
    ("100,000-value categorical (validate)", a_categorical_100k),
    ("1,000,000-value categorical (validate)", a_categorical_1m),
    ("YAML flow nesting 100k deep", a_flow_nesting),
    ("JSON nesting 50k deep", a_json_nesting),
    ("validate /dev/zero", a_validate_dev_zero),
    ("warmStart.file: /dev/zero", a_warm_start_dev_zero),
    ("trial printing 1,000,000 metric lines", a_million_metric_lines),
    ("300 one-megabyte non-numbers", a_huge_non_numbers),
    ("value cut at the 1 MiB line cap", a_cut_line),
    ("double step 1e-300", a_tiny_step),
    ("grid over +-1.7e308 step 1", a_huge_grid),
    ("uniform over +-1.7e308", a_widest_uniform),
    ("File collector path escaping the log dir", a_collector_escape),
    ("settings out of range (validate)", a_settings_out_of_range),
    ("empty command", a_empty_command),
    ("parameter name with '='", a_odd_parameter_names),
    ("closed stdout (run | head -c 1)", a_closed_stdout),
    ("report --db with a typo", a_typo_db),
    ("second driver on a running experiment", a_two_drivers),
    ("kill -9 at random moments, 8 trials in parallel, resume", a_kill9_and_resume),
    ("database file deleted while running", a_db_deleted_while_running),
    ("report while another process holds an exclusive lock", a_db_locked),
    ("gRPC: heavy validate, GP past its deadline, 8 clients at once", a_grpc_heavy_and_concurrent),
    ("gRPC: GP batch of 10,000 over 10,000 + 1,000 running trials, no deadline", a_grpc_gp_whole_batch),
]


def write(d, name, text):
    with open(os.path.join(d, name), "w") as f:
        f.write(text)


def first_line(s):
    for line in s.splitlines():
        if line.strip():
            return line.strip()[:160]
    return ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vernier", required=True)
    ap.add_argument("--only", help="comma-separated attack function names (e.g. a_cut_line)")
    ap.add_argument("--json", help="also write the rows to this file")
    a = ap.parse_args()
    vernier = os.path.abspath(a.vernier)
    only = set(a.only.split(",")) if a.only else None
    rows = []
    for title, attack in ATTACKS:
        if only and attack.__name__ not in only:
            continue
        with tempfile.TemporaryDirectory(prefix="vernier-attack-") as d:
            try:
                held, seen, r = attack(vernier, d)
            except Exception as e:  # an attack that cannot even be judged is a failure
                held, seen, r = False, f"attack error: {e!r}", Result(None, "", "", 0, 0)
        if held is None:
            print(f"{'skip':6} {title}: {seen}", flush=True)
            continue
        row = {"attack": title, "held": bool(held), "wall_s": round(r.wall, 2),
               "peak_rss_mb": round(r.rss_mb, 1), "seen": seen}
        rows.append(row)
        mark = "held" if held else "FAILED"
        print(f"{mark:6} {r.wall:7.2f} s {r.rss_mb:7.1f} MB  {title}: {seen}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    failed = [r for r in rows if not r["held"]]
    print(f"{len(rows) - len(failed)} of {len(rows)} attacks held")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
