#!/usr/bin/env python3
"""libhipovercuda as gpumem's HIP backend sees it.

    check_runtime.py --library LIB --symbols hip_symbols.def [--info gpumem-info]

1. Every entry point of hip_symbols.def is a defined, unmangled (C linkage) dynamic symbol of
   LIB, and LIB exports nothing but hip* names.
2. With --info: `GPUMEM_BACKEND=hip GPUMEM_HIP_LIBRARY=LIB gpumem-info` either works (a GPU:
   its output names the hip backend) or fails cleanly, as on a machine without a GPU or
   without libcuda.so.1: a non-zero exit (not a signal) with a message that says why.
Exit 0 when both hold, 1 otherwise.
"""
import argparse
import os
import re
import subprocess
import sys


def entry_points(def_file):
    names = []
    with open(def_file) as f:
        for line in f:
            m = re.match(r"\s*GPUMEM_HIP_(?:REQUIRED|OPTIONAL)\((\w+)", line)
            if m:
                names.append(m.group(1))
    return names


def exported(library):
    out = subprocess.run(["nm", "-D", "--defined-only", library], check=True, capture_output=True, text=True).stdout
    return {parts[2] for parts in (line.split() for line in out.splitlines()) if len(parts) == 3 and parts[1] in "TWi"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--library", required=True)
    ap.add_argument("--symbols", required=True)
    ap.add_argument("--info")
    args = ap.parse_args()
    ok = True

    names = entry_points(args.symbols)
    have = exported(args.library)
    missing = [n for n in names if n not in have]
    foreign = sorted(s for s in have if not s.startswith("hip") and not s.startswith("_init") and s != "_fini")
    print(f"{len(names)} entry points in {os.path.basename(args.symbols)}, {len(have)} exported by "
          f"{os.path.basename(args.library)}")
    if missing:
        ok = False
        print("not exported (or not with C linkage): " + ", ".join(missing))
    if foreign:
        ok = False
        print("exported but not HIP: " + ", ".join(foreign[:20]))

    if args.info:
        env = dict(os.environ, GPUMEM_BACKEND="hip", GPUMEM_HIP_LIBRARY=os.path.abspath(args.library),
                   GPUMEM_LOG="info")
        run = subprocess.run([args.info], env=env, capture_output=True, text=True, timeout=50)
        text = (run.stdout + run.stderr).strip()
        print(f"gpumem-info on the hip backend over {os.path.basename(args.library)}: exit {run.returncode}")
        print("\n".join("  | " + line for line in text.splitlines()[:25]))
        if run.returncode < 0:
            ok = False
            print(f"gpumem-info died of signal {-run.returncode}")
        elif run.returncode == 0:
            if "hip" not in text.lower():
                ok = False
                print("gpumem-info succeeded but does not name the hip backend")
        elif not re.search(r"hip backend is unavailable|GPUMEM_ERROR_(BACKEND_UNAVAILABLE|NO_DEVICE)", text):
            ok = False
            print("gpumem-info failed without saying that the hip backend is unavailable")
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
