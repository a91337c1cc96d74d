#!/usr/bin/env python3
"""ASHA vs Hyperband vs random search in Vernier on a real learning curve.

The trial program is examples/trainers/census_logreg.py: logistic regression on the UCI
Adult subset, trained for `--epochs` epochs, printing the held-out loss after each one. The
objective is the lowest held-out loss a trial printed (metricStrategy min).

For every algorithm, parallelTrialCount and seed this script writes an experiment file, runs
`vernier run` on a fresh database, and records each trial's epochs, objective and completion
time. Epochs spent are counted in completion order (a promotion re-trains from scratch, so
its epochs count in full). Results go to bench/results/asha-vernier.json; summarize.py turns
them into the BENCHMARKS.md table.

    python3 bench/asha/run_vernier.py --vernier target/debug/vernier
"""

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TRAINER = os.path.join(ROOT, "examples", "trainers", "census_logreg.py")
MAX_EPOCHS = 27

SPACE = """
    - name: lr
      parameterType: double
      feasibleSpace: {min: "0.001", max: "10", distribution: logUniform}
    - name: batch-size
      parameterType: discrete
      feasibleSpace: {list: ["8", "32", "128", "512"]}
    - name: l2
      parameterType: double
      feasibleSpace: {min: "0.000001", max: "1", distribution: logUniform}
"""

EPOCHS_PARAM = """
    - name: epochs
      parameterType: int
      feasibleSpace: {min: "1", max: "27"}
"""

ALGORITHMS = {
    # ASHA never ends by itself: 110 trials spend a little over 270 epochs.
    "asha": ("""    algorithmName: asha
    algorithmSettings:
      - {name: resource_name, value: epochs}
      - {name: max_resource, value: "27"}
      - {name: min_resource, value: "1"}
      - {name: eta, value: "3"}""", 110, True),
    # One full Hyperband run (4 brackets, 69 trials, 423 epochs).
    "hyperband": ("""    algorithmName: hyperband
    algorithmSettings:
      - {name: resource_name, value: epochs}
      - {name: r_l, value: "27"}
      - {name: eta, value: "3"}""", 69, True),
    # Every trial at the full 27 epochs; 10 trials are 270 epochs.
    "random": ("    algorithmName: random", 10, False),
    # Hyperband's schedule (69 trials, 423 epochs) with model-based first rungs.
    "bohb": ("""    algorithmName: bohb
    algorithmSettings:
      - {name: resource_name, value: epochs}
      - {name: r_l, value: "27"}
      - {name: eta, value: "3"}""", 69, True),
    # Random search, each 27-epoch trial judged after every epoch by an early-stopping rule;
    # more trials than 270 epochs need, the summary cuts every run at the same epochs.
    "random-asha-stop": ("""    algorithmName: random
  earlyStopping:
    algorithmName: asha
    algorithmSettings:
      - {name: min_resource, value: "1"}
      - {name: eta, value: "3"}""", 80, False),
    "random-medianstop": ("""    algorithmName: random
  earlyStopping:
    algorithmName: medianstop""", 25, False),
}


def experiment(name, algorithm, parallel):
    block, max_trials, multi_fidelity = ALGORITHMS[algorithm]
    params = SPACE + (EPOCHS_PARAM if multi_fidelity else "")
    epochs_arg = "${trialParameters.epochs}" if multi_fidelity else str(MAX_EPOCHS)
    trial_params = """
      - {name: lr, reference: lr}
      - {name: batchSize, reference: batch-size}
      - {name: l2, reference: l2}"""
    if multi_fidelity:
        trial_params += "\n      - {name: epochs, reference: epochs}"
    return f"""apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: {name}
spec:
  objective:
    type: minimize
    objectiveMetricName: loss
    additionalMetricNames: [accuracy]
  algorithm:
{block}
  parallelTrialCount: {parallel}
  maxTrialCount: {max_trials}
  maxFailedTrialCount: {max_trials}
  metricsCollectorSpec:
    collector: {{kind: StdOut}}
    source:
      filter:
        metricsFormat:
          - "{{metricName: ([\\\\w|-]+), metricValue: ((-?\\\\d+)(\\\\.\\\\d+)?)}}"
  parameters:{params}
  trialTemplate:
    primaryContainerName: train
    trialParameters:{trial_params}
    trialSpec:
      apiVersion: batch/v1
      kind: Job
      spec:
        template:
          spec:
            restartPolicy: Never
            containers:
              - name: train
                image: python:3.11-slim
                command:
                  - python3
                  - {TRAINER}
                  - --lr=${{trialParameters.lr}}
                  - --batch-size=${{trialParameters.batchSize}}
                  - --l2=${{trialParameters.l2}}
                  - --epochs={epochs_arg}
"""


