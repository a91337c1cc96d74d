#!/usr/bin/env python3
"""A toy training run that exposes its metrics the Prometheus way, standard library only:
it serves the current values as Prometheus text on http://127.0.0.1:<port>/metrics while it
trains, and keeps serving the final values for a moment before exiting so that a collector
scraping every second sees them.

    python3 trainers/prometheus_trainer.py --lr 0.05 --momentum 0.9 --port 8080
"""

import argparse
import http.server
import math
import random
import threading
import time

METRICS = {}
LOCK = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path != "/metrics":
            self.send_error(404)
            return
        with LOCK:
            lines = []
            for name, (help_text, value, labels) in METRICS.items():
                lines.append(f"# HELP {name} {help_text}")
                lines.append(f"# TYPE {name} gauge")
                lines.append(f"{name}{labels} {value!r}")
        body = ("\n".join(lines) + "\n").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass  # keep the trial log for the training output


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lr", type=float, required=True)
    parser.add_argument("--momentum", type=float, required=True)
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--epoch-seconds", type=float, default=0.5)
    parser.add_argument("--linger-seconds", type=float, default=1.6)
    args = parser.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    rng = random.Random(f"{args.lr}:{args.momentum}")
    gap = (math.log10(args.lr) + 1.5) ** 2 + 3.0 * (args.momentum - 0.8) ** 2
    for epoch in range(1, args.epochs + 1):
        time.sleep(args.epoch_seconds)
        loss = gap + 1.0 / epoch + rng.uniform(0, 0.02)
        with LOCK:
            METRICS["loss"] = ("Training loss.", round(loss, 6), "")
            METRICS["accuracy"] = ("Validation accuracy.", round(1.0 / (1.0 + loss), 6),
                                   '{split="val"}')
            METRICS["epoch"] = ("Epochs done.", epoch, "")
        print(f"epoch {epoch}: loss {loss:.4f}", flush=True)
    time.sleep(args.linger_seconds)
    server.shutdown()


if __name__ == "__main__":
    main()
