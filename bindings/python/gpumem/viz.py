#!/usr/bin/env python3
"""gpumem-viz: a gpumem trace (GPUMEM_TRACE) or snapshot (gpumem_snapshot_write_json)
as one self-contained HTML page.

    python3 -m gpumem.viz trace.json -o trace.html      # or: gpumem-viz trace.json
    gpumem.viz("trace.json")                             # from Python: returns the page's path

The page needs no network: the data, the script and the styles are inside it.  It shows
memory over time per kind and per pool, the allocations as blocks over time (stacked as
PyTorch's memory_viz draws them), each pool segment with its holes, and the largest live
allocations with their backtraces; pools and allocations with their memory (device,
pinned, managed).  See docs/debugging.md.

Standard library only, and no import of the rest of the package: this file also runs on
its own (``python3 viz.py``; meson installs it as ``gpumem-viz``), so pages can be made on
a machine without libgpumem.  The page's HTML and script are the files viz.html and viz.js
beside this one; the gpumem-viz command of a meson install finds them in <prefix>/share/gpumem
(see _page_dirs).

SPDX-License-Identifier: MIT
"""
import argparse
import json
import os
import re
import sys
import types

__all__ = ["VizError", "load", "build_model", "render_html", "write_html", "main"]

# The gpumem release this file is part of (it imports nothing of the package, so it states it
# itself; test abi-versions keeps it equal to the library's).
__version__ = "0.4.0"

KINDS = ["device", "host_pinned", "host_registered", "managed", "stream_ordered", "virtual", "buffer",
         "unknown"]
# Where an allocation's bytes live (its "memory"): a stream-ordered block's is its pool's.
MEMORIES = ["device", "pinned", "managed", "unknown"]
# Points per drawn series and allocations drawn one by one: enough for a screen, and small
# enough that a trace of millions of events still makes a page a browser opens at once.
SERIES_POINTS = 1500
DRAWN_BLOCKS = 800
TOP_LIVE = 50


class VizError(Exception):
    """The input is not a gpumem trace or snapshot (the message says what is wrong)."""


# ---------------------------------------------------------------------------
# Reading
#
# A trace is checked against the rules gpumem-replay applies (gpumem-replay(1), "TRACE RULES";
# tools/cli/gpumem-replay.c), with its messages, so that the page never draws what the replay
# refuses: at most MAX_NESTING arrays and objects one inside another on a line, strict JSON,
# addresses and handles as gpumem writes them, byte counts that are JSON integers from 0 to
# MAX_BYTES, no allocation of a live address.  The fields only this program reads (ts, pools,
# counters, out-of-memory events, backtraces) are checked too, so that no input ends in a
# traceback: an error names the file, line and column, as the replay's do.

MAX_NESTING = 32
MAX_BYTES = 2 ** 53 - 1     # the integers a double, and so the page's JavaScript, holds exactly
_HEX_DIGITS = frozenset("0123456789abcdef")


class _Trace(dict):
    """A trace as load() read it: the document, plus where each event came from (the path and
    the line of each, for errors that name them; None for a trace read as one JSON document),
    the lines it could not read (a last line cut short) and whether it lacks its closing ]}."""
    path = ""
    event_lines = None
    skipped_lines = 0
    cut_short = False


class _NotJson(ValueError):
    """A constant Python's json takes and JSON does not (NaN, Infinity, -Infinity)."""

    def __init__(self, name):
        super().__init__(name)
        self.name = name


def _no_constant(name):
    raise _NotJson(name)


_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def _byte_column(line, index):
    """The column (from 1, in bytes, as gpumem-replay counts) of line[index]."""
    return len(line[:index].encode("utf-8", "surrogateescape")) + 1


def _too_deep(line):
    """The index in line of the first array or object opened inside MAX_NESTING others, or -1."""
    depth, in_string, escaped = 0, False, False
    for k, c in enumerate(line):
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c == "[" or c == "{":
            if depth >= MAX_NESTING:
                return k
            depth += 1
        elif c == "]" or c == "}":
            depth -= 1
    return -1


_TOO_DEEP = "nested too deeply: more than %d arrays and objects one inside another" % MAX_NESTING


def _parse_line(line):
    """One line as JSON, with gpumem-replay's limits: (value, None), or (None, (index, why))."""
    deep = _too_deep(line) if line.count("[") + line.count("{") > MAX_NESTING else -1
    try:
        value = _DECODER.decode(line)
    except RecursionError:
        return None, (max(_too_deep(line), 0), _TOO_DEEP)
    except _NotJson as e:
        at = line.find(e.name)
        if 0 <= deep < at:
            return None, (deep, _TOO_DEEP)
        return None, (max(at, 0), "expected a value (%s is not JSON)" % e.name)
    except ValueError as e:
        at = getattr(e, "pos", 0)
        if 0 <= deep < at:
            return None, (deep, _TOO_DEEP)
        return None, (at, getattr(e, "msg", str(e)))
    if deep >= 0:
        return None, (deep, _TOO_DEEP)
    return value, None


