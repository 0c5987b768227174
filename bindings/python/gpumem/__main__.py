"""``python -m gpumem``: what gpumem-info prints, from the library this package loaded.

Runs the gpumem-info installed (or built) next to that library when there is one, so the
output is the tool's own; otherwise prints the same report through the bindings.
Arguments (``--json``) are passed on.

SPDX-License-Identifier: MIT
"""
import os
import shutil
import subprocess
import sys


def _tool(libpath):
    """gpumem-info beside the library: <prefix>/bin for <prefix>/lib[/<triplet>], a build
    tree's tools/, or the bundled copy in a wheel; then PATH."""
    libdir = os.path.dirname(libpath)
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.path.join(libdir, "..", "bin"), os.path.join(libdir, "..", "..", "bin"),
                 os.path.join(libdir, "..", "tools"), os.path.join(here, "bin"),
                 os.path.join(sys.prefix, "bin")):
        exe = os.path.join(cand, "gpumem-info")
        if os.path.isfile(exe) and os.access(exe, os.X_OK):
            return os.path.normpath(exe)
    return shutil.which("gpumem-info")


def _fallback():
    """The same facts as gpumem-info, through the bindings (no tool found)."""
    import gpumem
    print("gpumem %d.%d.%d (%s)" % (gpumem.version() + (gpumem.LIBRARY_PATH,)))
    print("backend: %s" % gpumem.backend())
    levels = {0: "none", 1: "emulated", 2: "native"}
    for dev in range(gpumem.device_count()):
        i = gpumem.device_info(dev)
        print("device %d: %s, %d MiB" % (dev, i.name, i.total_memory >> 20))
        for f in ("managed_memory", "memory_pools", "virtual_memory", "host_register"):
            print("  %-16s %s" % (f, levels.get(getattr(i, f), getattr(i, f))))
    for var in ("GPUMEM_BACKEND", "GPUMEM_DISABLE", "GPUMEM_FALLBACK", "GPUMEM_LOG"):
        print("%s=%s" % (var, os.environ.get(var, "(unset)")))
    return 0


def main(argv=None):
    """Print gpumem-info's report (the tool's own output where the tool is found)."""
    argv = sys.argv[1:] if argv is None else argv
    from gpumem import _lib
    exe = _tool(_lib.LIBRARY_PATH)
    if exe:
        env = dict(os.environ, GPUMEM_LIBRARY=_lib.LIBRARY_PATH)
        sys.stdout.write("library: %s\n" % _lib.LIBRARY_PATH)
        sys.stdout.flush()
        return subprocess.call([exe] + list(argv), env=env)
    if argv:
        print("gpumem-info not found: %s is not available without it" % " ".join(argv), file=sys.stderr)
        return 2
    return _fallback()


if __name__ == "__main__":
    sys.exit(main())
