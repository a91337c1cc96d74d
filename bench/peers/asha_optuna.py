#!/usr/bin/env python3
"""Optuna's SuccessiveHalvingPruner and HyperbandPruner on the ASHA benchmark problem.

Same problem, search space and epoch budget as bench/asha/run_vernier.py: logistic
regression on the UCI Adult subset (examples/trainers/census_logreg.py, whose training loop
runs here in-process), up to 27 epochs, objective the lowest held-out loss reported.
Parameters are sampled at random (RandomSampler), as Vernier's ASHA and Hyperband draw new
configurations, so the pruners are what is compared. A pruned trial stops mid-training and
its spent epochs are the steps it reported; an Optuna "promotion" continues the same trial,
while Vernier's promotions re-train from scratch.

Each study runs until the epochs spent reach the budget (trials started before that finish),
with n_jobs threads for parallelTrialCount 1, 4 and 8. Writes bench/results/asha-optuna.json.

    pip install optuna==5.0.0
    python3 bench/peers/asha_optuna.py
"""

import argparse
import json
import os
import sys
import threading
import time

import optuna

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "examples", "trainers"))
import census_logreg  # noqa: E402

MAX_EPOCHS = 27
BUDGET = 270


def run(pruner_name, parallel, seed, data, budget=BUDGET):
    # "tpe-hyperband": TPESampler (multivariate, Optuna 5.0's default) with HyperbandPruner,
    # the peer of Vernier's bohb.
    sampler = (optuna.samplers.TPESampler(seed=seed) if pruner_name.startswith("tpe-")
               else optuna.samplers.RandomSampler(seed=seed))
    if pruner_name == "successivehalving":
        pruner = optuna.pruners.SuccessiveHalvingPruner(
            min_resource=1, reduction_factor=3, min_early_stopping_rate=0)
    else:
        pruner = optuna.pruners.HyperbandPruner(
            min_resource=1, max_resource=MAX_EPOCHS, reduction_factor=3)
    study = optuna.create_study(direction="minimize", pruner=pruner, sampler=sampler)
    lock = threading.Lock()
    spent = [0]
    log = []

    def objective(trial):
        args = argparse.Namespace(
            lr=trial.suggest_float("lr", 0.001, 10, log=True),
            batch_size=int(trial.suggest_categorical("batch-size", ["8", "32", "128", "512"])),
            l2=trial.suggest_float("l2", 1e-6, 1, log=True),
            epochs=MAX_EPOCHS, seed=1, data_dir=None)
        best = float("inf")
        epochs = 0
        pruned = False
        for epoch, _accuracy, loss in census_logreg.train(args, data):
            epochs = epoch
            best = min(best, loss)
            trial.report(loss, epoch)
            if trial.should_prune():
                pruned = True
                break
        with lock:
            spent[0] += epochs
            log.append({"trial": trial.number, "epochs": epochs, "loss": best,
                        "state": "EarlyStopped" if pruned else "Succeeded",
                        "completed_us": int(time.time() * 1e6)})
        if pruned:
            raise optuna.TrialPruned()
        return best

    def stop_at_budget(study, _trial):
        if spent[0] >= budget:
            study.stop()

    if pruner_name.endswith("hyperband") and parallel > 1:
        # HyperbandPruner builds its brackets lazily, on the first should_prune(); a thread
        # asking for a trial while another builds them hits "This line should be unreachable"
        # in _get_bracket_id (Optuna 5.0.0). One trial alone first builds them.
        study.optimize(objective, n_trials=1, n_jobs=1, callbacks=[stop_at_budget])
    study.optimize(objective, n_jobs=parallel, callbacks=[stop_at_budget])
    return log


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--parallel", default="1,4,8")
    ap.add_argument("--pruners", default="successivehalving,hyperband",
                    help="also tpe-hyperband: TPESampler instead of RandomSampler")
    ap.add_argument("--budget", type=int, default=BUDGET, help="epochs each study may spend")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "asha-optuna.json"))
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    data = census_logreg.prepare(os.path.join(ROOT, "examples", "data"))
    results = []
    if os.path.exists(args.out):
        with open(args.out) as f:
            results = json.load(f)
    done = {(r["algorithm"], r["parallel"], r["seed"]) for r in results}
    plan = [("optuna-" + n, int(p), int(s)) for n in args.pruners.split(",")
            for p in args.parallel.split(",") for s in args.seeds.split(",")]
    skipped = sum(1 for run in plan if run in done)
    if skipped:
        print(f"{skipped} of {len(plan)} run(s) already in {args.out}, kept and skipped "
              "(pass a new --out to measure them again)", flush=True)
    for pruner_name in args.pruners.split(","):
        for parallel in [int(p) for p in args.parallel.split(",")]:
            for seed in [int(s) for s in args.seeds.split(",")]:
                if ("optuna-" + pruner_name, parallel, seed) in done:
                    continue
                trials = run(pruner_name, parallel, seed, data, args.budget)
                results.append({"algorithm": "optuna-" + pruner_name, "parallel": parallel,
                                "seed": seed, "optuna": optuna.__version__, "trials": trials})
                best = min(t["loss"] for t in trials)
                print(f"optuna-{pruner_name} p{parallel} s{seed}: {len(trials)} trials, "
                      f"{sum(t['epochs'] for t in trials)} epochs, best loss {best:.4f}",
                      flush=True)
                with open(args.out, "w") as f:
                    f.write("[\n" + ",\n".join(json.dumps(r, separators=(",", ":")) for r in results) + "\n]\n")


if __name__ == "__main__":
    main()
