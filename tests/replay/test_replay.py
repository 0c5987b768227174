#!/usr/bin/env python3
"""gpumem-replay on the trace fixtures (suite 'replay'), on whichever backend the
environment selects (host, or a fake driver).

    test_replay.py GPUMEM_REPLAY SOURCE_ROOT

The trace's peak of live bytes is computed here from the file itself; the replay must
print it, and each pool's peak used must equal it (the pools count requested bytes) with
peak reserved at least as large.  Malformed traces must fail with the file, line and
reason.  SPDX-License-Identifier: MIT
"""
import json
import os
import re
import subprocess
import sys
import tempfile

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(replay, *args):
    r = subprocess.run([replay] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


def expected(path, all_kinds):
    """Peak live bytes, allocations and frees replayed, and frees skipped, from the file."""
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    live, total, peak, allocs, frees, unmatched = {}, 0, 0, 0, 0, 0
    for e in events:
        if e["name"] not in ("alloc", "free"):
            continue
        a = e["args"]
        if not all_kinds and a["kind"] != "stream_ordered":
            continue
        if e["name"] == "alloc":
            live[a["ptr"]] = a["bytes"]
            total += a["bytes"]
            allocs += 1
            peak = max(peak, total)
        elif a["ptr"] in live:
            total -= live.pop(a["ptr"])
            frees += 1
        else:
            unmatched += 1
    return peak, allocs, frees, unmatched


def check_replay(replay, path, all_kinds, extra=()):
    name = os.path.basename(path) + (" --all-kinds" if all_kinds else "") + "".join(" " + x for x in extra)
    args = list(extra) + (["--all-kinds"] if all_kinds else []) + ["--repeat", "3", path]
    rc, out, err = run(replay, *args)
    check(rc == 0, "%s: exit 0 (got %d: %s)" % (name, rc, err.strip()))
    if rc:
        return
    print(out)
    peak, allocs, frees, unmatched = expected(path, all_kinds)
    m = re.search(r"^trace:\s+(\d+) allocations, (\d+) frees.*skipped: (\d+) frees of allocations before", out, re.M)
    check(m is not None and (int(m.group(1)), int(m.group(2)), int(m.group(3))) == (allocs, frees, unmatched),
          "%s: %d allocations, %d frees replayed, %d frees skipped" % (name, allocs, frees, unmatched))
    m = re.search(r"^trace peak live: (\d+) bytes", out, re.M)
    check(m is not None and int(m.group(1)) == peak, "%s: trace peak live %d" % (name, peak))
    pools = re.findall(r"^(\w+)\s+pool: alloc ([\d.]+) ns/op, free ([\d.]+) ns/op .*peak reserved (\d+) bytes, "
                       r"peak used (\d+) bytes", out, re.M)
    check(any(p[0] == "builtin" for p in pools), "%s: the builtin pool was replayed" % name)
    for label, a_ns, f_ns, reserved, used in pools:
        check(int(used) == peak, "%s: %s pool's peak used %s == the trace's peak %d" % (name, label, used, peak))
        check(int(reserved) >= int(used), "%s: %s pool's peak reserved %s >= peak used" % (name, label, reserved))
    if not any(p[0] == "native" for p in pools):
        check("native   pool: unavailable on this backend" in out, "%s: says why there is no native pool" % name)


def check_malformed(replay, tmp, source, what, edit, message):
    lines = open(source).read().split("\n")
    lines = edit(lines)
    path = os.path.join(tmp, "bad.json")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    rc, out, err = run(replay, path)
    check(rc == 1 and re.search(message, err) is not None and "gpumem-replay: " in err,
          "malformed (%s): exit 1 and /%s/ (got %d: %s)" % (what, message, rc, err.strip()))


def main():
    replay, root = sys.argv[1], sys.argv[2]
    data = os.path.join(root, "tests", "data")
    training, cut = os.path.join(data, "trace-training.json"), os.path.join(data, "trace-cut.json")
    check_replay(replay, training, False)
    check_replay(replay, training, True)
    check_replay(replay, cut, False, ("--release-threshold", "0"))
    check_replay(replay, cut, True, ("--release-threshold", str(1 << 40)))

    with tempfile.TemporaryDirectory(prefix="gpumem-replay-") as tmp:
        def replace(n, text):
            return lambda ls: ls[:n - 1] + [text] + ls[n:]
        check_malformed(replay, tmp, training, "broken JSON at line 5", replace(5, '{"name":"alloc","ph":'),
                        r"bad\.json:5:\d+: malformed event: ")
        check_malformed(replay, tmp, training, "bytes not a number",
                        replace(6, '{"name":"alloc","args":{"ptr":"0x10","bytes":"many","kind":"stream_ordered",'
                                   '"stream":null}},'), r"bad\.json:6: malformed event: args\.bytes")
        check_malformed(replay, tmp, training, "no closing", lambda ls: ls[:40],
                        r"bad\.json:40: the trace ends without its closing \]\}")
        check_malformed(replay, tmp, training, "not a trace", lambda ls: ['{"hello":1}'],
                        r"bad\.json:1: not a GPUMEM_TRACE file")
        first = next(i for i, l in enumerate(open(training).read().split("\n"))
                     if '"name":"alloc"' in l and '"stream_ordered"' in l)
        check_malformed(replay, tmp, training, "double alloc", lambda ls: ls[:first + 1] + [ls[first]] + ls[first + 1:],
                        r"bad\.json:%d: malformed trace: alloc of 0x[0-9a-f]+, which is live already" % (first + 2))
        rc, out, err = run(replay, os.path.join(tmp, "missing.json"))
        check(rc == 1 and "cannot open" in err, "a missing file: exit 1 and 'cannot open'")
        rc, out, err = run(replay, "--repeat", "0", training)
        check(rc == 2 and "--repeat" in err, "--repeat 0: exit 2 and a usage message")

    if failures:
        print("%d checks failed" % len(failures))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
