#!/usr/bin/env python3
"""gpumem-replay on the trace fixtures (suite 'replay'), on whichever backend the
environment selects (host, or a fake driver).

    test_replay.py GPUMEM_REPLAY SOURCE_ROOT [TRACE_WORKLOAD]

The trace's peak of live bytes is computed here from the file itself; the replay must
print it, and each pool's peak used must equal it (a pool counts its blocks' size classes,
and every size in these traces is a whole class) with peak reserved at least as large.  Malformed
traces must fail with the file, line, column and reason (the trace rules of gpumem-replay(1),
which gpumem-viz applies too: tests/viz and bindings/python/tests/test_viz.py check the same
cases there); an allocation of a kind not replayed is skipped whatever its other fields; a
trace with nothing to replay says so and exits 3; options take their value after a space or
an '='.

TRACE_WORKLOAD (tests/data/trace_workload.c) is run here under GPUMEM_TRACE and
GPUMEM_BACKTRACE=1 on the same backend: in its trace every allocation and free (VMM
mappings, buffer extents, pool blocks, every other kind) has its address and backtrace,
each free pairs with its allocation, the peak and what is live at the end are what the
program counted itself, and gpumem-replay replays it.  SPDX-License-Identifier: MIT
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


def col(line, text):
    """The column (from 1) where text starts in line."""
    return line.index(text) + 1


def check_malformed(replay, tmp, source, what, edit, message, extra=(), lines=None):
    """source's lines edited (or the lines given) must fail: exit 1 and message on stderr."""
    if lines is None:
        lines = edit(open(source).read().split("\n"))
    path = os.path.join(tmp, "bad.json")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    rc, out, err = run(replay, *(list(extra) + [path]))
    check(rc == 1 and re.search(message, err) is not None and "gpumem-replay: " in err,
          "malformed (%s): exit 1 and /%s/ (got %d: %s)" % (what, message, rc, err.strip()))


