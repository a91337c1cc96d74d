#!/usr/bin/env python3
"""Random forest on the UCI Adult (census income) subset, standard library only.

Predicts whether income is >50K from 12 census attributes. Hyperparameters come
from command-line flags; progress and metrics are printed to stdout as
`name=value` pairs, which Katib's default StdOut metrics collector (and Vernier)
parse. One line is printed per tree ("epoch" = number of trees grown so far):

    epoch=3 accuracy=0.8312 loss=0.4021

`accuracy` and `loss` (mean log loss) are measured on the held-out test subset
using the forest built so far. The run is deterministic for a given --seed.

Implementation notes: every feature is pre-binned into at most 32 ordered bins
(categorical values are ordered by their smoothed >50K rate in the training
data), so finding a split is a histogram scan, which keeps pure Python fast.
"""

import argparse
import bisect
import math
import os
import random
import sys
import time
from collections import Counter

MAX_BINS = 32
PROB_EPS = 1e-6

# (column index in adult.data, name, kind). fnlwgt (2) and education (3, which
# duplicates education-num) are not used.
FEATURES = [
    (0, "age", "num"),
    (1, "workclass", "cat"),
    (4, "education-num", "num"),
    (5, "marital-status", "cat"),
    (6, "occupation", "cat"),
    (7, "relationship", "cat"),
    (8, "race", "cat"),
    (9, "sex", "cat"),
    (10, "capital-gain", "num"),
    (11, "capital-loss", "num"),
    (12, "hours-per-week", "num"),
    (13, "native-country", "cat"),
]
LABEL_COLUMN = 14


def fail(message, code=1):
    sys.stderr.write("census_forest.py: error: %s\n" % message)
    sys.exit(code)


