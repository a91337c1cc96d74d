#!/usr/bin/env python3
"""A trainer whose learning-rate *schedule* matters, standard library only, for
Population Based Training.

Training is simulated: the state is a progress p from 0 to 100 and the best
learning rate falls as training advances, from 0.1 at p = 0 to 0.001 at
p = 100 (log-linearly), as for a real model that needs a large rate early and a
small one late. Each step gains up to 1 when --lr is within a factor of 3 of
the best rate (more the closer it is), loses progress when it is more than 3
times too large, and barely moves when it is more than 3 times too small. A
constant rate therefore stalls halfway; only a falling one reaches the end,
which is what PBT finds by continuing good members with perturbed rates.

Each run trains --epochs epochs of 10 steps and prints after each one

    epoch 3 lr=0.05 loss=0.8123

with loss = 1 - p/100. --checkpoint DIR (Katib's simple-pbt flag) resumes from
DIR/training.json when present (progress, epoch count, random state) and saves
there at the end; PBT copies a parent trial's directory into the child's
before it starts, so a child continues its parent's training. --until N trains
until N epochs in total instead (for ASHA's rungs). Deterministic for the same
arguments and checkpoint.
"""

import argparse
import json
import math
import os
import random
import sys

STEPS_PER_EPOCH = 10
TOLERANCE = 3.0  # rates within this factor of the best one make progress


def best_lr(p):
    return 0.1 * 10 ** (-2.0 * p / 100.0)


def step(p, lr, rng):
    best = best_lr(p)
    ratio = max(lr, best) / min(lr, best)
    u = rng.random()
    if ratio < TOLERANCE:
        p += u / ratio
    elif lr > best:
        p -= 0.5 * (ratio - TOLERANCE) * u
    else:
        p += 0.02 * u
    return min(100.0, max(0.0, p + rng.gauss(0, 0.1)))


def load(path):
    if not os.path.exists(path):
        return None
    try:
        with open(path, "r", encoding="ascii") as f:
            s = json.load(f)
        version, internal, gauss = s["rng"]
        return s["p"], s["epoch"], (version, tuple(internal), gauss)
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.stderr.write("pbt_schedule.py: error: cannot read checkpoint %s: %s\n" % (path, e))
        sys.exit(1)


def save(path, p, epoch, rng):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w", encoding="ascii") as f:
        json.dump({"p": p, "epoch": epoch, "rng": rng.getstate()}, f)
    os.replace(path + ".tmp", path)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lr", type=float, required=True, help="learning rate, > 0")
    ap.add_argument("--epochs", type=int, default=2, help="epochs to train now (1..1000)")
    ap.add_argument("--until", type=int, default=0,
                    help="train until this many epochs in total instead (for ASHA's rungs)")
    ap.add_argument("--checkpoint", default="", help="directory to resume from and save to")
    args = ap.parse_args(argv)
    if not (math.isfinite(args.lr) and args.lr > 0):
        ap.error("--lr must be a positive number, got %r" % args.lr)
    if not 1 <= args.epochs <= 1000:
        ap.error("--epochs must be between 1 and 1000, got %d" % args.epochs)

    path = os.path.join(args.checkpoint, "training.json") if args.checkpoint else ""
    saved = load(path) if path else None
    rng = random.Random(7)
    p, done = 0.0, 0
    if saved is not None:
        p, done, state = saved
        rng.setstate(state)
        print("resumed after epoch %d" % done, flush=True)
    last = args.until if args.until > 0 else done + args.epochs
    if last <= done:
        print("epoch %d lr=%g loss=%.6f" % (done, args.lr, 1 - p / 100), flush=True)
    for epoch in range(done + 1, last + 1):
        for _ in range(STEPS_PER_EPOCH):
            p = step(p, args.lr, rng)
        print("epoch %d lr=%g loss=%.6f" % (epoch, args.lr, 1 - p / 100), flush=True)
    if path:
        save(path, p, max(done, last), rng)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
