#!/usr/bin/env python3
"""Validate gpumem's trace files (GPUMEM_TRACE) and snapshot JSON
(gpumem_snapshot_write_json) against docs/semantics.md, for the C tests
test_trace_file.c and test_snapshot.c, which pass what they expect.

  debug_json_check.py trace FILE [--live KIND=BYTES ...] [--events N] [--dropped N]
                      [--last-bytes N] [--pool-events] [--sync] [--trim] [--backtraces]
                      [--kind KIND ...] [--memory PTR=MEMORY ...] [--pool-memory POOL=MEMORY ...]
  debug_json_check.py snapshot FILE [--alloc KIND=BYTES ...] [--segments] [--backtraces]
                      [--memory PTR=MEMORY ...] [--pool-memory POOL=MEMORY ...]

Every alloc and free of a trace has a real (non-zero) address, and each free pairs with the
alloc live at its address (same bytes, kind and memory) unless the trace dropped events;
--backtraces: each has a backtrace.  --kind: the trace has alloc and free events of KIND.
--memory: the allocation at PTR (its alloc and free events) says MEMORY; --pool-memory: the
pool POOL (its entry, its pool events) and every allocation from it say MEMORY.  PTR and POOL
are hexadecimal, as %p prints them.  Both are also checked in what gpumem-viz
(bindings/python/gpumem/viz.py) makes of the file: the page's data must say the same.

Exit 0 when every check holds, else 1 with the reasons on stderr.
SPDX-License-Identifier: MIT
"""
import argparse
import importlib.util
import json
import os
import sys

KINDS = ["unknown", "device", "host_pinned", "host_registered", "managed", "stream_ordered", "virtual", "buffer"]
MEMORIES = ["device", "pinned", "managed", "unknown"]
failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
    return cond


def is_hex(v):
    return isinstance(v, str) and v.startswith("0x") and all(c in "0123456789abcdef" for c in v[2:]) and len(v) > 2


def is_version(v):
    # The library's version, "MAJOR.MINOR.PATCH" (0.2.0 once 0.2 is released).
    parts = v.split(".") if isinstance(v, str) else []
    return len(parts) == 3 and all(p.isdigit() for p in parts)