def load(path):
    """Read a trace or snapshot.  A trace in GPUMEM_TRACE's layout (a header line ending in
    ``"traceEvents":[``, one event a line, then ``]}``) is read line by line, so that an error
    names its line and column; one cut short (the process died while writing it) is read up to
    its last whole line.  Raises VizError on anything else."""
    try:
        # Undecodable bytes are kept as they are (gpumem-replay does not decode them either), and
        # so are line ends (gpumem-replay's lines end at \n only).
        with open(path, "r", encoding="utf-8", errors="surrogateescape", newline="") as f:
            text = f.read()
    except OSError as e:
        raise VizError("cannot read %s: %s" % (path, e.strerror or e)) from None
    newline = text.find("\n")
    if text[:newline if newline >= 0 else len(text)].rstrip(" \r").endswith('"traceEvents":['):
        lines = text.split("\n")
        del text
        return _load_trace_lines(path, lines)
    try:
        doc = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise VizError("%s nests arrays and objects too deeply to be a gpumem trace or snapshot" % path) from None
    except ValueError as e:
        raise VizError("%s is not JSON (%s): expected a GPUMEM_TRACE file or a gpumem snapshot" % (path, e)) \
            from None
    if not isinstance(doc, dict) or not ("gpumem_snapshot" in doc or "traceEvents" in doc):
        raise VizError("%s is JSON but neither a gpumem trace (traceEvents) nor a gpumem snapshot "
                       "(gpumem_snapshot)" % path)
    if "gpumem_snapshot" in doc:
        return doc
    trace = _Trace(doc)
    trace.path = path
    _check_header(trace, path, None)
    return trace


def _check_header(doc, path, head):
    """otherData.gpumem_trace must be 1, as gpumem-replay requires (head: the header line)."""
    other = doc.get("otherData")
    magic = other.get("gpumem_trace") if isinstance(other, dict) else None
    if isinstance(magic, (int, float)) and not isinstance(magic, bool) and magic == 1:
        return
    if head is None:
        raise VizError("%s is JSON with traceEvents but not a gpumem trace: no otherData.gpumem_trace = 1" % path)
    at = max(head.find('"gpumem_trace"'), head.find('"otherData"'), 0)
    if at:
        at = head.index(":", at) + 1
        at += len(head[at:]) - len(head[at:].lstrip(" \t"))
    raise VizError("%s:1:%d: not a GPUMEM_TRACE file: no otherData.gpumem_trace = 1" %
                   (path, _byte_column(head, at)))


def _load_trace_lines(path, lines):
    head = lines[0].rstrip(" \r")
    header, error = _parse_line(head + "]}")
    if error:
        raise VizError("%s:1:%d: not a GPUMEM_TRACE file: %s" % (path, _byte_column(head, error[0]), error[1]))
    if not isinstance(header, dict):
        raise VizError("%s:1:1: not a GPUMEM_TRACE file: the header is not a JSON object" % path)
    trace = _Trace(header)
    trace.path = path
    _check_header(trace, path, head)
    events, event_lines = trace["traceEvents"], []
    trace.event_lines = event_lines
    last = len(lines)
    while last > 1 and not lines[last - 1].strip(" \t\r"):
        last -= 1
    closed, keys, scan = False, {}, _DECODER.scan_once
    for n in range(1, last):
        line = lines[n].rstrip(" \r")
        lines[n] = None     # what is read is let go: a trace can be large
        start = len(line) - len(line.lstrip(" \t"))
        if start == len(line):
            continue
        if closed:
            raise VizError("%s:%d:%d: malformed event: text after the closing ]}" % (path, n + 1, start + 1))
        if line[start:] == "]}":
            closed = True
            continue
        if line.endswith(","):
            line = line[:-1]
        # The usual line in one call; any other through _parse_line, which says what is wrong.
        error = None
        try:
            if line.count("[") + line.count("{") > MAX_NESTING:
                raise ValueError
            event, end = scan(line, start)
            if end != len(line):
                raise ValueError
        except (StopIteration, ValueError, RecursionError):
            event, error = _parse_line(line)
        if error:
            if n == last - 1:
                # The last line of a trace whose writer died in the middle of it (no ]} follows).
                trace.skipped_lines = 1
                break
            raise VizError("%s:%d:%d: malformed event: %s" % (path, n + 1, _byte_column(line, error[0]), error[1]))
        if isinstance(event, dict):
            event = _shared_keys(event, keys)
        events.append(event)
        event_lines.append(n + 1)
    trace.cut_short = not closed
    return trace


def _shared_keys(event, keys):
    """The event with its and its args' member names shared with the other events' (one JSON
    document shares them as it is read; one line at a time does not, and a large trace would
    take about half as much memory again)."""
    event = {keys.setdefault(k, k): v for k, v in event.items()}
    args = event.get("args")
    if isinstance(args, dict):
        event["args"] = {keys.setdefault(k, k): v for k, v in args.items()}
    return event


