#!/usr/bin/env bash
# gpumem's hip backend on NVIDIA GPUs, over libhipovercuda (tests/hip-over-cuda: the HIP runtime
# ABI implemented over CUDA), in one call of at most 9 minutes on a machine with two GPUs:
#
#   tools/device/hip-over-cuda.sh BUILD_DIR OUT_DIR [PART,PART,...]
#
# Parts (default build,info,trios,hip-1,hip-2,cuda-1; each is skipped, "not run", when the
# time left cannot hold it):
#   build         meson setup (CUDA backend, hip backend, libhipovercuda, the kernel tests and
#                 the HIP reference programs; HIP's headers from HIP_INCLUDE_DIR, default
#                 <repo>/.hip-include, a copy of Debian's /usr/include/hip as <dir>/hip) + ninja
#                 of what the other parts run; a second call reuses BUILD_DIR (name `build`
#                 again: on a warm machine it only checks, on a fresh one it builds)
#   info          gpumem-info on the hip backend over libhipovercuda (GPUMEM_LOG=debug), and on cuda
#   trios         tests/hip-reference: each HIP program, its gpumem translation on cuda and on
#                 hip over libhipovercuda; every value the guide defines must agree
#   hip-1         the GPU suite's step 1 (every conformance test and example, and the kernel
#                 tests) on the hip backend over libhipovercuda, CUDA_VISIBLE_DEVICES=0
#   hip-2         the same on both GPUs (CUDA_VISIBLE_DEVICES=0,1), then tests/gpu/multi_gpu_test
#                 and its --ipc form
#   cuda-1        step 1 on the cuda backend, one GPU, for the differences
#   hip-fallback  steps 2-fallback and 3-deny on the hip backend, one GPU     (not by default)
#   hip-ipc       step 4-ipc (two processes) on the hip backend, one GPU      (not by default)
#   hip-rocm5     step 1 on the hip backend with HIP_OVER_CUDA_VERSION=50221153 (ROCm 5 numbers,
#                 no VMM), one GPU                                           (not by default)
#   cuda-2        step 1 and multi_gpu_test on the cuda backend, both GPUs   (not by default)
#
# Writes at most eight files to OUT_DIR: summary.txt (each part's PASS/FAIL/SKIP/not run, every
# test's verdict with its reason, the trios' tables), build.log, info.txt, trios.log and one
# suite-<part>.log per suite part (every test's whole output): name at most four suite parts in
# one call.  summary.txt also lists the tests whose verdict differs between hip-1 and cuda-1,
# hip-2 and cuda-2, hip-1 and hip-2.  HIP_OVER_CUDA_BUDGET_S (530)
# is the whole call's budget.  NVLink multicast stays off (NCCL_NVLS_ENABLE=0); nothing here
# calls cuMulticastCreate.  Exit 0 when nothing failed.
#
# SPDX-License-Identifier: MIT
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
set -uo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    echo "usage: $0 BUILD_DIR OUT_DIR [build,info,trios,hip-1,hip-2,cuda-1,hip-fallback,hip-ipc,hip-rocm5,cuda-2]" >&2
    exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=tools/device/steps.sh
. "$here/steps.sh"
mkdir -p "$1"
steps_dirs hip-over-cuda "$1" "$2"
wanted=,${3:-build,info,trios,hip-1,hip-2,cuda-1},
want() { in_list "$wanted" "$1"; }

t_start=$SECONDS
budget=${HIP_OVER_CUDA_BUDGET_S:-530}
left() { echo $((budget - (SECONDS - t_start))); }
hip_include=${HIP_INCLUDE_DIR:-$repo/.hip-include}
runtime=$build/tests/hip-over-cuda/libhipovercuda.so
summary=$out/summary.txt
parts=()    # "PART: VERDICT (details)"
details=()  # further lines for the summary, per part
failed=0
command -v nvcc >/dev/null 2>&1 || export PATH=$PATH:/usr/local/cuda/bin
unset GPUMEM_BACKEND GPUMEM_DISABLE GPUMEM_FALLBACK GPUMEM_HIP_LIBRARY HIP_OVER_CUDA_VERSION CUDA_VISIBLE_DEVICES

