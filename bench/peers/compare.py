#!/usr/bin/env python3
"""Is a Vernier algorithm behind its peer, or is the gap the seeds? Per-seed comparison.

    python3 compare.py --vernier ../results/quality-per-seed.tsv \
        --peers results.json,results_10_19.json,results_20_39.json,results_tpe_40_79.json \
        --pair tpe=optuna-tpe --pair cmaes=optuna-cmaes

`--vernier` files are the `--per-seed` output of the `regret` example of vernier-bench
(`algorithm problem seed regret`, tab-separated) or the output of `vernier benchmark --format
json`; `--peers` files are `peers.py` results.
For each pair and problem, over the seeds both have:

- the median final regret of each and their ratio (Vernier / peer; below 1 is ahead), with a
  95 % bootstrap interval (seeds resampled with replacement within each side, 10 000 times,
  fixed seed so the output is reproducible);
- P(V < P): the chance that one Vernier run ends below one peer run (the Mann-Whitney
  statistic divided by n_v * n_p; 0.5 means no difference), and the two-sided p-value of the
  Mann-Whitney U test (normal approximation with tie correction);
- the ratio of medians in each 10-seed block, to show how far a 10-seed median moves.

A seeded run is deterministic on both sides, so the runs of different seeds are independent
draws of the algorithm's outcome and the seeds of the two sides are not paired: seed 3 of one
algorithm has nothing in common with seed 3 of the other. Uses only the standard library.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
from collections import defaultdict

BOOTSTRAP_DRAWS = 10_000
BLOCK = 10


def load_vernier(paths):
    runs = defaultdict(dict)
    for path in paths:
        with open(path) as f:
            if f.read(1) == "[":
                f.seek(0)
                load_benchmark_json(path, json.load(f), runs)
                continue
            f.seek(0)
            header = f.readline().rstrip("\n").split("\t")
            if header != ["algorithm", "problem", "seed", "regret"]:
                raise SystemExit(f"{path}: header {header!r} is not a --per-seed file")
            for line in f:
                algorithm, problem, seed, regret = line.rstrip("\n").split("\t")
                runs[(algorithm, problem)][int(seed)] = float(regret)
    return runs


# `vernier benchmark` names Styblinski-Tang without its dimension; the peers and the
# --per-seed files name it with, as every other problem is named.
PROBLEM_NAMES = {"styblinski-tang": "styblinski-tang5"}


def load_benchmark_json(path, cells, runs):
    """`vernier benchmark --format json`: one cell per algorithm and problem, each with its runs."""
    for cell in cells:
        if not isinstance(cell, dict) or "runs" not in cell:
            raise SystemExit(f"{path}: not the output of `vernier benchmark --format json`")
        problem = PROBLEM_NAMES.get(cell["problem"], cell["problem"])
        for run in cell["runs"]:
            if run.get("final_regret") is not None:
                runs[(cell["algorithm"], problem)][run["seed"]] = run["final_regret"]


def load_peers(paths):
    runs = defaultdict(dict)
    for path in paths:
        with open(path) as f:
            for run in json.load(f)["runs"]:
                if run.get("final_regret") is not None:
                    runs[(run["sampler"], run["problem"])][run["seed"]] = run["final_regret"]
    return runs


def mann_whitney(xs, ys):
    """P(x < y) with ties counted half, and the two-sided normal-approximation p-value."""
    pooled = sorted([(v, 0) for v in xs] + [(v, 1) for v in ys])
    ranks, i = [0.0] * len(pooled), 0
    tie_term = 0.0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2 + 1
        t = j - i + 1
        tie_term += t**3 - t
        i = j + 1
    n1, n2 = len(xs), len(ys)
    r1 = sum(r for r, (_, side) in zip(ranks, pooled) if side == 0)
    u1 = r1 - n1 * (n1 + 1) / 2  # pairs where x > y
    p_less = 1 - u1 / (n1 * n2)
    n = n1 + n2
    var = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)))
    z = (u1 - n1 * n2 / 2) / math.sqrt(var) if var > 0 else 0.0
    p_value = math.erfc(abs(z) / math.sqrt(2))
    return p_less, p_value


def bootstrap_ratio(xs, ys, rng):
    ratios = sorted(
        statistics.median(rng.choices(xs, k=len(xs))) / statistics.median(rng.choices(ys, k=len(ys)))
        for _ in range(BOOTSTRAP_DRAWS)
    )
    return ratios[int(0.025 * BOOTSTRAP_DRAWS)], ratios[int(0.975 * BOOTSTRAP_DRAWS) - 1]


def block_ratios(v, p, seeds):
    out = []
    for start in range(min(seeds), max(seeds) + 1, BLOCK):
        block = [s for s in seeds if start <= s < start + BLOCK]
        if len(block) == BLOCK:
            ratio = statistics.median(v[s] for s in block) / statistics.median(p[s] for s in block)
            out.append(f"{ratio:.2f}")
    return " ".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vernier", required=True, help="comma-separated --per-seed files")
    ap.add_argument("--peers", required=True, help="comma-separated peers.py result files")
    ap.add_argument("--pair", action="append", required=True, help="VERNIER_ALGORITHM=PEER_SAMPLER")
    args = ap.parse_args()
    vernier = load_vernier(args.vernier.split(","))
    peers = load_peers(args.peers.split(","))
    rng = random.Random(0)
    print("| algorithm | peer | problem | seeds | Vernier median | peer median | ratio [95 % CI] "
          "| P(V < P) | p | ratio per 10-seed block |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for pair in args.pair:
        algorithm, sampler = pair.rsplit("=", 1)
        problems = sorted({p for (a, p) in vernier if a == algorithm})
        if not problems:
            raise SystemExit(f"--pair {pair}: no runs of {algorithm!r} in --vernier files")
        for problem in problems:
            v, p = vernier[(algorithm, problem)], peers.get((sampler, problem), {})
            seeds = sorted(set(v) & set(p))
            if not seeds:
                print(f"warning: {pair}: no seed of {problem} has runs on both sides",
                      file=sys.stderr)
                continue
            xs, ys = [v[s] for s in seeds], [p[s] for s in seeds]
            lo, hi = bootstrap_ratio(xs, ys, rng)
            p_less, p_value = mann_whitney(xs, ys)
            mv, mp = statistics.median(xs), statistics.median(ys)
            print(f"| {algorithm} | {sampler} | {problem} | {seeds[0]}–{seeds[-1]} ({len(seeds)}) "
                  f"| {mv:.3g} | {mp:.3g} | {mv / mp:.2f} [{lo:.2f}, {hi:.2f}] | {p_less:.2f} "
                  f"| {p_value:.2g} | {block_ratios(v, p, seeds)} |")


if __name__ == "__main__":
    main()