class _Where:
    """Names an event in errors: FILE:LINE:COLUMN where the event's line is known, the column
    being that of the value at fault (keys: the members leading to it) or, where a member is
    absent, of the object that lacks it; else traceEvents[N]."""

    def __init__(self, doc, source):
        self.path = getattr(doc, "path", "") or source or "the trace"
        self.event_lines = getattr(doc, "event_lines", None)
        self._lines = None

    def __call__(self, i, keys=()):
        if self.event_lines is None:
            return "%s: traceEvents[%d]" % (self.path, i)
        line = self.event_lines[i]
        return "%s:%d:%d" % (self.path, line, self._column(line, keys))

    def line(self, i):
        return "line %d" % self.event_lines[i] if self.event_lines is not None else "traceEvents[%d]" % i

    def _column(self, line, keys):
        if self._lines is None:   # read again: only an error needs the text
            try:
                with open(self.path, "rb") as f:
                    self._lines = f.read().decode("utf-8", "surrogateescape").split("\n")
            except OSError:
                self._lines = []
        text = self._lines[line - 1] if line - 1 < len(self._lines) else ""
        at = len(text) - len(text.lstrip(" \t"))
        for key in keys:
            m = re.compile(r'"%s"\s*:\s*' % re.escape(key)).search(text, at)
            if not m:
                break
            at = m.end()
        return _byte_column(text, at)


def _hex(value):
    """An address or handle as gpumem writes it ("0x", 1 to 16 lowercase hexadecimal digits, no
    leading 0: one spelling per value), as an int; None for anything else."""
    if not isinstance(value, str) or not 3 <= len(value) <= 18 or value[:2] != "0x" or \
            (value[2] == "0" and len(value) > 3) or not _HEX_DIGITS.issuperset(value[2:]):
        return None
    return int(value[2:], 16)


def _is_count(value):
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_BYTES


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_ADDRESS = "an address as gpumem writes it: \"0x\" and 1 to 16 lowercase hexadecimal digits, with no leading 0"
_HANDLE = "a handle as gpumem writes it: \"0x\" and 1 to 16 lowercase hexadecimal digits, with no leading 0, not 0x0"
_COUNT = "a whole number from 0 to 2^53 - 1, written without fraction or exponent"
_POOL_EVENTS = frozenset(("pool_grow", "pool_release", "trim"))
_READ_EVENTS = frozenset(("alloc", "free", "sync", "oom")) | _POOL_EVENTS


def _handle_error(args, key, required):
    """Why args[key] is neither null nor a handle (absent counts as null unless required, as
    gpumem-replay requires a stream), or None."""
    v = args.get(key)
    if (v is None and (not required or key in args)) or (_hex(v) or 0) > 0:
        return None
    return "args.%s is neither null (%s) nor %s" % (key, "the default stream" if key == "stream" else "none",
                                                    _HANDLE)


def _count_error(args, key, required):
    v = args.get(key)
    if (v is None and not required) or _is_count(v):
        return None
    return "args.%s is not a byte count: %s" % (key, _COUNT)


def _check_event(e, i, where):
    """The event's fields this program reads, against the trace rules; returns its ptr as an
    int for an alloc or free (0: no address), else None.  Raises VizError."""
    why, keys, ptr = _event_error(e)
    if why:
        raise VizError("%s: malformed event: %s" % (where(i, keys), why))
    return ptr


def _event_error(e):
    """(why, the keys of the value at fault, None) for a malformed event, else (None, (), ptr)."""
    if not isinstance(e, dict):
        return "an event is a JSON object", (), None
    name = e.get("name")
    if not isinstance(name, str):
        return "no \"name\" string", ("name",), None
    ts = e.get("ts")
    if ts is not None and not _is_number(ts):
        return "ts is not a number", ("ts",), None
    counter = name.startswith("pool ") and name.endswith(" reserved") and e.get("ph") == "C"
    if name not in _READ_EVENTS and not counter:
        return None, (), None
    args = e.get("args")
    if not isinstance(args, dict):
        return "no \"args\" object", ("args",), None
    if counter:
        if not (_hex(name[5:-9]) or 0) > 0:
            return "a pool counter is named \"pool HANDLE reserved\", HANDLE %s" % _HANDLE, ("name",), None
        for key in ("reserved", "used"):
            why = _count_error(args, key, False)
            if why:
                return why, ("args", key), None
        return None, (), None
    if name == "sync":
        return _handle_error(args, "stream", True), ("args", "stream"), None
    if name != "alloc" and name != "free":
        why = _handle_error(args, "pool", False)
        if why:
            return why, ("args", "pool"), None
        key = "bytes" if name == "oom" else "reserved"
        return _count_error(args, key, False), ("args", key), None
    if not isinstance(args.get("kind"), str):
        return "no args.kind string", ("args", "kind"), None
    ptr = _hex(args.get("ptr"))
    if ptr is None:
        return "args.ptr is not %s" % _ADDRESS, ("args", "ptr"), None
    if not ptr:
        return None, (), 0    # no address: counted, not drawn (it cannot be paired)
    for key, why in (("stream", _handle_error(args, "stream", True)), ("bytes", _count_error(args, "bytes", True)),
                     ("pool", _handle_error(args, "pool", False))):
        if why:
            return why, ("args", key), None
    frames = args.get("backtrace")
    if frames is not None and not (isinstance(frames, list) and all(isinstance(f, str) for f in frames)):
        return "args.backtrace is not an array of strings", ("args", "backtrace"), None
    return None, (), ptr


# ---------------------------------------------------------------------------
# The page's data, computed here so that the page only draws


