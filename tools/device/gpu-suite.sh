#!/usr/bin/env bash
# gpumem on a real GPU, in one go: the conformance suites on the cuda backend
# (as is, with fallbacks, with fallbacks denied), the two-process IPC tests,
# compute-sanitizer over the kernel test, and the GPU benchmarks.  Called by
# tools/device/device-run.sh (part `gpu`) after it has built BUILD_DIR.
#
#   tools/device/gpu-suite.sh BUILD_DIR OUT_DIR
#
# Writes five files to OUT_DIR (device-run.sh adds three: the lent machine
# returns at most eight):
#   summary.txt          pass/fail/skip counts per step, each failure with its first error lines
#   conformance.log      steps 1-4: every test's output, between "==" lines naming it
#   sanitizer.log        step 5
#   bench-gpu.txt        step 6: tools/gpumem-bench-gpu (full run)
#   bench-pool-cuda.txt  step 6: tools/gpumem-bench-pool --quick on the cuda backend
#
# Steps (each test's exit status: 0 pass, 77 skipped, anything else fail):
#   1 cuda       every conformance test and example, the kernel, VMM seed, batch and pool-memory
#                tests, with GPUMEM_BACKEND=cuda
#   2 fallback   the same with GPUMEM_DISABLE=managed,pools,vmm (the fallbacks serve them)
#   3 deny       the same with GPUMEM_FALLBACK=deny as well (NOT_SUPPORTED instead)
#   4 ipc        tests/test_ipc and examples/ipc_pool (two real processes) under the three settings
#   5 sanitizer  compute-sanitizer --tool memcheck --leak-check full over the kernel test (cuda, fallback)
#   6 bench      gpumem-bench-gpu, and gpumem-bench-pool --quick with GPUMEM_BACKEND=cuda
#
# The test executables are run directly rather than through `meson test`:
# meson applies a test's own env after any --setup env, and the unit and
# examples suites register GPUMEM_BACKEND=host in every test, so `meson test`
# cannot put them on the cuda backend.  Run directly, each gets exactly the
# environment of its step.  Tests run one at a time (some measure free device
# memory or allocate until it runs out).
#
# Time: each command has a timeout (GPU_SUITE_TEST_TIMEOUT_S, default 30 s;
# longer for the sanitizer and the benchmarks), each step a budget, and the
# whole suite GPU_SUITE_BUDGET_S (default 400 s; a normal run takes a few
# minutes; each step's budget grows by half for every visible device past
# the first): what would start past a budget is recorded as "not run" and
# counts as failed.  A failing step never stops the others.  GPU_SUITE_STEPS
# (a comma list, e.g. 1-cuda,6-bench) runs only those steps.
# Exit status: 0 when nothing failed, 1 otherwise.
#
# SPDX-License-Identifier: MIT
set -uo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 BUILD_DIR OUT_DIR" >&2
    exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tools/device/steps.sh
. "$here/steps.sh"
steps_dirs gpu-suite "$1" "$2"

budget=${GPU_SUITE_BUDGET_S:-400}
test_timeout=${GPU_SUITE_TEST_TIMEOUT_S:-30}
t_start=$SECONDS

summary=$out/summary.txt
conformance=$out/conformance.log
sanitizer=$out/sanitizer.log
bench_gpu=$out/bench-gpu.txt
bench_pool=$out/bench-pool-cuda.txt
: >"$conformance"
: >"$sanitizer"
: >"$bench_gpu"
: >"$bench_pool"

# Each step sets exactly these (for `env`): nothing inherited from the caller.
# GPU_SUITE_BACKEND (default cuda) is the backend steps 1-5 put gpumem on: `hip` runs them on
# the hip backend, e.g. over tests/hip-over-cuda's libhipovercuda named by the caller's
# GPUMEM_HIP_LIBRARY (tools/device/hip-over-cuda.sh).
backend=${GPU_SUITE_BACKEND:-cuda}
disable='GPUMEM_DISABLE=managed,pools,vmm'
clean=(-u GPUMEM_DISABLE -u GPUMEM_FALLBACK -u GPUMEM_BACKEND)
env_cuda=("${clean[@]}" GPUMEM_BACKEND="$backend")
env_fallback=("${clean[@]}" GPUMEM_BACKEND="$backend" "$disable")
env_deny=("${clean[@]}" GPUMEM_BACKEND="$backend" "$disable" GPUMEM_FALLBACK=deny)

