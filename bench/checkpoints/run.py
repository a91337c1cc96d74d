#!/usr/bin/env python3
"""Checkpoint-directory benchmarks: what continuing from a parent's checkpoint saves.

  asha:  examples/asha-census.yaml (ASHA on the census logistic regression) run as written
         (promotions continue from their parent's checkpoint) and with the checkpoint
         setting and flag removed (every promotion re-trains from scratch), same seeds.
         Reports epochs trained, wall time and best loss.
  pbt:   PBT (examples/pbt-schedule.yaml) against random search and ASHA on the same trainer
         (examples/trainers/pbt_schedule.py) at the same total training budget of 160 epochs,
         several seeds. Random: 8 trials of 20 epochs. ASHA: rungs 2-6-18 epochs, promotions
         continuing, trials counted in creation order until 160 epochs are spent.

    python3 bench/checkpoints/run.py --vernier target/debug/vernier asha --seeds 3 --parallel 1
    python3 bench/checkpoints/run.py --vernier target/debug/vernier pbt --seeds 5
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples")
BUDGET = 160


def example(name):
    with open(os.path.join(EXAMPLES, name)) as f:
        return f.read().replace('"trainers/', '"%s/' % os.path.join(EXAMPLES, "trainers"))


def run(vernier, yaml, name, seed):
    """Runs one experiment in a scratch directory: (report json, log dir, seconds)."""
    d = tempfile.mkdtemp(prefix="vernier-ckpt-bench-")
    path = os.path.join(d, "exp.yaml")
    with open(path, "w") as f:
        f.write(yaml)
    db = os.path.join(d, "v.db")
    start = time.monotonic()
    subprocess.run([vernier, "run", path, "--seed", str(seed), "--db", db], cwd=d,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    seconds = time.monotonic() - start
    out = subprocess.run([vernier, "report", name, "--db", db, "--format", "json"],
                         cwd=d, capture_output=True, check=True)
    return json.loads(out.stdout), os.path.join(d, "vernier-logs", name), seconds


def trials(report):
    return report["trials"]


def objective(t, metric="loss", field="latest"):
    for m in t["status"].get("observation", {}).get("metrics", []):
        if m["name"] == metric:
            return float(m[field])
    return None


def trained_epochs(log_dir, trial, pattern):
    """Epoch lines the trial printed for epochs it trained itself (not replayed ones)."""
    with open(os.path.join(log_dir, trial + ".log")) as f:
        text = f.read()
    resumed = re.search(r"after epoch (\d+)", text)
    done = int(resumed.group(1)) if resumed else 0
    return len([e for e in re.findall(pattern, text) if int(e) > done])


def asha(args):
    base = example("asha-census.yaml").replace("parallelTrialCount: 4",
                                               "parallelTrialCount: %d" % args.parallel)
    scratch = base.replace("      - name: suggestion_trial_dir\n        value: /var/log/katib/checkpoints/\n", "") \
        .replace('                  - "--checkpoint-dir=/var/log/katib/checkpoints/"\n', "")
    assert scratch != base
    rows = []
    for seed in range(args.seeds):
        for label, yaml in (("continue", base), ("scratch", scratch)):
            report, logs, seconds = run(args.vernier, yaml, "asha-census", seed)
            ts = trials(report)
            epochs = sum(trained_epochs(logs, t["metadata"]["name"], r"epoch (\d+)/") for t in ts)
            best = min(v for v in (objective(t, field="min") for t in ts) if v is not None)
            rows.append({"seed": seed, "mode": label, "trials": len(ts), "epochs": epochs,
                         "seconds": round(seconds, 1), "best_loss": best})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def asha_schedule_yaml():
    yaml = example("pbt-schedule.yaml")
    yaml = yaml.replace("name: pbt-schedule", "name: asha-schedule").replace("maxTrialCount: 80", "maxTrialCount: 70")
    yaml = re.sub(r"    algorithmName: pbt\n    algorithmSettings:\n(      - .*\n        value: .*\n)+",
                  "    algorithmName: asha\n    algorithmSettings:\n"
                  "      - {name: resource_name, value: epochs}\n"
                  "      - {name: max_resource, value: \"18\"}\n"
                  "      - {name: min_resource, value: \"2\"}\n"
                  "      - {name: eta, value: \"3\"}\n"
                  "      - {name: suggestion_trial_dir, value: /var/log/katib/checkpoints/}\n", yaml)
    yaml = yaml.replace("  trialTemplate:", "    - name: epochs\n      parameterType: int\n"
                        "      feasibleSpace: {min: \"2\", max: \"18\"}\n  trialTemplate:")
    yaml = yaml.replace("        reference: lr\n", "        reference: lr\n      - name: epochs\n        reference: epochs\n")
    return yaml.replace('"--epochs=2"', '"--until=${trialParameters.epochs}"')


def random_schedule_yaml():
    yaml = example("pbt-schedule.yaml").replace("name: pbt-schedule", "name: random-schedule")
    yaml = yaml.replace("maxTrialCount: 80", "maxTrialCount: %d" % (BUDGET // 20))
    yaml = re.sub(r"    algorithmName: pbt\n    algorithmSettings:\n(      - .*\n        value: .*\n)+",
                  "    algorithmName: random\n", yaml)
    # random takes no suggestion_trial_dir, so the trainer keeps no checkpoint at all.
    yaml = yaml.replace('"--checkpoint=/var/log/katib/checkpoints/"', '"--checkpoint="')
    return yaml.replace('"--epochs=2"', '"--epochs=20"')


def pbt(args):
    rows = []
    pbt_yaml = example("pbt-schedule.yaml").replace('value: "0.25"', 'value: "%s"' % args.truncation)
    if args.resample is not None:
        pbt_yaml = pbt_yaml.replace(
            "      - name: truncation_threshold\n",
            "      - name: resample_probability\n        value: \"%s\"\n"
            "      - name: truncation_threshold\n" % args.resample)
    setups = [("pbt", "pbt-schedule", pbt_yaml),
              ("random", "random-schedule", random_schedule_yaml()),
              ("asha", "asha-schedule", asha_schedule_yaml())]
    setups = [x for x in setups if x[0] in args.only.split(",")]
    for seed in range(args.seeds):
        for label, name, yaml in setups:
            report, logs, seconds = run(args.vernier, yaml, name, seed)
            spent, best = 0, None
            for t in report["trials"]:  # creation order
                n = trained_epochs(logs, t["metadata"]["name"], r"epoch (\d+) ")
                if spent + n > BUDGET:
                    break
                spent += n
                v = objective(t)
                if v is not None and (best is None or v < best):
                    best = v
            rows.append({"seed": seed, "algorithm": label, "epochs": spent, "best_loss": best,
                         "seconds": round(seconds, 1)})
            print(json.dumps(rows[-1]), flush=True)
    for label, _, _ in setups:
        vals = sorted(r["best_loss"] for r in rows if r["algorithm"] == label)
        print("%s: median %.4f, min %.4f, max %.4f over %d seeds" % (
            label, statistics.median(vals), vals[0], vals[-1], len(vals)))
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--vernier", default="target/debug/vernier")
    p.add_argument("which", choices=["asha", "pbt"])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--truncation", default="0.25", help="pbt: truncation_threshold")
    p.add_argument("--resample", default=None, help="pbt: resample_probability (unset: perturb)")
    p.add_argument("--only", default="pbt,random,asha", help="pbt: which algorithms")
    p.add_argument("--parallel", type=int, default=1,
                   help="asha: parallelTrialCount (1 makes both modes run the same trials)")
    args = p.parse_args()
    args.vernier = os.path.abspath(args.vernier)
    rows = asha(args) if args.which == "asha" else pbt(args)
    if args.which == "asha":
        for mode in ("continue", "scratch"):
            sel = [r for r in rows if r["mode"] == mode]
            print("%s: epochs %s, seconds %s, best loss %s" % (
                mode, [r["epochs"] for r in sel], [r["seconds"] for r in sel],
                [r["best_loss"] for r in sel]))


if __name__ == "__main__":
    main()
