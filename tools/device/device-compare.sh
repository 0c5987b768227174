#!/usr/bin/env bash
# Before and after a change, on the lent GPU machine, in one go: builds an
# older source tree next to this one and runs each benchmark on both,
# alternating (before, after, before, after) so that drift of the machine
# shows instead of hiding in one side.  Each benchmark measures gpumem against
# the vendor call in its own run; compare the ratios, not the raw times.
#
#   tools/device/device-compare.sh BEFORE_SRC [ROUNDS]
#
# BEFORE_SRC: a source tree of the older commit (e.g. `git archive REV | tar x -C .before`),
# carried to the machine.  Writes $OUT/compare.txt (every benchmark's output,
# labelled) and $OUT/compare-build.log.  Uses build-device/ (this tree, as
# tools/device/device-run.sh builds it) and build-before/ (the older tree).
# SPDX-License-Identifier: MIT
set -uo pipefail
cd "$(dirname "$0")/../.."
before_src=$(cd "${1:?usage: $0 BEFORE_SRC [ROUNDS]}" && pwd) || exit 2
rounds=${2:-2}
out=${OUT:-$PWD/device-out}
mkdir -p "$out"
report=$out/compare.txt
blog=$out/compare-build.log
command -v nvcc >/dev/null || export PATH=$PATH:/usr/local/cuda/bin

# gpumem-bench-gpu in the build of SRC: older trees built it in tools/bench-gpu/.
bench_gpu_target() { # SRC
    if [ -f "$1/tools/bench-gpu/meson.build" ]; then echo tools/bench-gpu/gpumem-bench-gpu; else echo tools/gpumem-bench-gpu; fi
}
build() { # SRC DIR
    [ -f "$2/build.ninja" ] || meson setup "$2" "$1" -Dbuildtype=release -Dbindings=disabled >>"$blog" 2>&1 || return 1
    ninja -C "$2" tools/gpumem-bench-pool "$(bench_gpu_target "$1")" >>"$blog" 2>&1
}
build "$PWD" build-device || { tail -n 40 "$blog"; exit 1; }
build "$before_src" "$PWD/build-before" || { tail -n 40 "$blog"; exit 1; }

{
    echo "date:    $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "after:   $(git rev-parse --short HEAD 2>/dev/null || echo '?') (this tree)"
    echo "before:  $(cat "$before_src/.commit" 2>/dev/null || echo "$before_src")"
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    echo "rounds:  $rounds (before, after alternating)"
} | tee "$report"

for round in $(seq 1 "$rounds"); do
    for side in before after; do
        dir=build-$side src=$before_src
        [ $side = after ] && dir=build-device src=$PWD
        echo "==== round $round, $side: gpumem-bench-gpu --parts ${BENCH_GPU_PARTS:-abcdf}" | tee -a "$report"
        timeout 240 "$dir/$(bench_gpu_target "$src")" --parts "${BENCH_GPU_PARTS:-abcdf}" >>"$report" 2>&1
        echo "==== round $round, $side: GPUMEM_BACKEND=host gpumem-bench-pool --quick --threads 16" | tee -a "$report"
        GPUMEM_BACKEND=host timeout 120 "$dir/tools/gpumem-bench-pool" --quick --threads 16 >>"$report" 2>&1
    done
done
echo "compare: done" | tee -a "$report"
