#!/usr/bin/env bash
# gpumem-viz and gpumem-replay on a real GPU (CUDA backend), from a PyTorch run:
#
#   tools/device/gpu-viz.sh BUILD_DIR OUT_DIR
#
# BUILD_DIR: a meson build with the CUDA backend and the tools (BUILD_DIR/src/libgpumem.so,
# BUILD_DIR/tools/gpumem-replay).  Steps, each reported PASS, FAIL or NOT RUN in
# OUT_DIR/viz-gpu.txt with its output:
#   1 trace    an MLP trained 100 steps with PyTorch on gpumem (CUDAPluggableAllocator) under
#              GPUMEM_TRACE=OUT_DIR/torch-trace.json GPUMEM_BACKTRACE=1: the trace must be written
#   2 viz      gpumem-viz makes OUT_DIR/torch-trace.html; where chromium is installed, the page
#              renders without script errors and OUT_DIR/gpumem-viz-torch.png is its screenshot
#              (without chromium: copy torch-trace.html back and run, on a machine with it,
#              GPUMEM_VIZ_TRACE=torch-trace.json meson test -C build viz-browser; the screenshot
#              is build/tests/viz/viz-screenshot.png)
#   3 replay   gpumem-replay of that trace on the builtin and native pools, with the pool's
#              default release threshold and with UINT64_MAX
# A step whose module (torch) is missing or that finds no GPU is NOT RUN, not failed.
# Time: well under a minute.  Exit status: 0 when no step failed, 1 otherwise.
#
# SPDX-License-Identifier: MIT
set -uo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 BUILD_DIR OUT_DIR" >&2
    exit 2
fi
build=$(cd "$1" && pwd) || exit 2
mkdir -p "$2" && out=$(cd "$2" && pwd) || exit 2
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-python3}
report=$out/viz-gpu.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

export GPUMEM_LIBRARY=$build/src/libgpumem.so
export GPUMEM_BACKEND=cuda
export PYTHONPATH=$root/bindings/python${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1
trace=$out/torch-trace.json
page=$out/torch-trace.html
shot=$out/gpumem-viz-torch.png
rm -f "$trace" "$page" "$shot"

cat >"$work/train.py" <<'PY'
import os
import sys
try:
    import torch
except Exception as e:
    print("NOT RUN: torch unavailable (%s: %s)" % (type(e).__name__, e))
    sys.exit(77)
if not torch.cuda.is_available():
    print("NOT RUN: torch.cuda.is_available() is False")
    sys.exit(77)
import gpumem
gpumem.use_torch_allocator()   # before any CUDA allocation of this process
torch.manual_seed(0)
dev = torch.device("cuda")
X = torch.randn(8192, 64, device=dev)
Y = torch.sin(X[:, :1]) + 0.1 * X[:, 1:2] ** 2
model = torch.nn.Sequential(torch.nn.Linear(64, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                            torch.nn.ReLU(), torch.nn.Linear(1024, 1)).to(dev)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(100):
    idx = torch.randint(0, X.shape[0], (1024 if step % 10 else 4096,), device=dev)
    loss = torch.nn.functional.mse_loss(model(X[idx]), Y[idx])
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
torch.cuda.synchronize()
print("loss %.6g; gpumem stream-ordered allocations: %d" % (loss.item(), gpumem.stats().alloc_count["stream_ordered"]))
# The trace is written by gpumem_finalize (or at exit); PyTorch frees its last blocks from C++
# static destructors whose order against libgpumem's is not ours, so free what we hold, finalize,
# and leave without running them.
del model, opt, X, Y, loss, idx
torch.cuda.synchronize()
gpumem.finalize()
sys.stdout.flush()
os._exit(0)
PY

declare -a names results
failed=0
: >"$work/details"
step() {  # step NAME RC LOG [DETAIL]
    local name=$1 rc=$2 log=$3 detail=${4:-}
    case $rc in
    0) results+=("PASS") ;;
    77) results+=("NOT RUN") ;;
    *) results+=("FAIL"); failed=1 ;;
    esac
    names+=("$name${detail:+: $detail}")
    { echo "=== $name (exit $rc)"; cat "$log"; echo; } >>"$work/details"
}

# 1 trace
(cd "$work" && GPUMEM_TRACE=$trace GPUMEM_BACKTRACE=1 timeout 120 "$py" train.py) >"$work/train.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && [ ! -s "$trace" ]; then
    echo "the run passed but wrote no $trace (is the GPUMEM_TRACE writer in this build?)" >>"$work/train.log"
    rc=1
fi
step "1 trace" $rc "$work/train.log" "$( [ -s "$trace" ] && echo "$(wc -l <"$trace") lines, $(du -h "$trace" | cut -f1)")"

# 2 viz
if [ -s "$trace" ]; then
    "$py" "$root/bindings/python/gpumem/viz.py" "$trace" -o "$page" >"$work/viz.log" 2>&1
    rc=$?
    browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
    if [ $rc -eq 0 ] && [ -n "$browser" ]; then
        prof=$work/profile
        "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --user-data-dir="$prof" \
            --virtual-time-budget=10000 --dump-dom "file://$page" 2>/dev/null >"$work/dom.html"
        if grep -q 'data-status="rendered"' "$work/dom.html" &&
            grep -q '<pre id="gpumem-viz-errors" class="warn"></pre>' "$work/dom.html"; then
            "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --user-data-dir="$prof" \
                --hide-scrollbars --window-size=1280,1700 --virtual-time-budget=10000 \
                --screenshot="$shot" "file://$page" >>"$work/viz.log" 2>&1
            [ -s "$shot" ] || rc=1
        else
            grep -o 'gpumem-viz-status[^<]*\|script error[^<]*' "$work/dom.html" >>"$work/viz.log"
            rc=1
        fi
        step "2 viz" $rc "$work/viz.log" "$page$( [ -s "$shot" ] && echo ", $shot")"
    elif [ $rc -eq 0 ]; then
        echo "NOT RUN: no chromium here; copy $page back and check it there (see the header of $0)" >>"$work/viz.log"
        step "2 viz (page made; browser check not run: no chromium)" 0 "$work/viz.log" "$page"
    else
        step "2 viz" $rc "$work/viz.log"
    fi
else
    echo "NOT RUN: no trace" >"$work/viz.log"
    step "2 viz" 77 "$work/viz.log"
fi

# 3 replay
if [ -s "$trace" ]; then
    { timeout 300 "$build/tools/gpumem-replay" --repeat 9 "$trace" &&
        timeout 300 "$build/tools/gpumem-replay" --repeat 9 --release-threshold 18446744073709551615 "$trace"; } \
        >"$work/replay.log" 2>&1
    step "3 replay" $? "$work/replay.log"
else
    echo "NOT RUN: no trace" >"$work/replay.log"
    step "3 replay" 77 "$work/replay.log"
fi

{
    echo "gpumem-viz and gpumem-replay on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null)"
    for i in "${!names[@]}"; do
        printf '%-8s %s\n' "${results[$i]}" "${names[$i]}"
    done
    echo
    cat "$work/details"
} >"$report"
cat "$report"
exit $failed
