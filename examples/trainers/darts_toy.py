"""A tiny DARTS search for Vernier's darts examples (standard library only).

Reads the three assignments Katib's DARTS suggestion hands to its trial (algorithm-settings,
search-space, num-layers), relaxes the choice of operation per layer into a softmax-weighted
mix (Liu et al. 2019), trains the operation weights on a training split and the architecture
weights on a validation split (first-order DARTS) on toy 1-D signals whose target is a
smoothed copy of the input, and prints the genotype as Katib's DARTS trial does:

    Best-Genotype=Genotype(normal=[[('avg_pooling_3x3', 0)]], ...)
"""

import argparse
import json
import math
import random


def katib_json(text):
    """Katib sends json.dumps(...) with every double quote replaced by a single one."""
    text = text.strip().strip('"')
    return json.loads(text.replace("'", '"'))


def op_kind(name):
    """(kind, kernel size) of a search-space entry such as separable_convolution_3x3."""
    if name == "skip_connection":
        return "skip", 1
    base, _, size = name.rpartition("_")
    k = int(size.split("x")[0]) if "x" in size else 3
    if "max_pooling" in base:
        return "max", k
    if "avg_pooling" in base:
        return "avg", k
    return ("dilated" if "dilated" in base else "conv"), k


def window(x, i, k, dilation=1):
    """Indices of a same-padded window of size k around i (clamped at the edges)."""
    half = k // 2
    return [min(max(i + (j - half) * dilation, 0), len(x) - 1) for j in range(k)]


def apply(kind, k, w, x):
    """Forward of one operation; returns the output and a backward closure."""
    n = len(x)
    dil = 2 if kind == "dilated" else 1
    if kind == "skip":
        return list(x), lambda g: (list(g), None)
    if kind in ("avg", "max"):
        wins = [window(x, i, k) for i in range(n)]
        if kind == "avg":
            out = [sum(x[j] for j in win) / k for win in wins]

            def back(g):
                gx = [0.0] * n
                for i, win in enumerate(wins):
                    for j in win:
                        gx[j] += g[i] / k
                return gx, None
        else:
            arg = [max(win, key=lambda j: x[j]) for win in wins]
            out = [x[a] for a in arg]

            def back(g):
                gx = [0.0] * n
                for i, a in enumerate(arg):
                    gx[a] += g[i]
                return gx, None
        return out, back
    wins = [window(x, i, k, dil) for i in range(n)]
    out = [sum(w[t] * x[j] for t, j in enumerate(win)) for win in wins]

    def back(g):
        gx = [0.0] * n
        gw = [0.0] * k
        for i, win in enumerate(wins):
            for t, j in enumerate(win):
                gx[j] += g[i] * w[t]
                gw[t] += g[i] * x[j]
        return gx, gw
    return out, back


def softmax(a):
    m = max(a)
    e = [math.exp(v - m) for v in a]
    s = sum(e)
    return [v / s for v in e]


def forward(ops, alphas, weights, x):
    """The relaxed network; returns the output and a backward closure."""
    tapes = []
    h = x
    for layer in range(len(alphas)):
        p = softmax(alphas[layer])
        outs = [apply(kind, k, weights[layer][o], h) for o, (kind, k) in enumerate(ops)]
        tapes.append((p, outs))
        h = [sum(p[o] * outs[o][0][i] for o in range(len(ops))) for i in range(len(h))]

    def back(g):
        g_alpha = []
        g_w = []
        for p, outs in reversed(tapes):
            dots = [sum(gi * oi for gi, oi in zip(g, out)) for out, _ in outs]
            mean = sum(pi * d for pi, d in zip(p, dots))
            g_alpha.append([pi * (d - mean) for pi, d in zip(p, dots)])
            gx = [0.0] * len(g)
            layer_gw = []
            for o, (_, back_o) in enumerate(outs):
                gxo, gwo = back_o([p[o] * gi for gi in g])
                gx = [a + b for a, b in zip(gx, gxo)]
                layer_gw.append(gwo)
            g_w.append(layer_gw)
            g = gx
        return list(reversed(g_alpha)), list(reversed(g_w))
    return h, back


def batch_grad(ops, alphas, weights, data):
    loss = 0.0
    ga = [[0.0] * len(ops) for _ in alphas]
    gw = [[None if w is None else [0.0] * len(w) for w in lw] for lw in weights]
    for x, y in data:
        out, back = forward(ops, alphas, weights, x)
        err = [o - t for o, t in zip(out, y)]
        loss += sum(e * e for e in err) / len(err)
        a, w = back([2 * e / len(err) / len(data) for e in err])
        for layer in range(len(alphas)):
            ga[layer] = [u + v for u, v in zip(ga[layer], a[layer])]
            for o, g in enumerate(w[layer]):
                if g is not None:
                    gw[layer][o] = [u + v for u, v in zip(gw[layer][o], g)]
    return loss / len(data), ga, gw


def toy_data(rng, n, length=12):
    data = []
    for _ in range(n):
        x = [rng.gauss(0, 1) for _ in range(length)]
        y = [sum(x[j] for j in window(x, i, 3)) / 3 for i in range(length)]
        data.append((x, y))
    return data


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--algorithm-settings", required=True)
    ap.add_argument("--search-space", required=True)
    ap.add_argument("--num-layers", required=True)
    args = ap.parse_args()
    settings = katib_json(args.algorithm_settings)
    names = katib_json(args.search_space)
    layers = int(args.num_layers.strip().strip('"'))
    epochs = int(settings.get("num_epochs") or 1)
    w_lr = float(settings.get("w_lr") or 0.025) * 4
    alpha_lr = float(settings.get("alpha_lr") or 3e-4) * 5000

    rng = random.Random(0)
    ops = [op_kind(n) for n in names]
    alphas = [[0.0] * len(ops) for _ in range(layers)]
    weights = [
        [None if kind in ("skip", "avg", "max") else [rng.gauss(0, 0.3) for _ in range(k)]
         for kind, k in ops]
        for _ in range(layers)
    ]
    train, valid = toy_data(rng, 24), toy_data(rng, 24)
    for epoch in range(1, epochs + 1):
        for _ in range(20):
            loss, _, gw = batch_grad(ops, alphas, weights, train)
            for layer in range(layers):
                for o, g in enumerate(gw[layer]):
                    if g is not None:
                        weights[layer][o] = [w - w_lr * d for w, d in zip(weights[layer][o], g)]
            vloss, ga, _ = batch_grad(ops, alphas, weights, valid)
            for layer in range(layers):
                alphas[layer] = [a - alpha_lr * d for a, d in zip(alphas[layer], ga[layer])]
        print(f"epoch={epoch} train-loss={loss:.5f} validation-loss={vloss:.5f}", flush=True)
    normal = [[(names[max(range(len(ops)), key=lambda o: alphas[layer][o])], layer)]
              for layer in range(layers)]
    print(f"Best-Genotype=Genotype(normal={normal}, normal_concat=range(1, {layers + 1}), "
          f"reduce=[], reduce_concat=range(1, {layers + 1}))", flush=True)


if __name__ == "__main__":
    main()
