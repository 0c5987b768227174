"""gpumem.torch_mem_pool on a GPU: PyTorch's caching allocator over an RDMA-capable gpumem pool,
and NCCL's registration of that pool.

    python3 tools/device/torch-mempool.py BUILD_DIR [--steps N] [--rounds R] [--warmup W] [--timeout S]

BUILD_DIR: a meson build with the CUDA backend (BUILD_DIR/src/libgpumem.so; the Python package
comes from bindings/python).  The checks run in a child process, with NCCL_NVLS_ENABLE=0 (the
lent machines' rule: nothing here creates multicast objects):

1. device_info(0).rdma_memory is NATIVE, and a Pool(flags=POOL_RDMA) is created;
2. the pool's memory is what NCCL and GPUDirect RDMA want, as the driver says of one block
   (cuMemRetainAllocationHandle, cuMemGetAllocationPropertiesFromHandle):
   gpuDirectRDMACapable 1 and a POSIX file-descriptor handle;
3. torch_mem_pool(pool) gives a torch.cuda.MemPool; a small model trained 20 steps under
   torch.cuda.use_mem_pool gives the same losses as its twin on PyTorch's own allocator, and its
   parameters lie in gpumem's pool; the peak reserved bytes of each are measured here, one
   allocator at a time;
4. step time: a fresh model per allocator, --rounds rounds (default 5) that alternate which
   allocator goes first; in each, per allocator, --warmup steps (default 10, not timed) and
   --steps timed steps (default 150, each synchronised); the medians per allocator, the ratio
   of the medians and the spread of the per-round ratios (min-max) are printed;
5. after warm-up the MemPool calls gpumem for no segment: gpumem's statistics count no
   allocation and no free over every timed MemPool step (the counter is first shown to move
   while the MemPool warms up, else the check is skipped);
6. torch.cuda.memory_stats() and torch.cuda.memory_snapshot() work, and the snapshot's
   segments include gpumem blocks;
7. where torch.distributed has NCCL: a 1-rank process group registers the MemPool
   (ProcessGroupNCCL.register_mem_pool), all-reduces a tensor of the pool and one of PyTorch's
   allocator, and compares the bytes; then deregisters it.

The step times, their ratio and spread, gpumem calls per step and the peak memory of both
allocators are printed as "figure:" lines, to be recorded in docs/python.md from the run (the
defaults take about 5 s of stepping on an H200; the whole script well under 90 s).  Each check
prints "PASS: ..." or "FAIL: ..." (or "SKIP: ..." with the reason); the last line is
"torch-mempool: PASS" (exit 0) or "torch-mempool: FAIL" (exit 1).

SPDX-License-Identifier: MIT
"""
import argparse
import ctypes
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from checks import FAILED, report, skip  # noqa: E402






class AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class MemLocation(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class AllocationProp(ctypes.Structure):  # CUmemAllocationProp
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", MemLocation),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", AllocFlags)]


CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 0x1


def driver_props(ptr):
    """What the driver says of the physical allocation under `ptr`: (gpuDirectRDMACapable,
    requestedHandleTypes), or raises with the driver's status."""
    cuda = ctypes.CDLL("libcuda.so.1")
    handle = ctypes.c_ulonglong()
    r = cuda.cuMemRetainAllocationHandle(ctypes.byref(handle), ctypes.c_void_p(ptr))
    if r != 0:
        raise RuntimeError("cuMemRetainAllocationHandle failed with %d (not VMM memory?)" % r)
    try:
        prop = AllocationProp()
        r = cuda.cuMemGetAllocationPropertiesFromHandle(ctypes.byref(prop), handle)
        if r != 0:
            raise RuntimeError("cuMemGetAllocationPropertiesFromHandle failed with %d" % r)
        return prop.allocFlags.gpuDirectRDMACapable, prop.requestedHandleTypes
    finally:
        if cuda.cuMemRelease(handle) != 0:
            print("warning: cuMemRelease of a retained handle failed", flush=True)


