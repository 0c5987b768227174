#!/usr/bin/env python3
"""PyTorch's allocation failures under gpumem, on a GPU: an error that carries gpumem's verdict,
never a tensor without memory.

    python3 tools/device/torch-oom.py BUILD_DIR

BUILD_DIR: a meson build with the CUDA backend (BUILD_DIR/src/libgpumem.so; the Python package
comes from bindings/python).  Each case runs in a child process with GPUMEM_LIMIT=64M and asks
for a 256 MiB tensor:

1. the process-wide hook (gpumem.use_torch_allocator(), gpumem_pluggable_malloc_or_throw),
   uncaught: the child dies of a RuntimeError whose text begins "CUDA out of memory." and carries
   the verdict of gpumem.last_oom_report(), which names GPUMEM_LIMIT;
2. the same, caught: the verdict is in str(e); with the remedy followed (the limit raised by the
   report's limit_raise) the tensor is allocated;
3. a MemPool (gpumem.torch_mem_pool): PyTorch's caching allocator raises torch.OutOfMemoryError,
   and gpumem's warning with the verdict is on stderr;
4. evidence for the hook's design: the NULL-returning gpumem_pluggable_malloc under
   CUDAPluggableAllocator; whether PyTorch raises, or hands out a tensor whose data_ptr is 0
   (printed as a figure, not a check: it is PyTorch's behaviour).

Each check prints "PASS: ..." or "FAIL: ..."; the last line is "torch-oom: PASS" (exit 0) or
"torch-oom: FAIL" (exit 1).

SPDX-License-Identifier: MIT
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from checks import report, verdict  # noqa: E402

HOOK = """
import sys, torch, gpumem
gpumem.use_torch_allocator()
x = torch.ones(1 << 20, device='cuda')  # 4 MiB, under the limit
torch.cuda.synchronize()
def ask():
    return torch.empty(256 << 20, dtype=torch.uint8, device='cuda')
"""

UNCAUGHT = HOOK + """
try:
    ask()
except RuntimeError:
    r = gpumem.last_oom_report()
    print('verdict:', r['verdict'] if r else '', flush=True)
ask()
"""

CAUGHT = HOOK + """
try:
    t = ask()
    print('no error: data_ptr', t.data_ptr())
except RuntimeError as e:
    r = gpumem.last_oom_report()
    print('type:', type(e).__name__, flush=True)
    print('verdict_in_text:', bool(r) and r['verdict'] in str(e), flush=True)
    print('starts:', str(e).startswith('CUDA out of memory.'), flush=True)
    print('limit_raise:', r['limit_raise'].bytes, r['limit_raise'].fits, flush=True)
"""

MEMPOOL = """
import torch, gpumem
pool = gpumem.torch_mem_pool()
with torch.cuda.use_mem_pool(pool):
    try:
        t = torch.empty(256 << 20, dtype=torch.uint8, device='cuda')
        print('no error: data_ptr', t.data_ptr())
    except torch.OutOfMemoryError as e:
        print('type: OutOfMemoryError', flush=True)
"""

NULL_HOOK = """
import torch, gpumem
alloc = torch.cuda.memory.CUDAPluggableAllocator(gpumem.torch_allocator_path(), 'gpumem_pluggable_malloc',
                                                 'gpumem_pluggable_free')
torch.cuda.memory.change_current_allocator(alloc)
try:
    t = torch.empty(256 << 20, dtype=torch.uint8, device='cuda')
    print('result: a tensor with data_ptr', t.data_ptr(), flush=True)
except Exception as e:
    print('result: %s raised' % type(e).__name__, flush=True)
"""




def run(code, env):
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    lines = dict(l.split(": ", 1) for l in r.stdout.splitlines() if ": " in l)
    return r, lines


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build = os.path.abspath(sys.argv[1])
    package = os.path.join(HERE, "..", "..", "bindings", "python")
    env = dict(os.environ, GPUMEM_LIBRARY=os.path.join(build, "src", "libgpumem.so"), GPUMEM_BACKEND="cuda",
               GPUMEM_LIMIT="64M", PYTHONPATH=package + os.pathsep + os.environ.get("PYTHONPATH", ""))

    r, lines = run(UNCAUGHT, env)
    oom_verdict = lines.get("verdict", "")
    last = [l for l in r.stderr.splitlines() if l.strip()][-1:] or [""]
    report(r.returncode != 0 and last[0].startswith("RuntimeError: CUDA out of memory."),
           "uncaught: the child died of 'RuntimeError: CUDA out of memory. ...' (exit %d)" % r.returncode)
    report("GPUMEM_LIMIT" in oom_verdict, "uncaught: gpumem's report names GPUMEM_LIMIT: %r" % oom_verdict)
    report(bool(oom_verdict) and oom_verdict in last[0], "uncaught: the printed error carries the verdict")
    print("figure: the printed error: %s" % last[0], flush=True)

    r, lines = run(CAUGHT, env)
    report(r.returncode == 0 and lines.get("verdict_in_text") == "True" and lines.get("starts") == "True",
           "caught: a %s whose text starts as PyTorch's and carries the verdict%s"
           % (lines.get("type"), "" if r.returncode == 0 else " (" + r.stderr.strip()[-300:] + ")"))
    raise_bytes, fits = (lines.get("limit_raise", "0 False").split() + ["False"])[:2]
    if fits == "True":
        env2 = dict(env, GPUMEM_LIMIT=str(int(raise_bytes) + (64 << 20)))
        r, lines = run(HOOK + "t = ask(); torch.cuda.synchronize(); print('allocated: %d' % t.numel())\n", env2)
        report(r.returncode == 0 and "allocated" in lines,
               "the remedy followed (GPUMEM_LIMIT raised by %s bytes): the tensor is allocated" % raise_bytes)
    else:
        report(False, "the report's limit_raise remedy does not fit: %s" % lines.get("limit_raise"))

    r, lines = run(MEMPOOL, env)
    report(r.returncode == 0 and lines.get("type") == "OutOfMemoryError",
           "MemPool: torch.OutOfMemoryError (%s)" % (r.stdout.strip() or r.stderr.strip()[-300:]))
    report("GPUMEM_LIMIT" in r.stderr and "out of memory" in r.stderr,
           "MemPool: gpumem's warning with the verdict is on stderr")

    r, lines = run(NULL_HOOK, env)
    print("figure: the NULL-returning hook under CUDAPluggableAllocator: %s"
          % (lines.get("result") or "exit %d: %s" % (r.returncode, r.stderr.strip()[-200:])), flush=True)

    return verdict("torch-oom")


if __name__ == "__main__":
    sys.exit(main())
