"""Parameter-server training of a linear model, one process per TFJob replica.

Reads TF_CONFIG as the Kubeflow training operator sets it
({"cluster": {"chief": [...], "ps": [...], "worker": [...]}, "task": {"type": ..., "index": ...}})
and plays its role over plain TCP sockets (JSON lines, standard library only):

* ps:     holds the weights, serves "pull" (current weights) and "push" (apply a gradient with
          the learning rate); runs until it is stopped, like a TensorFlow parameter server.
* worker: for --steps steps pulls the weights, computes the squared-error gradient on its own
          shard of the training data, pushes it to the parameter server; then reports "done"
          and exits.
* chief:  watches the parameter server's update count, evaluates the current weights on held-out
          data and prints "updates=N loss=V" (the Katib metric) until every worker has pushed
          all its gradients and reported done; then exits, which ends the job.

The data: y = 3*x1 - 2*x2 + 0.5 + noise, 400 training rows split between the workers, 200
held-out rows. Deterministic for given arguments.
"""

import argparse
import json
import os
import random
import socket
import socketserver
import sys
import threading
import time

TRUE_W = (3.0, -2.0, 0.5)


def make_rows(n, seed):
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        x1, x2 = rng.uniform(-1, 1), rng.uniform(-1, 1)
        y = TRUE_W[0] * x1 + TRUE_W[1] * x2 + TRUE_W[2] + rng.gauss(0, 0.1)
        rows.append((x1, x2, y))
    return rows


def predict(w, row):
    return w[0] * row[0] + w[1] * row[1] + w[2]


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


def split(address):
    host, port = address.rsplit(":", 1)
    return host, int(port)


class Client:
    """One JSON-lines connection to the parameter server, retried while it starts up."""

    def __init__(self, address, wait=60.0):
        deadline = time.monotonic() + wait
        while True:
            try:
                self.sock = socket.create_connection(split(address), timeout=30)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.reader = self.sock.makefile("r")

    def call(self, **request):
        self.sock.sendall((json.dumps(request) + "\n").encode())
        line = self.reader.readline()
        if not line:
            raise ConnectionError("parameter server closed the connection")
        return json.loads(line)


def run_ps(address, lr):
    state = {"w": [0.0, 0.0, 0.0], "updates": 0, "done": 0}
    lock = threading.Lock()

    class Handler(socketserver.StreamRequestHandler):
        def handle(self):
            for line in self.rfile:
                request = json.loads(line)
                with lock:
                    if request["op"] == "push":
                        state["w"] = [w - lr * g for w, g in zip(state["w"], request["grad"])]
                        state["updates"] += 1
                    elif request["op"] == "done":
                        state["done"] += 1
                    reply = {"w": state["w"], "updates": state["updates"], "done": state["done"]}
                self.wfile.write((json.dumps(reply) + "\n").encode())

    socketserver.ThreadingTCPServer.allow_reuse_address = True
    socketserver.ThreadingTCPServer.daemon_threads = True
    with socketserver.ThreadingTCPServer(split(address), Handler) as server:
        print(f"ps serving on {address}, lr={lr}", flush=True)
        server.serve_forever()


def run_worker(ps, index, workers, steps):
    rows = make_rows(400, seed=1)[index::workers]
    client = Client(ps)
    for step in range(steps):
        w = client.call(op="pull")["w"]
        reply = client.call(op="push", grad=gradient(w, rows))
        if step % 10 == 0 or step == steps - 1:
            print(f"worker {index} step {step}: shard mse {mse(w, rows):.5f}, ps updates {reply['updates']}", flush=True)
    print(f"worker {index}: pushed {steps} gradients", flush=True)
    client.call(op="done")


def run_chief(ps, workers, steps):
    held_out = make_rows(200, seed=2)
    client = Client(ps)
    expected = workers * steps
    reported = -1
    deadline = time.monotonic() + 600
    while True:
        reply = client.call(op="pull")
        updates = reply["updates"]
        if updates >= reported + 5 or (updates >= expected and reported < expected):
            print(f"updates={updates} loss={mse(reply['w'], held_out):.6f}", flush=True)
            reported = updates
        if updates >= expected and reply["done"] >= workers:
            w = reply["w"]
            print(f"weights {w[0]:.4f} {w[1]:.4f} {w[2]:.4f} (true {TRUE_W})", flush=True)
            return
        if time.monotonic() > deadline:
            sys.exit("chief: the workers did not finish within 600 s")
        time.sleep(0.02)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, required=True)
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    config = json.loads(os.environ["TF_CONFIG"])
    cluster, task = config["cluster"], config["task"]
    role, index = task["type"], task["index"]
    ps = cluster["ps"][0]
    workers = len(cluster.get("worker", []))
    if role == "ps":
        run_ps(cluster["ps"][index], args.lr)
    elif role == "worker":
        run_worker(ps, index, workers, args.steps)
    elif role in ("chief", "master"):
        run_chief(ps, workers, args.steps)
    else:
        sys.exit(f"unexpected task type {role!r}")


if __name__ == "__main__":
    main()