def parse_args(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(
        description="Random forest on the UCI Adult subset (stdlib only).")
    parser.add_argument("--n-trees", type=int, default=20,
                        help="number of trees (1..500), default 20")
    parser.add_argument("--max-depth", type=int, default=8,
                        help="maximum tree depth (1..30), default 8")
    parser.add_argument("--min-samples-leaf", type=int, default=5,
                        help="minimum samples per leaf (>= 1), default 5")
    parser.add_argument("--max-features", type=float, default=0.5,
                        help="fraction of the 12 features tried at each split "
                             "(0 < f <= 1), default 0.5")
    parser.add_argument("--criterion", choices=["gini", "entropy"], default="gini",
                        help="split quality criterion, default gini")
    parser.add_argument("--seed", type=int, default=1,
                        help="random seed (bootstrap and feature sampling), default 1")
    parser.add_argument("--data-dir", default=os.path.join(here, os.pardir, "data"),
                        help="directory holding adult-subset.data and adult-subset.test")
    args = parser.parse_args(argv)
    if not 1 <= args.n_trees <= 500:
        parser.error("--n-trees must be between 1 and 500, got %d" % args.n_trees)
    if not 1 <= args.max_depth <= 30:
        parser.error("--max-depth must be between 1 and 30, got %d" % args.max_depth)
    if args.min_samples_leaf < 1:
        parser.error("--min-samples-leaf must be >= 1, got %d" % args.min_samples_leaf)
    if not (args.max_features > 0.0 and args.max_features <= 1.0):
        parser.error("--max-features must be in (0, 1], got %r" % args.max_features)
    return args


def load(path):
    """Rows of the original comma-separated format -> (raw fields, labels)."""
    try:
        with open(path, "r", encoding="ascii") as f:
            lines = f.read().splitlines()
    except OSError as e:
        fail("cannot read data file %s: %s" % (path, e.strerror or e))
    rows, labels = [], []
    for lineno, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("|"):
            continue
        fields = [x.strip() for x in line.split(",")]
        if len(fields) != 15:
            fail("%s:%d: expected 15 fields, found %d" % (path, lineno, len(fields)))
        label = fields[LABEL_COLUMN].rstrip(".")
        if label not in (">50K", "<=50K"):
            fail("%s:%d: unknown label %r" % (path, lineno, fields[LABEL_COLUMN]))
        rows.append(fields)
        labels.append(1 if label == ">50K" else 0)
    if not rows:
        fail("no data rows in %s" % path)
    return rows, labels


def build_encoders(rows, labels):
    """Per feature: a function raw string -> float, and the bin cut points."""
    prior = sum(labels) / len(labels)
    encoders = []
    for col, _name, kind in FEATURES:
        if kind == "num":
            enc = float
        else:
            pos, tot = Counter(), Counter()
            for r, y in zip(rows, labels):
                tot[r[col]] += 1
                pos[r[col]] += y
            smoothing = 10.0
            rate = {k: (pos[k] + smoothing * prior) / (tot[k] + smoothing) for k in tot}
            enc = (lambda rate: lambda v: rate.get(v, prior))(rate)
        values = sorted(enc(r[col]) for r in rows)
        distinct = sorted(set(values))
        if len(distinct) <= MAX_BINS:
            cuts = distinct[:-1]
        else:
            n = len(values)
            cuts = sorted(set(values[(n * q) // MAX_BINS] for q in range(1, MAX_BINS)))
            if cuts and cuts[-1] >= distinct[-1]:
                cuts.pop()
        encoders.append((col, enc, cuts))
    return encoders


def binarize(rows, encoders):
    """Row-major list of bin-index tuples."""
    out = []
    for r in rows:
        out.append(tuple(bisect.bisect_left(cuts, enc(r[col])) for col, enc, cuts in encoders))
    return out


def xlogx(x):
    return x * math.log(x) if x > 0 else 0.0


class TreeGrower:
    def __init__(self, columns, labels, n_bins, args):
        self.columns = columns            # feature -> list of bin per sample
        self.labels = labels
        self.n_bins = n_bins
        # feature -> list of (bin * 2 + label): one Counter gives both histograms.
        self.keyed = [[b * 2 + y for b, y in zip(col, labels)] for col in columns]
        self.max_depth = args.max_depth
        self.min_leaf = args.min_samples_leaf
        self.n_try = max(1, int(round(args.max_features * len(columns))))
        self.entropy = args.criterion == "entropy"

    def node_score(self, n, p):
        """Weighted impurity of a node with n samples, p positives (lower is better)."""
        q = n - p
        if self.entropy:
            return xlogx(n) - xlogx(p) - xlogx(q)
        return n - (p * p + q * q) / n

    def best_split(self, idx, n, p, rng):
        best = None
        best_score = self.node_score(n, p) - 1e-9
        min_leaf = self.min_leaf
        score = self.node_score
        for f in rng.sample(range(len(self.columns)), self.n_try):
            counts = Counter(map(self.keyed[f].__getitem__, idx))
            ln = lp = 0
            for b in range(self.n_bins[f] - 1):
                c0 = counts.get(2 * b, 0)
                c1 = counts.get(2 * b + 1, 0)
                if not (c0 or c1):
                    continue
                ln += c0 + c1
                lp += c1
                rn = n - ln
                if rn < min_leaf:
                    break
                if ln < min_leaf:
                    continue
                s = score(ln, lp) + score(rn, p - lp)
                if s < best_score:
                    best_score = s
                    best = (f, b)
        return best

    def grow(self, idx, rng):
        """Returns a flat tree: (feature, threshold, left, right, value) lists."""
        feat, thr, left, right, value = [], [], [], [], []
        labels = self.labels
        stack = [(idx, 0, None, False)]  # (samples, depth, parent, is_right)
        while stack:
            node_idx, depth, parent, is_right = stack.pop()
            me = len(feat)
            if parent is not None:
                (right if is_right else left)[parent] = me
            n = len(node_idx)
            p = sum(map(labels.__getitem__, node_idx))
            feat.append(-1)
            thr.append(0)
            left.append(-1)
            right.append(-1)
            value.append(p / n)
            if depth >= self.max_depth or n < 2 * self.min_leaf or p == 0 or p == n:
                continue
            split = self.best_split(node_idx, n, p, rng)
            if split is None:
                continue
            f, b = split
            col = self.columns[f]
            feat[me] = f
            thr[me] = b
            l_idx = [i for i in node_idx if col[i] <= b]
            r_idx = [i for i in node_idx if col[i] > b]
            stack.append((r_idx, depth + 1, me, True))
            stack.append((l_idx, depth + 1, me, False))
        return feat, thr, left, right, value


def predict(tree, rows):
    feat, thr, left, right, value = tree
    out = []
    for r in rows:
        node = 0
        f = feat[0]
        while f >= 0:
            node = left[node] if r[f] <= thr[node] else right[node]
            f = feat[node]
        out.append(value[node])
    return out


def main(argv):
    args = parse_args(argv)
    start = time.time()
    train_rows, y_train = load(os.path.join(args.data_dir, "adult-subset.data"))
    test_rows, y_test = load(os.path.join(args.data_dir, "adult-subset.test"))
    encoders = build_encoders(train_rows, y_train)
    x_train = binarize(train_rows, encoders)
    x_test = binarize(test_rows, encoders)
    n_bins = [len(cuts) + 1 for _col, _enc, cuts in encoders]
    columns = [list(c) for c in zip(*x_train)]
    grower = TreeGrower(columns, y_train, n_bins, args)

    print("census forest: %d training rows, %d test rows, %d features; "
          "trees %d, depth %d, leaf %d, features per split %d, %s"
          % (len(x_train), len(x_test), len(columns), args.n_trees, args.max_depth,
             args.min_samples_leaf, grower.n_try, args.criterion), flush=True)

    rng = random.Random(args.seed)
    n = len(x_train)
    sums = [0.0] * len(x_test)
    accuracy = loss = 0.0
    for t in range(1, args.n_trees + 1):
        boot = [rng.randrange(n) for _ in range(n)]
        tree = grower.grow(boot, rng)
        sums = [s + v for s, v in zip(sums, predict(tree, x_test))]
        correct = 0
        total_loss = 0.0
        for s, y in zip(sums, y_test):
            prob = min(max(s / t, PROB_EPS), 1.0 - PROB_EPS)
            if (prob > 0.5) == (y == 1):
                correct += 1
            total_loss -= math.log(prob if y == 1 else 1.0 - prob)
        accuracy = correct / len(y_test)
        loss = total_loss / len(y_test)
        print("epoch=%d accuracy=%.4f loss=%.4f" % (t, accuracy, loss), flush=True)

    print("final: trees=%d accuracy=%.4f loss=%.4f" % (args.n_trees, accuracy, loss),
          flush=True)
    # Timing goes to stderr so that stdout is identical for identical arguments.
    sys.stderr.write("census forest: finished in %.2f s\n" % (time.time() - start))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
