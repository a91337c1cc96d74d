"""Optuna's TPESampler and the cmaes library with settings other than their defaults, on the
problems of peers.py: used to test, on the peer itself, a cause proposed for a gap between a
Vernier algorithm and its peer before changing Vernier (BENCHMARKS.md, "Algorithm quality").

    python3 tpe_settings.py tpe branin,hartmann3 default,n_ei_candidates=48,gamma=0.2 0 39
    python3 tpe_settings.py cma rosenbrock4 default,sigma=0.125,pop=12 0 99

A variant is `default` or `key=value[+key=value...]`; for `tpe` a `gamma` value g stands for
Optuna's rule with another fraction, `min(ceil(g n), 25)`. For `cma`: `sigma` (initial step in
unit-cube coordinates, Optuna's default 1/6), `pop` (population size), `startup` (random trials
before the first generation, Optuna's default 1). Prints the median final regret over the first
ten seeds, the next ten, and all of them, with quartiles.
"""
import math
import sys
import warnings

import numpy as np

import peers

warnings.filterwarnings("ignore")


def tpe_run(prob, seed, **kw):
    import optuna
    from optuna.distributions import FloatDistribution

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    if "gamma" in kw:
        g = kw["gamma"]
        kw["gamma"] = lambda n: min(math.ceil(g * n), 25)
    f, bounds, fstar, budget, _ = peers.PROBLEMS[prob]
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed, **kw))
    dists = {f"x{i}": FloatDistribution(lo, hi) for i, (lo, hi) in enumerate(bounds)}
    best = math.inf
    for _ in range(budget):
        trial = study.ask(dists)
        y = f([trial.params[f"x{i}"] for i in range(len(bounds))])
        best = min(best, y)
        study.tell(trial, y)
    return best - fstar


def cma_run(prob, seed, sigma=1 / 6, pop=None, startup=1):
    import cmaes

    f, bounds, fstar, budget, _ = peers.PROBLEMS[prob]
    b = np.array(bounds)
    d = len(b)
    rng = np.random.RandomState(seed)

    def ev(u):
        return f(list(b[:, 0] + u * (b[:, 1] - b[:, 0])))

    best, used = math.inf, 0
    for _ in range(startup):
        best, used = min(best, ev(rng.rand(d))), used + 1
    opt = cmaes.CMA(
        mean=np.full(d, 0.5),
        sigma=sigma,
        bounds=np.array([[0.0, 1.0]] * d),
        seed=seed + 1,
        population_size=pop,
        n_max_resampling=10 * d,
    )
    while used < budget:
        sols = []
        for _ in range(opt.population_size):
            if used >= budget:
                break
            x = opt.ask()
            y = ev(x)
            best, used = min(best, y), used + 1
            sols.append((x, y))
        if len(sols) == opt.population_size:
            opt.tell(sols)
    return best - fstar


def parse(variant):
    if variant == "default":
        return {}
    out = {}
    for item in variant.split("+"):
        k, v = item.split("=")
        out[k] = int(v) if v.isdigit() else float(v)
    return out


def main():
    kind, problems, variants, lo, hi = sys.argv[1:6]
    run = tpe_run if kind == "tpe" else cma_run
    for prob in problems.split(","):
        for variant in variants.split(","):
            r = np.array([run(prob, s, **parse(variant)) for s in range(int(lo), int(hi) + 1)])
            print(
                prob,
                variant,
                f"first10 {np.median(r[:10]):.4g}",
                f"next10 {np.median(r[10:20]):.4g}" if len(r) >= 20 else "",
                f"all {np.median(r):.4g} [{np.quantile(r, 0.25):.3g}, {np.quantile(r, 0.75):.3g}]",
                flush=True,
            )


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):
        sys.exit(print(__doc__))
    main()