def make_model(torch, dev):
    torch.manual_seed(1234)
    return torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.GELU(), torch.nn.LayerNorm(1024),
                               torch.nn.Linear(1024, 256)).to(dev)


def one_step(torch, model, opt, gen, dev):
    """One SGD step; its loss tensor (not read back: .item() would synchronise)."""
    x = torch.randn(256, 512, device=dev, generator=gen)
    y = torch.randn(256, 256, device=dev, generator=gen)
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss


class Trainer:
    """A model, its optimizer and its input stream, made (and stepped) under `pool_ctx`:
    PyTorch's own allocator, or use_mem_pool(mp)."""

    def __init__(self, torch, dev, pool_ctx):
        self.torch, self.dev, self.ctx = torch, dev, pool_ctx
        with self.ctx():
            self.model = make_model(torch, dev)
            self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01)
            self.gen = torch.Generator(device=dev).manual_seed(99)

    def run(self, steps, timed):
        """`steps` steps; the losses, and, if `timed`, the seconds of each (synchronised)."""
        torch, dev = self.torch, self.dev
        losses, times = [], []
        with self.ctx():
            for _ in range(steps):
                torch.cuda.synchronize(dev)
                t0 = time.perf_counter()
                loss = one_step(torch, self.model, self.opt, self.gen, dev)
                torch.cuda.synchronize(dev)
                if timed:
                    times.append(time.perf_counter() - t0)
                losses.append(loss.item())
        return losses, times


