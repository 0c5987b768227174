#!/usr/bin/env python3
"""Real frameworks on gpumem against their own allocators, on a CUDA GPU.

    python3 tools/bench/bench-frameworks.py BUILD_DIR [--steps N] [--repeats N]
                                                      [--only torch|cupy|cupy-interleaved]
                                                      [--cupy-stream default|nonblocking]
                                                      [--cupy-interleaved ROUNDS] [--cupy-block N]
                                                      [--torch-configs A,B,...]

BUILD_DIR: a meson build with the CUDA backend (BUILD_DIR/src/libgpumem.so and the
Python package in bindings/python).  Every configuration runs in its own process
(allocators cannot be swapped once a framework has allocated), the same seeds
everywhere.  --repeats rounds run one process per configuration each, the order
rotated from round to round (the GPU machines drift between a fast and a slow
state over minutes: grouped runs would hand one configuration the slow minutes);
the parent prints one table per framework with medians, and ratios against the
framework's own allocator as the median of each round's ratio.

PyTorch: a small transformer language model (random weights, no download) trained
with AdamW for --steps steps (default 120) on batches whose size and sequence length
change every step (drawn from a fixed seed), so that a caching allocator meets many
sizes.  Configurations: PyTorch's caching allocator, PyTorch's cudaMallocAsync
backend, gpumem on the native (driver) pool, gpumem's own pool, and the simplest
cached allocator (tools/bench/pluggable_ceiling.c: what the interface itself costs);
the last three through torch.cuda.memory.CUDAPluggableAllocator.  Reported: steps
per second after 10 warm-up steps; peak device memory: the most the device had in use
(cuMemGetInfo, read after every step, minus what was in use before the first step);
and, after training, one torch.empty of 1 MiB and its release (ns, median of batches).

CuPy: a loop making many temporaries of many sizes (elementwise expressions over
arrays of 1 KiB to 16 MiB, sizes from a fixed seed), on CuPy's default stream or, with
--cupy-stream nonblocking, inside a non-blocking cupy.cuda.Stream.  Configurations:
CuPy's MemoryPool (its default); the hook the README shows, gpumem.cupy_allocator,
on the native pool (gpumem-hook) and on gpumem's own pool (gpumem-hook-own); and
CuPy's CFunctionAllocator called straight on gpumem_hook_malloc/free with the
current stream, on each pool (c-floor-native, c-floor-own): no Python between CuPy
and gpumem, what the hook's dispatch could at best reach.  Reported: the loop's time, and the time of one
allocation through CuPy (cupy.empty of 1 MiB and its release, median of many).  The
loop's time moves 30-40% between processes on the GPU machines, so --cupy-interleaved
(or --only cupy-interleaved) also runs it in one process with CuPy's MemoryPool and the
hook on each pool taking turns, block by block, and compares blocks of the same round.

Targets: gpumem >= 1.00x the caching allocator's steps per second with
both pools and peak <= 0.85x its peak; CuPy through the README's hook <= 1.05x
MemoryPool's loop time and one allocation <= 1.1x, with both pools.

SPDX-License-Identifier: MIT
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import driver_profile  # tools/bench/driver_profile.py

TORCH_CONFIGS = ["torch-caching", "torch-cudamallocasync", "gpumem-native", "gpumem-own", "pluggable-ceiling"]
CUPY_CONFIGS = ["cupy-mempool", "gpumem-hook", "gpumem-hook-own", "c-floor-native", "c-floor-own"]


# ---------------------------------------------------------------------------
# Children: one configuration each, printing one JSON line
# ---------------------------------------------------------------------------

def use_gpumem_pool(gpumem, own):
    """Make the device's current pool gpumem's own (a builtin pool) or keep the native one; keep
    what is freed cached, as the frameworks' own allocators do."""
    if own:
        pool = gpumem.Pool(implementation=gpumem.POOL_BUILTIN)
        pool.make_current(0)
    else:
        pool = gpumem.Pool.default(0)
    pool.release_threshold = 2**64 - 1
    return pool