header=$(
    echo "hip-over-cuda: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), commit $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?'), parts ${wanted//,/ }"
    echo "build:     $build"
    echo "runtime:   $runtime (HIP_OVER_CUDA_VERSION ${HIP_OVER_CUDA_VERSION:-70100000, the default})"
    steps_gpus index,name,driver_version,memory.total
    command -v nvcc >/dev/null 2>&1 && nvcc --version 2>&1 | tail -n 1 | sed 's/^/nvcc:      /'
    true
)
echo "$header"

# The least time each part needs (its multi-GPU kernel tests included), in the order they run.
part_order=(trios hip-1 hip-2 cuda-1 hip-fallback hip-ipc hip-rocm5 cuda-2)
declare -A part_min=([trios]=60 [hip-1]=40 [hip-2]=100 [cuda-1]=40 [hip-fallback]=40 [hip-ipc]=20
    [hip-rocm5]=40 [cuda-2]=100)
# reserve_after PART: the least time the wanted parts after PART need.
reserve_after() {
    local p after=0 sum=0
    for p in "${part_order[@]}"; do
        if [ "$after" = 1 ] && want "$p"; then sum=$((sum + part_min[$p])); fi
        [ "$p" = "$1" ] && after=1
    done
    echo "$sum"
}

# record PART VERDICT DETAILS: one line of the summary's table.
record() {
    parts+=("$(printf '%-13s %-8s %s' "$1" "$2" "$3")")
    case $2 in PASS | SKIP) ;; *) failed=1 ;; esac
    echo "hip-over-cuda: $1: $2 $3 ($(($SECONDS - t_start)) s elapsed)"
}

# verdicts LOG: every test of a gpu-suite log, "PASS|FAIL|SKIP name (seconds): first reason line".
verdicts() {
    python3 - "$1" <<'EOF'
import re, sys
name, reason, fail_line = None, "", ""
for line in open(sys.argv[1], errors="replace"):
    line = line.rstrip("\n")
    m = re.match(r"^== [^:]+: (.*): exit (\d+) \((\d+) s\)$", line)
    if m:
        rc = int(m.group(2))
        verdict = "PASS" if rc == 0 else "SKIP" if rc == 77 else "FAIL"
        why = reason if rc == 77 else fail_line if rc != 0 else ""
        if rc in (124, 137):
            why = "timed out. " + why
        print(f"  {verdict} {m.group(1)} ({m.group(3)} s){': ' + why[:240] if why else ''}")
        name, reason, fail_line = None, "", ""
        continue
    m = re.match(r"^== [^:]+: (.*): not run", line)
    if m:
        print(f"  NOT RUN {m.group(1)}: time budget spent")
        continue
    if line.startswith("== "):
        name, reason, fail_line = line, "", ""
        continue
    if not reason and re.search(r"SKIP|skipped|not available|not supported", line, re.I):
        reason = line.strip()
    if not fail_line and re.search(r"FAIL|[Ee]rror|Assertion|Segmentation|Aborted|expected", line):
        fail_line = line.strip()
EOF
}

