#!/usr/bin/env bash
# The open issues' checks on one lent GPU machine, in one call (few calls, little device time):
#   suite     tools/device/gpu-suite.sh steps 1-4 (cuda, fallback, deny, ipc): summary.txt and
#             conformance.log
#   probe     cuda_probe groups on the driver and on the fake, diffed, and the driver's answers
#             against their record in tests/fakes/probe/ (PROBES below; probe.txt)
#   selftest  gpumem-info --selftest three times, and once with --json (checks.txt)
#   torch     tools/device/torch-mempool.py and tools/device/torch-oom.py (checks.txt)
#   hip       tools/device/reliability.sh's hip part: the hip backend over libhipovercuda
#             (HIP_OVER_CUDA_LIB; hip.txt)
#   compare   with BEFORE_SRC: tools/device/device-compare.sh BEFORE_SRC 2, BENCH_GPU_PARTS=h
#             (compare.txt)
#
#   tools/device/open-issues.sh BUILD_DIR OUT_DIR [PARTS] [BEFORE_SRC]
#
# PARTS: a comma list (default suite,probe,selftest,torch,hip, and compare when BEFORE_SRC is
# given).  BUILD_DIR: a meson build with -Dhip=enabled -Dhip_test_runtime=enabled (the fakes and
# cuda_probe in it).  Each part has a timeout; a failing part never stops the others.  The last
# line of checks.txt gives each part's exit status.
#
# SPDX-License-Identifier: MIT
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BUILD_DIR OUT_DIR [PARTS] [BEFORE_SRC]" >&2; exit 2; }
build=$(cd "$1" && pwd)
out=$2
before=${4:-}
default=suite,probe,selftest,torch,hip${before:+,compare}
parts=,${3:-$default},
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../.."
export NCCL_NVLS_ENABLE=0
checks=$out/checks.txt
summary=""

# Runs a part's command with a timeout, its output appended to FILE, and notes its status.
part() {
    local name=$1 file=$2 limit=$3
    shift 3
    case $parts in *,$name,*) ;; *) return 0 ;; esac
    local t0=$SECONDS
    echo "== $name: $*" >>"$file"
    timeout "$limit" "$@" >>"$file" 2>&1
    local rc=$?
    echo "== $name: exit $rc in $((SECONDS - t0)) s" >>"$file"
    summary="$summary $name=$rc"
}

{
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "tree: ${GPUMEM_TREE:-unknown}"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
} >"$checks"

suite_part() {
    GPU_SUITE_STEPS=1-cuda,2-fallback,3-deny,4-ipc GPU_SUITE_BUDGET_S=250 tools/device/gpu-suite.sh "$build" "$out/suite"
    local rc=$?
    cp "$out/suite/summary.txt" "$out/suite/conformance.log" "$out/" 2>/dev/null
    rm -rf "$out/suite"
    return $rc
}
part suite "$checks" 320 bash -c "$(declare -f suite_part); build='$build' out='$out' suite_part"

# PROBES: items NAME:RECORD:GROUP+GROUP... (default export:h200-export.txt:export): each
# group asked of the driver and of the fake (diffed), and the driver against the record.
probe_part() {
    local probe=$build/tests/fakes/cuda_probe fake=$build/tests/fakes/libfakecuda.so rc=0
    local item name record groups g
    for item in ${PROBES:-export:h200-export.txt:export}; do
        IFS=: read -r name record groups <<<"$item"
        : >"$out/$name-driver.txt"
        : >"$out/$name-fake.txt"
        for g in ${groups//+/ }; do
            "$probe" libcuda.so.1 "$g" >>"$out/$name-driver.txt" 2>>"$out/$name-driver.err"
            FAKE_CUDA_DEVICES=1 "$probe" "$fake" "$g" >>"$out/$name-fake.txt" 2>/dev/null
        done
        echo "== probe $name (groups ${groups//+/ }; record $record)"
        echo "-- the driver's answers"
        cat "$out/$name-driver.txt"
        echo "-- the driver's stderr"
        cat "$out/$name-driver.err" 2>/dev/null
        echo "-- diff fake driver"
        diff "$out/$name-fake.txt" "$out/$name-driver.txt" && echo "(the fake gives every answer the driver gives)" || rc=1
        echo "-- the driver against the record"
        # shellcheck disable=SC2086 # the groups, one word each
        python3 tests/fakes/probe_compare.py "$probe" libcuda.so.1 "tests/fakes/probe/$record" ${groups//+/ } || rc=1
        rm -f "$out/$name-driver.txt" "$out/$name-fake.txt" "$out/$name-driver.err"
    done
    return $rc
}
part probe "$out/probe.txt" 180 bash -c "$(declare -f probe_part); build='$build' out='$out' PROBES='${PROBES:-}' probe_part"

selftest_part() {
    for i in 1 2 3; do GPUMEM_BACKEND=cuda "$build/tools/gpumem-info" --selftest || return 1; done
    GPUMEM_BACKEND=cuda "$build/tools/gpumem-info" --selftest --json
}
part selftest "$checks" 60 bash -c "$(declare -f selftest_part); build='$build' selftest_part"

case $parts in *,torch,*) parts="$parts,torch-oom," ;; esac
part torch "$checks" 240 python3 tools/device/torch-mempool.py "$build"
part torch-oom "$checks" 200 python3 tools/device/torch-oom.py "$build"

part hip "$checks" 200 tools/device/reliability.sh "$build" "$out/hip" hip
[ -f "$out/hip/hip.txt" ] && mv "$out/hip/hip.txt" "$out/hip.txt" && rm -rf "$out/hip"

if [ -n "$before" ]; then
    part compare "$checks" 330 env OUT="$out" BENCH_GPU_PARTS=h tools/device/device-compare.sh "$before" 2
fi

echo "parts:$summary" >>"$checks"
tail -n 1 "$checks"
case $summary in *=[1-9]*) exit 1 ;; esac
exit 0
