#!/usr/bin/env bash
# Imported memory on one GPU, in one call of about 4 minutes: what an imported pool, pool pointer
# and VMM handle allow on the real driver, and gpumem's answers for them.
#   probe   tests/fakes/cuda_probe imported on the driver and on the fake, diffed, and the driver
#           against tests/fakes/probe/h100-imported.txt (probe_compare.py); the driver's whole
#           output (its "# " lines too: the size of an imported pointer's range) is kept, to
#           become the record (probe.txt, driver-imported.txt)
#   ipc     tests/test_ipc (a pool, a pointer and a memory handle imported by the exporting process
#           and by a second one; what every call on them answers; the statistics) on the cuda
#           backend, and on the hip backend over libhipovercuda where HIP_OVER_CUDA_LIB names it
#           (ipc.txt)
#   fuzz    tools/device/gpu-fuzz.sh (fuzz_api, whose steps import in one process and across two)
#           on cuda, and hip over libhipovercuda where HIP_OVER_CUDA_LIB names it, plain and with
#           GPUMEM_DISABLE=managed,pools,vmm GPUMEM_FALLBACK=deny, IMPORTED_FUZZ_STEPS (1000) steps a
#           seed for IMPORTED_FUZZ_BUDGET_S (150) seconds in all (fuzz.txt: the seeds each setting
#           ran, every finding with the command that replays it)
#
#   tools/device/imported.sh BUILD_DIR OUT_DIR [probe,ipc,fuzz]
#
# BUILD_DIR: a meson build with the fakes, cuda_probe, the tests and the fuzzer (and, for the hip
# rows, -Dhip=enabled -Dhip_test_runtime=enabled).  LIBCUDA (libcuda.so.1): the driver the probe
# asks.  Writes summary.txt (each part's exit status, the device and the tree) and the files above
# to OUT_DIR.  Exit 0 when every part passed.
#
# SPDX-License-Identifier: MIT
export NCCL_NVLS_ENABLE=0
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BUILD_DIR OUT_DIR [probe,ipc,fuzz]" >&2; exit 2; }
build=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
parts=,${3:-probe,ipc,fuzz},
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo" || exit 2
libcuda=${LIBCUDA:-libcuda.so.1}
hip=${HIP_OVER_CUDA_LIB:-}
[ -n "$hip" ] && [ ! -f "$hip" ] && hip=""
summary=$out/summary.txt
{
    echo "imported: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), tree ${GPUMEM_TREE:-$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')}"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
    echo "libcuda: $libcuda; hip over CUDA: ${hip:-none}"
} >"$summary"
status=0

# Runs part NAME (when asked for) with a time limit, its output into FILE; notes its status.
part() {
    local name=$1 file=$2 limit=$3
    shift 3
    case $parts in *,$name,*) ;; *) return 0 ;; esac
    local t0=$SECONDS
    timeout "$limit" "$@" >"$file" 2>&1
    local rc=$?
    echo "$name: exit $rc in $((SECONDS - t0)) s" >>"$summary"
    [ $rc -eq 0 ] || status=1
}

probe_part() {
    local probe=$build/tests/fakes/cuda_probe fake=$build/tests/fakes/libfakecuda.so
    timeout 100 "$probe" "$libcuda" imported >"$out/driver-imported.txt" 2>"$out/driver-imported.err"
    echo "-- the driver's answers (exit $?)"
    cat "$out/driver-imported.txt"
    echo "-- the driver's stderr"
    cat "$out/driver-imported.err"
    rm -f "$out/driver-imported.err"
    FAKE_CUDA_DEVICES=1 timeout 60 "$probe" "$fake" imported >"$out/fake-imported.txt" 2>/dev/null
    echo "-- diff fake driver (the lines compared: not the '# ' ones)"
    diff <(grep -v '^#' "$out/fake-imported.txt") <(grep -v '^#' "$out/driver-imported.txt") &&
        echo "(the fake gives every answer the driver gives)"
    local same=$?
    rm -f "$out/fake-imported.txt"
    echo "-- the driver against the record (tests/fakes/probe/h100-imported.txt)"
    python3 tests/fakes/probe_compare.py "$probe" "$libcuda" tests/fakes/probe/h100-imported.txt imported
    local recorded=$?
    return $((same || recorded))
}
part probe "$out/probe.txt" 150 bash -c "$(declare -f probe_part); build='$build' out='$out' libcuda='$libcuda' probe_part"

ipc_part() {
    local rc=0
    echo "== cuda"
    GPUMEM_BACKEND=cuda timeout 90 "$build/tests/test_ipc" || rc=1
    if [ -n "$hip" ]; then
        echo "== hip over CUDA"
        GPUMEM_BACKEND=hip GPUMEM_HIP_LIBRARY=$hip timeout 90 "$build/tests/test_ipc" || rc=1
    fi
    return "$rc"
}
part ipc "$out/ipc.txt" 120 bash -c "$(declare -f ipc_part); build='$build' hip='$hip' ipc_part"

case $parts in
*,fuzz,*)
    t0=$SECONDS
    GPU_FUZZ_SETTINGS="plain|GPUMEM_DISABLE=managed,pools,vmm GPUMEM_FALLBACK=deny" \
        GPU_FUZZ_STEPS=${IMPORTED_FUZZ_STEPS:-1000} GPU_FUZZ_BUDGET_S=${IMPORTED_FUZZ_BUDGET_S:-150} \
        HIP_OVER_CUDA_LIB=$hip timeout 240 "$here/gpu-fuzz.sh" "$build" "$out" >/dev/null 2>&1
    rc=$?
    echo "fuzz: exit $rc in $((SECONDS - t0)) s ($(tail -n 1 "$out/fuzz.txt" 2>/dev/null))" >>"$summary"
    [ $rc -eq 0 ] || status=1
    ;;
esac

cat "$summary"
exit $status