# suite PART LOGNAME MIN_S MAX_S STEPS VISIBLE BACKEND [VAR=VALUE...]: tools/device/gpu-suite.sh
# STEPS with CUDA_VISIBLE_DEVICES=VISIBLE on BACKEND, its budget the smaller of MAX_S and the
# time left less RESERVE_S (kept for the parts after it), or all the time left where that is
# below MIN_S; not run when even that is below MIN_S.
suite() {
    local part=$1 logname=$2 min_s=$3 max_s=$4 steps=$5 visible=$6 backend=$7
    shift 7
    # The reserve only shortens a part: one that still fits runs, and the later ones give way.
    local avail=$(($(left) - ${RESERVE_S:-0}))
    [ "$avail" -lt "$min_s" ] && avail=$(left)
    [ "$avail" -gt "$max_s" ] && avail=$max_s
    if [ "$avail" -lt "$min_s" ]; then
        record "$part" "NOT RUN" "(time: ${avail} s left for it, needs $min_s)"
        return
    fi
    local tmp=$build/hip-over-cuda-out/$part
    rm -rf "$tmp" && mkdir -p "$tmp"
    local extra=()
    [ "$backend" = hip ] && extra=(GPUMEM_HIP_LIBRARY="$runtime")
    env CUDA_VISIBLE_DEVICES="$visible" GPU_SUITE_BACKEND="$backend" GPU_SUITE_STEPS="$steps" \
        GPU_SUITE_BUDGET_S="$avail" ${extra[@]+"${extra[@]}"} "$@" \
        bash "$here/gpu-suite.sh" "$build" "$tmp" >"$tmp/stdout.txt" 2>&1
    local rc=$?
    cp "$tmp/conformance.log" "$out/suite-$logname.log" 2>/dev/null || : >"$out/suite-$logname.log"
    local closing
    closing=$(grep -m1 '^gpu-suite: [0-9]* passed' "$tmp/summary.txt" 2>/dev/null || tail -n 1 "$tmp/stdout.txt")
    record "$part" "$([ $rc = 0 ] && echo PASS || echo FAIL)" "(${closing#gpu-suite: }; suite-$logname.log)"
    details+=("== $part: GPU_SUITE_BACKEND=$backend CUDA_VISIBLE_DEVICES=$visible GPU_SUITE_STEPS=$steps $*")
    verdicts "$out/suite-$logname.log" >"$tmp/verdicts.txt"
    details+=("$(cat "$tmp/verdicts.txt")")
    details+=("$(sed -n '/^step /,/^total time/p' "$tmp/summary.txt" 2>/dev/null)")
}

# multi PART LOGNAME BACKEND: tests/gpu/multi_gpu_test and --ipc on both GPUs, appended to the log.
multi() {
    local part=$1 log=$out/suite-$2.log backend=$3 arg rc verdict why
    local exe=$build/tests/gpu/multi_gpu_test
    for arg in "" --ipc; do
        local name="tests/gpu/multi_gpu_test${arg:+ $arg}"
        if [ ! -x "$exe" ]; then
            record "$part-multi${arg:+ $arg}" FAIL "($name not built)"
            continue
        fi
        if [ "$(left)" -lt 40 ]; then
            record "$part-multi${arg:+ $arg}" "NOT RUN" "(time)"
            continue
        fi
        echo "== $part: $name: GPUMEM_BACKEND=$backend" >>"$log"
        local tmp
        tmp=$(mktemp)
        if [ "$backend" = hip ]; then
            env CUDA_VISIBLE_DEVICES=0,1 GPUMEM_BACKEND=hip GPUMEM_HIP_LIBRARY="$runtime" \
                timeout -k 5 60 "$exe" $arg </dev/null >"$tmp" 2>&1
        else
            env CUDA_VISIBLE_DEVICES=0,1 GPUMEM_BACKEND=cuda timeout -k 5 60 "$exe" $arg </dev/null >"$tmp" 2>&1
        fi
        rc=$?
        cat "$tmp" >>"$log"
        echo "== $part: $name: exit $rc" >>"$log"
        verdict=$(steps_outcome $rc)
        why=$(grep -m1 -E 'SKIP|FAIL|[Ee]rror' "$tmp" | cut -c1-160)
        rm -f "$tmp"
        case $verdict in
        passed) record "$part-multi${arg:+ $arg}" PASS "($name)" ;;
        skipped) record "$part-multi${arg:+ $arg}" SKIP "($name: $why)" ;;
        *) record "$part-multi${arg:+ $arg}" FAIL "($name exit $rc: $why)" ;;
        esac
    done
}

write_summary() {
    {
        echo "$header"
        echo
        printf '%-13s %-8s %s\n' part verdict details
        printf '%s\n' ${parts[@]+"${parts[@]}"}
        echo
        printf '%s\n' ${details[@]+"${details[@]}"}
        echo
        echo "total time: $((SECONDS - t_start)) s (budget $budget s)"
        [ "$failed" = 0 ] && echo "hip-over-cuda: nothing failed" || echo "hip-over-cuda: something failed or did not run (above)"
    } >"$summary"
}

