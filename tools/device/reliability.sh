#!/usr/bin/env bash
# Issue-36 reliability on a real GPU, in one go (BUILD_DIR built with the fakes and cuda_probe):
#   probe   tests/fakes/cuda_probe groups unknown (host memory nobody knows, in each copy and
#           fill entry point, each in its own process) and fault (a kernel reads 0x10: what
#           every call says afterwards), from the real driver and from the fake; the two side
#           by side, and the real answers as probe/ records them (probe.txt)
#   fuzz    tools/device/gpu-fuzz.sh (fuzz.txt)
#   thin    gpumem-bench-gpu --parts h: the thin paths, pageable 4 KiB copies among them, with
#           ratios against the driver in the same run (thin.txt)
#   hip     the bad-pointer, batch, fault, pressure, dma-buf, RDMA-pool and OOM-report tests on the hip backend over
#           libhipovercuda (HIP_OVER_CUDA_LIB; hip.txt)
#
#   tools/device/reliability.sh BUILD_DIR OUT_DIR [probe,fuzz,thin,hip]
#
# HIP_OVER_CUDA_LIB (the fuzz and hip parts): libhipovercuda.so of a build with -Dhip=enabled
# -Dhip_test_runtime=enabled; without it the hip backend is left out.
#
# SPDX-License-Identifier: MIT
export NCCL_NVLS_ENABLE=0
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BUILD_DIR OUT_DIR [probe,fuzz,thin]" >&2; exit 2; }
build=$1
out=$2
parts=,${3:-probe,fuzz,thin},
mkdir -p "$out"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
status=0
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
tree=${GPUMEM_TREE:-$(git -C "$here/../.." rev-parse --short HEAD 2>/dev/null)}
if [[ $parts == *,probe,* ]]; then
    probe=$build/tests/fakes/cuda_probe
    fake=$build/tests/fakes/libfakecuda.so
    {
        for group in unknown fault; do
            echo "# cuda_probe $group, real driver: $(date -u '+%Y-%m-%d %H:%M UTC'), $gpu, driver $driver, tree of $tree"
            echo "# command: $probe libcuda.so.1 $group"
            timeout 120 "$probe" libcuda.so.1 "$group" >"$out/real-$group.txt" 2>&1
            cat "$out/real-$group.txt"
            timeout 60 "$probe" "$fake" "$group" >"$out/fake-$group.txt" 2>&1
            if diff -q "$out/real-$group.txt" "$out/fake-$group.txt" >/dev/null; then
                echo "# the fake gave the same answers"
            else
                echo "# the fake differs:"
                diff "$out/real-$group.txt" "$out/fake-$group.txt" | sed 's/^/# /'
                status=1
            fi
            rm -f "$out/real-$group.txt" "$out/fake-$group.txt"
        done
    } >"$out/probe.txt" 2>&1
    cat "$out/probe.txt"
fi
if [[ $parts == *,fuzz,* ]]; then
    "$here/gpu-fuzz.sh" "$build" "$out" || status=1
fi
if [[ $parts == *,thin,* ]]; then
    GPUMEM_BACKEND=cuda timeout 200 "$build/tools/gpumem-bench-gpu" --parts h >"$out/thin.txt" 2>&1 || status=1
    cat "$out/thin.txt"
fi
if [[ $parts == *,hip,* ]]; then
    if [ -n "${HIP_OVER_CUDA_LIB:-}" ] && [ -f "$HIP_OVER_CUDA_LIB" ]; then
        for t in tests/test_memory tests/test_batch tests/test_device_fault tests/test_pressure tests/gpu/pressure_test \
                 tests/test_dmabuf tests/test_pool_rdma tests/test_oom_report; do
            echo "== hip over CUDA: $t"
            GPUMEM_BACKEND=hip GPUMEM_HIP_LIBRARY=$HIP_OVER_CUDA_LIB timeout 120 "$build/$t"
            rc=$?
            echo "== $t: exit $rc"
            [ $rc -eq 0 ] || [ $rc -eq 77 ] || status=1
        done >"$out/hip.txt" 2>&1
        grep -E '^== .*exit|FAIL' "$out/hip.txt"
    else
        echo "hip: no HIP_OVER_CUDA_LIB" | tee "$out/hip.txt"
    fi
fi
exit $status
