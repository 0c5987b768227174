#!/usr/bin/env bash
# gpumem's speed against the frameworks' own allocators and the driver's thin
# calls on one GPU, the figures docs/benchmarks.md tables, step by step:
#
#   tools/device/speed-frameworks.sh BUILD_DIR OUT_DIR STEP[,STEP...]
#
# Steps (each writes OUT_DIR/STEP.txt):
#   thin     gpumem-bench-gpu --parts h twice; with BEFORE_SRC set (an older source
#            tree carried to the machine), device-compare.sh BEFORE_SRC 2 instead
#            (before and after, alternating)
#   python   tools/device/gpu-python.sh: the hooks give the right answers (CuPy on the
#            default stream, a non-blocking stream and in a captured graph; PyTorch)
#   cupy     bench-frameworks.py --only cupy --repeats 2, run twice
#   cupy-nb  the same once, the CuPy work on a non-blocking stream
#   torch    bench-frameworks.py --only torch --repeats 2, with the pluggable ceiling
# BUILD_DIR is configured (release) and built first when it has no build.ninja.
# Times on an H100: thin 2-4 min (with BEFORE_SRC, its build too), python 1 min,
# cupy 3 min, cupy-nb 1.5 min, torch 2 min; each step has its own timeout.
# Exit status: 0 when every step ran and exited 0.
#
# SPDX-License-Identifier: MIT
set -uo pipefail

if [ $# -ne 3 ]; then
    echo "usage: $0 BUILD_DIR OUT_DIR STEP[,STEP...]" >&2
    exit 2
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$1
mkdir -p "$2" && out=$(cd "$2" && pwd) || exit 2
steps=",$3,"
command -v nvcc >/dev/null || export PATH=$PATH:/usr/local/cuda/bin
cd "$root" || exit 2
if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" -Dbuildtype=release >"$out/build.log" 2>&1 || { tail -n 30 "$out/build.log"; exit 1; }
fi
ninja -C "$build" >>"$out/build.log" 2>&1 || { tail -n 30 "$out/build.log"; exit 1; }
build=$(cd "$build" && pwd)
export BEFORE_SRC=${BEFORE_SRC:-}

status=0
export out build
step() { # NAME TIMEOUT_S SHELL_COMMAND
    local name=$1 limit=$2 cmd=$3
    case $steps in *",$name,"*) ;; *) return 0 ;; esac
    local t0=$SECONDS
    echo "== $name: $cmd" | tee "$out/$name.txt"
    timeout "$limit" bash -c "$cmd" >>"$out/$name.txt" 2>&1
    local rc=$?
    echo "== $name: exit $rc after $((SECONDS - t0)) s" | tee -a "$out/$name.txt"
    [ $rc -eq 0 ] || status=1
}
if [ -n "${BEFORE_SRC:-}" ]; then
    step thin 420 'OUT=$out BENCH_GPU_PARTS=h tools/device/device-compare.sh "$BEFORE_SRC" 2 >/dev/null; cat "$out/compare.txt"'
else
    step thin 300 '"$build/tools/gpumem-bench-gpu" --parts h && "$build/tools/gpumem-bench-gpu" --parts h'
fi
step python 150 'tools/device/gpu-python.sh "$build" "$out/python"; rc=$?; cat "$out/python/python-gpu.txt"; exit $rc'
frameworks='python3 tools/bench/bench-frameworks.py "$build" --repeats 2'
step cupy 300 "$frameworks --only cupy && $frameworks --only cupy"
step cupy-nb 200 "$frameworks --only cupy --cupy-stream nonblocking"
step torch 300 "$frameworks --only torch --torch-configs torch-caching,gpumem-native,gpumem-own,pluggable-ceiling"
exit $status
