#!/usr/bin/env python3
"""Times how long `vernier dashboard` pages take to open in headless Chromium.

Starts the dashboard on a database, then for each page opens a fresh browser tab over the
DevTools protocol (`--remote-debugging-pipe`, so no client library and no port) and reads
`document.body.dataset.renderedMs`: the page's own `performance.now()` when its first
complete render finished, i.e. milliseconds from navigation to every plot and table drawn.
Each page is opened `--repeats` times; the first open after the dashboard starts is cold (the
experiment is read from the database), later ones are served from the dashboard's cache.

    python3 bench/make_report_db.py --vernier target/release/vernier --db /tmp/big.db
    python3 bench/dashboard_load.py --vernier target/release/vernier --db /tmp/big.db \\
        --page /experiments/big --page /experiments/big/trials/big-000042 --page /

Figures for BENCHMARKS.md; nothing here asserts a time.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import tempfile
import time


class Browser:
    """Headless Chromium driven over DevTools messages on its descriptors 3 and 4."""

    def __init__(self, binary):
        to_browser_r, self._w = os.pipe()
        self._r, from_browser_w = os.pipe()
        self.profile = tempfile.mkdtemp(prefix="vernier-chromium-")

        def wire():
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             f"--user-data-dir={self.profile}", "--window-size=1400,1000", "about:blank"],
            # Descriptors 3 and 4 as the browser sees them, set up by `wire` (which runs
            # before subprocess closes every descriptor not listed here).
            pass_fds=(3, 4), preexec_fn=wire,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buf = b""
        self._id = 0

    def call(self, method, params=None, session=None):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._next()
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def _next(self):
        while b"\0" not in self._buf:
            chunk = os.read(self._r, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def rendered_ms(self, url, patience=60):
        """Opens `url` in a new tab and returns its renderedMs mark."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Page.enable", session=session)
        self.call("Page.navigate", {"url": url}, session=session)
        deadline = time.monotonic() + patience
        try:
            while time.monotonic() < deadline:
                r = self.call("Runtime.evaluate", {
                    "expression": "document.body && document.body.dataset.renderedMs || ''",
                    "returnByValue": True}, session=session)
                value = r["result"].get("value")
                if value:
                    return int(value)
                time.sleep(0.02)
            raise RuntimeError(f"{url} did not finish rendering within {patience} s")
        finally:
            self.call("Target.closeTarget", {"targetId": target})

    def close(self):
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def start_dashboard(vernier, db):
    p = subprocess.Popen([vernier, "--db", db, "dashboard", "--port", "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in p.stdout:
        m = re.search(r"http://(127\.0\.0\.1:\d+)", line)
        if m:
            return p, m.group(1)
    raise RuntimeError("the dashboard printed no address")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vernier", required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--page", action="append", required=True, help="a path such as /experiments/big")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    a = ap.parse_args()
    dash, addr = start_dashboard(os.path.abspath(a.vernier), a.db)
    browser = Browser(a.chromium)
    try:
        for page in a.page:
            times = [browser.rendered_ms(f"http://{addr}{page}") for _ in range(a.repeats)]
            print(f"{page}: first {times[0]} ms, then {', '.join(str(t) for t in times[1:])} ms",
                  flush=True)
    finally:
        browser.close()
        dash.kill()


if __name__ == "__main__":
    main()
