#!/usr/bin/env bash
# gpumem's speed against the frameworks' own allocators and the driver's thin
# calls, the figures docs/benchmarks.md tables, step by step:
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
#   cupy-il  bench-frameworks.py --only cupy-interleaved --cupy-interleaved 15: one process,
#            the allocators taking turns block by block, run twice
#   torch    bench-frameworks.py --only torch --repeats 2, with the pluggable ceiling
#   profile  the CuPy loop (12,000 iterations) through the hook on gpumem's own pool,
#            paged and unpaged, and on the driver's pool, each under driver-profile.c:
#            every driver call gpumem made, counted and timed (attribution, not figures)
#   frag     gpumem-bench-pool --parts c --runs 3 --cap-mib 1024 (RMM's random
#            allocations on the own pool: reserved over used)
#   lazy     cuda_probe's lazy group (a device whose context nobody started) from the
#            driver and from the fake, and their difference
#   ddp      bench-ddp.py --repeats 2 --steps 30: on 4 GPUs as it is, on 4 GPUs with
#            --one-gpu-per-rank, and on 2 GPUs (needs that many GPUs)
#   decommit when the own pool gives memory back, GPUMEM_POOL_PAGED=1: the
#            variable-shape DDP run on 2 GPUs (bench-ddp.py --vocab 16384 --seq-min 16
#            --steps 45), two rounds for the figures, then once under driver-profile.c, whose
#            marks give the VMM calls per step of the last two thirds (the steady state);
#            then the one-GPU training benchmark (bench-frameworks.py --only torch, variable
#            shapes) the same way, at 120 steps.  Needs 2 GPUs.
#   train    the one-GPU part of decommit, at 180 steps: two rounds of the caching
#            allocator, the driver pool and the own pool, then the own pool profiled.
# BUILD_DIR is configured (release) and built first when it has no build.ninja.
# Times on an H100: thin 2-4 min (with BEFORE_SRC, its build too), python 1 min,
# cupy 3 min, cupy-nb 1.5 min, cupy-il 2 min, torch 2 min, profile 1.5 min, frag 1 min, lazy 10 s,
# ddp 4 min, decommit 6-7 min, train 3-4 min (H200); each step has its own timeout.
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
step cupy-il 300 "$frameworks --only cupy-interleaved --cupy-interleaved 15 && $frameworks --only cupy-interleaved --cupy-interleaved 15"
step torch 300 "$frameworks --only torch --torch-configs torch-caching,gpumem-native,gpumem-own,pluggable-ceiling"
# profile_cupy CONFIG [ENV...]: one CuPy child under the profiling driver.
profile_cupy() {
    local config=$1
    shift
    echo "-- $config $*"
    env "$@" GPUMEM_LIBRARY="$build/src/libgpumem.so" GPUMEM_BACKEND=cuda \
        GPUMEM_CUDA_LIBRARY="$out/libdriverprofile.so" PYTHONPATH="$root/bindings/python" \
        python3 tools/bench/bench-frameworks.py --child cupy "$config" 12000 1 2>&1 | grep -v '^$'
}
export -f profile_cupy
export root
step profile 240 'cc -O2 -shared -fPIC -o "$out/libdriverprofile.so" tools/device/driver-profile.c -ldl &&
    profile_cupy gpumem-hook-own && profile_cupy gpumem-hook-own GPUMEM_POOL_PAGED=0 && profile_cupy gpumem-hook;
    rc=$?; rm -f "$out/libdriverprofile.so"; exit $rc'
step frag 240 '"$build/tools/gpumem-bench-pool" --parts c --runs 3 --cap-mib 1024'
step lazy 60 'libcuda=$(ldconfig -p | awk "/libcuda.so.1 /{print \$NF; exit}"); n=$(nvidia-smi -L | wc -l);
    "$build/tests/fakes/cuda_probe" "$libcuda" lazy >"$out/lazy-driver.txt" &&
    FAKE_CUDA_DEVICES=$n "$build/tests/fakes/cuda_probe" "$build/tests/fakes/libfakecuda.so" lazy >"$out/lazy-fake.txt";
    cat "$out/lazy-driver.txt"; echo "-- fake vs driver:"; diff "$out/lazy-driver.txt" "$out/lazy-fake.txt" && echo same;
    rc=$?; rm -f "$out/lazy-driver.txt" "$out/lazy-fake.txt"; exit $rc'
ddp='NCCL_NVLS_ENABLE=0 python3 tools/bench/bench-ddp.py "$build" --repeats 2 --steps 30 --timeout 80'
step ddp 420 "$ddp --gpus 4 && $ddp --gpus 4 --one-gpu-per-rank && $ddp --gpus 2"
step decommit 560 'export GPUMEM_POOL_PAGED=1 NCCL_NVLS_ENABLE=0;
    cc -O2 -shared -fPIC -o "$out/libdriverprofile.so" tools/device/driver-profile.c -ldl || exit 1;
    ddp="python3 tools/bench/bench-ddp.py $build --gpus 2 --steps 45 --vocab 16384 --seq-min 16 --timeout 100";
    train="python3 tools/bench/bench-frameworks.py $build --only torch --torch-configs torch-caching,gpumem-native,gpumem-own";
    rc=0;
    prof="--repeats 1 --driver-profile $out/libdriverprofile.so";
    $ddp --repeats 2 || rc=1;
    $ddp --configs gpumem-native,gpumem-own $prof || rc=1;
    $train --repeats 2 || rc=1;
    $train --torch-configs torch-caching,gpumem-own $prof || rc=1;
    rm -f "$out/libdriverprofile.so"; exit $rc'
step train 400 'export GPUMEM_POOL_PAGED=1;
    cc -O2 -shared -fPIC -o "$out/libdriverprofile.so" tools/device/driver-profile.c -ldl || exit 1;
    train="python3 tools/bench/bench-frameworks.py $build --only torch --steps 180";
    rc=0;
    $train --torch-configs torch-caching,gpumem-native,gpumem-own --repeats 2 || rc=1;
    $train --torch-configs torch-caching,gpumem-own --repeats 1 --driver-profile $out/libdriverprofile.so || rc=1;
    rm -f "$out/libdriverprofile.so"; exit $rc'
exit $status
