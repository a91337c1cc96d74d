#!/usr/bin/env python3
"""Runs every example in examples/ once and prints how long each took, for examples/README.md.

    cargo build --release -p vernier-cli
    python3 bench/time_examples.py --vernier target/release/vernier [--only quickstart,...]

Each example runs with a database of its own in a temporary directory (the YAML stays where
it is, so its trainers resolve). `census-sklearn.yaml` needs scikit-learn: it runs only when
`python3` on PATH imports sklearn (put the virtual environment of examples/README.md first on
PATH), and is listed as skipped otherwise. Wall times include Vernier's own overhead.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile
import time


def sklearn_available():
    return subprocess.run(["python3", "-c", "import sklearn"],
                          capture_output=True).returncode == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vernier", required=True)
    ap.add_argument("--examples", default=os.path.join(os.path.dirname(__file__), "..", "examples"))
    ap.add_argument("--only", help="comma-separated example names without .yaml")
    a = ap.parse_args()
    vernier = os.path.abspath(a.vernier)
    only = set(a.only.split(",")) if a.only else None
    failed = 0
    for path in sorted(glob.glob(os.path.join(a.examples, "*.yaml"))):
        name = os.path.basename(path)[: -len(".yaml")]
        if only and name not in only:
            continue
        if name == "census-sklearn" and not sklearn_available():
            print(f"{name:34} skipped: python3 cannot import sklearn (see examples/README.md)")
            continue
        with tempfile.TemporaryDirectory(prefix="vernier-example-") as d:
            start = time.monotonic()
            p = subprocess.run([vernier, "--db", os.path.join(d, "v.db"), "run",
                                os.path.abspath(path), "--log-dir", os.path.join(d, "logs")],
                               cwd=d, capture_output=True, text=True)
            wall = time.monotonic() - start
        summary = [l for l in p.stdout.splitlines() if l.startswith("experiment ") and "trials:" in l]
        summary = summary[-1:] or [p.stderr.strip()[:200]]
        print(f"{name:34} exit {p.returncode}  {wall:6.1f} s  {summary[0].strip()[-110:]}", flush=True)
        failed += p.returncode != 0
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
