#!/usr/bin/env python3
"""Run one HIP reference trio and check that it agrees.

    compare.py --name NAME --reference EXE --translation EXE --library LIBHIPOVERCUDA [--log FILE]

The trio: the HIP program EXE (HIP's NVIDIA platform, no gpumem), its gpumem translation with
GPUMEM_BACKEND=cuda, and the translation with GPUMEM_BACKEND=hip over libhipovercuda.  Each
line "key = value" is a value the guide defines: all three must print the same keys with the
same values.  Lines starting "info:" are shown, never compared.

Exit status: 0 when the three agree, 1 when a run fails or a value differs, 77 (skipped) when
the machine has no NVIDIA GPU (/dev/nvidiactl absent) or every run says "not available here".
"""
import argparse
import os
import re
import subprocess
import sys

LINE = re.compile(r"^([A-Za-z_][\w\[\]\-]*) = (.*)$")


def run(label, cmd, env, timeout):
    full_env = dict(os.environ)
    for key in ("GPUMEM_BACKEND", "GPUMEM_HIP_LIBRARY", "GPUMEM_DISABLE", "GPUMEM_FALLBACK"):
        full_env.pop(key, None)
    full_env.update(env)
    try:
        p = subprocess.run(cmd, env=full_env, capture_output=True, text=True, timeout=timeout)
        rc, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out = 124, (e.stdout or b"").decode(errors="replace") + f"\n(timed out after {timeout} s)"
    values = {}
    for line in out.splitlines():
        m = LINE.match(line.strip())
        if m:
            values[m.group(1)] = m.group(2).strip()
    return {"label": label, "rc": rc, "out": out, "values": values}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("--reference", required=True)
    ap.add_argument("--translation", required=True)
    ap.add_argument("--library", required=True)
    ap.add_argument("--log", help="append every run's whole output here")
    ap.add_argument("--timeout", type=int, default=60)
    args = ap.parse_args()

    if not os.path.exists("/dev/nvidiactl"):
        print(f"{args.name}: skipped: no NVIDIA GPU here (/dev/nvidiactl absent)")
        return 77

    runs = [
        run("hip", [args.reference], {}, args.timeout),
        run("gpumem-cuda", [args.translation], {"GPUMEM_BACKEND": "cuda"}, args.timeout),
        run("gpumem-hip", [args.translation],
            {"GPUMEM_BACKEND": "hip", "GPUMEM_HIP_LIBRARY": os.path.abspath(args.library)}, args.timeout),
    ]
    if args.log:
        with open(args.log, "a") as log:
            for r in runs:
                log.write(f"== {args.name} {r['label']}: exit {r['rc']}\n{r['out']}\n")

    if all(r["rc"] == 77 for r in runs):
        print(f"{args.name}: skipped: every run says a feature is not available here")
        return 77
    ok = True
    for r in runs:
        if r["rc"] != 0:
            ok = False
            first = [l for l in r["out"].splitlines() if l.strip()][:3]
            print(f"{args.name}: {r['label']} exited {r['rc']}: " + " | ".join(first))
    keys = []
    for r in runs:
        keys += [k for k in r["values"] if k not in keys]
    width = max([len(k) for k in keys] + [4])
    print(f"{args.name}: {'value':<{width}}  {'hip':>18} {'gpumem-cuda':>18} {'gpumem-hip':>18}")
    for k in keys:
        cells = [r["values"].get(k, "(missing)") for r in runs]
        same = len(set(cells)) == 1
        ok = ok and same
        print(f"{args.name}: {k:<{width}}  {cells[0]:>18} {cells[1]:>18} {cells[2]:>18}{'' if same else '   DIFFERS'}")
    if not keys:
        ok = False
        print(f"{args.name}: no values printed")
    for r in runs:
        for line in r["out"].splitlines():
            if line.startswith("info:"):
                print(f"{args.name}: {r['label']}: {line}")
    print(f"{args.name}: {'AGREE' if ok else 'DISAGREE'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
