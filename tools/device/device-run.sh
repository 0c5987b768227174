#!/usr/bin/env bash
# Everything gpumem measures on the lent GPU machine, in one go (few calls,
# little device time): build, the test suites, and the benchmarks.  Output
# goes to $OUT (or ./device-out) as log files; docs/ records what they say.
#
#   tools/device/device-run.sh [host-bench] [gpu] [python] [paging]   (default: the first three)
#
# paging: RMM's random_allocations on gpumem's own pool of device memory at three
# live-byte caps, paged (the default) and with GPUMEM_POOL_PAGED=0, in one process each.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-$PWD/device-out}
mkdir -p "$out"
parts=${*:-host-bench gpu python}

{
    echo "date:   $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "host:   $(uname -srm), $(nproc) CPUs"
    grep -m1 'model name' /proc/cpuinfo || true
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    command -v nvcc >/dev/null && nvcc --version | tail -n 2
} 2>&1 | tee "$out/machine.txt"

# meson finds nvcc only through PATH.
command -v nvcc >/dev/null || export PATH=$PATH:/usr/local/cuda/bin
meson setup build-device -Dbuildtype=release >"$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
ninja -C build-device >>"$out/build.log" 2>&1 || { tail -n 50 "$out/build.log"; exit 1; }

for part in $parts; do
    case $part in
    host-bench)
        # The host backend's pool on a 16-core machine: thread scaling.
        GPUMEM_BACKEND=host build-device/tools/gpumem-bench-pool --threads 16 2>&1 | tee "$out/host-bench.txt"
        ;;
    gpu)
        if [ -x tools/device/gpu-suite.sh ]; then tools/device/gpu-suite.sh build-device "$out"; else echo "no GPU suite yet"; fi
        ;;
    paging)
        for cap in 1024 4096 16000; do
            for paged in 1 0; do
                echo "== GPUMEM_POOL_PAGED=$paged --cap-mib $cap"
                GPUMEM_POOL_PAGED=$paged timeout 300 build-device/tools/gpumem-bench-pool --parts c --runs 3 --cap-mib $cap
            done
        done 2>&1 | tee "$out/paging.txt"
        ;;
    python)
        # CuPy and PyTorch on gpumem (writes python-gpu.txt).
        bash tools/device/gpu-python.sh build-device "$out"
        ;;
    esac
done
