#!/usr/bin/env bash
# Streams and events as programs create them, rows and boxes, on a real GPU with the cuda
# backend, in about two minutes of device time.
#
#   tools/device/rows.sh BUILD_DIR OUT_DIR
#
# BUILD_DIR is a meson build of this tree on the GPU machine (with CUDA's headers, so that the
# fake driver, cuda_probe and gpumem-bench-gpu are built).  With HIP_OVER_CUDA_LIB naming
# BUILD_DIR's libhipovercuda.so, the tests and examples run on the hip backend over it too.
# Writes to OUT_DIR:
#   summary.txt        one line per step (passed, failed, skipped) and the benchmark's verdict
#   tests.log          the tests and the examples, GPUMEM_BACKEND=cuda (and hip), run directly (as
#                      gpu-suite.sh runs them: meson's test env would force the host backend)
#   probe-driver.txt   cuda_probe libcuda.so.1 rows: the driver's answers
#   probe-fake.txt     cuda_probe on build/tests/fakes/libfakecuda.so rows: the fake's
#   probe.diff         the driver against the fake, and against tests/fakes/probe/h100-rows.txt
#                      (the fake's predictions); empty diffs mean the fake answers as the driver
#   bench-rows.txt     gpumem-bench-gpu --parts n: medians and ratios against the driver's own
#                      calls in the same run (event pair <= 1.03x, 2-D copy and 32-bit fill <= 1.05x)
# Exit status: 0 when every step passed (a benchmark target missed does not fail it; the
# summary says so), 1 otherwise.
#
# SPDX-License-Identifier: MIT
set -uo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 BUILD_DIR OUT_DIR" >&2
    exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tools/device/steps.sh
. "$here/steps.sh"
steps_dirs rows "$1" "$2"

libcuda=${GPUMEM_CUDA_LIBRARY:-libcuda.so.1}
summary=$out/summary.txt
tests_log=$out/tests.log
: >"$summary"
: >"$tests_log"
failed=0
env_cuda=(-u GPUMEM_DISABLE -u GPUMEM_FALLBACK -u GPUMEM_HOST_STRICT GPUMEM_BACKEND=cuda)

{
    echo "date:    $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "tree:    $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"
    steps_gpus name,driver_version,memory.total
} >>"$summary"

# run NAME LIMIT COMMAND...: one step, its output in tests.log, its outcome in the summary.
run() {
    local name=$1 limit=$2
    shift 2
    echo "== $name" >>"$tests_log"
    steps_timed "$limit" "$tests_log" env "${env_cuda[@]}" "$@"
    local st=$?
    local what
    what=$(steps_outcome "$st")
    printf '%-34s %s (exit %d)\n' "$name" "$what" "$st" >>"$summary"
    [ "$what" = failed ] && failed=1
    return 0
}

# 1. The tests of rows, boxes, stream and event flags and the ported samples, on the cuda backend (and with the fallbacks of
#    the other features off, which must not change these).
run test_rows 60 "$build/tests/test_rows"
run test_stream_flags 60 "$build/tests/test_stream_flags"
run test_rows-fallback 60 env GPUMEM_DISABLE=managed,pools,vmm "$build/tests/test_rows"
run test_graphs 60 "$build/tests/test_graphs"
run example-pitch_linear_shift 60 "$build/examples/pitch_linear_shift"
run example-bandwidth_test 60 "$build/examples/bandwidth_test"
# 20 pageable copies, not 100, keep the step short: each is followed by a 256 MB write that flushes the CPU cache.
run example-bandwidth_test-pageable 60 "$build/examples/bandwidth_test" --memory=pageable --iterations=20
run example-streams_transpose 60 "$build/examples/streams_transpose"

# 1b. The same on the hip backend over libhipovercuda (HIP_OVER_CUDA_LIB), where it was built.
if [ -n "${HIP_OVER_CUDA_LIB:-}" ] && [ -f "$HIP_OVER_CUDA_LIB" ]; then
    hip_env=(env GPUMEM_BACKEND=hip GPUMEM_HIP_LIBRARY="$HIP_OVER_CUDA_LIB")
    run hip:test_rows 60 "${hip_env[@]}" "$build/tests/test_rows"
    run hip:test_stream_flags 60 "${hip_env[@]}" "$build/tests/test_stream_flags"
    run hip:example-pitch_linear_shift 60 "${hip_env[@]}" "$build/examples/pitch_linear_shift"
    run hip:example-bandwidth_test 60 "${hip_env[@]}" "$build/examples/bandwidth_test"
    run hip:example-streams_transpose 60 "${hip_env[@]}" "$build/examples/streams_transpose"
else
    echo "hip over CUDA                      not run (no HIP_OVER_CUDA_LIB)" >>"$summary"
fi

# 2. The probe: the driver's answers, the fake's, and the differences.
probe=$build/tests/fakes/cuda_probe
fake=$build/tests/fakes/libfakecuda.so
record=$root/tests/fakes/probe/h100-rows.txt
if [ -x "$probe" ] && [ -f "$fake" ]; then
    timeout -k 5 60 "$probe" "$libcuda" rows >"$out/probe-driver.txt" 2>"$out/probe-driver.err"
    st_driver=$?
    FAKE_CUDA_DEVICES=1 timeout -k 5 60 "$probe" "$fake" rows >"$out/probe-fake.txt" 2>/dev/null
    {
        echo "# driver ($libcuda) against the fake ($fake): '<' the driver, '>' the fake"
        diff "$out/probe-driver.txt" "$out/probe-fake.txt"
        echo "# driver against the record of predictions ($record)"
        diff <(grep -v '^#' "$record") "$out/probe-driver.txt"
    } >"$out/probe.diff" 2>&1
    differing=$(diff "$out/probe-driver.txt" "$out/probe-fake.txt" | grep -c '^<' || true)
    printf '%-34s %s (exit %d; %s answers differ from the fake)\n' "cuda_probe rows" \
        "$([ "$st_driver" -eq 0 ] && echo ran || echo failed)" "$st_driver" "$differing" >>"$summary"
    [ "$st_driver" -eq 0 ] || failed=1
else
    echo "cuda_probe rows                    not built (no cuda.h at build time)" >>"$summary"
    failed=1
fi

# 3. The benchmark: part (n) of gpumem-bench-gpu, against the driver's own calls in the same run.
bench=$build/tools/gpumem-bench-gpu
if [ -x "$bench" ]; then
    GPUMEM_CUDA_LIBRARY=$libcuda timeout -k 5 90 env "${env_cuda[@]}" "$bench" --parts n >"$out/bench-rows.txt" 2>&1
    st=$?
    printf '%-34s %s (exit %d)\n' "gpumem-bench-gpu --parts n" "$([ $st -eq 0 ] && echo ran || echo failed)" "$st" \
        >>"$summary"
    grep -E 'targets \(|NOT met' "$out/bench-rows.txt" | sed 's/^ */    /' >>"$summary"
    [ $st -eq 0 ] || failed=1
else
    echo "gpumem-bench-gpu                   not built (no cuda.h at build time)" >>"$summary"
    failed=1
fi

cat "$summary"
exit $failed
