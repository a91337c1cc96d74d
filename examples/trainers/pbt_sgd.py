#!/usr/bin/env python3
"""Noisy linear regression trained by mini-batch SGD, standard library only: a
small trainer whose learning-rate *schedule* matters, for Population Based
Training.

The features have scales from 0.03 to 1, so small learning rates leave the
small-scale directions unlearnt for many epochs, while large ones stall at a
noise floor that grows with the learning rate (and above about 1.5 diverge).
No single rate is best for a whole run: a high rate early and a low one late
wins, which is what PBT finds by continuing good members with perturbed rates.

Each run trains --epochs epochs (32 steps of 4 examples each) at --lr and
prints the held-out mean squared error after each one (--until N instead trains
until N epochs in total, for ASHA's rungs):

    epoch 3 lr=0.05 loss=0.4123

--checkpoint DIR (Katib's simple-pbt flag) resumes from DIR/training.json when
present (weights, step count, sampling state) and saves there at the end; PBT
copies a parent trial's directory into the child's before it starts, so a
child continues its parent's training. Deterministic for the same arguments
and checkpoint.
"""

import argparse
import json
import math
import os
import random
import sys

DIM = 8
STEPS_PER_EPOCH = 32
BATCH = 4
NOISE = 0.5
DIVERGED = 1e6  # the loss reported once the weights blow up


def make_data():
    """Fixed synthetic data: y = w* . x + noise, feature j with scale 10^(-1.5j/7)."""
    rng = random.Random(12345)
    scales = [10 ** (-1.5 * j / (DIM - 1)) for j in range(DIM)]
    w_true = [rng.gauss(0, 3) for _ in range(DIM)]

    def draw(n):
        xs = [[rng.gauss(0, s) for s in scales] for _ in range(n)]
        ys = [sum(a * b for a, b in zip(w_true, x)) + rng.gauss(0, NOISE) for x in xs]
        return xs, ys

    return draw(2048), draw(512)


def mse(w, xs, ys):
    total = 0.0
    for x, y in zip(xs, ys):
        e = sum(a * b for a, b in zip(w, x)) - y
        total += e * e
    return total / len(ys)


def load(path):
    if not os.path.exists(path):
        return None
    try:
        with open(path, "r", encoding="ascii") as f:
            s = json.load(f)
        version, internal, gauss = s["rng"]
        return s["w"], s["epoch"], (version, tuple(internal), gauss)
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.stderr.write("pbt_sgd.py: error: cannot read checkpoint %s: %s\n" % (path, e))
        sys.exit(1)


def save(path, w, epoch, rng):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w", encoding="ascii") as f:
        json.dump({"w": w, "epoch": epoch, "rng": rng.getstate()}, f)
    os.replace(path + ".tmp", path)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lr", type=float, required=True, help="learning rate, > 0")
    p.add_argument("--epochs", type=int, default=2, help="epochs to train now (1..1000)")
    p.add_argument("--until", type=int, default=0,
                   help="train until this many epochs in total instead (for ASHA's rungs)")
    p.add_argument("--checkpoint", default="", help="directory to resume from and save to")
    args = p.parse_args(argv)
    if not (math.isfinite(args.lr) and args.lr > 0):
        p.error("--lr must be a positive number, got %r" % args.lr)
    if not 1 <= args.epochs <= 1000:
        p.error("--epochs must be between 1 and 1000, got %d" % args.epochs)

    (xs, ys), (xt, yt) = make_data()
    path = os.path.join(args.checkpoint, "training.json") if args.checkpoint else ""
    saved = load(path) if path else None
    rng = random.Random(7)
    w, done = [0.0] * DIM, 0
    if saved is not None:
        w, done, state = saved
        rng.setstate(state)
        print("resumed after epoch %d" % done, flush=True)
    if args.until and args.until <= done:
        print("epoch %d lr=%g loss=%.6f" % (done, args.lr, mse(w, xt, yt)), flush=True)
    last = args.until if args.until > 0 else done + args.epochs
    loss = mse(w, xt, yt)
    for epoch in range(done + 1, last + 1):
        for _ in range(STEPS_PER_EPOCH):
            grad = [0.0] * DIM
            for _ in range(BATCH):
                i = rng.randrange(len(xs))
                e = sum(a * b for a, b in zip(w, xs[i])) - ys[i]
                for j in range(DIM):
                    grad[j] += e * xs[i][j]
            w = [a - args.lr * g / BATCH for a, g in zip(w, grad)]
        loss = mse(w, xt, yt)
        if not math.isfinite(loss) or loss > DIVERGED:
            w, loss = [0.0] * DIM, DIVERGED
        print("epoch %d lr=%g loss=%.6f" % (epoch, args.lr, loss), flush=True)
    if path:
        save(path, w, max(done, last), rng)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