# ---------------------------------------------------------------------------------------------
if want build; then
    blog=$out/build.log
    : >"$blog"
    ok=1
    if [ ! -f "$hip_include/hip/hip_runtime_api.h" ] || [ ! -d "$hip_include/hip/nvidia_detail" ]; then
        echo "no HIP headers at $hip_include/hip (copy Debian's /usr/include/hip there, or set HIP_INCLUDE_DIR)" >>"$blog"
        ok=0
    elif [ ! -f "$build/build.ninja" ]; then
        # Meson refuses include directories inside the source tree by absolute path, and the
        # carried copy is there: configure with a copy outside it.
        hip_outside=${TMPDIR:-/tmp}/gpumem-hip-include
        rm -rf "$hip_outside" && mkdir -p "$hip_outside" && cp -r "$hip_include/hip" "$hip_outside/" || ok=0
        [ "$ok" = 1 ] && { steps_timed 120 "$blog" meson setup "$build" -Dbuildtype=release -Dcuda=enabled -Dnvcc=enabled \
            -Dhip=enabled -Dhipheaders="$hip_outside" -Dhip_test_runtime=enabled -Dbindings=disabled || ok=0; }
    fi
    if [ "$ok" = 1 ]; then
        # Only what the parts run: the conformance tests, examples, kernel tests, reference
        # programs, libhipovercuda and gpumem-info (not the fakes, fuzzers or benchmarks).
        targets=$(cd "$build" && meson introspect --targets 2>/dev/null | python3 -c '
import json, os, sys
for t in json.load(sys.stdin):
    for f in t["filename"]:
        rel = os.path.relpath(f, os.getcwd())
        d, n = os.path.split(rel)
        if (d == "tests" and n.startswith("test_")) or d in ("examples", "tests/gpu", "tests/hip-reference") \
                or n in ("libhipovercuda.so", "gpumem-info"):
            print(rel)')
        # shellcheck disable=SC2086 # one target per word
        steps_timed $(($(left) - 200 > 120 ? $(left) - 200 : 120)) "$blog" ninja -C "$build" $targets || ok=0
    fi
    if [ "$ok" = 1 ] && [ -f "$runtime" ]; then
        record build PASS "($((SECONDS - t_start)) s; build.log)"
    else
        record build FAIL "(build.log: $(grep -m1 -E 'error|ERROR|no HIP' "$blog" | cut -c1-160))"
        details+=("$(tail -n 30 "$blog")")
        write_summary
        cat "$summary"
        exit 1
    fi
fi

if want info; then
    info=$out/info.txt
    echo "== GPUMEM_BACKEND=hip GPUMEM_HIP_LIBRARY=$runtime GPUMEM_LOG=debug gpumem-info" >"$info"
    GPUMEM_BACKEND=hip GPUMEM_HIP_LIBRARY=$runtime GPUMEM_LOG=debug timeout 30 "$build/tools/gpumem-info" >>"$info" 2>&1
    info_rc=$?
    echo "== exit $info_rc" >>"$info"
    echo "== GPUMEM_BACKEND=cuda gpumem-info" >>"$info"
    GPUMEM_BACKEND=cuda timeout 30 "$build/tools/gpumem-info" >>"$info" 2>&1
    echo "== exit $?" >>"$info"
    if [ "$info_rc" = 0 ]; then
        record info PASS "(info.txt)"
    else
        record info FAIL "(info.txt: $(grep -m1 -E 'unavailable|failed' "$out/info.txt" | cut -c1-160))"
    fi
fi

if want trios; then
    tlog=$out/trios.log
    : >"$tlog"
    agree=0 disagree=0 skipped=0 notrun=0
    trio_lines=()
    for name in explicit pinned managed stream_ordered soma pool trim statistics vmm; do
        # About 10 s a trio; the suites after them keep their least time.
        if [ "$(left)" -lt $(($(reserve_after trios) + 15)) ]; then
            notrun=$((notrun + 1))
            trio_lines+=("  NOT RUN $name (time)")
            continue
        fi
        res=$(timeout -k 5 100 python3 "$repo/tests/hip-reference/compare.py" --name "$name" --timeout 30 \
            --reference "$build/tests/hip-reference/${name}_hip" --translation "$build/tests/hip-reference/${name}_gpumem" \
            --library "$runtime" --log "$tlog" 2>&1)
        rc=$?
        echo "$res" >>"$tlog"
        trio_lines+=("$res")
        case $rc in
        0) agree=$((agree + 1)) ;;
        77) skipped=$((skipped + 1)) ;;
        *) disagree=$((disagree + 1)) ;;
        esac
    done
    verdict=PASS
    [ "$agree" = 0 ] && verdict=SKIP
    [ $((disagree + notrun)) -gt 0 ] && verdict=FAIL
    record trios "$verdict" "($agree agree, $disagree disagree or failed, $skipped skipped, $notrun not run; trios.log)"
    details+=("== trios: the HIP program | its gpumem translation on cuda | on hip over libhipovercuda")
    details+=("$(printf '%s\n' ${trio_lines[@]+"${trio_lines[@]}"})")