def _kind_index(kind):
    return KINDS.index(kind) if kind in KINDS else KINDS.index("unknown")


def _memory_index(memory):
    return MEMORIES.index(memory) if memory in MEMORIES else MEMORIES.index("unknown")


def _pool_memories(npools, said_by_pool, said_by_blocks):
    """Each pool's memory name (None where nothing says): what its own entry or events say,
    else what its blocks say (a trace with no pool event of that pool)."""
    out = []
    for p in range(npools):
        memory = said_by_pool.get(p) or said_by_blocks.get(p)
        out.append(memory if memory in MEMORIES and memory != "unknown" else None)
    return out


def _downsample(times, columns, pick, n=SERIES_POINTS):
    """Keep at most n samples per series: per time bucket, the sample whose pick() is the
    largest (so peaks survive), plus the first and last samples."""
    if len(times) <= n:
        return times, columns
    t0, t1 = times[0], times[-1]
    width = (t1 - t0) / n or 1.0
    keep, best, best_bucket = [], None, None
    for i, t in enumerate(times):
        b = min(int((t - t0) / width), n - 1)
        if b != best_bucket:
            if best is not None:
                keep.append(best)
            best, best_bucket = i, b
        elif pick(i) > pick(best):
            best = i
    keep.append(best)
    if keep[0] != 0:
        keep.insert(0, 0)
    if keep[-1] != len(times) - 1:
        keep.append(len(times) - 1)
    return [times[i] for i in keep], [[c[i] for i in keep] for c in columns]


