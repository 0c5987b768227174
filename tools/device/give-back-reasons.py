#!/usr/bin/env python3
"""Why gpumem's own pool backed and gave back memory in a benchmark's steady state.

Reads a child's stderr run with GPUMEM_LOG=debug and BENCH_STEP_LOG=1 (bench-frameworks.py
--child ...) and prints, from the step given on, each reason's count and bytes per step.

    give-back-reasons.py LOG FROM_STEP
"""
import re
import sys
from collections import defaultdict


def main():
    path, first = sys.argv[1], int(sys.argv[2])
    step, last = -1, -1
    counts, sizes = defaultdict(int), defaultdict(int)
    pat = re.compile(r"pool \d+: (gave back|backed) (\d+) bytes (?:for a block of \d+, )?(?:under free blocks )?(.*?) \(\d+ reserved\)")
    with open(path, errors="replace") as f:
        for ln in f:
            if ln.startswith("bench-step "):
                step = last = int(ln.split()[1])
                continue
            m = pat.search(ln)
            if m and step >= first:
                key = "%s %s" % (m.group(1), m.group(3))
                counts[key] += 1
                sizes[key] += int(m.group(2))
    steps = max(1, last - first + 1)
    print("steps %d-%d (%d): per step" % (first, last, steps))
    for key in sorted(counts, key=lambda k: -counts[k]):
        print("  %-60s %6.2f times  %8.1f MiB" % (key, counts[key] / steps, sizes[key] / steps / 2**20))


if __name__ == "__main__":
    main()
