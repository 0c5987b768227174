#!/usr/bin/env python3
"""What a `meson test` run that stopped without its summary got through.

usage: tools/ci/unfinished-tests.py BUILD-DIR [MESON-TEST-ARGS...]

run-tests.sh calls this when meson itself stopped (killed, out of memory or
disk) rather than a test failing: meson writes each result to
BUILD-DIR/meson-logs/testlog.json as the test ends, so the tests the run
selects (`meson test --list` with the same arguments) minus those results are
the ones that were running or had not started. Prints the counts, the failed
and unfinished tests, and the last results in the order they ended.
SPDX-License-Identifier: MIT
"""
import json
import os
import subprocess
import sys

# Arguments of `meson test` that take a value and do not select tests.
VALUE_ARGS = {"--timeout-multiplier", "-t", "--num-processes", "--setup", "--wrapper", "--test-args"}


def selected_tests(build_dir, args):
    keep, skip_next = [], False
    for a in args:
        if skip_next:
            skip_next = False
        elif a in VALUE_ARGS:
            skip_next = True
        elif a.split("=")[0] in VALUE_ARGS or a in ("--print-errorlogs", "--no-rebuild"):
            pass
        else:
            keep.append(a)
    out = subprocess.run(["meson", "test", "-C", build_dir, "--list", "--no-rebuild"] + keep,
                         capture_output=True, text=True, check=False)
    return [line.strip() for line in out.stdout.splitlines() if " / " in line]


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    build_dir, args = sys.argv[1], sys.argv[2:]
    results = []
    path = os.path.join(build_dir, "meson-logs", "testlog.json")
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    results.append(json.loads(line))
                except ValueError:
                    pass  # the line meson was writing when it stopped
    except OSError as e:
        print(f"--- no results to read ({e})")
    done = {r.get("name"): r.get("result") for r in results}
    failed = [n for n, r in done.items() if r not in ("OK", "SKIP", "EXPECTEDFAIL")]
    print(f"--- {len(done)} tests ended before meson stopped: "
          f"{sum(r == 'OK' for r in done.values())} ok, {len(failed)} failed, "
          f"{sum(r == 'SKIP' for r in done.values())} skipped")
    for n in failed:
        print(f"    failed: {n} ({done[n]})")
    selected = selected_tests(build_dir, args)
    unfinished = [n for n in selected if n not in done]
    if selected:
        print(f"--- {len(unfinished)} of {len(selected)} selected tests never ended (running or not started):")
        for n in unfinished[:25]:
            print(f"    {n}")
        if len(unfinished) > 25:
            print(f"    ... and {len(unfinished) - 25} more")
    last = sorted(results, key=lambda r: r.get("starttime", 0) + r.get("duration", 0))[-5:]
    if last:
        print("--- the last tests to end:")
        for r in last:
            print(f"    {r.get('name')}: {r.get('result')} after {r.get('duration', 0):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