def _trace_model(doc, source=""):
    where = _Where(doc, source)
    other = doc.get("otherData")
    other = other if isinstance(other, dict) else {}
    raw = doc.get("traceEvents")
    if not isinstance(raw, list):
        raise VizError("%s: traceEvents is not an array" % where.path)
    ptrs = [_check_event(e, i, where) for i, e in enumerate(raw)]   # in the file's order
    order = sorted(range(len(raw)), key=lambda i: float(raw[i].get("ts") or 0.0))  # stable: ties keep it
    events = [raw[i] for i in order]
    t_start = float(events[0].get("ts") or 0.0) if events else 0.0
    t_end = float(events[-1].get("ts") or 0.0) if events else 0.0

    pools = []          # pool address strings, in order of appearance
    pool_index = {}

    def pool_of(addr):
        if addr is None:
            return -1
        if addr not in pool_index:
            pool_index[addr] = len(pools)
            pools.append(addr)
        return pool_index[addr]

    backtraces, bt_index = [], {}

    def backtrace_of(frames):
        if not frames:
            return -1
        key = tuple(str(f) for f in frames)
        if key not in bt_index:
            bt_index[key] = len(backtraces)
            backtraces.append(list(key))
        return bt_index[key]

    # [t_alloc, t_free (None: live at the end), bytes, kind, pool, ptr, stream, bt, before,
    #  seq_alloc, seq_free, memory]: seq (the event's place in time order) orders events of equal ts.
    allocs = []
    pool_memory_said, block_memory_said = {}, {}  # pool index -> memory name
    live = {}           # ptr -> index into allocs
    counts = {"alloc": 0, "free": 0, "pool_grow": 0, "pool_release": 0, "trim": 0, "sync": 0, "oom": 0, "other": 0}
    ooms = []           # allocations that failed OUT_OF_MEMORY, with the report's verdict
    unmatched_frees = 0
    no_address = 0      # alloc and free events without an address: they cannot be paired, so are not drawn
    pool_reserved_events = []   # (t, pool, reserved)
    pool_used_counters = []     # (t, pool, used)

    for seq, e in enumerate(events):
        name = e.get("name")
        args = e.get("args") or {}
        t = float(e.get("ts") or 0.0)
        if name in ("alloc", "free") and not ptrs[order[seq]]:
            no_address += 1
        elif name == "alloc":
            if args["ptr"] in live:
                raise VizError("%s: malformed trace: alloc of %s, which is live already (allocated on %s and not "
                               "freed since)" % (where(order[seq], ("args", "ptr")), args["ptr"],
                                                 where.line(order[allocs[live[args["ptr"]]][9]])))
            counts["alloc"] += 1
            idx = len(allocs)
            allocs.append([t, None, int(args.get("bytes") or 0), _kind_index(args.get("kind")),
                           pool_of(args.get("pool")), str(args.get("ptr")), args.get("stream"),
                           backtrace_of(args.get("backtrace")), 0, seq, None, _memory_index(args.get("memory"))])
            live[str(args.get("ptr"))] = idx
            if allocs[idx][4] >= 0:
                block_memory_said.setdefault(allocs[idx][4], args.get("memory"))
        elif name == "free":
            counts["free"] += 1
            idx = live.pop(str(args.get("ptr")), None)
            if idx is None:
                # Allocated before the trace's window (a cut trace): live from its start.
                unmatched_frees += 1
                allocs.append([t_start, t, int(args.get("bytes") or 0), _kind_index(args.get("kind")),
                               pool_of(args.get("pool")), str(args.get("ptr")), args.get("stream"),
                               backtrace_of(args.get("backtrace")), 1, -1, seq, _memory_index(args.get("memory"))])
                if allocs[-1][4] >= 0:
                    block_memory_said.setdefault(allocs[-1][4], args.get("memory"))
            else:
                allocs[idx][1] = t
                allocs[idx][10] = seq
        elif name in ("pool_grow", "pool_release", "trim"):
            counts[name] += 1
            if args.get("pool") is not None and args.get("memory") in MEMORIES:
                pool_memory_said.setdefault(pool_of(args["pool"]), args["memory"])
            if "reserved" in args and args.get("pool") is not None:
                pool_reserved_events.append((t, pool_of(args["pool"]), int(args["reserved"])))
        elif name == "sync":
            counts["sync"] += 1
        elif name == "oom":
            counts["oom"] += 1
            ooms.append({"t": t, "bytes": int(args.get("bytes") or 0), "kind": str(args.get("kind") or "unknown"),
                         "device": args.get("device"), "pool": pool_of(args.get("pool")) if args.get("pool") else -1,
                         "stream": args.get("stream"), "verdict": str(args.get("verdict") or "")})
        elif e.get("ph") == "C" and isinstance(name, str) and name.startswith("pool ") and \
                name.endswith(" reserved"):
            p = pool_of(name[5:-9])
            if "reserved" in args:
                pool_reserved_events.append((t, p, int(args["reserved"])))
            if "used" in args:
                pool_used_counters.append((t, p, int(args["used"])))
        elif e.get("ph") != "C":
            counts["other"] += 1

    # Every change of live bytes, in time order: (t, +bytes or -bytes, alloc index).
    changes = []
    for i, a in enumerate(allocs):
        changes.append((a[0], a[9], 0, i))
        if a[1] is not None:
            changes.append((a[1], a[10], 1, i))
    changes.sort(key=lambda c: (c[0], c[1]))
    changes = [(t, is_free, i) for t, _, is_free, i in changes]

    npools = len(pools)
    reserved_at = sorted(pool_reserved_events, key=lambda r: r[0])
    counter_pools = {p for _, p, _ in pool_used_counters}
    used_at = sorted(pool_used_counters, key=lambda r: r[0])

    # Time series: bytes per kind and per memory (from the allocations), per pool used and reserved.
    kind_bytes = [0] * len(KINDS)
    memory_bytes = [0] * len(MEMORIES)
    pool_used = [0] * npools
    pool_reserved = [0] * npools
    times, kind_cols, used_cols, res_cols = [], [[] for _ in KINDS], [[] for _ in range(npools)], \
        [[] for _ in range(npools)]
    memory_cols = [[] for _ in MEMORIES]
    ri = ui = 0
    peak_total, peak_time = 0, t_start
    sample_points = sorted(set([c[0] for c in changes] + [r[0] for r in reserved_at] + [u[0] for u in used_at]))
    ci = 0
    for t in sample_points:
        while ci < len(changes) and changes[ci][0] <= t:
            _, is_free, i = changes[ci]
            a = allocs[i]
            sign = -1 if is_free else 1
            kind_bytes[a[3]] += sign * a[2]
            memory_bytes[a[11]] += sign * a[2]
            if a[4] >= 0 and a[4] not in counter_pools:
                pool_used[a[4]] += sign * a[2]
            ci += 1
        while ri < len(reserved_at) and reserved_at[ri][0] <= t:
            pool_reserved[reserved_at[ri][1]] = reserved_at[ri][2]
            ri += 1
        while ui < len(used_at) and used_at[ui][0] <= t:
            pool_used[used_at[ui][1]] = used_at[ui][2]
            ui += 1
        times.append(t)
        for k in range(len(KINDS)):
            kind_cols[k].append(kind_bytes[k])
        for k in range(len(MEMORIES)):
            memory_cols[k].append(memory_bytes[k])
        for p in range(npools):
            used_cols[p].append(pool_used[p])
            res_cols[p].append(pool_reserved[p])
        total = sum(kind_bytes)
        if total > peak_total:
            peak_total, peak_time = total, t
    totals = [sum(col[i] for col in kind_cols) for i in range(len(times))]
    s_times, s_cols = _downsample(times, kind_cols + used_cols + res_cols + memory_cols + [totals],
                                  pick=lambda i: totals[i])
    nk, nm = len(KINDS), len(MEMORIES)
    kinds_used = [k for k in range(nk) if any(kind_cols[k])]
    memories_used = [k for k in range(nm) if any(memory_cols[k])]

    blocks, other_series = _stack_blocks(allocs, changes, t_end)

    live_end = sorted((a for a in allocs if a[1] is None), key=lambda a: -a[2])
    return {
        "type": "trace",
        "meta": {
            "version": other.get("version"), "backend": other.get("backend"), "pid": other.get("pid"),
            "dropped": other["dropped"] if _is_count(other.get("dropped")) else 0,
            "devices": [d for d in other.get("devices") or [] if isinstance(d, dict)]
            if isinstance(other.get("devices"), list) else [],
            "skipped_lines": getattr(doc, "skipped_lines", 0), "cut_short": getattr(doc, "cut_short", False),
            "events": len(events), "counts": counts, "unmatched_frees": unmatched_frees, "no_address": no_address,
            "t_start": t_start, "t_end": t_end, "peak_total": peak_total, "peak_time": peak_time,
            "live_at_end": len(live_end), "live_bytes_at_end": sum(a[2] for a in live_end),
        },
        "kinds": KINDS, "kinds_used": kinds_used, "memories": MEMORIES, "memories_used": memories_used,
        "pools": pools, "pool_memory": _pool_memories(npools, pool_memory_said, block_memory_said),
        "backtraces": backtraces,
        "series": {"t": s_times, "kind": s_cols[:nk], "pool_used": s_cols[nk:nk + npools],
                   "pool_reserved": s_cols[nk + npools:nk + 2 * npools],
                   "memory": s_cols[nk + 2 * npools:nk + 2 * npools + nm], "total": s_cols[-1]},
        "blocks": blocks, "other": other_series,
        "segments": _derived_segments(allocs, changes, pools, reserved_at),
        "top": [_row(a) for a in live_end[:TOP_LIVE]],
        "ooms": ooms,
    }