def device_used():
    import torch
    free, total = torch.cuda.mem_get_info()
    return total - free


def empty_cost(torch, dev):
    """One torch.empty of 1 MiB and its release through the current allocator, after training
    (its sizes cached): ns, the median of 21 batches of 200."""
    samples = []
    for _ in range(21):
        t = time.perf_counter_ns()
        for _ in range(200):
            x = torch.empty(1 << 20, dtype=torch.uint8, device=dev)
            del x
        samples.append((time.perf_counter_ns() - t) / 200)
    return statistics.median(samples)


def child_torch(config, steps, seed):
    if config == "torch-cudamallocasync":
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
    import torch
    keep = None
    if config.startswith("gpumem"):
        import gpumem
        gpumem.init()
        keep = use_gpumem_pool(gpumem, config == "gpumem-own")
        gpumem.use_torch_allocator()
    elif config == "pluggable-ceiling":
        keep = torch.cuda.memory.CUDAPluggableAllocator(os.environ["GPUMEM_PLUGGABLE_CEILING"], "ceiling_malloc",
                                                        "ceiling_free")
        torch.cuda.memory.change_current_allocator(keep)
    torch.manual_seed(seed)
    dev = torch.device("cuda")
    vocab, d_model, heads, layers = 8192, 512, 8, 6
    emb = torch.nn.Embedding(vocab, d_model).to(dev)
    enc_layer = torch.nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout=0.1, batch_first=True)
    body = torch.nn.TransformerEncoder(enc_layer, layers).to(dev)
    head = torch.nn.Linear(d_model, vocab).to(dev)
    params = list(emb.parameters()) + list(body.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=1e-4)
    gen = torch.Generator().manual_seed(seed + 1)
    shapes = [(int(torch.randint(4, 33, (1,), generator=gen)), int(torch.randint(32, 513, (1,), generator=gen)))
              for _ in range(steps)]
    torch.cuda.synchronize()
    base = device_used()
    peak = 0
    warm = 10
    steady = max(warm, steps // 3)  # driver calls per step are counted from here (driver_profile.mark)
    step_log = os.environ.get("BENCH_STEP_LOG") == "1"  # each step's number on stderr, between gpumem's log lines
    t0 = None
    for i, (batch, seq) in enumerate(shapes):
        if i == warm:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        if i == steady:
            driver_profile.mark("steady")
        if step_log:
            print("bench-step %d" % i, file=sys.stderr, flush=True)
        tokens = torch.randint(0, vocab, (batch, seq + 1), device=dev)
        x, y = tokens[:, :-1], tokens[:, 1:]
        mask = torch.nn.Transformer.generate_square_subsequent_mask(seq, device=dev)
        logits = head(body(emb(x), mask=mask, is_causal=True))
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        peak = max(peak, device_used() - base)
    elapsed = time.perf_counter() - t0
    driver_profile.mark("end")
    out = {"config": config, "steps_per_s": (steps - warm) / elapsed, "peak_bytes": peak, "steady_steps": steps - steady,
           "loss": float(loss.item()), "empty_ns": empty_cost(torch, dev)}
    del keep
    return out


def child_cupy(config, steps, seed):
    import cupy
    import numpy
    nonblocking = os.environ.get("BENCH_CUPY_STREAM") == "nonblocking"
    if nonblocking:
        cupy.cuda.Stream(non_blocking=True).use()
    if config != "cupy-mempool":
        import gpumem
        gpumem.init()
        if config.startswith("c-floor"):
            import ctypes
            c_addr = lambda f: ctypes.cast(f, ctypes.c_void_p).value  # noqa: E731
            cupy.cuda.set_allocator(cupy.cuda.memory.CFunctionAllocator(
                cupy.cuda.get_current_stream().ptr if nonblocking else 0, c_addr(gpumem.lib.gpumem_hook_malloc),
                c_addr(gpumem.lib.gpumem_hook_free), gpumem.lib).malloc)
        else:
            cupy.cuda.set_allocator(gpumem.cupy_allocator)
        pool = use_gpumem_pool(gpumem, config.endswith("-own") or config.endswith("-own-unpaged"))
    rng = numpy.random.default_rng(seed)
    sizes = [int(2 ** rng.uniform(8, 22)) for _ in range(64)]  # float32 elements: 1 KiB .. 16 MiB

    def workload(n):
        acc = 0.0
        for i in range(n):
            a = cupy.ones(sizes[i % len(sizes)], dtype=cupy.float32)
            b = a * 2 + 1          # temporaries of a's size
            c = cupy.sqrt(b) - a   # more
            acc += float(c[:1].sum()) if i % 64 == 0 else 0.0
        cupy.cuda.get_current_stream().synchronize()
        return acc

    workload(200)  # warm: pools filled, kernels compiled
    t0 = time.perf_counter()
    workload(steps)
    loop_s = time.perf_counter() - t0
    one = []
    for _ in range(2000):
        t = time.perf_counter_ns()
        x = cupy.empty(1 << 18, dtype=cupy.float32)
        del x
        one.append(time.perf_counter_ns() - t)
    return {"config": config, "loop_s": loop_s, "one_alloc_ns": statistics.median(one)}


def child_cupy_interleaved(block_steps, rounds, seed):
    """The CuPy loop in one process, the allocators taking turns: each round runs a block of
    block_steps iterations (and a batch of single allocations) on CuPy's MemoryPool, on the
    README's hook over the driver's pool and over gpumem's own pool, in an order rotated from
    round to round.  Swapping is safe between blocks: every array of a block is gone at its end,
    and each array frees through the allocator that made it.  The machine's drift over seconds
    then touches the three alike, and each round's ratio compares blocks seconds apart."""
    import cupy
    import gpumem
    import numpy
    gpumem.init()
    mempool = cupy.get_default_memory_pool()
    own = gpumem.Pool(implementation=gpumem.POOL_BUILTIN)
    native = gpumem.Pool.default(0)
    for p in (own, native):
        p.release_threshold = 2**64 - 1
    rng = numpy.random.default_rng(seed)
    sizes = [int(2 ** rng.uniform(8, 22)) for _ in range(64)]  # float32 elements: 1 KiB .. 16 MiB

    def use(config):
        if config == "cupy-mempool":
            cupy.cuda.set_allocator(mempool.malloc)
        else:
            (own if config == "gpumem-hook-own" else native).make_current(0)
            cupy.cuda.set_allocator(gpumem.cupy_allocator)

    def block(n):
        acc = 0.0
        for i in range(n):
            a = cupy.ones(sizes[i % len(sizes)], dtype=cupy.float32)
            b = a * 2 + 1
            c = cupy.sqrt(b) - a
            acc += float(c[:1].sum()) if i % 64 == 0 else 0.0
        cupy.cuda.get_current_stream().synchronize()
        return acc

    def one_alloc():
        t = time.perf_counter_ns()
        for _ in range(200):
            x = cupy.empty(1 << 18, dtype=cupy.float32)
            del x
        return (time.perf_counter_ns() - t) / 200

    configs = ["cupy-mempool", "gpumem-hook", "gpumem-hook-own"]
    for c in configs:  # warm: pools filled, kernels compiled
        use(c)
        block(200)
        one_alloc()
    times = {c: [] for c in configs}
    ones = {c: [] for c in configs}
    for r in range(rounds):
        for i in range(len(configs)):
            c = configs[(i + r) % len(configs)]
            use(c)
            t0 = time.perf_counter()
            block(block_steps)
            times[c].append(time.perf_counter() - t0)
            ones[c].append(one_alloc())
    cupy.cuda.set_allocator(mempool.malloc)
    native.make_current(0)
    return {"times": times, "ones": ones}


def interleaved_cupy(build, block_steps, rounds):
    env = dict(os.environ)
    env["GPUMEM_LIBRARY"] = os.path.join(build, "src", "libgpumem.so")
    env["GPUMEM_BACKEND"] = "cuda"
    here = os.path.dirname(os.path.abspath(__file__))
    env["PYTHONPATH"] = os.path.join(here, "..", "..", "bindings", "python") + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "cupy-interleaved", "-", str(block_steps),
           str(rounds)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    line = next((ln for ln in reversed(r.stdout.splitlines()) if ln.startswith("{")), None)
    if r.returncode != 0 or line is None:
        print("interleaved CuPy run FAILED: %s" % " | ".join((r.stderr or r.stdout).strip().splitlines()[-6:]))
        return []
    data = json.loads(line)
    times, ones = data["times"], data["ones"]
    print("\nCuPy temporaries on the default stream, one process, allocators taking turns: %d rounds of a %d-"
          "iteration block each (order rotated); ratio: the median over rounds of block time / MemoryPool's block "
          "time in the same round; one allocation: cupy.empty of 1 MiB and its release, mean of 200 per round"
          % (rounds, block_steps))
    print("    %-20s %14s %10s %16s %10s" % ("configuration", "block (median)", "ratio", "one alloc (median)", "ratio"))
    verdicts = []
    for c in times:
        tr = [t / b for t, b in zip(times[c], times["cupy-mempool"])]
        orr = [t / b for t, b in zip(ones[c], ones["cupy-mempool"])]
        print("    %-20s %12.1f ms %9.3fx %14.0f ns %9.3fx" % (c, statistics.median(times[c]) * 1e3,
              statistics.median(tr), statistics.median(ones[c]), statistics.median(orr)))
        if c != "cupy-mempool":
            t, o = statistics.median(tr), statistics.median(orr)
            verdicts.append("%s (interleaved): loop %.3fx (target <= 1.05: %s), one allocation %.3fx (target <= "
                            "1.10: %s)" % (c, t, "met" if t <= 1.05 else "NOT met", o, "met" if o <= 1.10 else
                                           "NOT met"))
    print("  each round (block ms):")
    for c in times:
        print("    %-20s %s" % (c, " ".join("%.1f" % (t * 1e3) for t in times[c])))
    return verdicts


# ---------------------------------------------------------------------------
# Parent
# ---------------------------------------------------------------------------

# --driver-profile: tools/device/driver-profile.c built as a library, the gpumem children's
# driver; their VMM calls are read back from its report (attribution, not figures).
DRIVER_PROFILE = None


def print_profiles(configs, runs):
    """The profiled children's VMM calls per step of their steady state."""
    rows = [(c, r, x) for c in configs for r, x in enumerate(runs[c]) if "profile" in x]
    if not rows:
        return
    print("  driver calls per step in the steady state (the last two thirds of the steps; driver-profile.c's marks;"
          " mean us; attribution, not figures):")
    print("    %-24s %-5s" % ("configuration", "round") + "".join("  %22s" % f for f in driver_profile.VMM_CALLS))
    for c, r, x in rows:
        print("    %-24s %-5d" % (c, r) + "".join("  %22s" % v for v in
                                              driver_profile.cells(x["profile"], x.get("steady_steps", 0))))


def run_child(build, framework, config, steps, seed):
    env = dict(os.environ)
    prof = None
    if DRIVER_PROFILE and config.startswith("gpumem"):
        fd, prof = tempfile.mkstemp(prefix="bench-frameworks-", suffix=".prof")
        os.close(fd)
        env["GPUMEM_CUDA_LIBRARY"] = os.path.abspath(DRIVER_PROFILE)
        env["DRIVER_PROFILE_OUT"] = prof
    env["GPUMEM_LIBRARY"] = os.path.join(build, "src", "libgpumem.so")
    env["GPUMEM_BACKEND"] = "cuda"
    if config.endswith("-unpaged"):
        env["GPUMEM_POOL_PAGED"] = "0"  # the own pool's chunks backed whole (docs/semantics.md)
    env["GPUMEM_PLUGGABLE_CEILING"] = os.path.join(build, "tools", "libpluggable-ceiling.so")
    here = os.path.dirname(os.path.abspath(__file__))
    env["PYTHONPATH"] = os.path.join(here, "..", "..", "bindings", "python") + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, os.path.abspath(__file__), "--child", framework, config, str(steps), str(seed)]
    try:
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        line = next((ln for ln in reversed(r.stdout.splitlines()) if ln.startswith("{")), None)
        if r.returncode != 0 or line is None:
            tail = (r.stderr or r.stdout).strip().splitlines()[-6:]
            return {"config": config, "error": " | ".join(tail) or "exit %d" % r.returncode}
        out = json.loads(line)
        if prof:
            out["profile"] = driver_profile.read(prof)
        return out
    finally:
        if prof:
            os.unlink(prof)