def record(workload, tmp):
    """(trace path, the program's own count) from trace_workload on this backend; None where
    it cannot run here (exit 77: a feature it needs is refused)."""
    path = os.path.join(tmp, "recorded.json")
    env = dict(os.environ, GPUMEM_TRACE=path, GPUMEM_BACKTRACE="1")
    env.pop("GPUMEM_TRACE_MAX", None)
    r = subprocess.run([workload], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    if r.returncode == 77:
        print("note: trace_workload cannot run on this configuration: %s" % r.stderr.strip())
        return None
    check(r.returncode == 0, "trace_workload: exit 0 (got %d: %s)" % (r.returncode, r.stderr.strip()))
    m = re.search(r"peak (\d+) bytes live; (\d+) allocations of (\d+) bytes live at exit", r.stdout)
    check(m is not None and os.path.isfile(path), "trace_workload printed its count and wrote %s" % path)
    if r.returncode or not m or not os.path.isfile(path):
        return None
    print(r.stdout.strip())
    return path, {"peak": int(m.group(1)), "live_count": int(m.group(2)), "live_bytes": int(m.group(3)),
                  "vmm": "VMM mapped" in r.stdout}


def check_recorded(path, counted):
    """Every allocation and free has a real address and a backtrace and pairs up by address;
    the program's own count is the trace's."""
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    live, total, peak, bad, kinds = {}, 0, 0, [], set()
    for e in events:
        if e["name"] not in ("alloc", "free"):
            continue
        a = e["args"]
        ptr = int(a["ptr"], 16) if isinstance(a.get("ptr"), str) and a["ptr"].startswith("0x") else 0
        if not ptr or not a.get("backtrace"):
            bad.append(e)
        kinds.add(a["kind"])
        if e["name"] == "alloc":
            if ptr in live:
                bad.append(e)
            live[ptr] = a
            total += a["bytes"]
            peak = max(peak, total)
        else:
            alloc = live.pop(ptr, None)
            if alloc is None or (alloc["bytes"], alloc["kind"]) != (a["bytes"], a["kind"]):
                bad.append(e)
            else:
                total -= a["bytes"]
    check(not bad, "recorded: every alloc and free has a real address and a backtrace, and pairs with its "
          "alloc (%d do not, the first: %s)" % (len(bad), json.dumps(bad[0]) if bad else ""))
    wanted = {"device", "host_pinned", "host_registered", "managed", "stream_ordered", "buffer"}
    if counted["vmm"]:
        wanted.add("virtual")
    check(wanted <= kinds, "recorded: events of every kind %s (missing: %s)" % (sorted(wanted), sorted(wanted - kinds)))
    check(peak == counted["peak"], "recorded: the trace's peak %d is the program's %d" % (peak, counted["peak"]))
    check((len(live), total) == (counted["live_count"], counted["live_bytes"]),
          "recorded: live at the end %d allocations of %d bytes, the program's %d of %d" %
          (len(live), total, counted["live_count"], counted["live_bytes"]))
    return peak


def check_documented_sample(replay, root, training):
    """docs/debugging.md's sample output for trace-training.json is what the tool prints there,
    but for the device's name and the times (on the host backend with its native pool, where
    the sample was made)."""
    with open(os.path.join(root, "docs", "debugging.md")) as f:
        m = re.search(r"```\n(gpumem-replay: tests/data/trace-training.json\n.*?)```", f.read(), re.S)
    rc, out, err = run(replay, training)
    if "backend host" not in out or "native   pool: alloc" not in out:
        return
    def figures(text):
        text = re.sub(r"[\d.]+ ns/op", "T ns/op", text)
        return [l for l in text.strip().split("\n")[1:] if not l.startswith("device:")]
    check(m is not None and rc == 0 and figures(m.group(1)) == figures(out),
          "docs/debugging.md's sample output is what gpumem-replay prints for trace-training.json:\n%s" % out)


def write(tmp, lines, name="bad.json"):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return path


def check_rules(replay, tmp, lines, first):
    """The trace rules of gpumem-replay(1) ("TRACE RULES"), on the first stream-ordered
    allocation of the fixture (line first + 1), field by field."""
    line = lines[first]
    event = json.loads(line.rstrip(","))

    def with_args(**changes):
        e = json.loads(json.dumps(event))
        e["args"].update(changes)
        return json.dumps(e, separators=(",", ":")) + ","

    # ptr: "0x" and 1 to 16 lowercase hexadecimal digits without a leading 0, as gpumem writes it.
    ptr = event["args"]["ptr"]
    for bad in ("0X" + ptr[2:], "0x0" + ptr[2:], ptr.upper().replace("0X", "0x"), ptr[2:], "0x", "0x1" + "0" * 16,
                "0x-1", int(ptr, 16), None):
        if bad == ptr:
            continue
        text = with_args(ptr=bad)
        check_malformed(replay, tmp, None, "ptr %r" % (bad,), None,
                        r"bad\.json:%d:%d: malformed event: args\.ptr is not an address as gpumem writes it" %
                        (first + 1, col(text, '"ptr":') + 6), lines=lines[:first] + [text] + lines[first + 1:])
    # bytes: a JSON integer from 0 to 2^53 - 1 (no sign, fraction or exponent).
    for bad in ("-1", "1e23", "1.5", "1.0", "1E3", "9007199254740992", "18446744073709551616", '"8"', "true", "null"):
        text = with_args(bytes=0).replace('"bytes":0', '"bytes":' + bad)
        check_malformed(replay, tmp, None, "bytes %s" % bad, None,
                        r"bad\.json:%d:%d: malformed event: args\.bytes is not a byte count" %
                        (first + 1, col(text, '"bytes":') + 8), lines=lines[:first] + [text] + lines[first + 1:])
    # stream: null or a non-zero handle written as ptr is.
    for bad in ("0x0", "0X1", "0x01", 1, ""):
        text = with_args(stream=bad)
        check_malformed(replay, tmp, None, "stream %r" % (bad,), None,
                        r"bad\.json:%d:%d: malformed event: args\.stream is neither null" %
                        (first + 1, col(text, '"stream":') + 9), lines=lines[:first] + [text] + lines[first + 1:])
    # A line nests at most 32 arrays and objects: the event and its args are 2.
    deep = with_args(x="@").replace('"@"', "[" * 30 + "]" * 30)
    path = write(tmp, lines[:first] + [deep] + lines[first + 1:], "deep-ok.json")
    rc, out, err = run(replay, "--repeat", "1", path)
    check(rc == 0, "32 arrays and objects one inside another: replayed (got %d: %s)" % (rc, err.strip()))
    deeper = with_args(x="@").replace('"@"', "[" * 31 + "]" * 31)
    check_malformed(replay, tmp, None, "33 nested", None,
                    r"bad\.json:%d:%d: malformed event: nested too deeply: more than 32 arrays and objects" %
                    (first + 1, col(deeper, '"x":') + 4 + 30), lines=lines[:first] + [deeper] + lines[first + 1:])
    hostile = "[" * 10000 + "]" * 10000 + ","
    check_malformed(replay, tmp, None, "10000 nested", None,
                    r"bad\.json:%d:33: malformed event: nested too deeply" % (first + 1),
                    lines=lines[:first] + [hostile] + lines[first + 1:])
    # An allocation with no address (ptr 0x0) cannot be paired: counted and skipped.
    path = write(tmp, lines[:first] + [with_args(ptr="0x0")] + lines[first:], "no-address.json")
    rc, out, err = run(replay, "--repeat", "1", path)
    check(rc == 0 and "also skipped: 1 allocations and frees without an address (ptr 0x0" in out,
          "ptr 0x0: skipped and counted (got %d: %s)" % (rc, err.strip() or out))


def check_same_as_viz(replay, root, tmp, lines, first):
    """gpumem-viz (bindings/python/gpumem/viz.py, standard library only) refuses what
    gpumem-replay refuses, at the same line and column, with the same words (but for JSON
    syntax errors, which each program's parser words its own way)."""
    viz = os.path.join(root, "bindings", "python", "gpumem", "viz.py")
    event = json.loads(lines[first].rstrip(","))

    def args(**changes):
        e = json.loads(json.dumps(event))
        e["args"].update(changes)
        return json.dumps(e, separators=(",", ":")) + ","
    no_args = json.dumps({k: v for k, v in event.items() if k != "args"}, separators=(",", ":")) + ","
    cases = [("bytes -1", args(bytes=-1)), ("bytes 1e23", args(bytes=1e23)), ("ptr 0X", args(ptr="0X10")),
             ("ptr 0x010", args(ptr="0x010")), ("stream 0x0", args(stream="0x0")), ("no kind", args(kind=None)),
             ("no args", no_args), ("not an object", "[1],"), ("10000 nested", "[" * 10000 + "]" * 10000 + ","),
             ("33 nested", args(x="@").replace('"@"', "[" * 31 + "]" * 31)), ("no name", '{"ts":1},'),
             ("broken JSON", lines[first][:40])]
    texts = [(what, lines[:first] + [text] + lines[first + 1:]) for what, text in cases]
    texts.append(("double alloc", lines[:first + 1] + [lines[first]] + lines[first + 1:]))
    texts.append(("no gpumem_trace", ['{"otherData":{"gpumem_trace":true},"traceEvents":['] + lines[1:]))
    texts.append(("text after ]}", lines + ["]}"]))
    for what, text in texts:
        path = write(tmp, text)
        rc, out, err = run(replay, "--all-kinds", path)
        r = subprocess.run([sys.executable, viz, path, "-o", os.path.join(tmp, "bad.html")], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=120)
        got = [m.groups() if m else None for m in
               (re.match(r"gpumem-replay: (\S+?:\d+:\d+): (.*)\n$", err), re.match(r"gpumem-viz: (\S+?:\d+:\d+): (.*)\n$",
                                                                                  r.stderr))]
        same = got[0] is not None and got[1] is not None and got[0][0] == got[1][0] and \
            (got[0][1] == got[1][1] or what == "broken JSON")
        check(rc == 1 and r.returncode == 1 and same,
              "%s: gpumem-viz refuses it as gpumem-replay does (replay %d: %s; viz %d: %s)" %
              (what, rc, err.strip(), r.returncode, r.stderr.strip()))


def check_options(replay, root, training):
    """--opt=value as --opt value; --version prints the headers' and the library's versions."""
    rc, out, err = run(replay, "--release-threshold=256M", "--repeat=2", training)
    check(rc == 0 and "release threshold: 268435456 bytes" in out and "median of 2 runs" in out,
          "--release-threshold=256M --repeat=2 (got %d: %s)" % (rc, err.strip()))
    for args, named in ((["--repeat=0"], "'0'"), (["--repeat="], "''"), (["--release-threshold=12Q"], "'12Q'"),
                        (["--all-kinds=1"], "--all-kinds takes no value"), (["--repeat"], "not nothing")):
        rc, out, err = run(replay, *(args + ([training] if args != ["--repeat"] else [])))
        check(rc == 2 and named in err, "%s: exit 2, naming it (got %d: %s)" % (" ".join(args), rc, err.strip()))
    with open(os.path.join(root, "include", "gpumem", "gpumem_version.h")) as f:
        header = f.read()
    want = ".".join(re.search(r"#define GPUMEM_VERSION_%s (\d+)" % part, header).group(1)
                    for part in ("MAJOR", "MINOR", "PATCH"))
    rc, out, err = run(replay, "--version")
    check(rc == 0 and out == "gpumem-replay (gpumem) %s, library %s\n" % (want, want),
          "--version: 'gpumem-replay (gpumem) %s, library %s' (got %d: %r)" % (want, want, rc, out + err))


def check_nothing_to_replay(replay, tmp, lines):
    """A trace with nothing to replay says so, and exits 3 (not 0 with zeros that read as results)."""
    path = write(tmp, [lines[0], "]}", ""], "empty.json")
    rc, out, err = run(replay, path)
    check(rc == 3 and "empty.json: nothing to replay: the trace holds no event" in err and out == "",
          "a trace with no event: exit 3, 'nothing to replay' (got %d: %s%s)" % (rc, out, err.strip()))
    others = [l for l in lines[1:] if l.startswith("{") and '"stream_ordered"' not in l]
    others[-1] = others[-1].rstrip(",")
    path = write(tmp, [lines[0]] + others + ["]}", ""], "other-kinds.json")
    rc, out, err = run(replay, path)
    check(rc == 3 and re.search(r"nothing to replay: no allocation of kind stream_ordered among its \d+ events; "
                                r"--all-kinds replays its \d+ allocations and frees of other kinds", err),
          "a trace with no stream-ordered allocation: exit 3, pointing at --all-kinds (got %d: %s)" % (rc, err.strip()))
    rc, out, err = run(replay, "--all-kinds", "--repeat", "1", path)
    check(rc == 0, "the same trace with --all-kinds: replayed (got %d: %s)" % (rc, err.strip()))
    syncs = [l for l in lines[1:] if l.startswith('{"name":"sync"')]
    path = write(tmp, [lines[0]] + syncs[:-1] + [syncs[-1].rstrip(",")] + ["]}", ""], "syncs.json")
    rc, out, err = run(replay, "--all-kinds", path)
    check(rc == 3 and "nothing to replay: no allocation among its %d events\n" % len(syncs) in err,
          "a trace of synchronisations only: exit 3 (got %d: %s)" % (rc, err.strip()))


def main():
    replay, root = sys.argv[1], sys.argv[2]
    workload = sys.argv[3] if len(sys.argv) > 3 else None
    data = os.path.join(root, "tests", "data")
    training, cut = os.path.join(data, "trace-training.json"), os.path.join(data, "trace-cut.json")
    check_replay(replay, training, False)
    check_replay(replay, training, True)
    check_replay(replay, cut, False, ("--release-threshold", "0"))
    check_replay(replay, cut, True, ("--release-threshold", str(1 << 40)))
    check_documented_sample(replay, root, training)

    with tempfile.TemporaryDirectory(prefix="gpumem-replay-") as tmp:
        recorded = record(workload, tmp) if workload else None
        if recorded:
            path, counted = recorded
            peak = check_recorded(path, counted)
            check_replay(replay, path, False)
            check_replay(replay, path, True)
            rc, out, err = run(replay, "--all-kinds", "--repeat", "1", path)
            m = re.search(r"^trace peak live: (\d+) bytes", out, re.M)
            check(m is not None and int(m.group(1)) == peak == counted["peak"],
                  "recorded --all-kinds: trace peak live is the program's peak %d" % counted["peak"])

        def replace(n, text):
            return lambda ls: ls[:n - 1] + [text] + ls[n:]
        check_malformed(replay, tmp, training, "broken JSON at line 5", replace(5, '{"name":"alloc","ph":'),
                        r"bad\.json:5:22: malformed event: unexpected end of line")
        bad_bytes = '{"name":"alloc","args":{"ptr":"0x10","bytes":"many","kind":"stream_ordered","stream":null}},'
        check_malformed(replay, tmp, training, "bytes not a number", replace(6, bad_bytes),
                        r"bad\.json:6:%d: malformed event: args\.bytes is not a byte count" % col(bad_bytes, '"many"'))
        training_lines = open(training).read().split("\n")
        check_malformed(replay, tmp, training, "no closing", lambda ls: ls[:40],
                        r"bad\.json:40:%d: the trace ends without its closing \]\}" % (len(training_lines[39]) + 1))
        check_malformed(replay, tmp, training, "not a trace", lambda ls: ['{"hello":1}'],
                        r"bad\.json:1:1: not a GPUMEM_TRACE file")
        check_malformed(replay, tmp, training, "no gpumem_trace", lambda ls: ['{"otherData":{"gpumem_trace":2},'
                        '"traceEvents":['] + ls[1:], r"bad\.json:1:30: not a GPUMEM_TRACE file: no otherData\.gpumem_trace = 1")
        first = next(i for i, l in enumerate(training_lines) if '"name":"alloc"' in l and '"stream_ordered"' in l)
        check_malformed(replay, tmp, training, "double alloc", lambda ls: ls[:first + 1] + [ls[first]] + ls[first + 1:],
                        r"bad\.json:%d:%d: malformed trace: alloc of 0x[0-9a-f]+, which is live already \(allocated on "
                        r"line %d and not freed since\)" % (first + 2, col(training_lines[first], '"ptr":') + 6, first + 1))
        check_rules(replay, tmp, training_lines, first)
        check_same_as_viz(replay, root, tmp, training_lines, first)
        # The kind is read first: a kind not replayed is skipped whatever its other fields say
        # (replayed with --all-kinds, the same line is malformed).
        odd = '{"name":"alloc","ph":"i","s":"t","ts":0.5,"pid":1,"tid":1,"cat":"gpumem","args":{"ptr":"0x",' \
              '"bytes":"?","kind":"virtual","stream":7}},'
        path = os.path.join(tmp, "other-kind.json")
        with open(path, "w") as f:
            lines = open(training).read().split("\n")
            f.write("\n".join(lines[:1] + [odd] + lines[1:]))
        rc, out, err = run(replay, "--repeat", "1", path)
        base = run(replay, "--repeat", "1", training)[1]
        skipped = lambda text: re.search(r"(\d+) of other kinds", text)
        check(rc == 0 and skipped(out) and skipped(base) and
              int(skipped(out).group(1)) == int(skipped(base).group(1)) + 1,
              "a kind not replayed with no real ptr, bytes or stream: skipped and counted (got %d: %s)" %
              (rc, err.strip()))
        check_malformed(replay, tmp, path, "the same line with --all-kinds", lambda ls: ls,
                        r"bad\.json:2:%d: malformed event: args\.ptr is not an address" % col(odd, '"0x"'),
                        ("--all-kinds",))
        check_malformed(replay, tmp, training, "no kind", replace(6, '{"name":"alloc","args":{"ptr":"0x10",'
                        '"bytes":1,"stream":null}},'), r"bad\.json:6:24: malformed event: no args\.kind")
        rc, out, err = run(replay, os.path.join(tmp, "missing.json"))
        check(rc == 1 and "cannot open" in err, "a missing file: exit 1 and 'cannot open'")
        rc, out, err = run(replay, "--repeat", "0", training)
        check(rc == 2 and "--repeat" in err, "--repeat 0: exit 2 and a usage message")
        # Sizes take the units the size variables take; numbers are decimal ("010" is ten, not eight).
        rc, out, err = run(replay, "--release-threshold", "256M", "--repeat", "010", training)
        check(rc == 0 and "release threshold: 268435456 bytes" in out and "median of 10 runs" in out,
              "--release-threshold 256M --repeat 010: 268435456 bytes, 10 runs (got %d: %s)" % (rc, err.strip()))
        rc, out, err = run(replay, "--release-threshold", "1GiB", "--repeat", "1", training)
        check(rc == 0 and "release threshold: 1073741824 bytes" in out, "--release-threshold 1GiB")
        for bad in ("12Q", "0x10", "-1", "1.5G", "99999999999999999999"):
            rc, out, err = run(replay, "--release-threshold", bad, training)
            check(rc == 2 and "'%s'" % bad in err, "--release-threshold %s: exit 2, naming the value" % bad)
        rc, out, err = run(replay, "--bogus", training)
        check(rc == 2 and "unknown option '--bogus'" in err and "usage:" in err,
              "an unknown option is named (got: %s)" % err.strip())
        check_options(replay, root, training)
        check_nothing_to_replay(replay, tmp, training_lines)

    if failures:
        print("%d checks failed" % len(failures))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
