"""Reading tools/device/driver-profile.c's reports in the framework benchmarks.

A benchmark child whose CUDA driver is driver-profile.c (GPUMEM_CUDA_LIBRARY) calls mark("steady")
when its steady state starts and mark("end") when its timed loop ends; the report then gives the
loop's driver calls without the set-up's and the exit's (pool teardown included), and per_step
divides them by the loop's steps.  Attribution, not figures: each call also pays two clock reads.
"""
import ctypes
import os

VMM_CALLS = ["cuMemCreate", "cuMemRelease", "cuMemMap", "cuMemUnmap", "cuMemSetAccess"]


def mark(tag):
    """Write the counts so far under `tag`, when this process's driver is driver-profile.c."""
    lib = os.environ.get("DRIVER_PROFILE_OUT") and os.environ.get("GPUMEM_CUDA_LIBRARY")
    if not lib:
        return
    try:
        ctypes.CDLL(lib).driver_profile_mark(tag.encode())
    except (OSError, AttributeError):
        pass  # not driver-profile.c after all: nothing to mark


def read(path):
    """{tag: {function: (calls, total ns)}}; the exit's report under the tag "exit"."""
    out = {}
    try:
        with open(path, errors="replace") as f:
            for ln in f:
                parts = ln.split()
                if len(parts) != 5 or not parts[0].startswith("driver-profile") or not parts[2].isdigit():
                    continue
                head = parts[0].rstrip(":")
                tag = head.split("@", 1)[1] if "@" in head else "exit"
                out.setdefault(tag, {})[parts[1]] = (int(parts[2]), int(parts[3]))
    except OSError:
        pass
    return out


def per_step(report, steps):
    """{function: (calls per step, mean us)} between the marks "steady" and "end", or None."""
    a, b = report.get("steady"), report.get("end")
    if a is None or b is None or steps <= 0:
        return None
    rows = {}
    for f in VMM_CALLS:
        n = b.get(f, (0, 0))[0] - a.get(f, (0, 0))[0]
        ns = b.get(f, (0, 0))[1] - a.get(f, (0, 0))[1]
        rows[f] = (n / steps, ns / n / 1e3 if n else 0.0)
    return rows


def cells(report, steps):
    """The table cells of one child: per step in the steady state when it marked one, else the
    whole run's counts."""
    steady = per_step(report, steps)
    if steady is not None:
        return ["%.2f/step (%.0f us)" % steady[f] if steady[f][0] else "0" for f in VMM_CALLS]
    whole = report.get("exit", {})
    return ["%d in all (%.0f us)" % (whole[f][0], whole[f][1] / whole[f][0] / 1e3) if f in whole and whole[f][0]
            else "0" for f in VMM_CALLS]
