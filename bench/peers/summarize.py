#!/usr/bin/env python3
"""Print markdown tables from peers.py results.

    python summarize.py results.json

Tables:
  1. median final simple regret [q25, q75] per sampler x problem (n = seeds);
  2. median regret at trials 10/25/50/100 per problem;
  3./4. mean suggestion CPU time and wall time (ms) at trials 25/50/100 per
     sampler x problem, where "at trial k" is the mean over seeds of the mean over
     trials k-4..k (1-based; a 5-trial window to damp timer noise), plus the mean
     over all trials.
Uses only the standard library.
"""
from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict

SAMPLER_ORDER = [
    "random",
    "optuna-tpe",
    "optuna-tpe-multivariate",
    "optuna-tpe-independent",
    "optuna-cmaes",
    "optuna-gp",
    "skopt-gp",
    "hyperopt-tpe",
]
PROBLEM_ORDER = ["branin", "hartmann6", "rosenbrock4", "ackley5", "hartmann3", "styblinski-tang5"]


def quantile(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    pos = (len(xs) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def fmt(v):
    if v != v:
        return "–"
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 100:
        return f"{v:.0f}"
    if a >= 1e-3:
        return f"{v:.3g}"
    return f"{v:.1e}"


def ordered(keys, order):
    return [k for k in order if k in keys] + sorted(k for k in keys if k not in order)


def main(path):
    with open(path) as fh:
        doc = json.load(fh)
    runs = [r for r in doc["runs"] if "error" not in r]
    errors = [r for r in doc["runs"] if "error" in r]
    by = defaultdict(list)
    for r in runs:
        by[(r["sampler"], r["problem"])].append(r)
    samplers = ordered({s for s, _ in by}, SAMPLER_ORDER)
    problems = ordered({p for _, p in by}, PROBLEM_ORDER)
    budgets = {p: doc.get("problems", {}).get(p, {}).get("budget") for p in problems}

    env = doc.get("environment", {})
    print(
        "Environment: "
        + ", ".join(f"{k} {env[k]}" for k in ("python", "optuna", "skopt", "hyperopt", "torch",
                                              "numpy", "scipy", "sklearn", "cmaes") if k in env)
        + f"; CPU {env.get('cpu_model')} ({env.get('cpu_count')} cores), "
        f"{env.get('threads_per_process')} thread(s) per process\n"
    )

    print("### Median final simple regret [25th, 75th percentile] (n = seeds)\n")
    print("| sampler | " + " | ".join(f"{p} ({budgets[p]})" for p in problems) + " |")
    print("|---|" + "---|" * len(problems))
    for s in samplers:
        cells = []
        for p in problems:
            rs = by.get((s, p), [])
            v = [r["final_regret"] for r in rs]
            if not v:
                cells.append("–")
                continue
            cells.append(
                f"{fmt(statistics.median(v))} [{fmt(quantile(v, .25))}, {fmt(quantile(v, .75))}]"
                + (f" n={len(v)}" if len(v) != 10 else "")
            )
        print(f"| {s} | " + " | ".join(cells) + " |")

    print("\n### Median simple regret at trial 10 / 25 / 50 / 100\n")
    print("| sampler | " + " | ".join(problems) + " |")
    print("|---|" + "---|" * len(problems))
    for s in samplers:
        cells = []
        for p in problems:
            rs = by.get((s, p), [])
            parts = []
            for c in doc.get("checkpoints", [10, 25, 50, 100]):
                v = [r["regret_at"][str(c)] for r in rs if str(c) in r["regret_at"]]
                if v:
                    parts.append(fmt(statistics.median(v)))
            cells.append(" / ".join(parts) if parts else "–")
        print(f"| {s} | " + " | ".join(cells) + " |")

    for field, title in (
        ("suggest_cpu_ms", "Mean suggestion CPU time, ms (process CPU time; robust to the other load)"),
        ("suggest_ms", "Mean suggestion wall time, ms (inflated by the concurrent load, see README)"),
    ):
        print(f"\n### {title}\n")
        print("At trial k = mean over seeds of the mean over trials k-4..k; 'all' = mean over every trial.\n")
        print("| sampler | " + " | ".join(f"{p} @25 / @50 / @100 / all" for p in problems) + " |")
        print("|---|" + "---|" * len(problems))
        for s in samplers:
            cells = []
            for p in problems:
                rs = [r for r in by.get((s, p), []) if field in r]
                parts = []
                for k in (25, 50, 100):
                    w = [statistics.fmean(r[field][k - 5:k]) for r in rs if len(r[field]) >= k]
                    parts.append(fmt(statistics.fmean(w)) if w else "–")
                al = [x for r in rs for x in r[field]]
                parts.append(fmt(statistics.fmean(al)) if al else "–")
                cells.append(" / ".join(parts))
            print(f"| {s} | " + " | ".join(cells) + " |")

    print("\n### Seeds completed per sampler x problem\n")
    print("| sampler | " + " | ".join(problems) + " |")
    print("|---|" + "---|" * len(problems))
    for s in samplers:
        print(f"| {s} | " + " | ".join(
            ",".join(str(x) for x in sorted(r["seed"] for r in by.get((s, p), []))) or "–"
            for p in problems) + " |")
    if errors:
        print(f"\n{len(errors)} run(s) failed:")
        for r in errors:
            print(f"- {r['sampler']} {r['problem']} seed {r['seed']}: "
                  + r["error"].strip().splitlines()[-1])


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):
        sys.exit(print(__doc__))
    main(sys.argv[1] if len(sys.argv) > 1 else "results.json")
