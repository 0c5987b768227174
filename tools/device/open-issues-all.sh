#!/usr/bin/env bash
# The open issues' GPU checks in one call of at most ~9.5 minutes, most needed first, each part
# with a timeout and the call with a deadline (a part that would start with less than its
# timeout left is skipped and said so):
#   build     meson setup BUILD (release, the hip backend and libhipovercuda with the HIP headers
#             in .hip-include) and ninja
#   rows      tools/device/rows.sh: streams, events, rows and boxes on cuda, cuda_probe rows, and
#             the benchmark against the driver's calls
#   imported  tools/device/imported.sh: cuda_probe imported, test_ipc on cuda and hip over CUDA,
#             and the fuzzer with imports (IMPORTED_FUZZ_BUDGET_S)
#   foreign   cuda_probe foreign (memory a program made with the driver's own calls, retained VMM
#             handles, the PCI address) against the driver, the fake and its predicted record,
#             and test_foreign on cuda (and hip over CUDA where libhipovercuda was built)
#   unknown   cuda_probe unknown and fault against the driver, the fake and the record
#   suite     tools/device/gpu-suite.sh steps SUITE_STEPS within SUITE_BUDGET_S
#   hip       tools/device/reliability.sh's hip part over libhipovercuda
#
#   tools/device/open-issues-all.sh BUILD_DIR OUT_DIR [PARTS] [DEADLINE_S]
#
# Everything goes to OUT_DIR/<part>/; OUT_DIR/parts.txt has each part's exit status and time.
#
# SPDX-License-Identifier: MIT
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BUILD_DIR OUT_DIR [PARTS] [DEADLINE_S]" >&2; exit 2; }
build=$1
out=$2
parts=,${3:-build,foreign,rows,imported,unknown,suite,hip},
deadline=${4:-560}
cd "$(dirname "$0")/../.." || exit 2
mkdir -p "$out"
export PATH=$PATH:/usr/local/cuda/bin NCCL_NVLS_ENABLE=0
t0=$SECONDS
report=$out/parts.txt
: >"$report"

# part NAME LIMIT_S COMMAND...: runs it with its output in OUT/NAME/log.txt when asked for and
# when LIMIT_S still fits before the deadline.
part() {
    local name=$1 limit=$2
    shift 2
    case $parts in *,$name,*) ;; *) return 0 ;; esac
    local left=$((deadline - (SECONDS - t0)))
    if [ "$left" -lt 20 ]; then
        echo "$name: skipped ($left s left of the deadline)" | tee -a "$report"
        return 0
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    mkdir -p "$out/$name"
    local t=$SECONDS
    timeout "$limit" "$@" >"$out/$name/log.txt" 2>&1
    local rc=$?
    echo "$name: exit $rc in $((SECONDS - t)) s (limit $limit s)" | tee -a "$report"
}

# Meson refuses an include folder inside the source tree, so the headers are copied out of it.
build_all() {
    rm -rf /tmp/gpumem-hip-include && cp -r .hip-include /tmp/gpumem-hip-include &&
    meson setup "$build" -Dbuildtype=release -Dhip=enabled -Dhipheaders=/tmp/gpumem-hip-include \
        -Dhip_test_runtime=enabled && ninja -C "$build"
}
part build 300 bash -c "$(declare -f build_all); build='$build' build_all"
hip_lib=$PWD/$build/tests/hip-over-cuda/libhipovercuda.so
[ -f "$hip_lib" ] || hip_lib=""

# The probe's answers diffed with probe/h100-foreign.txt (the fake's predictions), then gpumem's own
# test of the same calls on the driver.
foreign_part() {
    local rc=0
    PROBES="foreign:h100-foreign.txt:foreign" tools/device/open-issues.sh "$build" "$out/foreign" probe || rc=1
    GPUMEM_BACKEND=cuda "$build/tests/test_foreign" || rc=1
    if [ -n "$hip_lib" ]; then
        GPUMEM_BACKEND=hip GPUMEM_HIP_LIBRARY="$hip_lib" "$build/tests/test_foreign" || rc=1
    fi
    return $rc
}
part foreign 90 bash -c "$(declare -f foreign_part); build='$build' out='$out' hip_lib='$hip_lib' foreign_part"
part rows 150 env HIP_OVER_CUDA_LIB="$hip_lib" tools/device/rows.sh "$build" "$out/rows"
part imported 200 env HIP_OVER_CUDA_LIB="$hip_lib" IMPORTED_FUZZ_BUDGET_S="${IMPORTED_FUZZ_BUDGET_S:-60}" \
    tools/device/imported.sh "$build" "$out/imported"
part unknown 60 env PROBES="unknown:h200-unknown-fault.txt:unknown+fault" \
    tools/device/open-issues.sh "$build" "$out/unknown" probe
part suite "${SUITE_BUDGET_S:-260}" env GPU_SUITE_STEPS="${SUITE_STEPS:-1-cuda,2-fallback,3-deny,4-ipc}" \
    GPU_SUITE_BUDGET_S="$((${SUITE_BUDGET_S:-260} - 10))" tools/device/gpu-suite.sh "$build" "$out/suite"
part hip 150 env HIP_OVER_CUDA_LIB="$hip_lib" tools/device/reliability.sh "$build" "$out/hip" hip

echo "total: $((SECONDS - t0)) s" | tee -a "$report"
