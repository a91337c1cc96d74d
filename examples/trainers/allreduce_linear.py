"""Data-parallel training of a linear model with an all-reduce through the master, one process
per PyTorchJob replica.

Reads the variables the Kubeflow training operator sets for PyTorch (MASTER_ADDR, MASTER_PORT,
WORLD_SIZE, RANK) and exchanges gradients over plain TCP sockets (JSON lines, standard library
only), the way torch.distributed's gloo backend would with a star topology:

* every rank computes the squared-error gradient on its own shard of the training data;
* workers (RANK >= 1) send theirs to the master (RANK 0), which averages all WORLD_SIZE
  gradients and sends the average back;
* every rank applies the same averaged gradient, so the weights stay identical everywhere.

The master prints "step=S loss=V" on held-out data (the Katib metric) and, at the end, checks
that every worker finished with exactly its weights ("replicas_in_sync=1").
The data: y = 3*x1 - 2*x2 + 0.5 + noise, 600 training rows, 200 held-out rows.
"""

import argparse
import json
import os
import random
import socket
import sys
import time

TRUE_W = (3.0, -2.0, 0.5)


def make_rows(n, seed):
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        x1, x2 = rng.uniform(-1, 1), rng.uniform(-1, 1)
        rows.append((x1, x2, TRUE_W[0] * x1 + TRUE_W[1] * x2 + TRUE_W[2] + rng.gauss(0, 0.1)))
    return rows


def predict(w, r):
    return w[0] * r[0] + w[1] * r[1] + w[2]


def mse(w, rows):
    return sum((predict(w, r) - r[2]) ** 2 for r in rows) / len(rows)


def gradient(w, rows):
    g = [0.0, 0.0, 0.0]
    for r in rows:
        e = 2 * (predict(w, r) - r[2]) / len(rows)
        g[0] += e * r[0]
        g[1] += e * r[1]
        g[2] += e
    return g


class Peer:
    """A JSON-lines connection."""

    def __init__(self, sock):
        self.sock = sock
        self.reader = sock.makefile("r")

    def send(self, **message):
        self.sock.sendall((json.dumps(message) + "\n").encode())

    def recv(self):
        line = self.reader.readline()
        if not line:
            raise ConnectionError("peer closed the connection")
        return json.loads(line)


def connect(addr, port, wait=60.0):
    deadline = time.monotonic() + wait
    while True:
        try:
            return Peer(socket.create_connection((addr, port), timeout=60))
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, required=True)
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    world, rank = int(os.environ["WORLD_SIZE"]), int(os.environ["RANK"])
    rows = make_rows(600, seed=1)[rank::world]
    w = [0.0, 0.0, 0.0]

    if rank == 0:
        held_out = make_rows(200, seed=2)
        server = socket.create_server((addr, port))
        peers = {}
        while len(peers) < world - 1:
            conn, _ = server.accept()
            peer = Peer(conn)
            peers[peer.recv()["rank"]] = peer
        print(f"master: {world - 1} workers joined on {addr}:{port}", flush=True)
        for step in range(args.steps):
            grads = [gradient(w, rows)] + [peers[r].recv()["grad"] for r in sorted(peers)]
            avg = [sum(g[k] for g in grads) / world for k in range(3)]
            for peer in peers.values():
                peer.send(grad=avg)
            w = [wi - args.lr * gi for wi, gi in zip(w, avg)]
            if step % 10 == 9 or step == args.steps - 1:
                print(f"step={step + 1} loss={mse(w, held_out):.6f}", flush=True)
        finals = [peers[r].recv()["w"] for r in sorted(peers)]
        in_sync = all(f == w for f in finals)
        print(f"replicas_in_sync={int(in_sync)}", flush=True)
        print(f"weights {w[0]:.4f} {w[1]:.4f} {w[2]:.4f} (true {TRUE_W})", flush=True)
        if not in_sync:
            sys.exit("master: the workers' weights differ from the master's")
    else:
        master = connect(addr, port)
        master.send(rank=rank)
        for step in range(args.steps):
            master.send(grad=gradient(w, rows))
            avg = master.recv()["grad"]
            w = [wi - args.lr * gi for wi, gi in zip(w, avg)]
        # Printed before the last message: once the master has every worker's weights it
        # exits, which ends the job and stops any worker still shutting down.
        print(f"worker rank {rank}: done, shard mse {mse(w, rows):.5f}", flush=True)
        master.send(w=w)


if __name__ == "__main__":
    main()
