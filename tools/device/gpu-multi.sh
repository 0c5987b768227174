#!/usr/bin/env bash
# gpumem on a machine with several GPUs, in one go or in parts:
#
#   tools/device/gpu-multi.sh BUILD_DIR OUT_DIR [STEP,STEP,...]      (default: every step)
#
#   suite    tools/device/gpu-suite.sh with every device visible (its files under OUT_DIR/suite/);
#            tests/test_multi_gpu runs in it on the real devices
#   kernels  tests/gpu/multi_gpu_test: kernels on device 1 over device 0's pool, VMM range
#            and peer-enabled gpumem_malloc memory; gpumem_memcpy between the devices
#   ipc      tests/gpu/multi_gpu_test --ipc: a process on GPU 0 exports a pool and a pointer,
#            a process on GPU 1 imports them and runs a kernel over the memory
#   bench    gpumem-bench-gpu --parts g: gpumem_memcpy device 0 -> 1 vs cuMemcpyPeer (medians,
#            ratio), without and with peer access
#   probe    tests/fakes/cuda_probe placement and multi against the real driver and against
#            the fake CUDA driver with as many devices; both compared with the answers recorded
#            in tests/fakes/probe/h100x4-placement.txt; then group bridge from both, side by
#            side (probe.txt)
#   ddp      tools/bench/bench-ddp.py: PyTorch DDP over NCCL on every visible GPU with PyTorch's
#            allocator, gpumem's driver pool and gpumem's own pool (ddp.txt)
#   two      on the first two GPUs only (CUDA_VISIBLE_DEVICES=0,1): test_multi_gpu under the
#            three settings, multi_gpu_test, --ipc, and bench-ddp.py (ddp-two.txt)
#
# A lent machine runs one command for at most 600 s: give `suite` a call of its own and the
# rest the next (the build stays while the machine is warm).  Writes OUT_DIR/summary.txt (each
# step's status and the lines that matter) and the files named above, multi-gpu.log for
# kernels/ipc/two and bench-multi-gpu.txt for bench.  NVLink multicast stays off
# (NCCL_NVLS_ENABLE=0) and nothing here calls cuMulticastCreate.  BENCH_DDP_ARGS passes options
# to bench-ddp.py (e.g. "--steps 30 --timeout 90").  Exit 0 when nothing failed.
#
# SPDX-License-Identifier: MIT
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
set -uo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    echo "usage: $0 BUILD_DIR OUT_DIR [suite,kernels,ipc,bench,probe,ddp,two]" >&2
    exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tools/device/steps.sh
. "$here/steps.sh"
steps_dirs gpu-multi "$1" "$2"
wanted=,${3:-suite,kernels,ipc,bench,probe,ddp,two},
want() { in_list "$wanted" "$1"; }
summary=$out/summary.txt
log=$out/multi-gpu.log
unset CUDA_VISIBLE_DEVICES GPUMEM_DISABLE GPUMEM_FALLBACK
export GPUMEM_BACKEND=cuda
failed=0
results=()

{
    echo "gpu-multi: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), commit $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo '?'), steps ${wanted//,/ }"
    echo "build:     $build"
    steps_gpus index,name,driver_version,memory.total
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
    steps_timed "$limit" "$file" "$@"
    local rc=$?
    echo "== $name: exit $rc ($((SECONDS - t0)) s)" >>"$file"
    case $(steps_outcome $rc) in
    passed) results+=("$name: passed ($((SECONDS - t0)) s)") ;;
    skipped) results+=("$name: skipped (exit 77)") ;;
    *)
        results+=("$name: FAILED (exit $rc, $((SECONDS - t0)) s)")
        failed=1
        ;;
    esac
}

missing() { # NAME WHY
    results+=("$1: NOT RUN ($2)")
    failed=1
}

mgt=$build/tests/gpu/multi_gpu_test
tmg=$build/tests/test_multi_gpu
probe=$build/tests/fakes/cuda_probe
fake=$build/tests/fakes/libfakecuda.so

if want suite; then
    mkdir -p "$out/suite"
    # The lent machine runs one command for at most 600 s: the suite gets 540 of them.
    export GPU_SUITE_BUDGET_S=${GPU_SUITE_BUDGET_S:-540}
    step "suite (every device visible)" $((GPU_SUITE_BUDGET_S + 30)) "$out/suite/run.log" \
        "$here/gpu-suite.sh" "$build" "$out/suite"
    rm -f "$out/suite/run.log" # what it says is in suite/summary.txt
fi
if want kernels; then
    if [ -x "$mgt" ]; then step "kernels: multi_gpu_test" 60 "$log" "$mgt"; else missing kernels "nvcc missing"; fi
fi
if want ipc; then
    if [ -x "$mgt" ]; then step "ipc: multi_gpu_test --ipc (GPU 0 exports, GPU 1 imports)" 60 "$log" "$mgt" --ipc
    else missing ipc "nvcc missing"; fi
