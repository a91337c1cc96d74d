#!/usr/bin/env python3
"""Logistic regression on the UCI Adult subset, standard library only.

Mini-batch SGD on one-hot categorical + standardised numeric features. After
each epoch it prints the held-out metrics in the format used by Katib's
PyTorch MNIST example, which Katib's *default* `name=value` filter does NOT
understand, so the Experiment must set a custom metricsFormat:

    {metricName: accuracy, metricValue: 0.8312}
    {metricName: loss, metricValue: 0.3571}

The run is deterministic for a given --seed.

With --checkpoint-dir the weights, the epoch count and the shuffling state are
saved there after every epoch, and a run that finds a checkpoint there resumes
from it, training only the epochs it lacks: an ASHA or Hyperband promotion
(whose directory starts as a copy of its parent's) then costs only the extra
epochs and ends exactly where a run from scratch would. The metrics of the
epochs it resumed past are printed again first, so the trial's learning curve
and its best value are those of a run from scratch.
"""

import argparse
import json
import math
import os
import random
import sys

NUMERIC = [(0, "age", False), (4, "education-num", False), (10, "capital-gain", True),
           (11, "capital-loss", True), (12, "hours-per-week", False)]  # (column, name, log1p)
CATEGORICAL = [1, 5, 6, 7, 8, 9, 13]  # workclass, marital-status, occupation,
# relationship, race, sex, native-country
LABEL_COLUMN = 14


def fail(message, code=1):
    sys.stderr.write("census_logreg.py: error: %s\n" % message)
    sys.exit(code)


def parse_args(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description="Logistic regression on the Adult subset.")
    parser.add_argument("--lr", type=float, default=0.1,
                        help="learning rate (0 < lr <= 10), default 0.1")
    parser.add_argument("--batch-size", type=int, default=32,
                        help="mini-batch size (1..3000), default 32")
    parser.add_argument("--epochs", type=int, default=4, help="epochs (1..100), default 4")
    parser.add_argument("--l2", type=float, default=0.0,
                        help="L2 penalty per example (>= 0), default 0")
    parser.add_argument("--seed", type=int, default=1, help="shuffling seed, default 1")
    parser.add_argument("--checkpoint-dir", default="",
                        help="save after each epoch here and resume from a checkpoint found "
                             "here (default: no checkpoints)")
    parser.add_argument("--data-dir", default=os.path.join(here, os.pardir, "data"),
                        help="directory holding adult-subset.data and adult-subset.test")
    args = parser.parse_args(argv)
    if not (math.isfinite(args.lr) and 0 < args.lr <= 10):
        parser.error("--lr must be in (0, 10], got %r" % args.lr)
    if not 1 <= args.batch_size <= 3000:
        parser.error("--batch-size must be between 1 and 3000, got %d" % args.batch_size)
    if not 1 <= args.epochs <= 100:
        parser.error("--epochs must be between 1 and 100, got %d" % args.epochs)
    if not (math.isfinite(args.l2) and args.l2 >= 0):
        parser.error("--l2 must be a finite number >= 0, got %r" % args.l2)
    return args


def load(path):
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


def featurizer(train_rows):
    """Returns row -> sparse vector [(index, value), ...] and the dimension."""
    stats = []
    for col, _name, use_log in NUMERIC:
        vals = [float(r[col]) for r in train_rows]
        if use_log:
            vals = [math.log1p(v) for v in vals]
        mean = sum(vals) / len(vals)
        std = math.sqrt(sum((v - mean) ** 2 for v in vals) / len(vals)) or 1.0
        stats.append((col, use_log, mean, std))
    index = {}
    dim = len(NUMERIC)
    for r in train_rows:
        for col in CATEGORICAL:
            key = (col, r[col])
            if key not in index:
                index[key] = dim
                dim += 1

    def featurize(r):
        vec = []
        for i, (col, use_log, mean, std) in enumerate(stats):
            v = float(r[col])
            if use_log:
                v = math.log1p(v)
            vec.append((i, (v - mean) / std))
        for col in CATEGORICAL:
            j = index.get((col, r[col]))
            if j is not None:  # categories unseen in training are dropped
                vec.append((j, 1.0))
        return vec

    return featurize, dim