def trials_of(db, name, multi_fidelity):
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT name, assignment_json, state, completed_us FROM trials WHERE experiment = ? "
        "ORDER BY completed_us, seq", (name,)).fetchall()
    out = []
    for trial, assignment_json, state, completed_us in rows:
        assignment = {p["name"]: p["value"] for p in json.loads(assignment_json)}
        values = [float(v) for (v,) in con.execute(
            "SELECT value FROM observation_logs WHERE trial_name = ? AND metric_name = 'loss'",
            (trial,)).fetchall() if v != "unavailable"]
        epochs = int(assignment["epochs"]) if multi_fidelity else MAX_EPOCHS
        if state == "EarlyStopped":
            epochs = len(values)  # a stopped trial trained the epochs it reported
        out.append({"trial": trial, "state": state, "epochs": epochs,
                    "loss": min(values) if values else None, "completed_us": completed_us})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vernier", required=True)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--parallel", default="1,4,8")
    ap.add_argument("--algorithms", default="asha,hyperband,random")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "asha-vernier.json"))
    args = ap.parse_args()
    results = []
    if os.path.exists(args.out):
        with open(args.out) as f:
            results = json.load(f)
    done = {(r["algorithm"], r["parallel"], r["seed"]) for r in results}
    plan = [(a, int(p), int(s)) for a in args.algorithms.split(",")
            for p in args.parallel.split(",") for s in args.seeds.split(",")]
    skipped = sum(1 for run in plan if run in done)
    if skipped:
        print(f"{skipped} of {len(plan)} run(s) already in {args.out}, kept and skipped "
              "(pass a new --out to measure them again)", flush=True)
    for algorithm in args.algorithms.split(","):
        for parallel in [int(p) for p in args.parallel.split(",")]:
            for seed in [int(s) for s in args.seeds.split(",")]:
                if (algorithm, parallel, seed) in done:
                    continue
                name = f"{algorithm}-p{parallel}-s{seed}"
                with tempfile.TemporaryDirectory() as tmp:
                    path = os.path.join(tmp, name + ".yaml")
                    with open(path, "w") as f:
                        f.write(experiment(name, algorithm, parallel))
                    db = os.path.join(tmp, "bench.db")
                    run = subprocess.run(
                        [args.vernier, "--db", db, "run", path, "--seed", str(seed),
                         "--log-dir", os.path.join(tmp, "logs")],
                        capture_output=True, text=True)
                    if run.returncode not in (0, 1):
                        sys.exit(f"{name} failed:\n{run.stdout}\n{run.stderr}")
                    trials = trials_of(db, name, ALGORITHMS[algorithm][2])
                results.append({"algorithm": algorithm, "parallel": parallel, "seed": seed,
                                "trials": trials})
                with open(args.out, "w") as f:
                    f.write("[\n" + ",\n".join(json.dumps(r, separators=(",", ":")) for r in results) + "\n]\n")
                spent = sum(t["epochs"] for t in trials)
                best = min((t["loss"] for t in trials if t["loss"] is not None), default=None)
                print(f"{name}: {len(trials)} trials, {spent} epochs, best loss {best}",
                      flush=True)


if __name__ == "__main__":
    main()