def median(xs):
    ys = sorted(xs)
    n = len(ys)
    return ys[n // 2] if n % 2 else 0.5 * (ys[n // 2 - 1] + ys[n // 2])


def nccl_check(torch, gpumem, mp, pool, dev):
    import torch.distributed as dist
    if not dist.is_available() or not dist.is_nccl_available():
        skip("NCCL registration", "torch.distributed has no NCCL here")
        return
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    try:
        dist.init_process_group("nccl", rank=0, world_size=1, device_id=dev)
    except TypeError:  # a torch without device_id
        dist.init_process_group("nccl", rank=0, world_size=1)
    try:
        backend = dist.group.WORLD._get_backend(dev)
        if not hasattr(backend, "register_mem_pool"):
            skip("NCCL registration", "ProcessGroupNCCL has no register_mem_pool in this PyTorch")
            registered = False
        else:
            try:
                backend.register_mem_pool(mp)
                registered = report(True, "ProcessGroupNCCL.register_mem_pool of the gpumem MemPool")
            except Exception as e:  # noqa: BLE001  (the run reports what NCCL said)
                registered = report(False, "ProcessGroupNCCL.register_mem_pool: %s" % e)
        n = 1 << 20
        with torch.cuda.use_mem_pool(mp):
            ours = torch.arange(n, dtype=torch.float32, device=dev) * 0.5 + 3.0
        theirs = torch.arange(n, dtype=torch.float32, device=dev) * 0.5 + 3.0
        info = gpumem.pointer_info(ours.data_ptr())
        report(info.kind == "stream_ordered" and info.pool == pool.handle,
               "the all-reduced tensor lies in gpumem's pool (kind %s)" % info.kind)
        dist.all_reduce(ours)
        dist.all_reduce(theirs)
        torch.cuda.synchronize(dev)
        report(torch.equal(ours.view(torch.uint8), theirs.view(torch.uint8)),
               "all_reduce on the registered gpumem tensor gives the bytes of one on PyTorch's allocator")
        gathered = [torch.empty_like(theirs)]
        with torch.cuda.use_mem_pool(mp):
            mine = [torch.empty_like(theirs)]
        dist.all_gather(gathered, theirs)
        dist.all_gather(mine, ours)
        torch.cuda.synchronize(dev)
        report(torch.equal(gathered[0], mine[0]), "all_gather into gpumem memory gives the same bytes")
        del ours, mine
        if registered and hasattr(backend, "deregister_mem_pool"):
            try:
                backend.deregister_mem_pool(mp)
                report(True, "ProcessGroupNCCL.deregister_mem_pool")
            except Exception as e:  # noqa: BLE001
                report(False, "ProcessGroupNCCL.deregister_mem_pool: %s" % e)
    finally:
        dist.destroy_process_group()


def child(steps, rounds, warmup):
    import gpumem
    gpumem.init()
    gpumem.set_device(0)
    info = gpumem.device_info(0)
    report(info.rdma_memory == gpumem.SUPPORT_NATIVE,
           "device_info(0).rdma_memory is NATIVE (%d) on %s" % (info.rdma_memory, info.name))
    try:
        pool = gpumem.Pool(device=0, flags=gpumem.POOL_RDMA)
        report(True, "Pool(flags=POOL_RDMA) created")
    except gpumem.GpumemError as e:
        report(False, "Pool(flags=POOL_RDMA): %s" % e)
        pool = gpumem.Pool(device=0)

    block = gpumem.malloc_async(1 << 21, pool=pool)
    try:
        rdma, handle_types = driver_props(block.ptr)
        report(rdma == 1 and handle_types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
               "the driver says a pool block is gpuDirectRDMACapable (%d) with a POSIX handle (types 0x%x)"
               % (rdma, handle_types))
    except RuntimeError as e:
        report(False, "the driver's properties of a pool block: %s" % e)
    block.free()
    gpumem.device_synchronize()

    import torch
    dev = torch.device("cuda", 0)
    mp = gpumem.torch_mem_pool(pool, device=dev)
    report(isinstance(mp, torch.cuda.memory.MemPool), "torch_mem_pool returns a torch.cuda.MemPool")

    import contextlib

    def own_allocator():
        return contextlib.nullcontext()

    def in_mem_pool():
        return torch.cuda.use_mem_pool(mp)

    # Same losses and peak reserved: PyTorch's allocator first (its peak measured on its own),
    # then the MemPool, each a fresh model of the same seed over the same inputs.
    check_steps = 20
    torch.cuda.reset_peak_memory_stats(dev)
    base = Trainer(torch, dev, own_allocator)
    base_losses, _ = base.run(check_steps, False)
    base_peak = torch.cuda.max_memory_reserved(dev)
    del base
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(dev)
    before_warm = gpumem.stats()
    first = Trainer(torch, dev, in_mem_pool)
    losses, _ = first.run(check_steps, False)
    pool_peak = torch.cuda.max_memory_reserved(dev)
    warm_allocs = gpumem.stats().total_alloc_count - before_warm.total_alloc_count
    # The same kernels on the same inputs: equal, up to a library choosing another algorithm.
    same = all(abs(a - b) <= 1e-5 * max(abs(a), abs(b), 1e-12) for a, b in zip(losses, base_losses))
    report(same, "%d training steps under use_mem_pool give PyTorch's losses (last %.6f, %.6f)"
           % (check_steps, losses[-1], base_losses[-1]))
    model = first.model
    where = gpumem.pointer_info(next(model.parameters()).data_ptr())
    report(where.kind == "stream_ordered" and where.pool == pool.handle,
           "the model's parameters lie in the gpumem pool (kind %s)" % where.kind)
    print("figure: peak reserved PyTorch allocator %d bytes, MemPool run %d bytes (%d steps each, one at a time)"
          % (base_peak, pool_peak, check_steps), flush=True)

    # Step time: rounds that alternate the allocators, warm-up excluded, medians compared.
    t_start = time.perf_counter()
    trainers = {"torch": Trainer(torch, dev, own_allocator), "gpumem": Trainer(torch, dev, in_mem_pool)}
    all_times = {"torch": [], "gpumem": []}
    ratios = []
    steady_allocs = steady_frees = steady_steps = 0
    for r in range(rounds):
        order = ("torch", "gpumem") if r % 2 == 0 else ("gpumem", "torch")
        round_median = {}
        for name in order:
            trainers[name].run(warmup, False)
            s0 = gpumem.stats()
            _, times = trainers[name].run(steps, True)
            s1 = gpumem.stats()
            if name == "gpumem":
                steady_allocs += s1.total_alloc_count - s0.total_alloc_count
                steady_frees += s1.total_free_count - s0.total_free_count
                steady_steps += steps
            all_times[name] += times
            round_median[name] = median(times)
        ratios.append(round_median["gpumem"] / round_median["torch"])
        print("round %d (%s first): median step PyTorch allocator %.1f us, MemPool %.1f us (%.3fx)"
              % (r + 1, "PyTorch" if order[0] == "torch" else "MemPool", round_median["torch"] * 1e6,
                 round_median["gpumem"] * 1e6, ratios[-1]), flush=True)
    base_step, step = median(all_times["torch"]), median(all_times["gpumem"])
    print("figure: step time (median of %d rounds x %d steps after %d warm-up, alternating) PyTorch allocator "
          "%.1f us, MemPool over gpumem %.1f us (%.3fx; per-round ratios %.3f-%.3f)"
          % (rounds, steps, warmup, base_step * 1e6, step * 1e6, step / base_step, min(ratios), max(ratios)),
          flush=True)
    print("figure: the step-time rounds took %.1f s" % (time.perf_counter() - t_start), flush=True)
    print("figure: gpumem calls per MemPool step after warm-up: %.3f allocations, %.3f frees (%d, %d in %d steps)"
          % (steady_allocs / steady_steps, steady_frees / steady_steps, steady_allocs, steady_frees, steady_steps),
          flush=True)
    if warm_allocs == 0:
        skip("no gpumem segment allocations per MemPool step in steady state",
             "gpumem's statistics counted no allocation while the MemPool warmed up, so a 0 would say nothing")
    else:
        report(steady_allocs == 0 and steady_frees == 0,
               "no gpumem segment allocation or free in %d MemPool steps after warm-up (%d allocations while "
               "it warmed up; %d, %d in steady state)" % (steady_steps, warm_allocs, steady_allocs, steady_frees))
    del trainers

    stats = torch.cuda.memory_stats(dev)
    report(stats.get("allocated_bytes.all.current", 0) > 0 and stats.get("segment.all.current", 0) > 0,
           "torch.cuda.memory_stats() counts the MemPool's blocks and segments")
    snap = torch.cuda.memory_snapshot()
    ours = [s for s in snap if gpumem.pointer_info(s["address"]).kind == "stream_ordered"]
    report(bool(snap) and bool(ours), "torch.cuda.memory_snapshot() lists %d segments, %d of them gpumem's"
           % (len(snap), len(ours)))

    nccl_check(torch, gpumem, mp, pool, dev)
    del model
    torch.cuda.synchronize(dev)
    return 0 if not FAILED else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", nargs="?")
    ap.add_argument("--steps", type=int, default=150, help="timed steps per allocator per round")
    ap.add_argument("--rounds", type=int, default=5, help="rounds, alternating which allocator goes first")
    ap.add_argument("--warmup", type=int, default=10, help="untimed steps per allocator before each round's")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.steps < 3 or args.rounds < 1 or args.warmup < 1:
        ap.error("--steps must be 3 or more, --rounds and --warmup 1 or more")
    if args.child:
        return child(args.steps, args.rounds, args.warmup)
    if not args.build:
        ap.error("BUILD_DIR is needed")
    package = os.path.join(HERE, "..", "..", "bindings", "python")
    env = dict(os.environ, GPUMEM_LIBRARY=os.path.join(os.path.abspath(args.build), "src", "libgpumem.so"),
               GPUMEM_BACKEND="cuda", NCCL_NVLS_ENABLE="0",
               PYTHONPATH=package + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "--steps", str(args.steps),
                            "--rounds", str(args.rounds), "--warmup", str(args.warmup)],
                           env=env, timeout=args.timeout)
        ok = r.returncode == 0
        if not ok:
            print("FAIL: the checks' process exited with %d" % r.returncode, flush=True)
    except subprocess.TimeoutExpired:
        print("FAIL: the checks did not finish in %.0f s" % args.timeout, flush=True)
        ok = False
    print("torch-mempool: %s" % ("PASS" if ok else "FAIL"), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
