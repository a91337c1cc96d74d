#!/usr/bin/env python3
"""Census income prediction with scikit-learn: the trainer a Kubeflow user writes first.

A `Pipeline` of a `ColumnTransformer` (numeric columns scaled, categorical ones one-hot
encoded) and a `RandomForestClassifier`, trained on the UCI Adult subset in ../data and
scored on its held-out rows. Hyperparameters come from command-line flags; the result is
printed as `name=value` lines for Katib's default StdOut metrics collector:

    accuracy=0.8573
    loss=0.3121

`accuracy` is the test accuracy, `loss` the test log loss. Deterministic for a --seed.
Needs scikit-learn (see examples/README.md for the one-command virtual environment).
"""

import argparse
import csv
import os
import sys

# (column index in adult.data, name). fnlwgt (2) is a sampling weight and education (3)
# duplicates education-num, so neither is used.
NUMERIC = [(0, "age"), (4, "education-num"), (10, "capital-gain"), (11, "capital-loss"),
           (12, "hours-per-week")]
CATEGORICAL = [(1, "workclass"), (5, "marital-status"), (6, "occupation"),
               (7, "relationship"), (8, "race"), (9, "sex"), (13, "native-country")]
LABEL_COLUMN = 14


def fail(message, code=1):
    sys.stderr.write("census_sklearn.py: error: %s\n" % message)
    sys.exit(code)


def parse_args(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(
        description="Random forest pipeline (scikit-learn) on the UCI Adult subset.")
    parser.add_argument("--n-estimators", type=int, default=100,
                        help="number of trees (1..1000), default 100")
    parser.add_argument("--max-depth", type=int, default=10,
                        help="maximum tree depth (1..50), default 10")
    parser.add_argument("--min-samples-leaf", type=int, default=1,
                        help="minimum samples per leaf (>= 1), default 1")
    parser.add_argument("--max-features", type=float, default=0.5,
                        help="fraction of the encoded features tried at each split "
                             "(0 < f <= 1), default 0.5")
    parser.add_argument("--seed", type=int, default=1, help="random seed, default 1")
    parser.add_argument("--data-dir", default=os.path.join(here, os.pardir, "data"),
                        help="directory holding adult-subset.data and adult-subset.test")
    args = parser.parse_args(argv)
    if not 1 <= args.n_estimators <= 1000:
        parser.error("--n-estimators must be between 1 and 1000, got %d" % args.n_estimators)
    if not 1 <= args.max_depth <= 50:
        parser.error("--max-depth must be between 1 and 50, got %d" % args.max_depth)
    if args.min_samples_leaf < 1:
        parser.error("--min-samples-leaf must be >= 1, got %d" % args.min_samples_leaf)
    if not 0.0 < args.max_features <= 1.0:
        parser.error("--max-features must be in (0, 1], got %g" % args.max_features)
    return args


def load(path):
    """Rows of features (numbers, then category strings) and 0/1 labels."""
    rows, labels = [], []
    try:
        with open(path, newline="") as f:
            for fields in csv.reader(f, skipinitialspace=True):
                if len(fields) <= LABEL_COLUMN:
                    continue
                rows.append([float(fields[i]) for i, _ in NUMERIC]
                            + [fields[i] for i, _ in CATEGORICAL])
                labels.append(1 if fields[LABEL_COLUMN].startswith(">50K") else 0)
    except OSError as e:
        fail("cannot read %s: %s" % (path, e))
    return rows, labels


def main(argv):
    args = parse_args(argv)
    try:
        import numpy as np
        from sklearn.compose import ColumnTransformer
        from sklearn.ensemble import RandomForestClassifier
        from sklearn.metrics import accuracy_score, log_loss
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import OneHotEncoder, StandardScaler
    except ImportError as e:
        fail("%s; this trainer needs scikit-learn. Create its environment with\n"
             "  python3 -m venv .venv-sklearn && .venv-sklearn/bin/pip install -r "
             "examples/requirements-sklearn.txt\nand run vernier with "
             "PATH=\"$PWD/.venv-sklearn/bin:$PATH\" (see examples/README.md)" % e)
    train_x, train_y = load(os.path.join(args.data_dir, "adult-subset.data"))
    test_x, test_y = load(os.path.join(args.data_dir, "adult-subset.test"))
    n_num = len(NUMERIC)
    columns = ColumnTransformer([
        ("numeric", StandardScaler(), list(range(n_num))),
        ("categorical", OneHotEncoder(handle_unknown="ignore"),
         list(range(n_num, n_num + len(CATEGORICAL)))),
    ])
    model = Pipeline([
        ("columns", columns),
        ("forest", RandomForestClassifier(
            n_estimators=args.n_estimators,
            max_depth=args.max_depth,
            min_samples_leaf=args.min_samples_leaf,
            max_features=args.max_features,
            random_state=args.seed,
            n_jobs=1,
        )),
    ])
    train = np.array(train_x, dtype=object)
    test = np.array(test_x, dtype=object)
    print("census sklearn: %d training rows, %d test rows; trees %d, depth %d, leaf %d, "
          "features %.3f" % (len(train_x), len(test_x), args.n_estimators, args.max_depth,
                             args.min_samples_leaf, args.max_features), flush=True)
    model.fit(train, train_y)
    proba = model.predict_proba(test)[:, 1]
    predicted = (proba >= 0.5).astype(int)
    print("accuracy=%.4f" % accuracy_score(test_y, predicted))
    print("loss=%.4f" % log_loss(test_y, np.clip(proba, 1e-6, 1 - 1e-6), labels=[0, 1]))


if __name__ == "__main__":
    main(sys.argv[1:])