def _row(a):
    return {"ptr": a[5], "bytes": a[2], "kind": a[3], "memory": a[11], "pool": a[4], "stream": a[6], "bt": a[7],
            "t": a[0], "before": a[8]}


def _stack_blocks(allocs, changes, t_end):
    """PyTorch memory_viz's layout: each allocation is a band stacked on those made before
    it and still live; when one is freed the bands above it move down.  The largest
    DRAWN_BLOCKS allocations are drawn one by one; the others form one band on top."""
    order = sorted(range(len(allocs)), key=lambda i: -allocs[i][2])
    drawn = set(order[:DRAWN_BLOCKS])
    stack, y, points = [], {}, {}
    top = 0
    other = 0
    ot, ov = [], []
    for t, is_free, i in changes:
        a = allocs[i]
        if i not in drawn:
            other += -a[2] if is_free else a[2]
            ot.append(t)
            ov.append([top, other])
            continue
        if not is_free:
            y[i] = top
            points[i] = [t, top]
            stack.append(i)
            top += a[2]
        else:
            pos = stack.index(i)
            stack.pop(pos)
            points[i].append(t)
            for j in stack[pos:]:
                y[j] -= a[2]
                points[j] += [t, y[j]]
            top -= a[2]
        ot.append(t)
        ov.append([top, other])
    blocks = []
    for i in sorted(points, key=lambda i: allocs[i][0]):
        pts = points[i]
        if len(pts) % 2 == 0:       # still live: the band runs to the end of the trace
            pts = pts + [t_end]
        a = allocs[i]
        blocks.append({"p": pts, "bytes": a[2], "kind": a[3], "memory": a[11], "pool": a[4], "ptr": a[5],
                       "bt": a[7], "before": a[8]})
    # The band of the small allocations: its bottom (the drawn top) and height, downsampled.
    s_t, cols = _downsample(ot, [[v[0] for v in ov], [v[1] for v in ov]], pick=lambda k: ov[k][0] + ov[k][1])
    return blocks, {"t": s_t, "base": cols[0] if cols else [], "bytes": cols[1] if cols else [],
                    "count": len(allocs) - len(drawn)}


def _derived_segments(allocs, changes, pools, reserved_at):
    """A trace has no segment table: per pool, at the moment its live allocations held the
    most, their address span with the gaps between them (what can be derived; a snapshot
    gives the real segments)."""
    out = []
    for p, addr in enumerate(pools):
        used = peak = 0
        peak_t = None
        for t, is_free, i in changes:
            if allocs[i][4] == p:
                used += -allocs[i][2] if is_free else allocs[i][2]
                if used > peak:
                    peak, peak_t = used, t
        live = [a for a in allocs if a[4] == p and peak_t is not None and a[0] <= peak_t and
                (a[1] is None or a[1] > peak_t) and _is_hex(a[5])]
        mine = sorted((int(a[5], 16), a[2]) for a in live)
        reserved = 0
        for t, q, r in reserved_at:
            if q == p and t <= (peak_t if peak_t is not None else t):
                reserved = r
        if not mine:
            out.append({"pool": p, "base": None, "bytes": 0, "used": [], "reserved": reserved, "derived": 1})
            continue
        base = mine[0][0]
        span = max(s + n for s, n in mine) - base
        out.append({"pool": p, "base": "0x%x" % base, "bytes": span, "reserved": reserved, "derived": 1,
                    "t": peak_t, "peak": peak, "used": [[s - base, n] for s, n in mine]})
    return out


def _is_hex(s):
    try:
        int(s, 16)
        return True
    except (TypeError, ValueError):
        return False