declare -A n_pass n_fail n_skip n_notrun step_secs
steps=()
failures=()
step=
step_deadline=0

# Every test process starts each visible device's context (gpumem reads every device's
# capabilities at init): each device beyond the first makes a step (and a test) up to half as
# long again.
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
    devices=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .)
else
    devices=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
fi
[ "${devices:-0}" -ge 1 ] || devices=1
step_scale_pct=$((100 + 50 * (devices - 1)))
# A test's own timeout grows the same way: test_lifecycle's init/finalize cycles start every
# device's context each time (37 s on four H100s, 30 s allowed for one).
test_timeout=$((test_timeout * step_scale_pct / 100))

# GPU_SUITE_STEPS: a comma list of the steps to run (1-cuda,2-fallback,...); default all.
wanted_steps=,${GPU_SUITE_STEPS:-1-cuda,2-fallback,3-deny,4-ipc,5-sanitizer,6-bench},
want_step() { in_list "$wanted_steps" "$1"; }

# begin_step NAME BUDGET_S (for one device; scaled by the number of devices)
begin_step() {
    step=$1
    steps+=("$1")
    n_pass[$1]=0 n_fail[$1]=0 n_skip[$1]=0 n_notrun[$1]=0
    step_secs[$1]=$SECONDS
    local budget_s=$(($2 * step_scale_pct / 100))
    step_deadline=$((SECONDS + budget_s))
    echo "gpu-suite: step $1 (budget $budget_s s, $((SECONDS - t_start)) s elapsed)"
}

end_step() {
    step_secs[$step]=$((SECONDS - step_secs[$step]))
    echo "gpu-suite:   $step: ${n_pass[$step]} passed, ${n_fail[$step]} failed, ${n_skip[$step]} skipped, ${n_notrun[$step]} not run (${step_secs[$step]} s)"
}

not_run() { # NAME WHY
    n_notrun[$step]=$((n_notrun[$step] + 1))
    failures+=("$step: $1: not run: $2")
}

# run NAME TIMEOUT LOG COMMAND...  (environment through `env` in COMMAND)
run() {
    local name=$1 limit=$2 log=$3
    shift 3
    local now=$SECONDS
    local left_step=$((step_deadline - now)) left_all=$((budget - (now - t_start)))
    [ "$left_step" -lt "$limit" ] && limit=$left_step
    [ "$left_all" -lt "$limit" ] && limit=$left_all
    if [ "$left_step" -lt 3 ] || [ "$left_all" -lt 3 ]; then
        echo "== $step: $name: not run (time budget spent)" >>"$log"
        not_run "$name" "time budget spent"
        return
    fi
    local tmp
    tmp=$(mktemp)
    echo "== $step: $name: $*" >>"$log"
    steps_timed "$limit" "$tmp" "$@"
    local rc=$?
    # At most ~350 lines of one test in the log: a broken backend can make a
    # test print megabytes, and a file over 16 MiB would not come back.
    local lines
    lines=$(wc -l <"$tmp")
    if [ "$lines" -gt 350 ]; then
        head -n 250 "$tmp" >>"$log"
        echo "[... $((lines - 350)) lines cut ...]" >>"$log"
        tail -n 100 "$tmp" >>"$log"
    else
        cat "$tmp" >>"$log"
    fi
    echo "== $step: $name: exit $rc ($((SECONDS - now)) s)" >>"$log"
    case $(steps_outcome $rc) in
    passed) n_pass[$step]=$((n_pass[$step] + 1)) ;;
    skipped) n_skip[$step]=$((n_skip[$step] + 1)) ;;
    *)
        n_fail[$step]=$((n_fail[$step] + 1))
        local why
        if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
            why="timed out after $limit s"
        else
            why="exit $rc"
        fi
        # The first lines that say what went wrong, for the summary.
        local first
        first=$(grep -m 3 -E 'FAIL|[Ee]rror|ERROR|Assertion|Segmentation|Aborted|leak' "$tmp" | cut -c1-200 | sed 's/^/      | /')
        [ -z "$first" ] && first=$(tail -n 3 "$tmp" | cut -c1-200 | sed 's/^/      | /')
        failures+=("$step: $name: $why"$'\n'"$first")
        ;;
    esac
    rm -f "$tmp"
}

