"""``gpumem.memory_summary()`` and ``gpumem.empty_cache()``: the process's memory as text, and
the pools' cached memory given back.  Both are made of the C API's statistics
(gpumem_get_stats), snapshot (gpumem_snapshot_take) and pool calls; docs/python.md says what
each shows and does.

SPDX-License-Identifier: MIT
"""
from . import _lib
from ._debug import snapshot, stats
from ._devices import device_count, device_synchronize, get_device, set_device, version
from ._errors import GpumemError
from ._lib import LIBRARY_PATH, lib


def _bytes(n):
    """n bytes for people: "512 B", "1.5 MiB"."""
    n = int(n)
    if n < 1024:
        return "%d B" % n
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        n /= 1024.0
        if n < 1024 or unit == "TiB":
            return "%.1f %s" % (n, unit)
    return "%d B" % n  # not reached


def memory_summary():
    """A readable account of gpumem's memory in this process, as a str: the backend and the
    library; each device's free and total memory; per kind of memory the bytes live now and at
    their peak, and the allocations and frees so far (gpumem_get_stats; kinds never used are
    left out); each pool with what it holds from the driver (reserved) and has handed out
    (used), and for gpumem's own pools their segments and largest free block; the live
    allocations (gpumem_snapshot_take).  For programs, read ``gpumem.stats()`` and
    ``gpumem.snapshot()``: this text may change between versions."""
    st = stats()
    snap = snapshot()
    lines = ["gpumem memory summary: backend %s, libgpumem %s (%s)"
             % (snap.get("backend"), ".".join(map(str, version())), LIBRARY_PATH)]
    for d in snap.get("devices", []):
        lines.append("device %d (%s): %s free of %s" % (d["device"], d["name"], _bytes(d["free"]),
                                                        _bytes(d["total"])))
    lines.append("")
    lines.append("%-16s %12s %12s %12s %12s" % ("kind", "current", "peak", "allocations", "frees"))
    used = [k for k in _lib.KIND_NAMES if st.alloc_count[k] or st.current_bytes[k] or st.peak_bytes[k]]
    for k in used:
        lines.append("%-16s %12s %12s %12d %12d" % (k, _bytes(st.current_bytes[k]), _bytes(st.peak_bytes[k]),
                                                    st.alloc_count[k], st.free_count[k]))
    if not used:
        lines.append("(nothing allocated yet)")
    lines.append("%-16s %12s %12s %12d %12d" % ("total", _bytes(sum(st.current_bytes.values())), "",
                                                st.total_alloc_count, st.total_free_count))
    lines.append("fallbacks (features gpumem emulated): %d" % st.fallback_count)
    lines.append("")
    segments = {}
    for seg in snap.get("segments", []):
        s = segments.setdefault(seg["pool"], [0, 0])
        s[0] += 1
        s[1] = max([s[1]] + [b["bytes"] for b in seg.get("free_blocks", [])])
    pools = snap.get("pools", [])
    lines.append("pools: %d (reserved: held from the driver; used: handed out)" % len(pools))
    for p in pools:
        line = "  %s device %d, %s, %s memory: reserved %s, used %s" % (
            p["pool"], p["device"], p["implementation"], p["memory"], _bytes(p["reserved"]), _bytes(p["used"]))
        if p["pool"] in segments:
            count, largest = segments[p["pool"]]
            line += "; %d segment%s, largest free block %s" % (count, "" if count == 1 else "s", _bytes(largest))
        lines.append(line)
    allocations = snap.get("allocations", [])
    total = sum(a["bytes"] for a in allocations)
    lines.append("live allocations: %d, %s%s" % (
        len(allocations), _bytes(total),
        ", largest %s" % _bytes(max(a["bytes"] for a in allocations)) if allocations else ""))
    return "\n".join(lines) + "\n"


def empty_cache():
    """Give back to the driver the memory gpumem's pools hold but have not handed out, as
    ``torch.cuda.empty_cache()`` does for PyTorch's allocator; returns the bytes given back.

    It waits for each device (gpumem_device_synchronize, so that frees still pending on a
    stream are done), then trims every live pool of the process to what it uses
    (gpumem_pool_trim_to(pool, 0): the default and current pools, pools made with
    ``gpumem.Pool``, those of pinned and managed memory).  Live allocations are untouched.
    Not released: the pinned cache (``GPUMEM_PINNED_CACHE``, freed pinned blocks kept for the
    next ``host_alloc`` of the same size), which the C API has no call to empty; gpumem empties
    it itself when pinned memory runs out, and at ``gpumem.finalize()``."""

    def reserved():
        return {p["pool"]: p["reserved"] for p in snapshot().get("pools", [])}
    current = get_device()
    try:
        for d in range(device_count()):
            set_device(d)
            device_synchronize()
    finally:
        set_device(current)
    before = reserved()
    for handle in before:
        st = lib.gpumem_pool_trim_to(int(handle, 16), 0)
        # Destroyed by another thread since the snapshot: nothing to give back.
        if st not in (_lib.SUCCESS, _lib.ERROR_INVALID_HANDLE):
            raise GpumemError(st)
    after = reserved()
    return sum(max(0, n - after.get(pool, 0)) for pool, n in before.items())