def sigmoid(z):
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def evaluate(w, b, xs, ys):
    correct = 0
    loss = 0.0
    for x, y in zip(xs, ys):
        p = sigmoid(b + sum(w[j] * v for j, v in x))
        p = min(max(p, 1e-12), 1.0 - 1e-12)
        if (p > 0.5) == (y == 1):
            correct += 1
        loss -= math.log(p if y == 1 else 1.0 - p)
    return correct / len(ys), loss / len(ys)


CHECKPOINT = "census_logreg.json"


def load_checkpoint(directory, dim):
    """(epoch, w, b, rng state, order, history) saved in `directory`, or None."""
    path = os.path.join(directory, CHECKPOINT)
    if not directory or not os.path.exists(path):
        return None
    try:
        with open(path, "r", encoding="ascii") as f:
            saved = json.load(f)
        if len(saved["w"]) != dim:
            fail("checkpoint %s has %d weights, the data has %d" % (path, len(saved["w"]), dim))
        version, internal, gauss = saved["rng"]
        return saved["epoch"], saved["w"], saved["b"], (version, tuple(internal), gauss), \
            saved["order"], saved["history"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        fail("cannot read checkpoint %s: %s" % (path, e))


def save_checkpoint(directory, epoch, w, b, rng, order, history):
    """Written to a temporary file and renamed, so a killed run leaves the last whole one."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, CHECKPOINT)
    with open(path + ".tmp", "w", encoding="ascii") as f:
        json.dump({"epoch": epoch, "w": w, "b": b, "rng": rng.getstate(), "order": order,
                   "history": history}, f)
    os.replace(path + ".tmp", path)


def train(args, data=None):
    """Yields (epoch, accuracy, loss) after each epoch trained; the Optuna peer benchmark
    (bench/peers/asha_optuna.py) drives the same loop in-process."""
    x_train, y_train, x_test, y_test, dim = data or prepare(args.data_dir)
    checkpoint_dir = getattr(args, "checkpoint_dir", "")
    rng = random.Random(args.seed)
    w = [0.0] * dim
    b = 0.0
    order = list(range(len(x_train)))
    first = 1
    history = []
    saved = load_checkpoint(checkpoint_dir, dim)
    if saved is not None:
        done, w, b, state, order, history = saved
        rng.setstate(state)
        first = done + 1
        print("resumed from %s after epoch %d" % (checkpoint_dir, done), flush=True)
        for epoch, accuracy, loss in history[:args.epochs]:
            yield epoch, accuracy, loss
    for epoch in range(first, args.epochs + 1):
        rng.shuffle(order)
        for start in range(0, len(order), args.batch_size):
            batch = order[start:start + args.batch_size]
            grad = {}
            grad_b = 0.0
            for i in batch:
                x = x_train[i]
                err = sigmoid(b + sum(w[j] * v for j, v in x)) - y_train[i]
                grad_b += err
                for j, v in x:
                    grad[j] = grad.get(j, 0.0) + err * v
            step = args.lr / len(batch)
            for j, g in grad.items():
                w[j] -= step * (g + args.l2 * w[j])
            b -= step * grad_b
        accuracy, loss = evaluate(w, b, x_test, y_test)
        history.append((epoch, accuracy, loss))
        if checkpoint_dir:
            save_checkpoint(checkpoint_dir, epoch, w, b, rng, order, history)
        yield epoch, accuracy, loss


def prepare(data_dir):
    """The featurised training and test sets and the weight dimension."""
    train_rows, y_train = load(os.path.join(data_dir, "adult-subset.data"))
    test_rows, y_test = load(os.path.join(data_dir, "adult-subset.test"))
    featurize, dim = featurizer(train_rows)
    return [featurize(r) for r in train_rows], y_train, [featurize(r) for r in test_rows], \
        y_test, dim


def main(argv):
    args = parse_args(argv)
    data = prepare(args.data_dir)
    print("census logreg: %d training rows, %d test rows, %d weights; lr %g, batch %d, "
          "epochs %d" % (len(data[0]), len(data[2]), data[4] + 1, args.lr, args.batch_size,
                         args.epochs), flush=True)
    for epoch, accuracy, loss in train(args, data):
        print("epoch %d/%d" % (epoch, args.epochs), flush=True)
        print("{metricName: accuracy, metricValue: %.4f}" % accuracy, flush=True)
        print("{metricName: loss, metricValue: %.4f}" % loss, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