fi

# Each part leaves the time the wanted parts after it need at least (their MIN_S below), so
# that all of them run, shortened, rather than the first ones alone; where the time cannot
# hold them all, the earlier ones run and the later ones are "not run".
if want hip-1; then
    RESERVE_S=$(reserve_after hip-1) suite hip-1 hip-1gpu 40 100 1-cuda 0 hip
fi
if want hip-2; then
    # (and 40 s for the multi-GPU kernel tests after the suite)
    RESERVE_S=$(($(reserve_after hip-2) + 40)) suite hip-2 hip-2gpu 60 160 1-cuda 0,1 hip
    multi hip-2 hip-2gpu hip
fi
if want cuda-1; then
    RESERVE_S=$(reserve_after cuda-1) suite cuda-1 cuda-1gpu 40 90 1-cuda 0 cuda
fi
if want hip-fallback; then
    RESERVE_S=$(reserve_after hip-fallback) suite hip-fallback hip-fallback 40 150 2-fallback,3-deny 0 hip
fi
if want hip-ipc; then
    RESERVE_S=$(reserve_after hip-ipc) suite hip-ipc hip-ipc 20 60 4-ipc 0 hip
fi
if want hip-rocm5; then
    RESERVE_S=$(reserve_after hip-rocm5) suite hip-rocm5 hip-rocm5 40 100 1-cuda 0 hip HIP_OVER_CUDA_VERSION=50221153
fi
if want cuda-2; then
    RESERVE_S=$(($(reserve_after cuda-2) + 40)) suite cuda-2 cuda-2gpu 60 160 1-cuda 0,1 cuda
    multi cuda-2 cuda-2gpu cuda
fi

# differ A B: the tests whose verdicts differ between suite parts A and B (where both ran).
differ() {
    local a=$build/hip-over-cuda-out/$1/verdicts.txt b=$build/hip-over-cuda-out/$2/verdicts.txt
    [ -f "$a" ] && [ -f "$b" ] || return 0
    details+=("== tests whose verdict differs between $1 and $2 (the same tests, another backend or device count)")
    details+=("$(python3 - "$a" "$b" "$1" "$2" <<'EOF'
import re, sys
def read(path):
    out = {}
    for line in open(path):
        m = re.match(r"^  (PASS|FAIL|SKIP|NOT RUN) (\S+)", line)
        if m:
            out[m.group(2)] = m.group(1)
    return out
a, b = read(sys.argv[1]), read(sys.argv[2])
rows = [f"  {t}: {a.get(t, '-')} on {sys.argv[3]}, {b.get(t, '-')} on {sys.argv[4]}"
        for t in sorted(set(a) | set(b)) if a.get(t) != b.get(t)]
print("\n".join(rows) if rows else "  none")
EOF
)")
}
differ hip-1 cuda-1
differ hip-2 cuda-2
differ hip-1 hip-2

write_summary
echo
sed -n '/^part /,/^$/p' "$summary"
echo "total time: $((SECONDS - t_start)) s"
[ "$failed" = 0 ]
