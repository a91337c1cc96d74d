#!/usr/bin/env python3
"""Fills a Vernier SQLite database with one large synthetic experiment, for timing reports.

The schema comes from Vernier itself (`vernier --db FILE list` runs the migrations), so the
rows go through the real tables; only the contents are synthetic. Like the store's
`report_observations`, it writes each trial's reduced observation (min, max, latest and the
count of numeric values per metric) to `observation_summaries` beside the raw logs; with
`--no-summaries` it leaves them out and marks the trials pending instead, as a database
written before summaries existed looks after migration. Deterministic for a seed.

    python3 bench/make_report_db.py --vernier target/release/vernier --db big.db \
        --trials 10000 --metrics 5 --values 100

writes experiment `big`: 4 parameters, minimize `loss` plus (metrics - 1) additional metrics,
each trial reporting every metric `values` times (trials x metrics x values observation rows).
Every tenth trial is EarlyStopped.
"""
import argparse
import json
import math
import random
import sqlite3
import socket
import subprocess
import time

START_US = 1_700_000_000_000_000


def spec(name, metrics, trials):
    return {
        "apiVersion": "kubeflow.org/v1beta1",
        "kind": "Experiment",
        "metadata": {"name": name},
        "spec": {
            "objective": {
                "type": "minimize",
                "objectiveMetricName": "loss",
                "additionalMetricNames": [f"m{i}" for i in range(1, metrics)],
            },
            "algorithm": {"algorithmName": "random"},
            "parallelTrialCount": 4,
            "maxTrialCount": trials,
            "parameters": [
                {"name": "lr", "parameterType": "double",
                 "feasibleSpace": {"min": "0.0001", "max": "0.1", "distribution": "logUniform"}},
                {"name": "momentum", "parameterType": "double",
                 "feasibleSpace": {"min": "0", "max": "0.99"}},
                {"name": "layers", "parameterType": "int",
                 "feasibleSpace": {"min": "1", "max": "8"}},
                {"name": "optimizer", "parameterType": "categorical",
                 "feasibleSpace": {"list": ["sgd", "adam", "rmsprop"]}},
            ],
            "trialTemplate": {
                "primaryContainerName": "training",
                "trialParameters": [{"name": p, "reference": p}
                                    for p in ["lr", "momentum", "layers", "optimizer"]],
                "trialSpec": {
                    "apiVersion": "batch/v1", "kind": "Job",
                    "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                        {"name": "training", "image": "python:3.11",
                         "command": ["python3", "train.py"] + [
                             "${trialParameters.%s}" % p
                             for p in ["lr", "momentum", "layers", "optimizer"]]}]}}},
                },
            },
        },
    }


def create_schema(vernier, path):
    """Lets Vernier create the database and run its migrations: only `run` and
    `serve --create-db` create one, so serve on a free loopback port until `list` can read it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([vernier, "--db", path, "serve", "--create-db",
                               "--listen", f"127.0.0.1:{port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for _ in range(300):
            ok = subprocess.run([vernier, "--db", path, "list"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL).returncode == 0
            if ok:
                return
            if server.poll() is not None:
                raise SystemExit(f"vernier serve --create-db failed: {server.stderr.read().decode()}")
            time.sleep(0.1)
        raise SystemExit(f"{path}: vernier did not create the schema within 30 s")
    finally:
        server.terminate()
        server.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vernier", required=True, help="the vernier binary (creates the schema)")
    ap.add_argument("--db", required=True)
    ap.add_argument("--name", default="big")
    ap.add_argument("--trials", type=int, default=10000)
    ap.add_argument("--metrics", type=int, default=5)
    ap.add_argument("--values", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-summaries", action="store_true",
                    help="write raw logs only, as an older database has them")
    a = ap.parse_args()
    create_schema(a.vernier, a.db)
    rng = random.Random(a.seed)
    db = sqlite3.connect(a.db)
    db.execute("PRAGMA synchronous=OFF")
    end_us = START_US + a.trials * 60_000_000
    db.execute(
        "INSERT INTO experiments (name, spec_json, seed, created_us, phase, reason, message,"
        " started_us, completed_us, algorithm_state, conditions_json, work_dir, log_dir)"
        " VALUES (?,?,?,?,?,?,?,?,?,NULL,?,?,?)",
        (a.name, json.dumps(spec(a.name, a.metrics, a.trials)), a.seed, START_US, "Succeeded",
         "ExperimentMaxTrialsReached", "Experiment has succeeded because max trial count has reached",
         START_US, end_us, "[]", ".", "vernier-logs"),
    )
    metric_names = ["loss"] + [f"m{i}" for i in range(1, a.metrics)]
    batch = []
    summaries = []
    for seq in range(a.trials):
        name = f"{a.name}-{seq:06d}"
        lr = 10 ** rng.uniform(-4, -1)
        momentum = rng.uniform(0, 0.99)
        layers = rng.randint(1, 8)
        opt = rng.choice(["sgd", "adam", "rmsprop"])
        final = (math.log10(lr) + 2.5) ** 2 * 0.1 + (momentum - 0.9) ** 2 + 0.02 * layers \
            + {"sgd": 0.3, "adam": 0.0, "rmsprop": 0.1}[opt] + rng.gauss(0, 0.02)
        state = "EarlyStopped" if seq % 10 == 9 else "Succeeded"
        created = START_US + seq * 60_000_000
        started = created + 1_000_000
        completed = started + a.values * 500_000
        db.execute(
            "INSERT INTO trials (name, experiment, seq, assignment_json, labels_json, state,"
            " reason, message, created_us, started_us, completed_us, attempt)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,1)",
            (name, a.name, seq,
             json.dumps([{"name": "lr", "value": f"{lr:.6g}"},
                         {"name": "momentum", "value": f"{momentum:.4f}"},
                         {"name": "layers", "value": str(layers)},
                         {"name": "optimizer", "value": opt}]),
             "{}", state, "Trial" + state, "", created, started, completed),
        )
        reduced = {m: [math.inf, -math.inf, None, None] for m in metric_names}
        for step in range(a.values):
            t = started + step * 500_000
            decay = math.exp(-5.0 * step / a.values)
            loss = final + 2.0 * decay + rng.gauss(0, 0.01)
            for k, m in enumerate(metric_names):
                v = loss if k == 0 else 1.0 / (1.0 + loss * k)
                text = repr(round(v, 6))
                batch.append((name, t, m, text))
                r = reduced[m]
                r[0], r[1] = min(r[0], float(text)), max(r[1], float(text))
                r[2], r[3] = text, t
        if a.values > 0:
            summaries.extend((name, m, r[0], r[1], r[2], r[3], a.values)
                             for m, r in reduced.items())
        if len(batch) >= 200_000:
            db.executemany(
                "INSERT INTO observation_logs (trial_name, time, metric_name, value) VALUES (?,?,?,?)",
                batch)
            batch.clear()
    db.executemany(
        "INSERT INTO observation_logs (trial_name, time, metric_name, value) VALUES (?,?,?,?)", batch)
    if a.no_summaries:
        db.executemany("INSERT INTO observation_summaries_pending (trial_name) VALUES (?)",
                       sorted({s[0] for s in summaries}, key=str))
    else:
        db.executemany(
            "INSERT INTO observation_summaries (trial_name, metric_name, min_value, max_value,"
            " latest_value, latest_time, numeric_count) VALUES (?,?,?,?,?,?,?)", summaries)
    db.commit()
    n = db.execute("SELECT count(*) FROM observation_logs").fetchone()[0]
    print(f"{a.db}: experiment {a.name}, {a.trials} trials, {n} observation rows")


if __name__ == "__main__":
    main()
