#!/usr/bin/env python3
"""Write large traces in the format of GPUMEM_TRACE (docs/semantics.md, "Trace
format"), for the tests of size: a made-up training-like loop on two streams over a
device pool and a pinned pool, a managed pool holding a lookup table, plus plain
device, pinned, registered, managed allocations and VMM mappings.

    make_trace_fixtures.py --trace OUT.json [--steps N] [--drop N] [--seed S]

The fixtures checked in under tests/data/ are not made here: they are recorded from a
real program, trace_workload.c (docs/debugging.md, "Fixtures").  tests/viz makes a
trace of 100000+ events with --steps 700 at run time, and bindings/python/tests with
--steps 60.  --drop N keeps only the newest events, as GPUMEM_TRACE_MAX does, and sets
"dropped": a cut trace frees pointers whose allocation it no longer holds.

Standard library only.  SPDX-License-Identifier: MIT
"""
import argparse
import json
import random

PID = 4242
DEVICE_POOL = "0x5600a0001000"
PINNED_POOL = "0x5600a0002000"
MANAGED_POOL = "0x5600a0003000"
# What each pool holds: its pool events and its blocks say so ("memory").
POOL_MEMORY = {DEVICE_POOL: "device", PINNED_POOL: "pinned", MANAGED_POOL: "managed"}
STREAMS = ["0x5600b0000100", "0x5600b0000200"]
GRANULE = 32 << 20

BACKTRACES = {
    "weights": ["gpumem_malloc", "load_weights at model.c:88", "main at train.c:41"],
    "activation": ["gpumem_malloc_from_pool_async", "forward_layer at model.c:212",
                   "train_step at train.c:120", "main at train.c:60"],
    "gradient": ["gpumem_malloc_from_pool_async", "backward_layer at model.c:301",
                 "train_step at train.c:131", "main at train.c:60"],
    "table": ["gpumem_malloc_from_pool_async", "load_embeddings at model.c:64", "main at train.c:44"],
    "staging": ["gpumem_malloc_from_pool_async", "stage_batch at loader.c:57",
                "loader_thread at loader.c:140"],
}


