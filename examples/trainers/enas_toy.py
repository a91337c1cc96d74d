"""A small trial program for Vernier's enas examples (standard library only).

Reads Katib's ENAS assignments (`--architecture`, e.g. [[2], [0, 1]], and `--nn_config` with
the embedding of each operation id), builds the network they describe on 1-D signals
(convolutions with fixed random kernels, max/avg pooling; a layer's input is its previous
layer plus the skip connections the architecture chose, as in ENAS's macro search), briefly
trains a softmax read-out on a small synthetic task (is the signal's oscillation slow or
fast?) and prints `Validation-Accuracy=<value>` for Katib's default StdOut collector.
"""

import argparse
import json
import math
import random


def katib_json(text):
    text = text.strip().strip('"')
    return json.loads(text.replace("'", '"'))


def window(n, i, k, dilation=1):
    half = k // 2
    return [min(max(i + (j - half) * dilation, 0), n - 1) for j in range(k)]


def make_op(op, seed):
    """A fixed transform for one embedding entry of nn_config."""
    kind = op["opt_type"]
    params = op["opt_params"]
    rng = random.Random(seed)
    if kind == "reduction":
        k = int(params.get("pool_size", 2))
        pool = max if params.get("reduction_type") == "max_pooling" else (lambda v: sum(v) / len(v))
        return lambda x: [pool([x[j] for j in window(len(x), i, k)]) for i in range(len(x))]
    k = int(params.get("filter_size", 3))
    dil = int(params.get("stride", 1))
    kernel = [rng.gauss(0, 1) / math.sqrt(k) for _ in range(k)]
    if kind == "depthwise_convolution" or kind == "separable_convolution":
        kernel = [abs(w) for w in kernel]
    return lambda x: [
        math.tanh(sum(w * x[j] for w, j in zip(kernel, window(len(x), i, k, dil))))
        for i in range(len(x))
    ]


def network(arch, config):
    ops = {int(k): make_op(v, int(k)) for k, v in config["embedding"].items()}

    def features(x):
        outs = []
        h = x
        for layer, row in enumerate(arch):
            inp = list(h)
            for j, bit in enumerate(row[1:]):
                if bit:
                    inp = [a + b for a, b in zip(inp, outs[j])]
            h = ops[row[0]](inp)
            outs.append(h)
        n = len(h)
        return [sum(h) / n, sum(abs(v) for v in h) / n, max(h), min(h), 1.0]
    return features


def sample(rng, length=16):
    label = rng.randrange(2)
    freq = 0.25 if label == 0 else 1.4
    phase = rng.uniform(0, 6.28)
    return [math.sin(freq * i + phase) + rng.gauss(0, 0.6) for i in range(length)], label


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--architecture", required=True)
    ap.add_argument("--nn_config", required=True)
    ap.add_argument("--num_epochs", type=int, default=20)
    args = ap.parse_args()
    arch = katib_json(args.architecture)
    config = katib_json(args.nn_config)
    assert len(arch) == config["num_layers"], "architecture and nn_config disagree"
    features = network(arch, config)
    rng = random.Random(7)
    train = [sample(rng) for _ in range(120)]
    valid = [sample(rng) for _ in range(80)]
    ftrain = [(features(x), y) for x, y in train]
    fvalid = [(features(x), y) for x, y in valid]
    w = [0.0] * len(ftrain[0][0])
    for epoch in range(1, args.num_epochs + 1):
        for f, y in ftrain:
            p = 1 / (1 + math.exp(-max(-30.0, min(30.0, sum(a * b for a, b in zip(w, f))))))
            w = [wi - 0.5 * (p - y) * fi for wi, fi in zip(w, f)]
    correct = sum(
        (sum(a * b for a, b in zip(w, f)) > 0) == (y == 1) for f, y in fvalid
    )
    print(f"Validation-Accuracy={correct / len(fvalid):.4f}", flush=True)


if __name__ == "__main__":
    main()