def _check_snapshot(doc, source):
    """The snapshot's fields this program reads, with the trace rules' forms (handles,
    addresses, byte counts); raises VizError naming the field."""
    path = source or "the snapshot"

    def bad(what, why):
        raise VizError("%s: malformed snapshot: %s %s" % (path, what, why))

    def entries(key):
        value = doc.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, dict) for v in value)):
            bad(key, "is not an array of objects")
        return value or []

    def check(obj, what, key, form, required=False):
        value = obj.get(key)
        if value is None and not required:
            return
        if form == "count" and not _is_count(value):
            bad("%s.%s" % (what, key), "is not a byte count: %s" % _COUNT)
        if form == "handle" and not (_hex(value) or 0) > 0:
            bad("%s.%s" % (what, key), "is not %s" % _HANDLE)
        if form == "address" and _hex(value) is None:
            bad("%s.%s" % (what, key), "is not %s" % _ADDRESS)
        if form == "number" and not _is_number(value):
            bad("%s.%s" % (what, key), "is not a number")

    check(doc, "the snapshot", "time_us", "number")
    for i, p in enumerate(entries("pools")):
        what = "pools[%d]" % i
        check(p, what, "pool", "handle", True)
        check(p, what, "reserved", "count")
        check(p, what, "used", "count")
    for i, a in enumerate(entries("allocations")):
        what = "allocations[%d]" % i
        check(a, what, "ptr", "address", True)
        check(a, what, "bytes", "count", True)
        check(a, what, "pool", "handle")
        check(a, what, "time_us", "number")
        frames = a.get("backtrace")
        if frames is not None and not (isinstance(frames, list) and all(isinstance(f, str) for f in frames)):
            bad(what + ".backtrace", "is not an array of strings")
    for i, g in enumerate(entries("segments")):
        what = "segments[%d]" % i
        check(g, what, "pool", "handle", True)
        check(g, what, "bytes", "count", True)
        blocks = g.get("free_blocks")
        if blocks is not None and not (isinstance(blocks, list) and all(isinstance(b, dict) for b in blocks)):
            bad(what + ".free_blocks", "is not an array of objects")
        for k, b in enumerate(blocks or []):
            check(b, "%s.free_blocks[%d]" % (what, k), "offset", "count", True)
            check(b, "%s.free_blocks[%d]" % (what, k), "bytes", "count", True)


def _snapshot_model(doc, source=""):
    _check_snapshot(doc, source)
    pools = [p.get("pool") for p in doc.get("pools") or []]
    pool_index = {a: i for i, a in enumerate(pools)}
    backtraces, bt_index = [], {}
    allocs = []     # the rows of a trace's allocations (seq_alloc -1, seq_free None: no events here)
    block_memory_said = {}
    for a in doc.get("allocations") or []:
        pool = a.get("pool")
        if pool is not None and pool not in pool_index:
            pool_index[pool] = len(pools)
            pools.append(pool)
        bt = -1
        if a.get("backtrace"):
            key = tuple(str(f) for f in a["backtrace"])
            if key not in bt_index:
                bt_index[key] = len(backtraces)
                backtraces.append(list(key))
            bt = bt_index[key]
        allocs.append([float(a.get("time_us") or 0.0), None, int(a.get("bytes") or 0), _kind_index(a.get("kind")),
                       pool_index.get(pool, -1), str(a.get("ptr")), a.get("stream"), bt, 0, -1, None,
                       _memory_index(a.get("memory"))])
        if pool is not None:
            block_memory_said.setdefault(pool_index[pool], a.get("memory"))
    kind_bytes = [0] * len(KINDS)
    memory_bytes = [0] * len(MEMORIES)
    for a in allocs:
        kind_bytes[a[3]] += a[2]
        memory_bytes[a[11]] += a[2]
    segments = []
    for s in doc.get("segments") or []:
        pool = s.get("pool")
        if pool not in pool_index:
            pool_index[pool] = len(pools)
            pools.append(pool)
        holes = [[int(b.get("offset") or 0), int(b.get("bytes") or 0)] for b in s.get("free_blocks") or []]
        segments.append({"pool": pool_index[pool], "base": s.get("base"), "bytes": int(s.get("bytes") or 0),
                         "holes": holes, "derived": 0})
    pool_rows = []
    pool_memory_said = {}
    for p in doc.get("pools") or []:
        pool_memory_said[pool_index[p.get("pool")]] = p.get("memory")
        pool_rows.append({"pool": pool_index[p.get("pool")], "implementation": p.get("implementation"),
                          "memory": p.get("memory"), "reserved": int(p.get("reserved") or 0),
                          "used": int(p.get("used") or 0), "device": p.get("device")})
    live = sorted(allocs, key=lambda a: -a[2])
    return {
        "type": "snapshot",
        "meta": {"version": doc.get("version"), "backend": doc.get("backend"), "time_us": doc.get("time_us"),
                 "devices": [d for d in doc["devices"] if isinstance(d, dict)]
                 if isinstance(doc.get("devices"), list) else [], "live_at_end": len(allocs),
                 "live_bytes_at_end": sum(a[2] for a in allocs)},
        "kinds": KINDS, "kinds_used": [k for k in range(len(KINDS)) if kind_bytes[k]], "kind_bytes": kind_bytes,
        "memories": MEMORIES, "memories_used": [k for k in range(len(MEMORIES)) if memory_bytes[k]],
        "memory_bytes": memory_bytes,
        "pools": pools, "pool_memory": _pool_memories(len(pools), pool_memory_said, block_memory_said),
        "pool_rows": pool_rows, "backtraces": backtraces, "segments": segments,
        "top": [_row(a) for a in live[:TOP_LIVE]],
    }


def build_model(doc, source=""):
    """What the page draws, from a loaded trace or snapshot."""
    model = _snapshot_model(doc, source) if "gpumem_snapshot" in doc else _trace_model(doc, source)
    model["source"] = os.path.basename(source)
    return model


