#!/usr/bin/env python3
"""PyTorch DistributedDataParallel over NCCL on gpumem, against PyTorch's own allocator.

    python3 tools/bench/bench-ddp.py BUILD_DIR [--steps N] [--repeats N] [--gpus N] [--timeout S]
                                           [--one-gpu-per-rank] [--vocab N] [--seq-min N]
                                           [--configs LIST] [--driver-profile LIB]

BUILD_DIR: a meson build with the CUDA backend (BUILD_DIR/src/libgpumem.so; the Python
package comes from bindings/python).  One process per GPU (default: every visible GPU;
fewer than 2: exit 77), NCCL on 127.0.0.1 and a free port.  NVLink multicast and symmetric
memory stay off (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1,
NVSHMEM_DISABLE_NVLS=1, set before anything starts and inherited by every child).

Each rank trains a small transformer language model (random weights; d_model 512, 8 heads,
4 layers, vocabulary --vocab, default 8192) with AdamW for --steps steps (default 60), batch
size (4-32) and sequence length (--seq-min, default 32, to 512) changing every step, so that
the largest tensors (the logits) change up to 128x from step to step (issue 35's workload:
--vocab 16384 --seq-min 16): the shapes from one seed on every rank, the tokens
from one per rank, the weights from one everywhere; float32, TF32 off.  Each rank sees every
GPU and uses the one of its rank, or, with --one-gpu-per-rank, sees only that one
(CUDA_VISIBLE_DEVICES=RANK, as launchers that bind ranks to GPUs set it).  Configurations,
each its own processes (an allocator cannot be swapped once PyTorch has initialised CUDA):
torch (PyTorch's caching allocator), gpumem-native (gpumem through CUDAPluggableAllocator
on the driver's pool) and gpumem-own (on gpumem's own pool).  --repeats rounds run each
once, the order rotated from round to round (the machines drift over minutes).

A rank reports its median step time after 5 warm-up steps, its peak device memory (the
most in use by torch.cuda.mem_get_info after each step, less what was in use before the
first: max_memory_allocated does not see a pluggable allocator), rank 0's losses and a
checksum of the parameters.  The parent checks that the ranks' parameters agree exactly
and that each gpumem configuration's losses match torch's of the same round (relative
1e-3), and prints the figures with their ratios to torch (the median of each round's
ratio).  A rank that fails or outlives --timeout (default 240 s) is reported with its
stderr or its Python stack.

--driver-profile LIB (tools/device/driver-profile.c built as a library): the gpumem ranks load
it as their driver (GPUMEM_CUDA_LIBRARY), and the parent prints, per configuration and rank,
the driver's VMM calls per step (cuMemCreate, cuMemRelease, cuMemMap, cuMemUnmap,
cuMemSetAccess) and their time: attribution, not figures (each call is timed).  --configs
picks configurations (default all; torch first when it is one of them).  Last line: "bench-ddp: PASS" (exit 0) or "bench-ddp: FAIL (...)".

SPDX-License-Identifier: MIT
"""
import argparse
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import driver_profile  # tools/bench/driver_profile.py

# Before anything can start NCCL or CUDA (torch is imported later), here and in every child.
os.environ["NCCL_NVLS_ENABLE"] = "0"
os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] = "1"
os.environ["NVSHMEM_DISABLE_NVLS"] = "1"

CONFIGS = ["torch", "gpumem-native", "gpumem-own"]
WARMUP = 5
LOSS_RTOL = 1e-3
SEED = 1234
HERE = os.path.dirname(os.path.abspath(__file__))


# ---------------------------------------------------------------------------
# Child: one rank of one configuration, printing one JSON line
# ---------------------------------------------------------------------------

