#!/usr/bin/env python3
"""NCCL between ranks over gpumem memory, on a machine with two or more GPUs: registration, the
bytes of all-reduce and all-gather, and bus bandwidth of registered against unregistered buffers.

    python3 tools/device/nccl-ranks.py BUILD_DIR [--ranks N] [--max-mib M] [--timeout S]

BUILD_DIR: a meson build with the CUDA backend (BUILD_DIR/src/libgpumem.so; the Python package
comes from bindings/python).  One process per GPU (default: every visible GPU; fewer than 2:
exit 77), NCCL over 127.0.0.1, NCCL_NVLS_ENABLE=0 (the lent machines' rule: no multicast).
Each rank:

1. makes an RDMA-capable gpumem pool (Pool(flags=POOL_RDMA)) and gpumem.torch_mem_pool(pool),
   and registers the MemPool with NCCL (ProcessGroupNCCL.register_mem_pool, which calls
   ncclCommRegister on each segment);
2. all-reduces and all-gathers tensors that lie in the registered gpumem pool and the same
   tensors on PyTorch's allocator, and compares the bytes;
3. times all_reduce (float32, sum) from 1 MiB to --max-mib MiB (default 1024) on the registered
   gpumem buffers and on PyTorch's allocator's (unregistered), median of 20 after 5 warm-up
   calls each, and rank 0 prints the bus bandwidth (2(n-1)/n * bytes / time, NCCL's own
   definition) and the ratio.

Each check prints "PASS: ..." or "FAIL: ..." (rank 0, or any rank that fails); the last line is
"nccl-ranks: PASS" (exit 0) or "nccl-ranks: FAIL" (exit 1).

SPDX-License-Identifier: MIT
"""
import argparse
import os
import socket
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from checks import FAILED, report, skip  # noqa: E402


def rank_main(rank, world, max_mib):
    import torch
    import torch.distributed as dist
    import gpumem
    dev = torch.device("cuda", rank)
    torch.cuda.set_device(dev)
    gpumem.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    say = rank == 0
    ok = True

    def check(cond, what):
        nonlocal ok
        if say or not cond:
            report(cond, "rank %d: %s" % (rank, what) if not say else what)
        ok = ok and cond

    pool = gpumem.Pool(device=rank, flags=gpumem.POOL_RDMA)
    mp = gpumem.torch_mem_pool(pool, device=rank)
    backend = dist.group.WORLD._get_backend(dev)
    registered = False
    if hasattr(backend, "register_mem_pool"):
        try:
            backend.register_mem_pool(mp)
            registered = True
        except Exception as e:  # noqa: BLE001  (the run reports what NCCL said)
            check(False, "register_mem_pool: %s" % e)
    check(registered, "ProcessGroupNCCL.register_mem_pool of a gpumem MemPool on %d ranks" % world)

    n = 1 << 20
    with torch.cuda.use_mem_pool(mp):
        ours = torch.arange(n, dtype=torch.float32, device=dev) * (rank + 1) + 0.25
    theirs = torch.arange(n, dtype=torch.float32, device=dev) * (rank + 1) + 0.25
    check(gpumem.pointer_info(ours.data_ptr()).pool == pool.handle, "the all-reduced tensor lies in gpumem's pool")
    dist.all_reduce(ours)
    dist.all_reduce(theirs)
    torch.cuda.synchronize(dev)
    check(torch.equal(ours.view(torch.uint8), theirs.view(torch.uint8)),
          "all_reduce on registered gpumem memory gives the bytes of PyTorch's allocator's, every rank")
    with torch.cuda.use_mem_pool(mp):
        mine = [torch.empty_like(theirs) for _ in range(world)]
    gathered = [torch.empty_like(theirs) for _ in range(world)]
    dist.all_gather(mine, ours)
    dist.all_gather(gathered, theirs)
    torch.cuda.synchronize(dev)
    check(all(torch.equal(a, b) for a, b in zip(mine, gathered)),
          "all_gather into registered gpumem memory gives the same bytes, every rank")
    del mine, gathered

    rows = []
    size = 1 << 20
    while size <= max_mib << 20:
        count = size // 4
        with torch.cuda.use_mem_pool(mp):
            reg = torch.ones(count, dtype=torch.float32, device=dev)
        plain = torch.ones(count, dtype=torch.float32, device=dev)
        times = {}
        for name, buf in (("registered gpumem", reg), ("PyTorch allocator", plain)):
            for _ in range(5):
                dist.all_reduce(buf)
            torch.cuda.synchronize(dev)
            samples = []
            for _ in range(20):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                dist.all_reduce(buf)
                end.record()
                end.synchronize()
                samples.append(start.elapsed_time(end) / 1e3)
            samples.sort()
            times[name] = samples[len(samples) // 2]
        rows.append((size, times["registered gpumem"], times["PyTorch allocator"]))
        del reg, plain
        size *= 4
    if say:
        print("figure: all_reduce bus bandwidth, %d ranks (GB/s, median of 20; 2(n-1)/n * bytes / time)" % world)
        print("figure:   %10s %22s %22s %8s" % ("bytes", "registered gpumem", "PyTorch allocator", "ratio"))
        for size, t_reg, t_plain in rows:
            bw = lambda t: 2.0 * (world - 1) / world * size / t / 1e9  # noqa: E731
            print("figure:   %10d %22.1f %22.1f %7.3fx" % (size, bw(t_reg), bw(t_plain), bw(t_reg) / bw(t_plain)))
        sys.stdout.flush()
    if registered and hasattr(backend, "deregister_mem_pool"):
        try:
            backend.deregister_mem_pool(mp)
        except Exception as e:  # noqa: BLE001
            check(False, "deregister_mem_pool: %s" % e)
    dist.destroy_process_group()
    return 0 if ok and not FAILED else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", nargs="?")
    ap.add_argument("--ranks", type=int, default=0)
    ap.add_argument("--max-mib", type=int, default=1024)
    ap.add_argument("--timeout", type=float, default=240)
    ap.add_argument("--rank", type=int, default=-1, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rank >= 0:
        return rank_main(args.rank, args.ranks, args.max_mib)
    if not args.build:
        ap.error("BUILD_DIR is needed")
    import torch
    ranks = args.ranks or torch.cuda.device_count()
    if ranks < 2:
        skip("NCCL between ranks", "%d GPU visible" % ranks)
        return 77
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    package = os.path.join(HERE, "..", "..", "bindings", "python")
    env = dict(os.environ, GPUMEM_LIBRARY=os.path.join(os.path.abspath(args.build), "src", "libgpumem.so"),
               GPUMEM_BACKEND="cuda", NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1",
               NVSHMEM_DISABLE_NVLS="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
               PYTHONPATH=package + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--rank", str(r), "--ranks", str(ranks),
                               "--max-mib", str(args.max_mib)], env=env) for r in range(ranks)]
    ok = True
    for r, p in enumerate(procs):
        try:
            rc = p.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = "killed after %.0f s" % args.timeout
        if rc != 0:
            print("FAIL: rank %d ended with %s" % (r, rc), flush=True)
            ok = False
    print("nccl-ranks: %s" % ("PASS" if ok else "FAIL"), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
