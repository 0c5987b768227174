"""What gpumem knows of memory: pointer_info of an address, the process's counters (stats), the
trace callback, kind names, and snapshots of every live allocation and pool segment.

SPDX-License-Identifier: MIT
"""
import ctypes
import dataclasses

from . import _entry, _lib
from ._errors import _check
from ._lib import KIND_COUNT, KIND_NAMES, TRACE_ALLOC, init_struct, lib
from ._views import _addr


@dataclasses.dataclass(frozen=True)
class PointerInfo:
    kind: str
    kind_code: int
    device: int
    base: int
    alloc_size: int
    emulated: bool
    flags: int
    pool: int
    device_pointer: int
    memory: int = -1  # POOL_MEMORY_*: where the bytes live (POOL_MEMORY_UNKNOWN: not gpumem's) (0.2)
    # True for memory gpumem did not make that the runtime knows (cudaMalloc'ed by a framework...):
    # kind stays "unknown" and memory, device, base and alloc_size are the runtime's answer (0.5).
    vendor_known: bool = False


def pointer_info(ptr):
    """What gpumem knows of an address (interior pointers too; kind "unknown" otherwise)."""
    s = init_struct(_lib.PointerInfo)
    _check(lib.gpumem_pointer_get_info(_addr(ptr), ctypes.byref(s)))
    return PointerInfo(kind=KIND_NAMES[s.kind] if 0 <= s.kind < len(KIND_NAMES) else str(s.kind),
                       kind_code=s.kind, device=s.device, base=s.base or 0, alloc_size=s.alloc_size,
                       emulated=bool(s.emulated), flags=s.flags, pool=s.pool or 0,
                       device_pointer=s.device_pointer or 0, memory=s.memory,
                       vendor_known=bool(s.vendor_known))


@dataclasses.dataclass(frozen=True)
class Stats:
    """Process-wide counters; each dict is keyed by kind name ("device", "stream_ordered", ...)."""
    current_bytes: dict
    peak_bytes: dict
    alloc_count: dict
    free_count: dict
    fallback_count: int

    @property
    def total_alloc_count(self):
        """Allocations of every kind."""
        return sum(self.alloc_count.values())

    @property
    def total_free_count(self):
        """Frees of every kind."""
        return sum(self.free_count.values())


def stats():
    """Process-wide allocation counters as a Stats (gpumem_get_stats)."""
    s = init_struct(_lib.Stats)
    _check(lib.gpumem_get_stats(ctypes.byref(s)))

    def d(arr):
        return {KIND_NAMES[i]: int(arr[i]) for i in range(KIND_COUNT)}
    return Stats(d(s.current_bytes), d(s.peak_bytes), d(s.alloc_count), d(s.free_count),
                 int(s.fallback_count))


def reset_peak_stats():
    """Reset every peak counter to its current value (gpumem_reset_peak_stats)."""
    _check(lib.gpumem_reset_peak_stats())


@dataclasses.dataclass(frozen=True)
class TraceRecord:
    op: str  # "alloc" or "free"
    kind: str
    ptr: int
    bytes: int
    device: int
    emulated: bool
    stream: int
    pool: int


_trace_keep = [None]


def set_trace_callback(fn):
    """Call fn(TraceRecord) on every allocation and free (None removes it).  fn runs on the
    allocating thread and must not call gpumem.  An exception fn raises cannot cross the C
    library: it is kept, and raised by the gpumem call during which it happened once that call
    is done (or, for one raised outside a call of this package, by the next gpumem call)."""
    if fn is not None and not callable(fn):
        raise TypeError("set_trace_callback(): fn must be callable (it gets a gpumem.TraceRecord) or None, "
                        "not %s" % type(fn).__name__)
    if fn is None:
        _check(lib.gpumem_set_trace_callback(ctypes.cast(None, _lib.TRACE_FN), None))
        _trace_keep[0] = None
        return

    def cb(ev, _user):
        try:
            e = ev.contents
            fn(TraceRecord("alloc" if e.op == TRACE_ALLOC else "free",
                           KIND_NAMES[e.kind] if 0 <= e.kind < len(KIND_NAMES) else str(e.kind),
                           e.ptr or 0, e.bytes, e.device, bool(e.emulated), e.stream or 0, e.pool or 0))
        except BaseException as exc:  # noqa: BLE001  (ctypes would print and drop it)
            _entry.keep(exc, "the trace callback %r" % (fn,))
    c = _lib.TRACE_FN(cb)
    _check(lib.gpumem_set_trace_callback(c, None))
    _trace_keep[0] = c


def kind_name(kind):
    """The name of a GPUMEM_KIND_* value as traces and snapshots write it (gpumem_kind_name)."""
    return lib.gpumem_kind_name(int(kind)).decode()


def snapshot():
    """Every live allocation and every segment of gpumem's own pools, now, as the dict of
    gpumem_snapshot_write_json's JSON (docs/semantics.md, "Snapshots"): keys "devices",
    "pools", "allocations" (sorted by address; "ptr" as "0x..." strings) and "segments"
    (each with its "free_blocks")."""
    import json
    import os
    import tempfile
    snap = ctypes.c_void_p()
    _check(lib.gpumem_snapshot_take(ctypes.byref(snap)))
    try:
        fd, path = tempfile.mkstemp(prefix="gpumem-snapshot-", suffix=".json")
        os.close(fd)
        try:
            _check(lib.gpumem_snapshot_write_json(snap, os.fsencode(path)))
            with open(path, "rb") as f:
                return json.loads(f.read().decode("utf-8"))
        finally:
            os.unlink(path)
    finally:
        _check(lib.gpumem_snapshot_release(snap))
