#!/usr/bin/env python3
"""Rebuild the small UCI Adult subset shipped in this directory.

Usage:
    python3 make_subset.py /path/to/adult.data /path/to/adult.test

Takes every STRIDE-th data row (0-based rows 0, STRIDE, 2*STRIDE, ...) of each
original file, keeps at most TRAIN_ROWS / TEST_ROWS of them, and writes them
byte-for-byte unchanged (original comma-plus-space format, original labels) to
adult-subset.data and adult-subset.test next to this script. Blank lines and the
"|1x3 Cross validator" header line of adult.test are not data rows and are
dropped. No randomness is involved, so the output is fully deterministic.
"""

import os
import sys

STRIDE = 10
TRAIN_ROWS = 3000
TEST_ROWS = 1500


def subset(src, dst, limit):
    kept = 0
    row = 0
    with open(src, "r", encoding="ascii", newline="") as fin, \
            open(dst, "w", encoding="ascii", newline="") as fout:
        for line in fin:
            if not line.strip() or line.startswith("|"):
                continue
            if row % STRIDE == 0:
                fout.write(line if line.endswith("\n") else line + "\n")
                kept += 1
                if kept == limit:
                    break
            row += 1
    return kept


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: make_subset.py ADULT_DATA ADULT_TEST\n")
        return 2
    here = os.path.dirname(os.path.abspath(__file__))
    n_train = subset(argv[1], os.path.join(here, "adult-subset.data"), TRAIN_ROWS)
    n_test = subset(argv[2], os.path.join(here, "adult-subset.test"), TEST_ROWS)
    print("train_rows=%d test_rows=%d" % (n_train, n_test))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