# The conformance executables: tests/test_* and examples/*, less the IPC pair (step 4).
conformance_tests() {
    local f
    for f in "$build"/tests/test_* "$build"/examples/*; do
        if [ ! -f "$f" ] || [ ! -x "$f" ]; then continue; fi
        case ${f##*/} in
        test_ipc | ipc_pool) continue ;;
        esac
        echo "$f"
    done
}

# The kernel tests (tests/gpu), each with its timeout in multiples of the
# conformance tests' own: kernels over gpumem's memory, the VMM seed, batched
# calls, pools of pinned and managed memory, and memory in CUDA graphs.
gpu_tests=(kernel_test:2 vmm_seed_test:1 batch_test:2 pool_memory_test:2 graph_test:2 pressure_test:3)
kernel_test=$build/tests/gpu/kernel_test

# run_suite: every conformance test, then the kernel tests, with the given environment.
run_suite() {
    local f found=0 entry name
    while IFS= read -r f; do
        found=1
        run "${f#"$build"/}" "$test_timeout" "$conformance" env "$@" "$f"
    done < <(conformance_tests)
    [ "$found" = 1 ] || not_run "conformance tests" "none found under $build/tests or $build/examples"
    for entry in "${gpu_tests[@]}"; do
        name=${entry%%:*}
        if [ -x "$build/tests/gpu/$name" ]; then
            run "tests/gpu/$name" "$((test_timeout * ${entry##*:}))" "$conformance" env "$@" "$build/tests/gpu/$name"
        else
            not_run "tests/gpu/$name" "not built (no nvcc, -Dnvcc=disabled, or tests/meson.build lacks subdir('gpu'))"
        fi
    done
}

header=$(
    echo "gpu-suite: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "build:     $build"
    echo "backend:   $backend${GPUMEM_HIP_LIBRARY:+ (GPUMEM_HIP_LIBRARY=$GPUMEM_HIP_LIBRARY)}"
    steps_gpus name,driver_version,memory.total
    command -v nvcc >/dev/null 2>&1 && nvcc --version 2>&1 | tail -n 1 | sed 's/^/nvcc:      /'
    true
)
echo "$header"

# ---------------------------------------------------------------------------
if want_step 1-cuda; then
    begin_step "1-cuda" 90
    run_suite "${env_cuda[@]}"
    end_step
fi

if want_step 2-fallback; then
    begin_step "2-fallback" 70
    run_suite "${env_fallback[@]}"
    end_step
fi

if want_step 3-deny; then
    begin_step "3-deny" 60
    run_suite "${env_deny[@]}"
    end_step
fi

if want_step 4-ipc; then
    begin_step "4-ipc" 45
    for setting in cuda fallback deny; do
        case $setting in
        cuda) envs=("${env_cuda[@]}") ;;
        fallback) envs=("${env_fallback[@]}") ;;
        deny) envs=("${env_deny[@]}") ;;
        esac
        for f in "$build/tests/test_ipc" "$build/examples/ipc_pool"; do
            if [ -x "$f" ]; then
                run "${f#"$build"/} ($setting)" "$test_timeout" "$conformance" env "${envs[@]}" "$f"
            else
                not_run "${f#"$build"/} ($setting)" "not built"
            fi
        done
    done
    end_step
fi