def child(config, rank, world, steps, seed, vocab=8192, seq_min=32):
    # The rank's GPU among those it sees: its own index, or 0 where it sees only its own.
    gpu = int(os.environ.get("BENCH_DDP_GPU", rank))
    keep = None
    if config != "torch":
        import gpumem
        gpumem.init()
        gpumem.set_device(gpu)
        if config == "gpumem-own":
            keep = gpumem.Pool(device=gpu, implementation=gpumem.POOL_BUILTIN)
            keep.make_current(gpu)
        else:
            keep = gpumem.Pool.default(gpu)
        keep.release_threshold = 2**64 - 1  # keep what is freed, as the caching allocator does
        # Before torch.cuda.set_device: that initialises PyTorch's CUDA state, allocator
        # included, and PyTorch refuses to swap an initialised allocator.
        gpumem.use_torch_allocator()
    import hashlib
    import torch
    import torch.distributed as dist
    torch.cuda.set_device(gpu)
    if config != "torch":
        gpumem.set_device(gpu)
        if gpumem.get_device() != torch.cuda.current_device():
            raise RuntimeError("gpumem's current device %d is not PyTorch's %d"
                               % (gpumem.get_device(), torch.cuda.current_device()))
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    dev = torch.device("cuda", gpu)
    dist.init_process_group("nccl", rank=rank, world_size=world)

    d_model, heads, layers = 512, 8, 4

    class LM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(vocab, d_model)
            layer = torch.nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout=0.1, batch_first=True)
            self.body = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.head = torch.nn.Linear(d_model, vocab)

        def forward(self, x, mask):
            return self.head(self.body(self.emb(x), mask=mask, is_causal=True))

    torch.manual_seed(seed)  # the same weights on every rank
    model = torch.nn.parallel.DistributedDataParallel(LM().to(dev), device_ids=[gpu])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    torch.cuda.manual_seed(seed + 101 * (rank + 1))  # dropout: a stream per rank
    data = torch.Generator(device=dev)
    data.manual_seed(seed + 7919 * (rank + 1))  # tokens: a stream per rank
    pick = random.Random(seed + 1)  # shapes: the same on every rank
    shapes = [(pick.randint(4, 32), pick.randint(seq_min, 512)) for _ in range(steps)]

    def used():
        free, total = torch.cuda.mem_get_info(dev)
        return total - free

    torch.cuda.synchronize()
    base, peak, times, losses = used(), 0, [], []
    steady = max(WARMUP, steps // 3)  # driver calls per step are counted from here (driver_profile.mark)
    for i, (batch, seq) in enumerate(shapes):
        if i == steady:
            driver_profile.mark("steady")
        t0 = time.perf_counter()
        tokens = torch.randint(0, vocab, (batch, seq + 1), device=dev, generator=data)
        x, y = tokens[:, :-1], tokens[:, 1:]
        mask = torch.nn.Transformer.generate_square_subsequent_mask(seq, device=dev)
        logits = model(x, mask)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        peak = max(peak, used() - base)
        losses.append(float(loss.item()))
    driver_profile.mark("end")
    digest, total = hashlib.sha256(), 0.0
    for p in model.module.parameters():
        q = p.detach()
        total += float(q.double().sum().item())
        digest.update(q.cpu().contiguous().numpy().tobytes())
    dist.barrier(device_ids=[gpu])
    dist.destroy_process_group()
    out = {"config": config, "rank": rank, "step_ms": 1e3 * statistics.median(times[WARMUP:]),
           "peak_bytes": peak, "steady_steps": steps - steady, "param_sum": total, "param_sha256": digest.hexdigest()}
    if rank == 0:
        out["losses"] = losses
    del keep
    return out


# ---------------------------------------------------------------------------
# Parent
# ---------------------------------------------------------------------------

def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path, n=12):
    """The end of a rank's stderr, or the stack it dumped when asked (faulthandler)."""
    try:
        with open(path, errors="replace") as f:
            lines = f.read().strip().splitlines()
    except OSError:
        return ""
    dumps = [i for i, ln in enumerate(lines) if ln.startswith("Stack (most recent call first)")]
    return " | ".join(lines[dumps[-1]:dumps[-1] + n] if dumps else lines[-n:])


def kill(procs, dump=False):
    """End the ranks still running; with dump, each first prints its Python stack (faulthandler)."""
    running = [p for p in procs if p.poll() is None]
    if dump and running:
        for p in running:
            os.kill(p.pid, signal.SIGUSR1)
        time.sleep(2)
    for p in running:
        os.killpg(p.pid, signal.SIGKILL)  # the rank's own session (start_new_session)
    for p in running:
        p.wait()


