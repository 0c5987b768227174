#!/usr/bin/env python3
"""The library's thread-local storage stays within its budget.

usage: check_static_tls.py READELF LIBGPUMEM.so

libgpumem's hot paths use initial-exec thread-locals, so when Python (or any
program) dlopens it, its whole TLS block must fit the static TLS space glibc
keeps free for dlopen: about 1 KiB on x86-64 glibc 2.36 once libc's own share is
taken, shared with every other such library the process loads (CUDA's, OpenMP's).
Exit 0 when the block is at most BUDGET bytes.
SPDX-License-Identifier: MIT
"""
import subprocess
import sys

BUDGET = 1024


def main():
    readelf, lib = sys.argv[1], sys.argv[2]
    out = subprocess.run([readelf, "-lW", lib], check=True, capture_output=True, text=True).stdout
    tls = [line.split() for line in out.splitlines() if line.split()[:1] == ["TLS"]]
    if not tls:
        print("no TLS segment: nothing to budget")
        return 0
    # TLS Offset VirtAddr PhysAddr FileSiz MemSiz Flg Align
    size = int(tls[0][5], 16)
    print("TLS block: %d bytes (budget %d)" % (size, BUDGET))
    if size > BUDGET:
        print("over budget: move large or rarely used thread-locals to the heap (see src/base/error.cpp)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
