#!/usr/bin/env bash
# A longer run of the API-sequence fuzzer (tests/fuzz/fuzz_api.c) than CI's:
# every backend CI has (host, fake CUDA, fake HIP, each also with deferred
# stream work) in the plain, DISABLE and deny settings, under ASan+UBSan.
#
#   tools/ci/fuzz-campaign.sh [SEEDS] [STEPS]     (default 1-1000, 2000 steps)
#
# Stops at the first failing setting and prints the
# command that reproduces it.  Builds in build-fuzz/.
# SPDX-License-Identifier: MIT
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tools/ci/common.sh
. "$here/common.sh"
cd "$here/../.."

seeds=${1:-1-1000}
steps=${2:-2000}

ensure_build_tools
configure_build build-fuzz -Db_sanitize=address,undefined -Db_lundef=false -Dbindings=disabled
meson compile -C build-fuzz tests/fuzz/fuzz_api tests/fakes/fakecuda tests/fakes/fakehip 2>/dev/null ||
    meson compile -C build-fuzz
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 GPUMEM_LOG=error

b=build-fuzz
backends=("GPUMEM_BACKEND=host")
[ -f $b/tests/fakes/libfakecuda.so ] && backends+=(
    "GPUMEM_BACKEND=cuda GPUMEM_CUDA_LIBRARY=$b/tests/fakes/libfakecuda.so"
    "GPUMEM_BACKEND=cuda GPUMEM_CUDA_LIBRARY=$b/tests/fakes/libfakecuda.so FAKE_CUDA_DEFER=1 FAKE_CUDA_DEVICES=2")
[ -f $b/tests/fakes/libfakehip.so ] && backends+=(
    "GPUMEM_BACKEND=hip GPUMEM_HIP_LIBRARY=$b/tests/fakes/libfakehip.so"
    "GPUMEM_BACKEND=hip GPUMEM_HIP_LIBRARY=$b/tests/fakes/libfakehip.so FAKE_HIP_DEFER=1 FAKE_HIP_DEVICES=3")
disable=GPUMEM_DISABLE=managed,pools,vmm,ipc,host_register
settings=("" "$disable" "$disable GPUMEM_FALLBACK=deny")

start=$SECONDS
for backend in "${backends[@]}"; do
    for setting in "${settings[@]}"; do
        echo "== $backend $setting: seeds $seeds, $steps steps"
        # shellcheck disable=SC2086 # word lists of VAR=value
        if ! env $backend $setting $b/tests/fuzz/fuzz_api --seeds "$seeds" --steps "$steps" --quiet; then
            echo "reproduce: env $backend $setting $b/tests/fuzz/fuzz_api (with the seed and steps printed above)"
            exit 1
        fi
    done
done
echo "fuzz campaign: ${#backends[@]} backends x ${#settings[@]} settings, seeds $seeds, $steps steps: clean in $((SECONDS - start)) s"