def run_config(build, config, world, steps, seed, timeout, one_gpu_per_rank=False, vocab=8192, seq_min=32,
               profile=None):
    """One process per rank; every rank's JSON, or {"error": ...} naming the ranks that failed."""
    package = os.path.join(HERE, "..", "..", "bindings", "python")
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), WORLD_SIZE=str(world),
               GPUMEM_LIBRARY=os.path.join(build, "src", "libgpumem.so"), GPUMEM_BACKEND="cuda",
               PYTHONPATH=package + os.pathsep + os.environ.get("PYTHONPATH", ""))
    work = tempfile.mkdtemp(prefix="bench-ddp-")
    procs = []
    try:
        for rank in range(world):
            cmd = [sys.executable, os.path.abspath(__file__), "--child", config, str(rank), str(world), str(steps),
                   str(seed), str(vocab), str(seq_min)]
            name = os.path.join(work, str(rank))
            with open(name + ".out", "w") as out, open(name + ".err", "w") as err:
                rank_env = dict(env, RANK=str(rank), LOCAL_RANK=str(rank))
                if one_gpu_per_rank:  # as a launcher that binds each rank to its GPU does
                    rank_env.update(CUDA_VISIBLE_DEVICES=str(rank), BENCH_DDP_GPU="0")
                if profile and config != "torch":  # PyTorch's own allocator does not go through gpumem
                    rank_env.update(GPUMEM_CUDA_LIBRARY=os.path.abspath(profile), DRIVER_PROFILE_OUT=name + ".prof")
                procs.append(subprocess.Popen(cmd, env=rank_env, stdout=out,
                                              stderr=err, start_new_session=True))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            codes = [p.poll() for p in procs]  # every one: a failed rank must be seen while others run
            if None not in codes:
                break
            if any(c not in (None, 0) for c in codes):
                deadline = min(deadline, time.monotonic() + 15)  # the others may wait in NCCL forever
            time.sleep(0.2)
        late = [p.poll() is None for p in procs]
        cause = "after another rank failed" if any(p.returncode not in (None, 0) for p in procs) \
            else "after the %d s timeout" % timeout
        kill(procs, dump=True)
        ranks, errors = [], []
        for rank, p in enumerate(procs):
            with open(os.path.join(work, "%d.out" % rank), errors="replace") as f:
                line = next((ln for ln in reversed(f.read().splitlines()) if ln.startswith("{")), None)
            if p.returncode != 0 or line is None:
                why = "killed " + cause if late[rank] else "exit %s" % p.returncode
                errors.append("rank %d %s: %s" % (rank, why, tail(os.path.join(work, "%d.err" % rank)) or "no stderr"))
            else:
                ranks.append(json.loads(line))
                if profile and config != "torch":
                    ranks[-1]["profile"] = driver_profile.read(os.path.join(work, "%d.prof" % rank))
        return {"config": config, "error": "; ".join(errors)} if errors else {"config": config, "ranks": ranks}
    finally:
        kill(procs)
        shutil.rmtree(work, ignore_errors=True)


def loss_diff(run, ref):
    """(largest relative difference over the steps, its step, final losses) of rank 0's curves."""
    a, b = run["ranks"][0]["losses"], ref["ranks"][0]["losses"]
    diffs = [abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a, b)]
    worst = max(range(len(diffs)), key=diffs.__getitem__)
    return diffs[worst], worst, a[-1], b[-1]


def header(args, world):
    import torch
    print("command: %s" % " ".join([sys.executable] + sys.argv))
    print("date:    %s" % time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()))
    print("gpus:    %s" % ", ".join("%d %s" % (i, torch.cuda.get_device_name(i)) for i in range(world)))
    driver = "?"
    if shutil.which("nvidia-smi"):
        r = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True)
        driver = (r.stdout.strip().splitlines() or ["?"])[0]
    r = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    try:
        import torch.cuda.nccl
        nccl = ".".join(map(str, torch.cuda.nccl.version()))
    except Exception:  # noqa: BLE001  (a label only)
        nccl = "?"
    print("driver:  %s   torch %s   NCCL %s   commit %s" % (driver, torch.__version__, nccl, r.stdout.strip() or "?"))
    print("run:     %d ranks (one per GPU), %d steps (%d warm-up), %d round(s), configurations %s"
          % (world, args.steps, WARMUP, args.repeats, ", ".join(CONFIGS)))


