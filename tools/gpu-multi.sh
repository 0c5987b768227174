#!/usr/bin/env bash
# gpumem on a machine with two GPUs (issue 14), in one go:
#
#   tools/gpu-multi.sh BUILD_DIR OUT_DIR
#
#   1 suite   tools/gpu-suite.sh with both devices visible (its files under OUT_DIR/suite/);
#             tests/test_multi_gpu runs in it on the real devices
#   2 kernels tests/gpu/multi_gpu_test: kernels on device 1 over device 0's pool, VMM range
#             and peer-enabled gpumem_malloc memory; gpumem_memcpy between the devices
#   3 ipc     tests/gpu/multi_gpu_test --ipc: a process on GPU 0 exports a pool and a pointer,
#             a process on GPU 1 imports them and runs a kernel over the memory
#   4 bench   gpumem-bench-gpu --parts g: gpumem_memcpy device 0 -> 1 vs cuMemcpyPeer (medians,
#             ratio), without and with peer access
#
# Writes OUT_DIR/summary.txt (each step's status and the lines that matter), multi-gpu.log
# (steps 2-3), bench-multi-gpu.txt (step 4) and suite/ (step 1).  NVLink multicast stays off
# (NCCL_NVLS_ENABLE=0) and nothing here calls cuMulticastCreate.  Exit 0 when nothing failed.
#
# SPDX-License-Identifier: MIT
export NCCL_NVLS_ENABLE=0
set -uo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 BUILD_DIR OUT_DIR" >&2
    exit 2
fi
build=$(cd "$1" 2>/dev/null && pwd) || {
    echo "gpu-multi: no build directory $1" >&2
    exit 2
}
if ! mkdir -p "$2/suite" || ! out=$(cd "$2" && pwd); then
    echo "gpu-multi: cannot create $2" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
summary=$out/summary.txt
log=$out/multi-gpu.log
bench=$out/bench-multi-gpu.txt
: >"$log"
: >"$bench"
unset CUDA_VISIBLE_DEVICES GPUMEM_DISABLE GPUMEM_FALLBACK
export GPUMEM_BACKEND=cuda
failed=0
results=()

{
    echo "gpu-multi: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), commit $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo '?')"
    echo "build:     $build"
    command -v nvidia-smi >/dev/null 2>&1 &&
        nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/gpu:       /'
    command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi topo -m 2>&1 | sed 's/^/topo:      /'
    true
} >"$summary"
cat "$summary"

# step NAME TIMEOUT LOG COMMAND...: exit 0 pass, 77 skipped, else failed.
step() {
    local name=$1 limit=$2 file=$3
    shift 3
    echo "gpu-multi: $name" >&2
    echo "== $name: $*" >>"$file"
    local t0=$SECONDS
    timeout -k 5 "$limit" "$@" </dev/null >>"$file" 2>&1
    local rc=$?
    echo "== $name: exit $rc ($((SECONDS - t0)) s)" >>"$file"
    case $rc in
    0) results+=("$name: passed ($((SECONDS - t0)) s)") ;;
    77) results+=("$name: skipped (exit 77)") ;;
    *)
        results+=("$name: FAILED (exit $rc, $((SECONDS - t0)) s)")
        failed=1
        ;;
    esac
}

# The lent machine runs one command for at most 600 s: the suite gets 360 of them.
export GPU_SUITE_BUDGET_S=${GPU_SUITE_BUDGET_S:-360}
step "1 gpu-suite (both devices visible)" $((GPU_SUITE_BUDGET_S + 30)) "$log" "$here/gpu-suite.sh" "$build" "$out/suite"
mgt=$build/tests/gpu/multi_gpu_test
if [ -x "$mgt" ]; then
    step "2 multi_gpu_test (kernels on device 1, copies)" 60 "$log" "$mgt"
    step "3 multi_gpu_test --ipc (GPU 0 exports, GPU 1 imports)" 60 "$log" "$mgt" --ipc
else
    results+=("2-3 multi_gpu_test: NOT BUILT (nvcc missing or -Dnvcc=disabled)")
    failed=1
fi
bg=$build/tools/bench-gpu/gpumem-bench-gpu
if [ -x "$bg" ]; then
    step "4 gpumem-bench-gpu --parts g (gpumem_memcpy vs cuMemcpyPeer)" 90 "$bench" "$bg" --parts g
else
    results+=("4 gpumem-bench-gpu: NOT BUILT")
    failed=1
fi

{
    echo
    for r in "${results[@]}"; do echo "$r"; done
    echo
    echo "gpu-suite:"
    tail -n 12 "$out/suite/summary.txt" 2>/dev/null | sed 's/^/  /'
    echo
    echo "multi_gpu_test:"
    grep -E '^(PASS|FAIL|SKIP|device|peer|ipc|[0-9]+ passed)' "$log" | sed 's/^/  /'
    echo
    echo "bandwidth (part g):"
    sed -n '/^(g)/,$p' "$bench" | sed 's/^/  /'
    echo
    echo "gpu-multi: $([ $failed = 0 ] && echo 'all steps passed or skipped' || echo 'some steps FAILED')"
} >>"$summary"
tail -n +1 "$summary" | sed -n '/^$/,$p'
exit $failed
