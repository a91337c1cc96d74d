"""Peer for Vernier's multi-objective benchmark: Optuna's NSGAIISampler (and RandomSampler)
on ZDT1, ZDT2 and DTLZ2 with the same budget, reporting the hypervolume gap to the true front
(the score `vernier benchmark` prints for these problems). pymoo supplies the problems' true
fronts, so the reference hypervolumes are checked against an independent implementation.

Usage: python3 multi_objective.py --trials 200 --seeds 5 [--dims 6] > results_mo.json
"""

import argparse
import json
import math

import numpy as np
import optuna
from pymoo.indicators.hv import HV
from pymoo.problems import get_problem

REFERENCE = 1.1


def problem_spec(name, dims):
    if name == "dtlz2":
        return get_problem("dtlz2", n_var=dims, n_obj=3), 3
    return get_problem(name, n_var=dims), 2


def run(name, dims, trials, seed, sampler_name):
    problem, n_obj = problem_spec(name, dims)
    if sampler_name == "nsga2":
        sampler = optuna.samplers.NSGAIISampler(seed=seed)
    else:
        sampler = optuna.samplers.RandomSampler(seed=seed)
    study = optuna.create_study(directions=["minimize"] * n_obj, sampler=sampler)

    def objective(trial):
        x = np.array([trial.suggest_float(f"x{i + 1}", 0.0, 1.0) for i in range(dims)])
        return tuple(float(v) for v in problem.evaluate(x[None, :])[0])

    study.optimize(objective, n_trials=trials)
    points = np.array([t.values for t in study.trials if t.values is not None])
    hv = HV(ref_point=np.full(n_obj, REFERENCE))
    return float(hv(points)) if len(points) else 0.0


def true_hypervolume(name, dims):
    problem, n_obj = problem_spec(name, dims)
    if n_obj == 2:
        front = problem.pareto_front(n_pareto_points=4000)
    else:
        from pymoo.util.ref_dirs import get_reference_directions

        front = problem.pareto_front(get_reference_directions("das-dennis", 3, n_partitions=60))
    return float(HV(ref_point=np.full(n_obj, REFERENCE))(front))


def main():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--dims", type=int, default=6)
    args = ap.parse_args()
    out = []
    for name in ["zdt1", "zdt2", "dtlz2"]:
        true_hv = true_hypervolume(name, args.dims)
        for sampler in ["nsga2", "random"]:
            gaps = sorted(
                true_hv - run(name, args.dims, args.trials, seed, sampler)
                for seed in range(args.seeds)
            )
            out.append(
                {
                    "peer": f"optuna-{sampler}",
                    "problem": f"{name}-{args.dims}",
                    "trials": args.trials,
                    "seeds": args.seeds,
                    "pymoo_true_hypervolume": true_hv,
                    "hv_gap_median": float(np.median(gaps)),
                    "hv_gap_q1": float(np.quantile(gaps, 0.25)),
                    "hv_gap_q3": float(np.quantile(gaps, 0.75)),
                    "gaps": gaps,
                }
            )
    print(json.dumps({"optuna": optuna.__version__, "results": out}, indent=2))


if __name__ == "__main__":
    main()