def report(runs, world):
    """Checks and tables; returns the list of failures."""
    failures = []
    print("\nchecks:")
    for c in CONFIGS:
        for r, run in enumerate(runs[c]):
            if "error" in run:
                print("    %-14s round %d: FAILED: %s" % (c, r, run["error"]))
                failures.append("%s round %d failed" % (c, r))
                continue
            keys = {(x["param_sha256"], x["param_sum"]) for x in run["ranks"]}
            ok = len(keys) == 1
            print("    %-14s round %d: parameters %s across %d ranks (sum %.17g)"
                  % (c, r, "agree" if ok else "DIFFER", world, run["ranks"][0]["param_sum"]))
            if not ok:
                failures.append("%s round %d: ranks' parameters differ" % (c, r))
            if c == "torch" or "torch" not in runs or "error" in runs["torch"][r]:
                continue
            ref = runs["torch"][r]
            worst, step, final, ref_final = loss_diff(run, ref)
            ok = worst <= LOSS_RTOL
            print("    %-14s round %d: losses vs torch: largest relative difference %.3g at step %d (tolerance %g): "
                  "%s; final %.6f vs %.6f" % (c, r, worst, step, LOSS_RTOL, "match" if ok else "DIFFER", final,
                                              ref_final))
            if not ok:
                failures.append("%s round %d: losses differ from torch's by %.3g" % (c, r, worst))

    def figures(run):  # a run's step time is its slowest rank's; peaks per rank
        if "error" in run:
            return None
        ranks = sorted(run["ranks"], key=lambda x: x["rank"])
        return max(x["step_ms"] for x in ranks), [x["peak_bytes"] for x in ranks]

    per = {c: [figures(run) for run in runs[c]] for c in CONFIGS}

    def ratio(c, get):
        if "torch" not in per:
            return None
        vals = [get(f) / get(b) for f, b in zip(per[c], per["torch"]) if f and b and get(b)]
        return statistics.median(vals) if vals else None

    def x(r):
        return " (%.3fx)" % r if r else ""

    print("\nDDP transformer LM, %d ranks; medians over rounds; ratios vs torch: the median of each round's ratio"
          % world)
    print("    %-14s %20s   %s" % ("configuration", "step time", "peak MB per rank"))
    for c in CONFIGS:
        ok = [f for f in per[c] if f]
        if not ok:
            print("    %-14s %20s" % (c, "not measured"))
            continue
        peaks = ["%.0f%s" % (statistics.median(f[1][k] for f in ok) / 1e6, x(ratio(c, lambda f, k=k: f[1][k])))
                 for k in range(world)]
        step = "%.2f ms%s" % (statistics.median(f[0] for f in ok), x(ratio(c, lambda f: f[0])))
        print("    %-14s %20s   %s" % (c, step, "  ".join(peaks)))
    print("  each round (step ms; largest peak MB):")
    for c in CONFIGS:
        print("    %-14s %s" % (c, "; ".join("%.2f, %.0f" % (f[0], max(f[1]) / 1e6) if f else "error" for f in per[c])))
    profiled = [(c, r, run) for c in CONFIGS for r, run in enumerate(runs[c])
                if "error" not in run and any("profile" in x for x in run["ranks"])]
    if profiled:
        print("\ndriver calls per step in the steady state (the last two thirds of the steps; driver-profile.c's"
              " marks; mean us; attribution, not figures):")
        print("    %-14s %-5s %4s" % ("configuration", "round", "rank") +
              "".join("  %22s" % f for f in driver_profile.VMM_CALLS))
        for c, r, run in profiled:
            for x in sorted(run["ranks"], key=lambda x: x["rank"]):
                print("    %-14s %-5d %4d" % (c, r, x["rank"]) +
                      "".join("  %22s" % v for v in driver_profile.cells(x.get("profile", {}), x.get("steady_steps", 0))))
    return failures


