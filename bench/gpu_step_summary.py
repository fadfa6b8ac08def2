#!/usr/bin/env python3
"""Step times of alternating `jisu bench-gpu` rounds, one line per configuration.

Input: a log where each run is headed by a line `== <config> run <n>` followed by bench-gpu's
decode table (rows `batch step_ms tokens/s ... NN%`). Output: `<config>  b1: 4.16/4.15/...`,
the step ms of every round per batch size, in run order. Device run scripts used an inline copy
of this until 2026-12-02 (bench/results/*/runN.sh).

usage: gpu_step_summary.py BENCH_LOG
"""
import collections
import re
import sys


def main(path):
    steps = collections.defaultdict(list)
    config = None
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("=="):
            config = re.sub(r"\s+run\s+\S+$", "", line.strip("= ").strip())
        elif config is not None and line.endswith("%"):
            fields = line.split()
            steps[(config, int(fields[0]))].append(float(fields[1]))
    for c in sorted({c for c, _ in steps}):
        batches = sorted(b for cc, b in steps if cc == c)
        print(f"{c:12s}", "  ".join(
            f"b{b}: " + "/".join(f"{v:.3f}" for v in steps[(c, b)]) for b in batches))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    main(sys.argv[1])