class Run:
    """The state of the made-up program: what is live, what each pool holds."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.t = 0.0
        self.events = []
        self.live = {}          # ptr -> args of its alloc event
        self.next_addr = {DEVICE_POOL: 0x7f2000000000, PINNED_POOL: 0x7f3000000000, MANAGED_POOL: 0x7f4000000000,
                          None: 0x7f1000000000}
        self.reserved = {pool: 0 for pool in POOL_MEMORY}
        self.used = {pool: 0 for pool in POOL_MEMORY}

    def tick(self, lo=0.5, hi=20.0):
        self.t += self.rng.uniform(lo, hi)
        return round(self.t, 3)

    def emit(self, name, args, tid=1, ph="i"):
        ev = {"name": name, "ph": ph, "s": "t", "ts": self.tick(), "pid": PID, "tid": tid,
              "cat": "gpumem", "args": args}
        if ph == "C":
            ev = {"name": name, "ph": "C", "ts": ev["ts"], "pid": PID, "args": args}
        self.events.append(ev)

    def counters(self, pool=None):
        # As the library writes it: live bytes per kind, the kinds with none left out.
        per_kind = {}
        for a in self.live.values():
            per_kind[a["kind"]] = per_kind.get(a["kind"], 0) + a["bytes"]
        self.emit("bytes in use", {k: n for k, n in per_kind.items() if n}, ph="C")
        if pool:
            self.emit("pool %s reserved" % pool, {"reserved": self.reserved[pool], "used": self.used[pool]}, ph="C")

    def alloc(self, nbytes, kind, memory, pool=None, stream=None, role="activation", tid=1, at=None):
        if pool and self.used[pool] + nbytes > self.reserved[pool]:
            grow = ((self.used[pool] + nbytes - self.reserved[pool]) + GRANULE - 1) // GRANULE * GRANULE
            self.reserved[pool] += grow
            self.emit("pool_grow", {"pool": pool, "device": 0, "memory": POOL_MEMORY[pool], "bytes": grow,
                                    "reserved": self.reserved[pool]}, tid)
        if at is None:
            at = self.next_addr[pool]
            self.next_addr[pool] += (nbytes + 511) // 512 * 512
        ptr = "0x%x" % at
        args = {"ptr": ptr, "bytes": nbytes, "kind": kind, "memory": memory, "device": 0,
                "pool": pool, "stream": stream, "backtrace": BACKTRACES[role]}
        self.live[ptr] = args
        if pool:
            self.used[pool] += nbytes
        self.emit("alloc", args, tid)
        self.counters(pool)
        return ptr

    def free(self, ptr, tid=1, stream=None):
        args = dict(self.live.pop(ptr))
        if stream is not None:
            args["stream"] = stream
        pool = args["pool"]
        if pool:
            self.used[pool] -= args["bytes"]
        self.emit("free", args, tid)
        self.counters(pool)

    def sync(self, stream):
        self.emit("sync", {"stream": stream, "device": 0})

    def trim(self, pool, keep):
        # Whole free granules above `keep` go back.
        target = max(keep, (self.used[pool] + GRANULE - 1) // GRANULE * GRANULE)
        if self.reserved[pool] > target:
            released = self.reserved[pool] - target
            self.reserved[pool] = target
            memory = POOL_MEMORY[pool]
            self.emit("pool_release", {"pool": pool, "device": 0, "memory": memory, "bytes": released,
                                       "reserved": target})
            self.emit("trim", {"pool": pool, "device": 0, "memory": memory, "released": released, "reserved": target})
            self.counters(pool)


def simulate(steps, seed):
    run = Run(seed)
    rng = run.rng
    # Start-up: weights (device), a managed table, a registered host buffer, VMM memory
    # (traced as its mappings: four granules mapped side by side in one reservation).
    weights = [run.alloc(rng.choice([4, 8, 16, 24]) << 20, "device", "device", role="weights") for _ in range(6)]
    managed = run.alloc(64 << 20, "managed", "managed", role="weights")
    registered = run.alloc(8 << 20, "host_registered", "pinned", role="staging", tid=2)
    pinned = run.alloc(2 << 20, "host_pinned", "pinned", role="staging", tid=2)
    vmm = [run.alloc(GRANULE, "virtual", "device", role="weights", at=0x7f5000000000 + i * GRANULE)
           for i in range(4)]
    table = run.alloc(12 << 20, "stream_ordered", "managed", MANAGED_POOL, STREAMS[0], role="table")
    for step in range(steps):
        # The loader thread stages the batch in the pinned pool.
        batch = run.alloc(rng.choice([1, 2, 3]) << 20, "stream_ordered", "pinned", PINNED_POOL, STREAMS[1],
                          role="staging", tid=2)
        acts = []
        for layer in range(rng.randint(8, 14)):
            acts.append(run.alloc(rng.randint(1, 64) * 256 << 10, "stream_ordered", "device", DEVICE_POOL,
                                  STREAMS[0]))
            if rng.random() < 0.3:   # a temporary freed at once
                run.free(run.alloc(rng.randint(1, 2048) * 256, "stream_ordered", "device", DEVICE_POOL, STREAMS[0]))
        run.free(batch, tid=2)
        grads = []
        for act in reversed(acts):
            grads.append(run.alloc(rng.randint(1, 32) * 256 << 10, "stream_ordered", "device", DEVICE_POOL,
                                   STREAMS[0], role="gradient"))
            run.free(act)
        for g in grads:
            run.free(g, stream=STREAMS[1] if rng.random() < 0.2 else None)
        run.sync(STREAMS[0])
        if step % 2 == 1:
            run.trim(DEVICE_POOL, 64 << 20)
        if step == steps // 2:
            run.free(weights.pop())   # a layer unloaded half way
    run.sync(None)
    run.trim(PINNED_POOL, 0)
    run.free(pinned, tid=2)
    run.free(registered, tid=2)
    # Left live at the end: the weights, the managed tables and the VMM mappings.
    return run, [managed, table] + vmm + weights


def write_trace(path, run, drop):
    events = run.events[drop:]
    header = {"displayTimeUnit": "ns",
              "otherData": {"gpumem_trace": 1, "version": "0.2.0", "backend": "host", "pid": PID,
                            "dropped": drop,
                            "devices": [{"device": 0, "name": "gpumem host device", "total": 8 << 30}]}}
    head = json.dumps(header, separators=(",", ":"))[:-1] + ',"traceEvents":['
    with open(path, "w") as f:
        f.write(head + "\n")
        for i, ev in enumerate(events):
            f.write(json.dumps(ev, separators=(",", ":")) + ("," if i + 1 < len(events) else "") + "\n")
        f.write("]}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", required=True)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--drop", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    run, _ = simulate(a.steps, a.seed)
    write_trace(a.trace, run, a.drop)


if __name__ == "__main__":
    main()