if want_step 5-sanitizer; then
    begin_step "5-sanitizer" 90
    sanitizer_bin=$(command -v compute-sanitizer 2>/dev/null || true)
    for d in "${CUDA_PATH:-}" /usr/local/cuda; do
        [ -z "$sanitizer_bin" ] && [ -n "$d" ] && [ -x "$d/bin/compute-sanitizer" ] && sanitizer_bin=$d/bin/compute-sanitizer
    done
    if [ -z "$sanitizer_bin" ]; then
        not_run "compute-sanitizer" "not found in PATH, \$CUDA_PATH/bin or /usr/local/cuda/bin"
        echo "compute-sanitizer not found" >>"$sanitizer"
    elif [ ! -x "$kernel_test" ]; then
        not_run "compute-sanitizer" "tests/gpu/kernel_test not built"
    else
        echo "compute-sanitizer: $sanitizer_bin" >>"$sanitizer"
        run "memcheck kernel_test (cuda)" 60 "$sanitizer" env "${env_cuda[@]}" \
            "$sanitizer_bin" --tool memcheck --leak-check full --error-exitcode 99 --print-limit 50 "$kernel_test"
        run "memcheck kernel_test (fallback)" 60 "$sanitizer" env "${env_fallback[@]}" \
            "$sanitizer_bin" --tool memcheck --leak-check full --error-exitcode 99 --print-limit 50 "$kernel_test"
    fi
    end_step
fi

if want_step 6-bench; then
    begin_step "6-bench" 150
    if [ -x "$build/tools/gpumem-bench-gpu" ]; then
        run "gpumem-bench-gpu" 120 "$bench_gpu" env "${env_cuda[@]}" "$build/tools/gpumem-bench-gpu"
    else
        not_run "gpumem-bench-gpu" "not built (no cuda.h at build time)"
        echo "gpumem-bench-gpu not built" >>"$bench_gpu"
    fi
    if [ -x "$build/tools/gpumem-bench-pool" ]; then
        run "gpumem-bench-pool --quick" 60 "$bench_pool" env "${env_cuda[@]}" "$build/tools/gpumem-bench-pool" --quick
    else
        not_run "gpumem-bench-pool" "not built"
        echo "gpumem-bench-pool not built" >>"$bench_pool"
    fi
    end_step
fi

# ---------------------------------------------------------------------------
total_pass=0 total_fail=0 total_skip=0 total_notrun=0
table=$(
    printf '%-14s %6s %6s %6s %8s %8s\n' step passed failed skipped "not run" seconds
    for s in "${steps[@]}"; do
        printf '%-14s %6d %6d %6d %8d %8d\n' "$s" "${n_pass[$s]}" "${n_fail[$s]}" "${n_skip[$s]}" "${n_notrun[$s]}" "${step_secs[$s]}"
    done
)
for s in "${steps[@]}"; do
    total_pass=$((total_pass + n_pass[$s]))
    total_fail=$((total_fail + n_fail[$s]))
    total_skip=$((total_skip + n_skip[$s]))
    total_notrun=$((total_notrun + n_notrun[$s]))
done
# "not run" counts as failed: the suite did not show that it works.
closing="gpu-suite: $total_pass passed, $((total_fail + total_notrun)) failed, $total_skip skipped"
{
    echo "$header"
    if [ ${#failures[@]} -gt 0 ]; then
        echo
        echo "failed or not run (first lines of each; whole output in conformance.log, sanitizer.log, bench-*.txt):"
        for f in "${failures[@]}"; do
            echo "  $f"
        done
    fi
    echo
    echo "$table"
    echo
    echo "total time: $((SECONDS - t_start)) s (budget $budget s)"
    echo "$closing"
} >"$summary"
if [ ${#failures[@]} -gt 0 ]; then
    echo
    echo "failed or not run (the first 40; details in $summary):"
    for f in "${failures[@]}"; do
        echo "  ${f%%$'\n'*}"
    done | head -n 40
fi
echo
echo "$table"
echo
echo "total time: $((SECONDS - t_start)) s"
echo "$closing"
[ $((total_fail + total_notrun)) -eq 0 ]
