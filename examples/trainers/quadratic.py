#!/usr/bin/env python3
"""A toy "training run": a noisy 2-D quadratic bowl, standard library only.

    f(x, lr) = (x - 1.2)^2 + 0.5 * (log10(lr) + 2)^2

The minimum f = 0 is at x = 1.2, lr = 0.01. The script pretends to train for
--steps steps and prints one line per step,

    step=3 loss=0.6123

where loss = f + 0.8 / step + small noise, so the loss falls towards f. The
noise is seeded from the parameter values, so the same arguments always give
the same output. --step-seconds adds a sleep per step to make trials take
visible wall-clock time (default 0.1 s).

With --metrics-file PATH the lines go to that file instead of stdout (as with
Katib's File metrics collector); --json writes one JSON object per line,
{"step": "3", "loss": "0.6123", "timestamp": <epoch seconds>}, Katib's JSON
format.
"""

import argparse
import json
import math
import random
import sys
import time


def parse_args(argv):
    parser = argparse.ArgumentParser(description="Noisy 2-D quadratic toy objective.")
    parser.add_argument("--x", type=float, required=True, help="any finite number")
    parser.add_argument("--lr", type=float, required=True,
                        help="positive number (searched on a log scale)")
    parser.add_argument("--steps", type=int, default=5, help="steps to print (1..1000)")
    parser.add_argument("--step-seconds", type=float, default=0.1,
                        help="sleep per step in seconds (0..10), default 0.1")
    parser.add_argument("--metrics-file", default=None,
                        help="write metric lines to this file instead of stdout")
    parser.add_argument("--json", action="store_true",
                        help="write JSON lines (Katib's JSON metrics format)")
    args = parser.parse_args(argv)
    if not math.isfinite(args.x):
        parser.error("--x must be finite, got %r" % args.x)
    if not (math.isfinite(args.lr) and args.lr > 0):
        parser.error("--lr must be a finite number > 0, got %r" % args.lr)
    if not 1 <= args.steps <= 1000:
        parser.error("--steps must be between 1 and 1000, got %d" % args.steps)
    if not 0 <= args.step_seconds <= 10:
        parser.error("--step-seconds must be between 0 and 10, got %r" % args.step_seconds)
    return args


def main(argv):
    args = parse_args(argv)
    f = (args.x - 1.2) ** 2 + 0.5 * (math.log10(args.lr) + 2.0) ** 2
    rng = random.Random("%r,%r" % (args.x, args.lr))
    out = open(args.metrics_file, "w") if args.metrics_file else sys.stdout
    for step in range(1, args.steps + 1):
        if args.step_seconds:
            time.sleep(args.step_seconds)
        loss = f + 0.8 / step + rng.gauss(0.0, 0.02)
        if args.json:
            line = json.dumps({"step": str(step), "loss": "%.6f" % loss,
                               "timestamp": time.time()})
        else:
            line = "step=%d loss=%.6f" % (step, loss)
        print(line, file=out, flush=True)
    if args.metrics_file:
        out.close()
        print("wrote %d steps to %s" % (args.steps, args.metrics_file))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