def table(title, configs, results, ratios, keys):
    print("\n" + title)
    print("    %-24s" % "configuration" + "".join("  %22s" % k for k, _ in keys))
    for c in configs:
        row = results.get(c, {})
        if "error" in row:
            print("    %-24s  FAILED: %s" % (c, row["error"]))
            continue
        cells = []
        for k, fmt in keys:
            v, ratio = row.get(k), ratios.get(c, {}).get(k)
            if v is None:
                cells.append("  %22s" % "-")
            else:
                cells.append("  %22s" % ((fmt % v) + (" (%5.3fx)" % ratio if ratio is not None else "")))
        print("    %-24s" % c + "".join(cells))


def median_of(runs, key):
    vals = [r[key] for r in runs if key in r]
    return statistics.median(vals) if vals else None


def measure(build, framework, configs, steps, seed, repeats, keys):
    """Rounds of one process per configuration, the order rotated each round,
    so that the machine's drift over minutes touches every configuration alike.
    Returns each configuration's medians, and its ratios to the first
    configuration: the median over rounds of the ratio within each round.
    `keys`: (figure, format) pairs."""
    keys = [k for k, _ in keys]
    runs = {c: [] for c in configs}
    for r in range(repeats):
        for i in range(len(configs)):
            c = configs[(i + r) % len(configs)]
            runs[c].append(run_child(build, framework, c, steps, seed))
    results, ratios = {}, {}
    base_runs = runs[configs[0]]
    for c in configs:
        errs = [x for x in runs[c] if "error" in x]
        if errs:
            results[c] = errs[0]
            continue
        results[c] = {k: median_of(runs[c], k) for k in keys}
        ratios[c] = {}
        for k in keys:
            per_round = [x[k] / b[k] for x, b in zip(runs[c], base_runs) if "error" not in b and b.get(k)]
            if per_round:
                ratios[c][k] = statistics.median(per_round)
    return results, ratios, runs


