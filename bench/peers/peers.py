#!/usr/bin/env python3
"""Reference (peer) optimisers on synthetic benchmark functions.

Runs Optuna (random, TPE, CMA-ES, GP), scikit-optimize (GP, as Katib's
"bayesianoptimization") and Hyperopt (TPE) sequentially -- one suggestion at a
time, ask/tell -- on the functions of the shared benchmark reference, and records
per run: the final simple regret (best value - f*), the regret at trials
10/25/50/100, and the wall time of every suggestion.

Suggestion time (``suggest_ms``, wall; ``suggest_cpu_ms``, process CPU time) is measured uniformly for every sampler as the wall
time between the end of evaluating trial i-1 (for i = 0: the start of the run, after
the sampler object is built) and the start of evaluating trial i.  It therefore
includes tell(i-1) + ask(i) plus bookkeeping.  This matters for skopt, whose
``Optimizer.tell`` fits the GP and optimises the acquisition function while ``ask``
only returns the precomputed point, and for hyperopt, whose loop is inside ``fmin``.

Usage:
    python peers.py --samplers random,optuna-tpe --problems branin,hartmann6 \
        --seeds 0-9 --out results.json
    python peers.py --quick --out /tmp/quick.json          # smoke test
    python peers.py --merge a.json b.json --out results.json
    python peers.py --selfcheck                           # f(x*) == f* checks
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
import traceback

# Thread count must be fixed before numpy/torch are imported.  Default 1: one
# core per process, so suggestion times are single-core numbers and two runs can
# share the 2-core machine.
def _early_threads() -> int:
    n = 1
    for i, a in enumerate(sys.argv):
        if a == "--threads" and i + 1 < len(sys.argv):
            n = int(sys.argv[i + 1])
        elif a.startswith("--threads="):
            n = int(a.split("=", 1)[1])
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)
    return n


THREADS = _early_threads()

import numpy as np  # noqa: E402

# --------------------------------------------------------------------------
# Benchmark functions (minimisation)
# --------------------------------------------------------------------------


def branin(x):
    x1, x2 = x
    b = 5.1 / (4 * math.pi**2)
    c = 5 / math.pi
    r, s, t = 6.0, 10.0, 1 / (8 * math.pi)
    return (x2 - b * x1**2 + c * x1 - r) ** 2 + s * (1 - t) * math.cos(x1) + s


_H_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
_H3_A = np.array([[3, 10, 30], [0.1, 10, 35], [3, 10, 30], [0.1, 10, 35]], dtype=float)
_H3_P = 1e-4 * np.array(
    [[3689, 1170, 2673], [4699, 4387, 7470], [1091, 8732, 5547], [381, 5743, 8828]],
    dtype=float,
)
_H6_A = np.array(
    [
        [10, 3, 17, 3.5, 1.7, 8],
        [0.05, 10, 17, 0.1, 8, 14],
        [3, 3.5, 1.7, 10, 17, 8],
        [17, 8, 0.05, 10, 0.1, 14],
    ],
    dtype=float,
)
_H6_P = 1e-4 * np.array(
    [
        [1312, 1696, 5569, 124, 8283, 5886],
        [2329, 4135, 8307, 3736, 1004, 9991],
        [2348, 1451, 3522, 2883, 3047, 6650],
        [4047, 8828, 8732, 5743, 1091, 381],
    ],
    dtype=float,
)


def _hartmann(x, A, P):
    x = np.asarray(x, dtype=float)
    inner = np.sum(A * (x[None, :] - P) ** 2, axis=1)
    return float(-np.sum(_H_ALPHA * np.exp(-inner)))


def hartmann3(x):
    return _hartmann(x, _H3_A, _H3_P)


def hartmann6(x):
    return _hartmann(x, _H6_A, _H6_P)


def rosenbrock(x):
    x = np.asarray(x, dtype=float)
    return float(np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (x[:-1] - 1.0) ** 2))


def ackley(x):
    x = np.asarray(x, dtype=float)
    d = x.size
    a, b, c = 20.0, 0.2, 2 * math.pi
    return float(
        -a * math.exp(-b * math.sqrt(np.sum(x**2) / d))
        - math.exp(np.sum(np.cos(c * x)) / d)
        + a
        + math.e
    )


def styblinski_tang(x):
    x = np.asarray(x, dtype=float)
    return float(0.5 * np.sum(x**4 - 16 * x**2 + 5 * x))


# name -> (function, bounds, f*, budget, a known minimiser for --selfcheck)
PROBLEMS = {
    "branin": (branin, [(-5.0, 10.0), (0.0, 15.0)], 5 / (4 * math.pi), 50, [math.pi, 2.275]),
    "hartmann6": (
        hartmann6,
        [(0.0, 1.0)] * 6,
        -3.3223680114155,
        100,
        [0.20168952, 0.15001069, 0.47687398, 0.27533243, 0.31165162, 0.65730054],
    ),
    "rosenbrock4": (rosenbrock, [(-5.0, 10.0)] * 4, 0.0, 50, [1.0] * 4),
    "ackley5": (ackley, [(-32.768, 32.768)] * 5, 0.0, 50, [0.0] * 5),
    "hartmann3": (
        hartmann3,
        [(0.0, 1.0)] * 3,
        -3.8627797873,
        50,
        [0.114614, 0.555649, 0.852547],
    ),
    "styblinski-tang5": (
        styblinski_tang,
        [(-5.0, 5.0)] * 5,
        -39.16616570377142 * 5,
        50,
        [-2.903534027771177] * 5,
    ),
}
MAIN_PROBLEMS = ["branin", "hartmann6", "rosenbrock4", "ackley5"]
CHECKPOINTS = [10, 25, 50, 100]

# --------------------------------------------------------------------------
# Samplers.  Each runner gets (objective, bounds, budget, seed) where objective
# is a timing wrapper; it only has to call objective(x) `budget` times in order.
# --------------------------------------------------------------------------


def _optuna_runner(make_sampler):
    def run(objective, bounds, budget, seed):
        import optuna
        from optuna.distributions import FloatDistribution

        optuna.logging.set_verbosity(optuna.logging.ERROR)
        study = optuna.create_study(direction="minimize", sampler=make_sampler(seed))
        dists = {f"x{i}": FloatDistribution(lo, hi) for i, (lo, hi) in enumerate(bounds)}
        names = list(dists)
        objective.start()
        for _ in range(budget):
            trial = study.ask(dists)  # all sampling happens inside ask()
            y = objective([trial.params[k] for k in names])
            study.tell(trial, y)

    return run


def _optuna(cls_name, **kw):
    def make(seed):
        import optuna

        return getattr(optuna.samplers, cls_name)(seed=seed, **kw)

    return _optuna_runner(make)


def _skopt(base_estimator):
    # As Katib's "bayesianoptimization" suggestion service: skopt.Optimizer with
    # base_estimator (GP, RF, ET or GBRT), acq_func="gp_hedge", acq_optimizer="auto",
    # n_initial_points=10, random_state=seed.
    def run(objective, bounds, budget, seed):
        from skopt import Optimizer
        from skopt.space import Real

        opt = Optimizer(
            dimensions=[Real(lo, hi) for lo, hi in bounds],
            base_estimator=base_estimator,
            n_initial_points=10,
            acq_func="gp_hedge",
            acq_optimizer="auto",
            random_state=seed,
        )
        objective.start()
        for _ in range(budget):
            x = opt.ask()
            y = objective([float(v) for v in x])
            opt.tell(x, y)

    return run


def run_hyperopt_tpe(objective, bounds, budget, seed):
    from hyperopt import STATUS_OK, Trials, fmin, hp, tpe

    space = [hp.uniform(f"x{i}", lo, hi) for i, (lo, hi) in enumerate(bounds)]

    def fn(x):
        return {"loss": objective([float(v) for v in x]), "status": STATUS_OK}

    objective.start()
    fmin(
        fn,
        space,
        algo=tpe.suggest,
        max_evals=budget,
        trials=Trials(),
        rstate=np.random.default_rng(seed),
        show_progressbar=False,
        verbose=False,
    )


SAMPLERS = {
    "random": _optuna("RandomSampler"),
    "optuna-tpe": _optuna("TPESampler"),
    "optuna-tpe-multivariate": _optuna("TPESampler", multivariate=True),
    "optuna-tpe-independent": _optuna("TPESampler", multivariate=False),
    "optuna-cmaes": _optuna("CmaEsSampler"),
    "optuna-gp": _optuna("GPSampler"),
    "skopt-gp": _skopt("GP"),
    "skopt-rf": _skopt("RF"),
    "skopt-et": _skopt("ET"),
    "skopt-gbrt": _skopt("GBRT"),
    "hyperopt-tpe": run_hyperopt_tpe,
}
DEFAULT_SAMPLERS = [
    "random",
    "optuna-tpe",
    "optuna-tpe-multivariate",
    "optuna-tpe-independent",
    "optuna-cmaes",
    "optuna-gp",
    "skopt-gp",
    "hyperopt-tpe",
]

# --------------------------------------------------------------------------
# Harness
# --------------------------------------------------------------------------


class TimedObjective:
    def __init__(self, f, bounds, budget):
        self.f, self.bounds, self.budget = f, bounds, budget
        self.values: list[float] = []
        self.xs: list[list[float]] = []
        self.suggest_ms: list[float] = []
        self.suggest_cpu_ms: list[float] = []
        self._last_end = None
        self._last_end_cpu = None

    def start(self):
        self._last_end = time.perf_counter()
        self._last_end_cpu = time.process_time()

    def __call__(self, x):
        t0 = time.perf_counter()
        c0 = time.process_time()
        if len(self.values) >= self.budget:
            raise RuntimeError("sampler evaluated more than the budget")
        for v, (lo, hi) in zip(x, self.bounds):
            if not (lo - 1e-9 <= v <= hi + 1e-9):
                raise RuntimeError(f"suggestion {x} outside bounds {self.bounds}")
        self.suggest_ms.append((t0 - self._last_end) * 1000.0)
        self.suggest_cpu_ms.append((c0 - self._last_end_cpu) * 1000.0)
        y = float(self.f(x))
        self.values.append(y)
        self.xs.append(list(map(float, x)))
        self._last_end = time.perf_counter()
        self._last_end_cpu = time.process_time()
        return y


def sig(v, n=6):
    if v is None or not math.isfinite(v):
        return v
    if v == 0:
        return 0.0
    return float(f"{v:.{n}g}")


def run_one(sampler, problem, seed, budget=None):
    f, bounds, fstar, default_budget, _ = PROBLEMS[problem]
    budget = budget or default_budget
    obj = TimedObjective(f, bounds, budget)
    t0 = time.perf_counter()
    error = None
    try:
        SAMPLERS[sampler](obj, bounds, budget, seed)
    except Exception:  # record, don't abort the whole sweep
        error = traceback.format_exc(limit=5)
    wall = time.perf_counter() - t0
    best = np.minimum.accumulate(np.array(obj.values)) if obj.values else np.array([])
    regret = (best - fstar).tolist()
    n = len(obj.values)
    ibest = int(np.argmin(obj.values)) if n else None
    rec = {
        "sampler": sampler,
        "problem": problem,
        "seed": seed,
        "budget": budget,
        "n_trials": n,
        "final_regret": sig(regret[-1]) if n else None,
        "regret_at": {str(c): sig(regret[c - 1]) for c in CHECKPOINTS if c <= n},
        "best_value": sig(float(best[-1]), 10) if n else None,
        "best_x": [sig(v, 8) for v in obj.xs[ibest]] if n else None,
        "suggest_ms": [sig(v, 4) for v in obj.suggest_ms],
        "suggest_cpu_ms": [sig(v, 4) for v in obj.suggest_cpu_ms],
        "wall_s": sig(wall, 4),
    }
    if error:
        rec["error"] = error
    return rec


def _version(mod):
    try:
        m = __import__(mod)
        return getattr(m, "__version__", "?")
    except Exception as e:  # pragma: no cover
        return f"not importable: {type(e).__name__}: {e}"


def environment():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import numpy

    return {
        "python": platform.python_version(),
        "optuna": _version("optuna"),
        "skopt": _version("skopt"),
        "hyperopt": _version("hyperopt"),
        "torch": _version("torch"),
        "numpy": numpy.__version__,
        "scipy": _version("scipy"),
        "sklearn": _version("sklearn"),
        "cmaes": _version("cmaes"),
        "cpu_model": cpu,
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "threads_per_process": THREADS,
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"),
    }


def parse_seeds(s):
    out = []
    for part in s.split(","):
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return out


def load(path):
    if path and os.path.exists(path):
        with open(path) as fh:
            return json.load(fh)
    return None


def save(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(doc, fh, separators=(",", ":"))
        fh.write("\n")
    os.replace(tmp, path)


def key(r):
    return (r["sampler"], r["problem"], r["seed"])


def header(env):
    return {
        "description": __doc__.split("\n\n")[0],
        "suggest_ms_definition": "wall time from the end of evaluating trial i-1 (run start for i=0)"
        " to the start of evaluating trial i: tell(i-1) + ask(i) + bookkeeping;"
        " suggest_cpu_ms: process CPU time (all threads) over the same window",
        "environment": env,
        "checkpoints": CHECKPOINTS,
        "problems": {k: {"dim": len(v[1]), "bounds": v[1], "f_star": v[2], "budget": v[3]}
                     for k, v in PROBLEMS.items()},
    }


def merge(paths, out):
    runs, envs = {}, []
    for p in paths:
        d = load(p)
        if d is None:
            print(f"skip missing {p}", file=sys.stderr)
            continue
        envs.append(d.get("environment"))
        for r in d["runs"]:
            runs[key(r)] = r  # later files win
    doc = header(envs[0] if envs else environment())
    doc["runs"] = sorted(runs.values(), key=lambda r: (r["sampler"], r["problem"], r["seed"]))
    save(out, doc)
    print(f"merged {len(doc['runs'])} runs into {out}")


def selfcheck():
    ok = True
    for name, (f, bounds, fstar, _, xstar) in PROBLEMS.items():
        v = f(xstar)
        good = abs(v - fstar) < 1e-5
        ok &= good
        print(f"{name:18s} f(x*)={v:.12f} f*={fstar:.12f} {'ok' if good else 'MISMATCH'}")
    print(f"branin(-pi,12.275)={branin([-math.pi, 12.275]):.12f}")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samplers", default=",".join(DEFAULT_SAMPLERS))
    ap.add_argument("--problems", default=",".join(MAIN_PROBLEMS))
    ap.add_argument("--seeds", default="0-9")
    ap.add_argument("--out", default="results.json")
    ap.add_argument("--quick", action="store_true", help="smoke test: seeds 0-1, budget 15")
    ap.add_argument("--budget", type=int, default=None, help="override every problem's budget")
    ap.add_argument("--threads", type=int, default=1, help="BLAS/torch threads per process")
    ap.add_argument("--no-resume", action="store_true", help="re-run runs already in --out")
    ap.add_argument("--merge", nargs="+", metavar="JSON", help="merge result files into --out")
    ap.add_argument("--selfcheck", action="store_true")
    ap.add_argument("--order", choices=["problem-major", "seed-major"], default="problem-major",
                    help="seed-major: all problems/samplers for seed 0, then seed 1, ... "
                    "(so an interrupted slow sweep still covers every problem)")
    ap.add_argument("--no-warmup", action="store_true",
                    help="skip the unrecorded 12-trial warm-up run per sampler (lazy imports)")
    a = ap.parse_args()

    if a.selfcheck:
        sys.exit(0 if selfcheck() else 1)
    if a.merge:
        merge(a.merge, a.out)
        return

    try:
        import torch

        torch.set_num_threads(THREADS)
    except Exception:
        pass

    samplers = [s for s in a.samplers.split(",") if s]
    problems = [p for p in a.problems.split(",") if p]
    for s in samplers:
        if s not in SAMPLERS:
            ap.error(f"unknown sampler {s}; known: {', '.join(SAMPLERS)}")
    for p in problems:
        if p not in PROBLEMS:
            ap.error(f"unknown problem {p}; known: {', '.join(PROBLEMS)}")
    seeds = parse_seeds(a.seeds)
    budget = a.budget
    if a.quick:
        seeds = seeds[:2]
        budget = budget or 15

    if not a.no_warmup:
        for s in samplers:  # pay lazy imports / first-call costs outside the records
            run_one(s, "branin", 12345, 12)

    doc = load(a.out) if not a.no_resume else None
    runs = doc["runs"] if doc else []
    doc = header(environment())
    doc["runs"] = runs
    done = {key(r) for r in doc["runs"]
            if "error" not in r and "suggest_cpu_ms" in r and (budget is None or r["budget"] == budget)}
    doc["runs"] = [r for r in doc["runs"] if key(r) in done]

    if a.order == "seed-major":
        plan = [(s, p, seed) for seed in seeds for p in problems for s in samplers]
    else:
        plan = [(s, p, seed) for p in problems for s in samplers for seed in seeds]
    skipped = sum(1 for run in plan if run in done)
    if skipped:
        print(f"{skipped} of {len(plan)} run(s) already in {a.out}, kept and skipped "
              "(pass --no-resume, or a new --out, to measure them again)", flush=True)
    for s, p, seed in plan:
        if (s, p, seed) in done:
            continue
        r = run_one(s, p, seed, budget)
        doc["runs"].append(r)
        save(a.out, doc)
        ms = np.mean(r["suggest_ms"]) if r["suggest_ms"] else float("nan")
        print(
            f"{s:24s} {p:16s} seed={seed} n={r['n_trials']} regret={r['final_regret']}"
            f" mean_suggest={ms:.1f}ms wall={r['wall_s']}s"
            + (" ERROR " + r["error"].strip().splitlines()[-1] if "error" in r else ""),
            flush=True,
        )

if __name__ == "__main__":
    main()