def parent(args):
    build = os.path.abspath(args.build)
    if not os.path.isfile(os.path.join(build, "src", "libgpumem.so")):
        print("bench-ddp: %s/src/libgpumem.so not found: build gpumem with the CUDA backend first" % build)
        return 2
    try:
        import torch
    except ImportError:
        print("bench-ddp: PyTorch is not installed; skipped")
        return 77
    count = torch.cuda.device_count()
    world = count if args.gpus is None else min(args.gpus, count)
    if world < 2:
        print("bench-ddp: %d GPU(s) visible (asked for %s): DDP needs at least 2; skipped"
              % (count, args.gpus if args.gpus is not None else "all"))
        return 77
    header(args, world)
    runs = {c: [] for c in CONFIGS}
    for r in range(args.repeats):
        for i in range(len(CONFIGS)):
            c = CONFIGS[(i + r) % len(CONFIGS)]
            t0 = time.monotonic()
            runs[c].append(run_config(build, c, world, args.steps, SEED, args.timeout, args.one_gpu_per_rank,
                                      args.vocab, args.seq_min, args.driver_profile))
            print("round %d: %-14s %s in %.0f s" % (r, c, "failed" if "error" in runs[c][-1] else "done",
                                                    time.monotonic() - t0), flush=True)
    failures = report(runs, world)
    print("\nbench-ddp: %s" % ("PASS" if not failures else "FAIL (%s)" % "; ".join(failures)))
    return 0 if not failures else 1


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        import faulthandler
        faulthandler.enable()  # a crash prints the Python stack to stderr, which the parent reports
        faulthandler.register(signal.SIGUSR1, all_threads=False)  # so does a hang, when the parent asks
        print(json.dumps(child(sys.argv[2], *(int(v) for v in sys.argv[3:9]))), flush=True)
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build", help="meson build directory with the CUDA backend")
    ap.add_argument("--steps", type=int, default=60, help="training steps per run (default 60, at least %d)"
                    % (WARMUP + 1))
    ap.add_argument("--repeats", type=int, default=1, help="rounds of every configuration (default 1)")
    ap.add_argument("--gpus", type=int, help="ranks, one per GPU (default: every visible GPU)")
    ap.add_argument("--one-gpu-per-rank", action="store_true", help="each rank sees only its own GPU "
                    "(CUDA_VISIBLE_DEVICES=RANK), as launchers that bind ranks to GPUs set it")
    ap.add_argument("--timeout", type=int, default=240, help="seconds per configuration before its processes "
                    "are killed (default 240)")
    ap.add_argument("--vocab", type=int, default=8192, help="vocabulary of the model (default 8192)")
    ap.add_argument("--seq-min", type=int, default=32, help="shortest sequence drawn (default 32; the longest is 512)")
    ap.add_argument("--configs", help="comma list of configurations (default: %s)" % ",".join(CONFIGS))
    ap.add_argument("--driver-profile", metavar="LIB", help="tools/device/driver-profile.c built as a library: "
                    "the gpumem ranks' driver, their VMM calls per step printed")
    args = ap.parse_args()
    if args.steps <= WARMUP or args.repeats < 1:
        ap.error("--steps must exceed %d and --repeats be at least 1" % WARMUP)
    if not 1 <= args.seq_min <= 512 or args.vocab < 2:
        ap.error("--seq-min must be 1-512 and --vocab at least 2")
    if args.configs:
        picked = args.configs.split(",")
        unknown = [c for c in picked if c not in CONFIGS]
        if unknown or not picked:
            ap.error("unknown configuration(s) %s; choose from %s" % (",".join(unknown), ",".join(CONFIGS)))
        CONFIGS[:] = sorted(picked, key=CONFIGS.index)
    if args.driver_profile and not os.path.isfile(args.driver_profile):
        ap.error("--driver-profile %s: no such file" % args.driver_profile)
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
