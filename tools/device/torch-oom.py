#!/usr/bin/env python3
"""PyTorch's out-of-memory error under gpumem's process-wide hook, on a GPU: printed with gpumem's
verdict.

    python3 tools/device/torch-oom.py BUILD_DIR

BUILD_DIR: a meson build with the CUDA backend (BUILD_DIR/src/libgpumem.so; the Python package
comes from bindings/python).  Each case runs in a child process with GPUMEM_LIMIT=64M and
gpumem.use_torch_allocator(), then asks for a 256 MiB tensor:

1. uncaught: the child dies with PyTorch's out-of-memory message, and the traceback carries
   "gpumem: <verdict>" naming GPUMEM_LIMIT (the verdict the child printed from
   gpumem.last_oom_report() is the same text);
2. caught: gpumem.torch_oom_verdict(e) in the except block gives that verdict, and with
   GPUMEM_LIMIT's remedy followed (the limit raised to the figure the report names), the same
   tensor is then allocated.

Each check prints "PASS: ..." or "FAIL: ..."; the last line is "torch-oom: PASS" (exit 0) or
"torch-oom: FAIL" (exit 1).

SPDX-License-Identifier: MIT
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FAILED = []

PRELUDE = """
import sys, torch, gpumem
gpumem.use_torch_allocator()
x = torch.ones(1 << 20, device='cuda')  # 4 MiB, under the limit
torch.cuda.synchronize()
def ask():
    return torch.empty(256 << 20, dtype=torch.uint8, device='cuda')
"""

UNCAUGHT = PRELUDE + """
try:
    ask()
except torch.OutOfMemoryError:
    r = gpumem.last_oom_report()
    print('verdict:', r['verdict'] if r else '', flush=True)
ask()
"""

CAUGHT = PRELUDE + """
try:
    ask()
    print('no error at all')
except torch.OutOfMemoryError as e:
    v = gpumem.torch_oom_verdict(e)
    r = gpumem.last_oom_report()
    print('verdict:', v, flush=True)
    print('limit_raise:', r['limit_raise'].bytes, r['limit_raise'].fits, flush=True)
"""


def report(ok, what):
    print("%s: %s" % ("PASS" if ok else "FAIL", what), flush=True)
    if not ok:
        FAILED.append(what)
    return ok


def run(code, env):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build = os.path.abspath(sys.argv[1])
    package = os.path.join(HERE, "..", "..", "bindings", "python")
    env = dict(os.environ, GPUMEM_LIBRARY=os.path.join(build, "src", "libgpumem.so"), GPUMEM_BACKEND="cuda",
               GPUMEM_LIMIT="64M", PYTHONPATH=package + os.pathsep + os.environ.get("PYTHONPATH", ""))

    r = run(UNCAUGHT, env)
    verdict = next((l[len("verdict: "):] for l in r.stdout.splitlines() if l.startswith("verdict: ")), "")
    report(r.returncode != 0 and "out of memory" in r.stderr.lower(),
           "uncaught: the child died of PyTorch's out-of-memory error (exit %d)" % r.returncode)
    report("GPUMEM_LIMIT" in verdict, "uncaught: gpumem's report names GPUMEM_LIMIT: %r" % verdict)
    report(bool(verdict) and ("gpumem: " + verdict) in r.stderr,
           "uncaught: the printed traceback carries the verdict as a note")
    tail = [l for l in r.stderr.splitlines() if l.strip()][-3:]
    print("figure: the traceback's last lines:\n    " + "\n    ".join(tail), flush=True)

    r = run(CAUGHT, env)
    lines = dict(l.split(": ", 1) for l in r.stdout.splitlines() if ": " in l)
    report(r.returncode == 0 and "GPUMEM_LIMIT" in lines.get("verdict", ""),
           "caught: torch_oom_verdict gives the verdict: %r%s" % (lines.get("verdict"), "" if r.returncode == 0 else
                                                                  " (" + r.stderr.strip()[-300:] + ")"))
    raise_bytes, fits = (lines.get("limit_raise", "0 False").split() + ["False"])[:2]
    if fits == "True":
        env2 = dict(env, GPUMEM_LIMIT=str(int(raise_bytes) + (64 << 20)))
        r = run(PRELUDE + "t = ask(); torch.cuda.synchronize(); print('allocated', t.numel())\n", env2)
        report(r.returncode == 0 and "allocated" in r.stdout,
               "the remedy followed (GPUMEM_LIMIT raised by %s bytes): the tensor is allocated" % raise_bytes)
    else:
        report(False, "the report's limit_raise remedy does not fit: %s" % lines.get("limit_raise"))

    print("torch-oom: %s" % ("FAIL" if FAILED else "PASS"), flush=True)
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