# ---------------------------------------------------------------------------
# The page


# The page's HTML (with its styles) and its script are files of the package, beside this one:
# viz.html, a template with three slots, and viz.js, which fills one of them.  This file also
# runs as the gpumem-viz command a meson install puts in <prefix>/bin (a copy of it), whose
# page files that install puts in <prefix>/share/gpumem.
_PAGE_FILES = ("viz.html", "viz.js")
_SLOT = re.compile(r"\{\{(title|data|script)\}\}")
_page_files = []  # [(html, script)] once read


def _page_dirs():
    """The folders that may hold the page files, in the order they are searched: this file's
    own (the source tree, the package that a wheel or meson installs), also through a link to
    this file; <prefix>/share/gpumem beside the bin folder holding it (the gpumem-viz command of
    a meson install); then the gpumem package Python would import, found without importing it
    (that would load libgpumem, which this program does without).  The package comes last, as
    it may be of another release than this file: it serves a command whose install has its
    data folder elsewhere than <prefix>/share."""
    seen = []
    here = os.path.dirname(os.path.abspath(__file__))
    real = os.path.dirname(os.path.realpath(__file__))
    for d in (here, real, os.path.join(here, os.pardir, "share", "gpumem"),
              os.path.join(real, os.pardir, "share", "gpumem")):
        d = os.path.normpath(d)
        if d not in seen:
            seen.append(d)
            yield d
    try:
        import importlib.util
        spec = importlib.util.find_spec("gpumem")
    except (ImportError, ValueError):  # ValueError: a gpumem module without a spec
        spec = None
    for d in (spec.submodule_search_locations or []) if spec is not None else []:
        d = os.path.normpath(os.path.abspath(d))
        if d not in seen:
            seen.append(d)
            yield d


def _read_page_files():
    """(html, script) from the first of _page_dirs() that holds both files; VizError, naming
    every folder searched, where none does."""
    if _page_files:
        return _page_files[0]
    searched = []
    for d in _page_dirs():
        searched.append(d)
        paths = [os.path.join(d, name) for name in _PAGE_FILES]
        if not all(os.path.isfile(p) for p in paths):
            continue
        texts = []
        for p in paths:
            try:
                with open(p, encoding="utf-8") as f:
                    texts.append(f.read())
            except (OSError, UnicodeError) as e:
                raise VizError("cannot read %s: %s" % (p, getattr(e, "strerror", None) or e)) from None
        _page_files.append(tuple(texts))
        return _page_files[0]
    raise VizError("the page's files %s are missing (gpumem installs them beside viz.py, and in "
                   "<prefix>/share/gpumem for the gpumem-viz command); searched %s"
                   % (" and ".join(_PAGE_FILES), ", ".join(searched)))


def render_html(model):
    """The page, as a string, for a model from build_model().  Raises VizError where the page's
    files (PAGE_FILES) are not found."""
    html, script = _read_page_files()
    data = json.dumps(model, separators=(",", ":"), allow_nan=False)
    # Inside <script>, "</" could end the element early.
    data = data.replace("</", "<\\/")
    title = model.get("source") or model.get("type")
    title = title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    slots = {"title": title, "data": data, "script": script}
    # One pass over the template: what fills a slot (a title, a backtrace) is never read for slots.
    return _SLOT.sub(lambda m: slots[m.group(1)], html)


def write_html(path, out=None):
    """Make the page of a trace or snapshot; ``out`` defaults to ``path`` with ``.html``.
    Returns the page's path.  Raises VizError on a file that is not a gpumem trace or
    snapshot."""
    if out is None:
        out = (path[:-5] if path.endswith(".json") else path) + ".html"
    _read_page_files()  # a missing page file is said before a long trace is read
    page = render_html(build_model(load(path), path))
    try:
        with open(out, "w", encoding="utf-8") as f:
            f.write(page)
    except OSError as e:
        raise VizError("cannot write %s: %s" % (out, e.strerror or e)) from None
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(prog="gpumem-viz",
                                 description="Turn a gpumem trace (GPUMEM_TRACE=file) or snapshot "
                                             "(gpumem_snapshot_write_json) into one self-contained HTML page.")
    ap.add_argument("input", help="the trace or snapshot JSON file")
    ap.add_argument("-o", "--output", help="the HTML file to write (default: INPUT with .html)")
    ap.add_argument("--version", action="version", version="gpumem-viz (gpumem) %s" % __version__)
    a = ap.parse_args(argv)
    try:
        out = write_html(a.input, a.output)
    except VizError as e:
        print("gpumem-viz: %s" % e, file=sys.stderr)
        return 1
    print(out)
    return 0


class _CallableModule(types.ModuleType):
    """``gpumem.viz(path, out=None)`` is the API, and ``gpumem.viz`` is also this module
    (``python -m gpumem.viz``): importing a submodule rebinds the package's attribute to
    it, so the module itself is made callable."""

    def __call__(self, path, out=None):
        return write_html(path, out)


if __name__ != "__main__":
    sys.modules[__name__].__class__ = _CallableModule

if __name__ == "__main__":
    sys.exit(main())