def print_rounds(configs, runs, keys):
    """Every process's figures, in round order: the spread behind the medians."""
    keys = [k for k, _ in keys]
    print("  each round:")
    for c in configs:
        print("    %-24s %s" % (c, "; ".join(
            "error" if "error" in x else ", ".join("%.4g" % x[k] for k in keys) for x in runs[c])))


def parent(args):
    build = os.path.abspath(args.build)
    print("command: %s" % " ".join(sys.argv))
    print("date:    %s" % time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()))
    verdicts = []
    if args.only in (None, "torch"):
        keys = [("steps_per_s", "%.2f/s"), ("peak_bytes", "%.0f"), ("empty_ns", "%.0f ns")]
        configs = args.torch_configs.split(",") if args.torch_configs else TORCH_CONFIGS
        results, ratios, runs = measure(build, "torch", configs, args.steps, 1234, args.repeats, keys)
        table("PyTorch transformer LM, %d steps (10 warm-up), variable batch and sequence length; %d rounds of one "
              "process per configuration, order rotated; medians, and the median of each round's ratio vs "
              "torch-caching" % (args.steps, args.repeats), configs, results, ratios, keys)
        print_rounds(configs, runs, keys)
        print_profiles(configs, runs)
        for c in ("gpumem-native", "gpumem-own"):
            r = ratios.get(c, {})
            if "steps_per_s" not in r or "peak_bytes" not in r:
                verdicts.append("%s: not measured" % c)
                continue
            speed, mem = r["steps_per_s"], r["peak_bytes"]
            verdicts.append("%s: speed %.3fx (target >= 1.00: %s), peak %.3fx (target <= 0.85: %s)" % (
                c, speed, "met" if speed >= 1.0 else "NOT met", mem, "met" if mem <= 0.85 else "NOT met"))
        own, nat = ratios.get("gpumem-own", {}), ratios.get("gpumem-native", {})
        if "peak_bytes" in own and "peak_bytes" in nat:
            # Each process's peak is the same from run to run (fixed seeds): the medians compare.
            verdicts.append("own pool peak <= native pool peak: %s (%.3fx)" % (
                "met" if own["peak_bytes"] <= nat["peak_bytes"] else "NOT met", own["peak_bytes"] / nat["peak_bytes"]))
    if args.only in (None, "cupy"):
        keys = [("loop_s", "%.3f s"), ("one_alloc_ns", "%.0f ns")]
        os.environ["BENCH_CUPY_STREAM"] = args.cupy_stream
        cupy_configs = args.cupy_configs.split(",") if args.cupy_configs else CUPY_CONFIGS
        results, ratios, runs = measure(build, "cupy", cupy_configs, args.cupy_steps, 99, args.repeats, keys)
        table("CuPy temporaries on the %s stream, %d iterations (3 temporaries each, 1 KiB..16 MiB); %d rounds of "
              "one process per configuration, order rotated; medians, and the median of each round's ratio vs "
              "cupy-mempool" % (args.cupy_stream, args.cupy_steps, args.repeats), cupy_configs, results, ratios, keys)
        print_rounds(cupy_configs, runs, keys)
        for c in cupy_configs[1:]:
            r = ratios.get(c, {})
            if "loop_s" not in r or "one_alloc_ns" not in r:
                verdicts.append("%s: not measured" % c)
                continue
            t, one = r["loop_s"], r["one_alloc_ns"]
            verdicts.append("%s: loop %.3fx (target <= 1.05: %s), one allocation %.3fx (target <= 1.10: %s)" % (
                c, t, "met" if t <= 1.05 else "NOT met", one, "met" if one <= 1.10 else "NOT met"))
    if args.cupy_interleaved or args.only == "cupy-interleaved":
        verdicts += interleaved_cupy(build, args.cupy_block, args.cupy_interleaved or 15)
    print("\ntargets:")
    for v in verdicts:
        print("    " + v)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        framework, config, steps, seed = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
        if framework == "cupy-interleaved":
            print(json.dumps(child_cupy_interleaved(steps, seed, 99)))  # steps: block, seed: rounds
            return 0
        fn = child_torch if framework == "torch" else child_cupy
        print(json.dumps(fn(config, steps, seed)))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("--steps", type=int, default=120)
    ap.add_argument("--cupy-steps", type=int, default=12000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cupy-configs", help="comma list of CuPy configurations (default: %s; the first is the "
                    "reference and must be cupy-mempool; also gpumem-hook-own-unpaged, c-floor-own-unpaged: "
                    "the own pool with GPUMEM_POOL_PAGED=0)" % ",".join(CUPY_CONFIGS))
    ap.add_argument("--only", choices=["torch", "cupy", "cupy-interleaved"])
    ap.add_argument("--cupy-stream", choices=["default", "nonblocking"], default="default")
    ap.add_argument("--cupy-interleaved", type=int, metavar="ROUNDS", default=0,
                    help="also run the CuPy loop in one process with the allocators taking turns, ROUNDS rounds "
                    "of --cupy-block iterations each (MemoryPool, the hook on the driver pool and on the own pool)")
    ap.add_argument("--cupy-block", type=int, default=1000, help="iterations per block of --cupy-interleaved")
    ap.add_argument("--torch-configs", help="comma list of PyTorch configurations (default: all; the first is "
                    "the reference and must be torch-caching)")
    ap.add_argument("--driver-profile", metavar="LIB", help="tools/device/driver-profile.c built as a library: the "
                    "gpumem children's driver, their VMM calls per step printed (PyTorch)")
    args = ap.parse_args()
    global DRIVER_PROFILE
    DRIVER_PROFILE = args.driver_profile
    parent(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
