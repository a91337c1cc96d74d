"""How exploitative scikit-optimize's GP-Hedge is on Styblinski-Tang 5-D.

Runs skopt.Optimizer as peers.py does (Katib's `bayesianoptimization` settings) and, for
each model-based step, records which acquisition holds the largest accumulated hedge gain
and the predictive standard deviation at the point asked, in units of the observed losses'
standard deviation. A small value means the point is close to what the model already knows.

    python3 skopt_trace.py 10-19
"""

import os
import sys
import warnings

# As peers.py --threads 1: BLAS threads change the last bits, and the runs diverge from there.
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import numpy as np  # noqa: E402

from peers import PROBLEMS  # noqa: E402

warnings.filterwarnings("ignore")

styblinski_tang, BOUNDS, OPTIMUM, BUDGET, _ = PROBLEMS["styblinski-tang5"]
ACQS = ("EI", "PI", "LCB")


def trace(seed):
    from skopt import Optimizer
    from skopt.space import Real

    opt = Optimizer(
        [Real(lo, hi) for lo, hi in BOUNDS],
        base_estimator="GP",
        n_initial_points=10,
        acq_func="gp_hedge",
        acq_optimizer="auto",
        random_state=seed,
    )
    leaders, spreads = [], []
    for _ in range(BUDGET):
        x = opt.ask()
        if opt.models:
            ys = np.array(opt.yi)
            _, sd = opt.models[-1].predict(opt.space.transform([x]), return_std=True)
            spreads.append(sd[0] / ys.std())
            leaders.append(ACQS[int(np.argmax(opt.gains_))])
        opt.tell(x, styblinski_tang([float(v) for v in x]))
    return min(opt.yi) - OPTIMUM, leaders, spreads


def main():
    lo, hi = (int(v) for v in sys.argv[1].split("-"))
    all_leaders, all_spreads = [], []
    print("seed\tregret\tLCB leads\tmedian sd of asked point")
    for seed in range(lo, hi + 1):
        regret, leaders, spreads = trace(seed)
        all_leaders += leaders
        all_spreads += spreads
        share = leaders.count("LCB") / len(leaders)
        print(f"{seed}\t{regret:.1f}\t{share:.2f}\t{np.median(spreads):.3f}", flush=True)
    share = all_leaders.count("LCB") / len(all_leaders)
    small = np.mean(np.array(all_spreads) < 0.1)
    print(f"all\t-\t{share:.2f}\t{np.median(all_spreads):.3f} ({small:.2f} of points below 0.1)")


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):
        sys.exit(print(__doc__))
    main()
