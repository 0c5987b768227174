#!/usr/bin/env bash
# The API fuzzer (tests/fuzz/fuzz_api) on the real driver: the cuda backend with every device
# visible and with one, and the hip backend over libhipovercuda where HIP_OVER_CUDA_LIB names
# it, each in the plain, DISABLE and deny settings.  Seeds run in blocks until the time budget
# is spent; a finding (a crash, a hang, a wrong status, data or book) is recorded with its seed
# and the next block starts after it, so one finding never hides the others.
#
#   tools/device/gpu-fuzz.sh BUILD_DIR OUT_DIR
#
# GPU_FUZZ_BUDGET_S (240): the whole run's budget, shared evenly by the backends and settings.
# GPU_FUZZ_STEPS (500): calls per seed.  GPU_FUZZ_SETTINGS: the settings instead of those three,
# separated by '|', "plain" for none (tools/device/imported.sh: "plain|GPUMEM_DISABLE=... ...").  Writes OUT_DIR/fuzz.txt: per backend and setting the
# seeds run, and each finding with the command that reproduces it; the last line
# "fuzz: N seeds, M findings".  Exit 0 when there were no findings.
#
# SPDX-License-Identifier: MIT
set -uo pipefail
if [ $# -ne 2 ]; then
    echo "usage: $0 BUILD_DIR OUT_DIR" >&2
    exit 2
fi
build=$1
out=$2
mkdir -p "$out"
report=$out/fuzz.txt
: >"$report"
fuzz=$build/tests/fuzz/fuzz_api
[ -x "$fuzz" ] || { echo "fuzz: no $fuzz" | tee -a "$report"; exit 1; }
budget=${GPU_FUZZ_BUDGET_S:-240}
steps=${GPU_FUZZ_STEPS:-500}
export GPUMEM_LOG=error NCCL_NVLS_ENABLE=0

backends=("GPUMEM_BACKEND=cuda")
count=$(nvidia-smi -L 2>/dev/null | wc -l)
[ "$count" -gt 1 ] && backends+=("GPUMEM_BACKEND=cuda CUDA_VISIBLE_DEVICES=0")
[ -n "${HIP_OVER_CUDA_LIB:-}" ] && [ -f "$HIP_OVER_CUDA_LIB" ] &&
    backends+=("GPUMEM_BACKEND=hip GPUMEM_HIP_LIBRARY=$HIP_OVER_CUDA_LIB")
disable=GPUMEM_DISABLE=managed,pools,vmm,ipc,host_register
settings=("" "$disable" "$disable GPUMEM_FALLBACK=deny")
if [ -n "${GPU_FUZZ_SETTINGS:-}" ]; then
    IFS='|' read -r -a settings <<<"$GPU_FUZZ_SETTINGS"
    for i in "${!settings[@]}"; do [ "${settings[i]}" = plain ] && settings[i]=""; done
fi
slot=$((budget / (${#backends[@]} * ${#settings[@]})))
total_seeds=0
findings=0
for backend in "${backends[@]}"; do
    for setting in "${settings[@]}"; do
        seed=1
        start=$SECONDS
        block=5
        while [ $((SECONDS - start)) -lt "$slot" ]; do
            last=$((seed + block - 1))
            log=$(mktemp)
            # shellcheck disable=SC2086 # word lists of VAR=value
            timeout 120 env $backend $setting "$fuzz" --seeds "$seed-$last" --steps "$steps" --quiet >"$log" 2>&1
            rc=$?
            if [ $rc -eq 0 ]; then
                total_seeds=$((total_seeds + block))
                seed=$((last + 1))
            else
                # The seed that failed: the fuzzer prints it; a crash or hang names none, so the
                # block is re-run a seed at a time to find it.
                bad=$(grep -oE 'seed [0-9]+' "$log" | head -n 1 | grep -oE '[0-9]+')
                if [ -z "$bad" ]; then
                    for ((t = seed; t <= last; t++)); do
                        # shellcheck disable=SC2086
                        timeout 60 env $backend $setting "$fuzz" --seeds "$t-$t" --steps "$steps" --quiet >"$log" 2>&1 ||
                            { bad=$t; rc=$?; break; }
                    done
                fi
                bad=${bad:-$seed}
                findings=$((findings + 1))
                total_seeds=$((total_seeds + bad - seed + 1))
                {
                    echo "FINDING ($([ $rc -eq 124 ] && echo hang || ([ $rc -gt 128 ] && echo "signal $((rc - 128))") || echo "exit $rc")): $backend $setting seed $bad"
                    echo "  reproduce: env $backend $setting $fuzz --seeds $bad-$bad --steps $steps"
                    tail -n 30 "$log" | sed 's/^/  | /'
                } >>"$report"
                seed=$((bad + 1))
            fi
            rm -f "$log"
        done
        echo "$backend ${setting:-(plain)}: seeds 1-$((seed - 1)), $steps steps each, $((SECONDS - start)) s" >>"$report"
    done
done
echo "fuzz: $total_seeds seeds, $findings findings" >>"$report"
cat "$report"
[ "$findings" -eq 0 ]
