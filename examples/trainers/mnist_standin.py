"""A stand-in for the MXNet MNIST trainer of Katib's examples, so Katib's own experiments run
locally with nothing but Python's standard library.

Takes the same flags (--batch-size, --lr, --num-layers, --optimizer, --num-epochs) and prints
the same kind of lines, one pair per epoch:

    Epoch[0] Train-accuracy=0.871234
    Epoch[0] Validation-accuracy=0.858765

The accuracies follow a synthetic learning curve, not a real network: they rise with every
epoch towards a ceiling that is highest for lr near 0.02, 3 layers and the adam optimizer, with
a little noise fixed by the flags, so equal flags print equal lines.
"""

import argparse
import math
import random


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, required=True)
    p.add_argument("--num-layers", type=int, default=2)
    p.add_argument("--optimizer", default="sgd")
    p.add_argument("--num-epochs", type=int, default=1)
    a = p.parse_args()

    rng = random.Random(f"{a.batch_size}/{a.lr}/{a.num_layers}/{a.optimizer}")
    bonus = {"adam": 0.03, "sgd": 0.0, "ftrl": -0.02}.get(a.optimizer, -0.05)
    ceiling = 0.97 - 4.0 * abs(a.lr - 0.02) - 0.01 * abs(a.num_layers - 3) + bonus
    for epoch in range(max(1, a.num_epochs)):
        progress = 1.0 - math.exp(-(epoch + 1) / 1.5)
        train = min(0.985, ceiling * (0.8 + 0.2 * progress) + rng.uniform(-0.004, 0.004))
        valid = min(0.98, train - 0.01 + rng.uniform(-0.004, 0.004))
        print(f"Epoch[{epoch}] Train-accuracy={train:.6f}", flush=True)
        print(f"Epoch[{epoch}] Validation-accuracy={valid:.6f}", flush=True)


if __name__ == "__main__":
    main()
