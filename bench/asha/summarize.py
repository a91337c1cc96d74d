#!/usr/bin/env python3
"""Prints the BENCHMARKS.md table of the ASHA benchmark from the recorded results.

For each run, trials are taken in completion order and their epochs summed; the best loss
"at E epochs" is the lowest objective among trials completed by the time E epochs were
spent (a run that had not finished a trial by then shows "-"). Values are the mean over
seeds, with the worst seed in brackets.

    python3 bench/asha/summarize.py bench/results/asha-vernier.json bench/results/asha-optuna.json
    python3 bench/asha/summarize.py --budgets 108,216,423 --algorithms bohb,hyperband ... FILES
"""

import json
import sys

BUDGETS = [27, 54, 108, 270]


def best_at(trials, budget):
    spent = 0
    best = None
    for t in sorted(trials, key=lambda t: t["completed_us"] or 0):
        spent += t["epochs"]
        if spent > budget:
            break
        if t["loss"] is not None and (best is None or t["loss"] < best):
            best = t["loss"]
    return best


def main(argv):
    global BUDGETS
    wanted = None
    seeds = None
    paths = []
    args = iter(argv)
    for a in args:
        if a == "--budgets":
            BUDGETS = [int(b) for b in next(args).split(",")]
        elif a == "--algorithms":
            wanted = next(args).split(",")
        elif a == "--seeds":
            seeds = {int(s) for s in next(args).split(",")}
        else:
            paths.append(a)
    runs = []
    for p in paths:
        with open(p) as f:
            runs.extend(r for r in json.load(f)
                        if (wanted is None or r["algorithm"] in wanted)
                        and (seeds is None or r.get("seed") in seeds))
    groups = {}
    for r in runs:
        groups.setdefault((r["algorithm"], r["parallel"]), []).append(r)
    head = "| algorithm | parallel | seeds | trials | epochs | " + " | ".join(
        f"best loss at {b} epochs" for b in BUDGETS) + " |"
    print(head)
    print("|" + "---|" * (5 + len(BUDGETS)))
    order = ["asha", "hyperband", "random", "optuna-successivehalving", "optuna-hyperband"]
    for (algorithm, parallel), rs in sorted(
            groups.items(), key=lambda kv: (kv[0][1], order.index(kv[0][0]) if kv[0][0] in order else 99)):
        cells = []
        for b in BUDGETS:
            values = [best_at(r["trials"], b) for r in rs]
            if any(v is None for v in values):
                got = [v for v in values if v is not None]
                cells.append(f"- ({len(got)}/{len(values)} seeds)" if got else "-")
                continue
            cells.append(f"{sum(values) / len(values):.4f} ({max(values):.4f})")
        trials = sum(len(r["trials"]) for r in rs) / len(rs)
        epochs = sum(sum(t["epochs"] for t in r["trials"]) for r in rs) / len(rs)
        print(f"| {algorithm} | {parallel} | {len(rs)} | {trials:.0f} | {epochs:.0f} | "
              + " | ".join(cells) + " |")


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):
        sys.exit(print(__doc__))
    main(sys.argv[1:])