fi
if want bench; then
    bg=$build/tools/gpumem-bench-gpu
    if [ -x "$bg" ]; then step "bench: gpumem-bench-gpu --parts g" 90 "$out/bench-multi-gpu.txt" "$bg" --parts g
    else missing bench "gpumem-bench-gpu not built"; fi
fi
if want probe; then
    # The real driver's answers and the fake's, each compared with the recorded ones (the
    # device count line aside: the record was taken with four).
    recorded=$here/../../tests/fakes/probe/h100x4-placement.txt
    libcuda=$(ldconfig -p 2>/dev/null | awk '/libcuda.so.1 /{print $NF; exit}')
    if [ -x "$probe" ] && [ -n "$libcuda" ] && [ -f "$recorded" ]; then
        ndev=$(nvidia-smi -L 2>/dev/null | wc -l)
        : >"$out/probe.txt"
        # probe_vs_record WHO LIBRARY: both groups, then the difference from the record.
        probe_vs_record() {
            local who=$1 lib=$2 answers=$out/probe-$1.txt
            { timeout 60 "$probe" "$lib" placement && timeout 60 "$probe" "$lib" multi; } >"$answers" 2>&1
            local rc=$?
            echo "== probe: $who ($ndev devices, exit $rc)" >>"$out/probe.txt"
            cat "$answers" >>"$out/probe.txt"
            if [ $rc -eq 0 ] && diff <(grep -vE '^(#|[a-z]+\.devices = )' "$recorded") \
                <(grep -vE '^[a-z]+\.devices = ' "$answers") >>"$out/probe.txt"; then
                results+=("probe: $who gives the recorded answers")
            else
                results+=("probe: $who DIFFERS from the record (probe.txt: < recorded, > $who)")
                failed=1
            fi
            rm -f "$answers"
        }
        probe_vs_record driver "$libcuda"
        export FAKE_CUDA_DEVICES=$ndev
        probe_vs_record fake "$fake"
        unset FAKE_CUDA_DEVICES
        # Not yet recorded: the driver's and the fake's answers side by side.
        for lib in "$libcuda" "$fake"; do
            echo "== probe bridge: $lib" >>"$out/probe.txt"
            FAKE_CUDA_DEVICES=$ndev timeout 60 "$probe" "$lib" bridge >>"$out/probe.txt" 2>&1
        done
    else
        missing probe "cuda_probe not built, no libcuda.so.1, or no recorded answers"
    fi
fi
if want ddp; then
    # shellcheck disable=SC2086 # BENCH_DDP_ARGS: options for bench-ddp.py, split on spaces
    step "ddp: bench-ddp.py on every GPU" 420 "$out/ddp.txt" python3 "$here/../bench/bench-ddp.py" "$build" ${BENCH_DDP_ARGS:-}
fi
if want two; then
    export CUDA_VISIBLE_DEVICES=0,1
    if [ -x "$tmg" ]; then
        step "two: test_multi_gpu (cuda)" 90 "$log" "$tmg"
        step "two: test_multi_gpu (fallback)" 90 "$log" env GPUMEM_DISABLE=managed,pools,vmm "$tmg"
        step "two: test_multi_gpu (deny)" 90 "$log" env GPUMEM_DISABLE=managed,pools,vmm GPUMEM_FALLBACK=deny "$tmg"
    else
        missing "two: test_multi_gpu" "not built"
    fi
    if [ -x "$mgt" ]; then
        step "two: multi_gpu_test" 60 "$log" "$mgt"
        step "two: multi_gpu_test --ipc" 60 "$log" "$mgt" --ipc
    fi
    # shellcheck disable=SC2086
    step "two: bench-ddp.py on GPUs 0 and 1" 300 "$out/ddp-two.txt" python3 "$here/../bench/bench-ddp.py" "$build" ${BENCH_DDP_ARGS:-}
    unset CUDA_VISIBLE_DEVICES
fi

{
    echo
    for r in "${results[@]}"; do echo "$r"; done
    if want suite; then
        echo
        echo "gpu-suite:"
        tail -n 12 "$out/suite/summary.txt" 2>/dev/null | sed 's/^/  /'
    fi
    if [ -f "$log" ]; then
        echo
        echo "multi_gpu_test / test_multi_gpu:"
        grep -E '^(PASS|FAIL|SKIP|device|peer|ipc|[0-9]+ passed|\[ (FAIL|SKIP) \])' "$log" | sed 's/^/  /'
    fi
    if want bench; then
        echo
        echo "bandwidth (part g):"
        sed -n '/^(g)/,$p' "$out/bench-multi-gpu.txt" | sed 's/^/  /'
    fi
    for f in ddp ddp-two; do
        [ -f "$out/$f.txt" ] || continue
        echo
        echo "$f:"
        grep -E '^(config|torch|gpumem|bench-ddp|loss|params|  )' "$out/$f.txt" | tail -n 30 | sed 's/^/  /'
    done
    echo
    echo "gpu-multi: $([ $failed = 0 ] && echo 'all steps passed or skipped' || echo 'some steps FAILED')"
} >>"$summary"
tail -n +1 "$summary" | sed -n '/^$/,$p'
exit $failed