def is_uint(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def address(v):
    """An address or handle as the files and %p write it ("0x.."), as an int; None for null."""
    return int(v, 16) if isinstance(v, str) else None


def memories_wanted(values):
    """{address: memory name} from PTR=MEMORY arguments."""
    out = {}
    for item in values or []:
        where, _, memory = item.partition("=")
        expect(memory in MEMORIES, "--memory/--pool-memory %r: not one of %r" % (item, MEMORIES))
        out[int(where, 16)] = memory
    return out


def load_viz():
    """gpumem-viz's module, from the source tree beside tests/ (it needs only the standard library)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bindings", "python", "gpumem", "viz.py")
    if not expect(os.path.isfile(path), "gpumem-viz not found at %s" % path):
        return None
    spec = importlib.util.spec_from_file_location("gpumem_viz_checked", path)
    viz = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = viz
    spec.loader.exec_module(viz)
    return viz


def check_viewer_memory(path, by_ptr, by_pool):
    """The viewer's data name the same memory for these pools and allocations."""
    viz = load_viz()
    if viz is None:
        return
    model = viz.build_model(viz.load(path), path)
    pools = {address(p): i for i, p in enumerate(model["pools"]) if p is not None}
    for pool, memory in by_pool.items():
        if expect(pool in pools, "gpumem-viz: no pool 0x%x" % pool):
            got = model["pool_memory"][pools[pool]]
            expect(got == memory, "gpumem-viz: pool 0x%x has memory %r, expected %r" % (pool, got, memory))
    rows = model["blocks"] if model["type"] == "trace" else model["top"]
    seen = set()
    for r in rows:
        ptr = address(r["ptr"])
        if ptr in by_ptr:
            seen.add(ptr)
            got = model["memories"][r["memory"]]
            expect(got == by_ptr[ptr], "gpumem-viz: 0x%x has memory %r, expected %r" % (ptr, got, by_ptr[ptr]))
        if 0 <= r["pool"] and address(model["pools"][r["pool"]]) in by_pool:
            want = by_pool[address(model["pools"][r["pool"]])]
            got = model["memories"][r["memory"]]
            expect(got == want, "gpumem-viz: 0x%x of a %s pool has memory %r" % (ptr, want, got))
    # Every allocation of a small file is drawn (a trace) or listed (a snapshot's largest).
    if len(rows) < min(viz.DRAWN_BLOCKS, viz.TOP_LIVE):
        for ptr in set(by_ptr) - seen:
            failures.append("gpumem-viz: 0x%x is not shown" % ptr)


def pairs(values):
    out = {}
    for item in values or []:
        kind, _, n = item.partition("=")
        out[kind] = out.get(kind, 0) + int(n)
    return out


def check_trace(path, a):
    with open(path, "rb") as f:
        raw = f.read().decode("utf-8")
    doc = json.loads(raw)
    # Layout: the header line, then one event per line ("," after all but the last), then "]}".
    lines = raw.rstrip("\n").split("\n")
    expect(lines[0].endswith('"traceEvents":['), "the first line must end with \"traceEvents\":[")
    expect(lines[-1] == "]}", "the last line must be ]}")
    body = lines[1:-1]
    for i, line in enumerate(body):
        text = line[:-1] if i + 1 < len(body) else line
        expect(i + 1 == len(body) or line.endswith(","), "event line %d does not end with ','" % i)
        try:
            json.loads(text)
        except ValueError as e:
            failures.append("event line %d is not one JSON object: %s" % (i, e))
    expect(doc.get("displayTimeUnit") == "ns", "displayTimeUnit")
    other = doc.get("otherData", {})
    expect(other.get("gpumem_trace") == 1, "otherData.gpumem_trace")
    expect(is_version(other.get("version")), "otherData.version: %r" % other.get("version"))
    expect(other.get("backend") in ("host", "cuda", "hip"), "otherData.backend")
    expect(is_uint(other.get("pid")) and is_uint(other.get("dropped")), "otherData.pid/dropped")
    devices = other.get("devices", [])
    expect(len(devices) >= 1 and all(is_uint(d.get("total")) and isinstance(d.get("name"), str) for d in devices),
           "otherData.devices")
    events = doc["traceEvents"]
    expect(len(events) == len(body), "traceEvents has %d entries for %d lines" % (len(events), len(body)))
    instants = [e for e in events if e.get("ph") == "i"]
    counters = [e for e in events if e.get("ph") == "C"]
    expect(len(instants) + len(counters) == len(events), "only instant and counter events")
    live = {}
    by_address = {}     # address -> args of the alloc live there
    freed_kinds = set()
    last_ts = -1.0
    last_counter = None
    reserved = {}
    for e in events:
        expect(isinstance(e.get("ts"), (int, float)) and e["ts"] >= last_ts, "ts must not go back: %r" % e)
        last_ts = e.get("ts", last_ts)
        expect(e.get("pid") == other.get("pid"), "pid of %r" % e)
        if e["ph"] == "C":
            if e["name"] == "bytes in use":
                expect(all(k in KINDS and is_uint(v) and v > 0 for k, v in e["args"].items()), "counter %r" % e)
                last_counter = e["args"]
            else:
                expect(e["name"].startswith("pool 0x") and e["name"].endswith(" reserved"), "counter name %r" % e)
                expect(set(e["args"]) == {"reserved", "used"}, "pool counter args %r" % e)
            continue
        expect(e.get("s") == "t" and e.get("cat") == "gpumem" and is_uint(e.get("tid")), "instant fields %r" % e)
        args = e["args"]
        name = e["name"]
        if name in ("alloc", "free"):
            expect(is_hex(args.get("ptr")) and address(args["ptr"]) != 0 and is_uint(args.get("bytes")),
                   "ptr (a real address) / bytes %r" % e)
            expect(args.get("kind") in KINDS and args.get("memory") in MEMORIES, "kind/memory %r" % e)
            expect(isinstance(args.get("device"), int), "device %r" % e)
            expect(args.get("pool") is None or is_hex(args["pool"]), "pool %r" % e)
            expect(args.get("stream") is None or is_hex(args["stream"]), "stream %r" % e)
            if a.backtraces:
                bt = args.get("backtrace")
                expect(isinstance(bt, list) and len(bt) > 0 and all(isinstance(s, str) for s in bt),
                       "backtrace missing in %r" % e)
            if not a.backtraces:
                expect("backtrace" not in args, "backtrace without GPUMEM_BACKTRACE=1")
            sign = 1 if name == "alloc" else -1
            live[args["kind"]] = live.get(args["kind"], 0) + sign * args["bytes"]
            check_pairing(name, args, by_address, other.get("dropped") == 0)
            if name == "free":
                freed_kinds.add(args.get("kind"))
        elif name in ("pool_grow", "pool_release"):
            expect(is_hex(args.get("pool")) and is_uint(args.get("bytes")) and is_uint(args.get("reserved")),
                   "pool event %r" % e)
            expect(args.get("memory") in MEMORIES, "pool event without its memory %r" % e)
            pool = args["pool"]
            if pool in reserved:
                sign = 1 if name == "pool_grow" else -1
                expect(reserved[pool] + sign * args["bytes"] == args["reserved"],
                       "reserved after %s does not add up: %r" % (name, e))
            reserved[pool] = args["reserved"]
        elif name == "trim":
            expect(is_hex(args.get("pool")) and is_uint(args.get("released")) and is_uint(args.get("reserved")),
                   "trim %r" % e)
            expect(args.get("memory") in MEMORIES, "trim without its pool's memory %r" % e)
        elif name == "sync":
            expect(args.get("stream") is None or is_hex(args["stream"]), "sync stream %r" % e)
            expect(isinstance(args.get("device"), int), "sync device %r" % e)
        elif name == "oom":
            expect(is_uint(args.get("bytes")) and args.get("kind") in KINDS and isinstance(args.get("device"), int),
                   "oom request %r" % e)
            expect(args.get("pool") is None or is_hex(args["pool"]), "oom pool %r" % e)
            expect(args.get("stream") is None or is_hex(args["stream"]), "oom stream %r" % e)
            expect(isinstance(args.get("verdict"), str) and args["verdict"], "oom without its verdict %r" % e)
        else:
            failures.append("unknown event %r" % name)
    names = [e["name"] for e in instants]
    if a.events is not None:
        expect(len(instants) == a.events, "%d events kept, expected %d" % (len(instants), a.events))
    if a.dropped is not None:
        expect(other.get("dropped") == a.dropped, "dropped %r, expected %d" % (other.get("dropped"), a.dropped))
    if a.last_bytes is not None:
        memory_events = [e for e in instants if e["name"] in ("alloc", "free")]
        expect(memory_events and memory_events[-1]["args"]["bytes"] == a.last_bytes,
               "the newest event is not the last one made: %r" % (memory_events[-1:] or None))
    if a.live is not None:
        want = pairs(a.live)
        if other.get("dropped") == 0:
            got = {k: v for k, v in live.items() if v}
            expect(got == {k: v for k, v in want.items() if v},
                   "alloc minus free bytes per kind %r, expected %r" % (got, want))
        if last_counter is not None:
            expect({k: v for k, v in last_counter.items()} == {k: v for k, v in want.items() if v},
                   "the last 'bytes in use' counter %r, expected %r" % (last_counter, want))
    for kind in a.kind or []:
        expect(kind in {e["args"].get("kind") for e in instants if e["name"] == "alloc"} and kind in freed_kinds,
               "no alloc and free events of kind %s" % kind)
    if a.pool_events:
        expect("pool_grow" in names, "no pool_grow event")
    if a.sync:
        expect("sync" in names, "no sync event")
    if a.trim:
        expect("trim" in names, "no trim event")
    check_trace_memory(instants, a)


def check_pairing(name, args, by_address, whole):
    """An alloc and its free pair up by address: an alloc's address is not live already, and a
    free is of the alloc live at its address, with its bytes, kind and memory (a trace that
    dropped its oldest events frees allocations it does not hold)."""
    ptr = address(args.get("ptr")) if is_hex(args.get("ptr")) else None
    if name == "alloc":
        expect(ptr not in by_address, "alloc at %s, which is live already" % args.get("ptr"))
        by_address[ptr] = args
        return
    alloc = by_address.pop(ptr, None)
    if alloc is None:
        expect(not whole, "free at %s, where nothing is live" % args.get("ptr"))
        return
    same = ("bytes", "kind", "memory", "device")
    expect(all(alloc.get(k) == args.get(k) for k in same),
           "free %r does not match its alloc %r" % ({k: args.get(k) for k in same}, {k: alloc.get(k) for k in same}))


def check_trace_memory(instants, a):
    by_ptr, by_pool = memories_wanted(a.memory), memories_wanted(a.pool_memory)
    allocated, pool_allocated = set(), set()
    for e in instants:
        args = e["args"]
        name = e["name"]
        pool = address(args.get("pool"))
        if name in ("alloc", "free"):
            ptr = address(args.get("ptr"))
            if ptr in by_ptr:
                expect(args.get("memory") == by_ptr[ptr], "%s of %s: memory %r, expected %r" %
                       (name, args["ptr"], args.get("memory"), by_ptr[ptr]))
                if name == "alloc":
                    allocated.add(ptr)
            if pool in by_pool:
                expect(args.get("memory") == by_pool[pool], "%s from pool %s: memory %r, expected %r" %
                       (name, args["pool"], args.get("memory"), by_pool[pool]))
                if name == "alloc":
                    pool_allocated.add(pool)
        elif name in ("pool_grow", "pool_release", "trim") and pool in by_pool:
            expect(args.get("memory") == by_pool[pool], "%s of pool %s: memory %r, expected %r" %
                   (name, args["pool"], args.get("memory"), by_pool[pool]))
    for ptr in set(by_ptr) - allocated:
        failures.append("no alloc event of 0x%x" % ptr)
    for pool in set(by_pool) - pool_allocated:
        failures.append("no alloc event from pool 0x%x" % pool)
    if by_ptr or by_pool:
        check_viewer_memory(a.file, by_ptr, by_pool)


def check_snapshot(path, a):
    with open(path, "rb") as f:
        doc = json.loads(f.read().decode("utf-8"))
    expect(doc.get("gpumem_snapshot") == 1 and is_version(doc.get("version")), "header %r" % list(doc)[:3])
    expect(doc.get("backend") in ("host", "cuda", "hip") and is_uint(doc.get("time_us")), "backend/time_us")
    for d in doc.get("devices", []):
        expect(is_uint(d.get("total")) and is_uint(d.get("free")) and isinstance(d.get("name"), str), "device %r" % d)
    expect(len(doc.get("devices", [])) >= 1, "no devices")
    pools = {}
    for p in doc.get("pools", []):
        expect(is_hex(p.get("pool")) and p.get("implementation") in ("builtin", "native"), "pool %r" % p)
        expect(p.get("memory") in MEMORIES and is_uint(p.get("reserved")) and is_uint(p.get("used")), "pool %r" % p)
        pools[p["pool"]] = p
    allocs = doc.get("allocations", [])
    addresses = [int(x["ptr"], 16) for x in allocs if is_hex(x.get("ptr"))]
    expect(len(addresses) == len(allocs), "every allocation has a ptr")
    expect(addresses == sorted(addresses), "allocations sorted by address")
    got = {}
    for x in allocs:
        expect(x.get("kind") in KINDS and x.get("memory") in MEMORIES and is_uint(x.get("bytes")), "alloc %r" % x)
        expect(x.get("pool") is None or is_hex(x["pool"]), "alloc pool %r" % x)
        expect(x.get("stream") is None or is_hex(x["stream"]), "alloc stream %r" % x)
        expect(is_uint(x.get("thread")) and x["thread"] > 0 and is_uint(x.get("time_us")), "thread/time %r" % x)
        expect(x["time_us"] <= doc["time_us"], "allocated after the snapshot? %r" % x)
        if a.backtraces:
            expect(isinstance(x.get("backtrace"), list) and len(x["backtrace"]) > 0, "no backtrace in %r" % x)
        else:
            expect("backtrace" not in x, "backtrace without GPUMEM_BACKTRACE=1")
        got.setdefault(x["kind"], []).append(x["bytes"])
    want = {}
    for item in a.alloc or []:
        kind, _, n = item.partition("=")
        want.setdefault(kind, []).append(int(n))
    for kind in want:
        expect(sorted(got.get(kind, [])) == sorted(want[kind]),
               "%s allocations %r, expected %r" % (kind, sorted(got.get(kind, [])), sorted(want[kind])))
    by_ptr, by_pool = memories_wanted(a.memory), memories_wanted(a.pool_memory)
    seen = set()
    for x in allocs:
        ptr, pool = address(x.get("ptr")), address(x.get("pool"))
        if ptr in by_ptr:
            seen.add(ptr)
            expect(x.get("memory") == by_ptr[ptr], "allocation %s: memory %r, expected %r" %
                   (x["ptr"], x.get("memory"), by_ptr[ptr]))
        if pool in by_pool:
            expect(x.get("memory") == by_pool[pool], "allocation %s of pool %s: memory %r, expected %r" %
                   (x["ptr"], x["pool"], x.get("memory"), by_pool[pool]))
    for ptr in set(by_ptr) - seen:
        failures.append("no allocation at 0x%x" % ptr)
    listed = {address(p["pool"]): p for p in pools.values()}
    for pool, memory in by_pool.items():
        if expect(pool in listed, "no pool 0x%x" % pool):
            expect(listed[pool].get("memory") == memory, "pool %s: memory %r, expected %r" %
                   (listed[pool]["pool"], listed[pool].get("memory"), memory))
    if by_ptr or by_pool:
        check_viewer_memory(path, by_ptr, by_pool)
    seg_bytes = {}
    for s in doc.get("segments", []):
        expect(is_hex(s.get("base")) and is_uint(s.get("bytes")), "segment %r" % s)
        free = s.get("free_blocks", [])
        end = 0
        for b in free:
            expect(is_uint(b.get("offset")) and is_uint(b.get("bytes")) and b["offset"] >= end, "free block %r" % b)
            end = b["offset"] + b["bytes"]
        expect(end <= s["bytes"], "free blocks run past the segment %r" % s)
        expect(is_uint(s.get("backed")) and s["backed"] <= s["bytes"], "segment backing %r" % s)
        if s.get("pool"):
            seg_bytes[s["pool"]] = seg_bytes.get(s["pool"], 0) + s["backed"]
    for pool, total in seg_bytes.items():
        if expect(pool in pools, "segment of unknown pool %s" % pool):
            expect(pools[pool]["reserved"] == total,
                   "pool %s: segments hold %d bytes, reserved says %d" % (pool, total, pools[pool]["reserved"]))
    if a.segments:
        expect(len(doc.get("segments", [])) > 0, "no segments")
        for p in pools.values():
            if p["implementation"] == "builtin":
                expect(seg_bytes.get(p["pool"], 0) == p["reserved"], "builtin pool %s: segments != reserved" % p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["trace", "snapshot"])
    ap.add_argument("file")
    ap.add_argument("--live", action="append")
    ap.add_argument("--alloc", action="append")
    ap.add_argument("--events", type=int)
    ap.add_argument("--dropped", type=int)
    ap.add_argument("--last-bytes", type=int)
    ap.add_argument("--pool-events", action="store_true")
    ap.add_argument("--sync", action="store_true")
    ap.add_argument("--trim", action="store_true")
    ap.add_argument("--segments", action="store_true")
    ap.add_argument("--backtraces", action="store_true")
    ap.add_argument("--kind", action="append")
    ap.add_argument("--memory", action="append")
    ap.add_argument("--pool-memory", action="append")
    a = ap.parse_args()
    try:
        (check_trace if a.what == "trace" else check_snapshot)(a.file, a)
    except (OSError, ValueError, KeyError, TypeError) as e:
        failures.append("%s: %s" % (type(e).__name__, e))
    for f in failures[:20]:
        print("debug_json_check: " + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
