#!/usr/bin/env python3
"""Compare the fake driver's answers with a real driver's, recorded by cuda_probe.

    probe_compare.py CUDA_PROBE LIBCUDA RECORD GROUP...

Runs `CUDA_PROBE LIBCUDA GROUP` for each group (one process each, as the probe wants) and
compares the lines they print, in order, with RECORD (the real driver's output).  Lines
starting with '#' are comments in both: the record's notes, and what a group prints for the
record only (a size the driver chose, which the fake need not repeat).  Exit 0 when every line is the same, 1 with a diff
otherwise.  The environment (FAKE_CUDA_DEVICES=...) is passed through to the probe.

SPDX-License-Identifier: MIT
"""
import difflib
import subprocess
import sys


def main(argv):
    if len(argv) < 5:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    probe, lib, record = argv[1:4]
    groups = argv[4:]
    with open(record, encoding="utf-8") as f:
        want = [line.rstrip("\n") for line in f if line.strip() and not line.startswith("#")]
    got = []
    for group in groups:
        run = subprocess.run([probe, lib, group], capture_output=True, text=True, timeout=120)
        lines = [line for line in run.stdout.splitlines() if not line.startswith("#")]
        if run.returncode != 0:
            print(f"{probe} {lib} {group} exited {run.returncode}:\n{run.stderr}", file=sys.stderr)
            return 1
        got += lines
    if got == want:
        print(f"{len(want)} answers of groups {', '.join(groups)}: the same as {record}")
        return 0
    diff = difflib.unified_diff(want, got, fromfile=record + " (real driver)", tofile="the fake", lineterm="", n=1)
    print("\n".join(diff))
    differ = sum(1 for a, b in zip(want, got) if a != b) + abs(len(want) - len(got))
    print(f"FAIL: {differ} of {len(want)} answers differ from the real driver's", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
