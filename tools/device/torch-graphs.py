#!/usr/bin/env python3
"""PyTorch CUDA graphs (torch.cuda.graph) on gpumem, against PyTorch's own allocator.

    python3 tools/device/torch-graphs.py BUILD_DIR [--replays N] [--timeout S]

BUILD_DIR: a meson build with the CUDA backend (BUILD_DIR/src/libgpumem.so; the Python
package comes from bindings/python).  Three configurations, each in its own process (an
allocator cannot be swapped once PyTorch has initialised CUDA): torch (the caching
allocator), gpumem-native (gpumem through CUDAPluggableAllocator on the driver's pool) and
gpumem-own (gpumem's own pool).

Each process builds one small model (an MLP and a layer norm, float32, TF32 off, fixed
seed), runs it eagerly on a batch, then captures one forward and backward pass with
torch.cuda.graph on a side stream after three warm-up passes (PyTorch's recipe), and replays
the graph --replays times (default 20) on new inputs copied into the static input.  Every
replay's output and gradient are compared with an eager run of the same input (relative
1e-5, with the same kernels they agree exactly or nearly).  Then a second module goes through
torch.cuda.make_graphed_callables and runs --replays forward and backward passes against an
eager twin with the same weights (outputs, input and weight gradients compared alike).  Between replays the process
allocates and fills tensors outside the graph, which must never disturb the graph's memory:
a graph block handed out again would corrupt the replays' results.

Last line per configuration "<config>: PASS (...)" or "<config>: FAIL (...)", and at the end
"torch-graphs: PASS" (exit 0) or "torch-graphs: FAIL" (exit 1).

SPDX-License-Identifier: MIT
"""
import argparse
import json
import os
import subprocess
import sys

CONFIGS = ["torch", "gpumem-native", "gpumem-own"]
HERE = os.path.dirname(os.path.abspath(__file__))
RTOL = 1e-5


def child(config, replays):
    keep = None
    if config != "torch":
        import gpumem
        gpumem.init()
        gpumem.set_device(0)
        if config == "gpumem-own":
            keep = gpumem.Pool(device=0, implementation=gpumem.POOL_BUILTIN)
            keep.make_current(0)
        else:
            keep = gpumem.Pool.default(0)
        gpumem.use_torch_allocator()
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(1234)
    dev = torch.device("cuda", 0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.LayerNorm(512),
                                torch.nn.Linear(512, 128)).to(dev)
    static_in = torch.randn(64, 256, device=dev)

    def step(x):
        for p in model.parameters():
            p.grad = None
        out = model(x)
        loss = (out * out).mean()
        loss.backward()
        return out, model[0].weight.grad

    # Warm up on a side stream (PyTorch's recipe for capture), then capture.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step(static_in)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    for p in model.parameters():
        p.grad = None
    with torch.cuda.graph(graph):
        static_out = model(static_in)
        static_loss = (static_out * static_out).mean()
        static_loss.backward()
    static_grad = model[0].weight.grad

    worst = 0.0
    for i in range(replays):
        x = torch.randn(64, 256, device=dev)
        static_in.copy_(x)
        graph.replay()
        # Work outside the graph while it runs: allocations that must not receive its blocks.
        junk = [torch.full((4096,), float(i + k), device=dev) for k in range(8)]
        torch.cuda.synchronize()
        got_out, got_grad = static_out.clone(), static_grad.clone()
        del junk
        want_out, want_grad = step(x)
        for got, want in ((got_out, want_out), (got_grad, want_grad)):
            err = ((got - want).abs().max() / want.abs().max().clamp_min(1e-30)).item()
            worst = max(worst, err)
    del graph
    torch.cuda.synchronize()

    # torch.cuda.make_graphed_callables: a module's forward and backward as graphs, against an
    # eager twin with the same weights.
    torch.manual_seed(99)
    eager = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.Tanh(), torch.nn.Linear(256, 64)).to(dev)
    graphed = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.Tanh(), torch.nn.Linear(256, 64)).to(dev)
    graphed.load_state_dict(eager.state_dict())
    sample = torch.randn(32, 256, device=dev, requires_grad=True)
    graphed = torch.cuda.make_graphed_callables(graphed, (sample,))
    for i in range(replays):
        x = torch.randn(32, 256, device=dev)
        for m in (eager, graphed):
            for p in m.parameters():
                p.grad = None
        xe, xg = x.clone().requires_grad_(), x.clone().requires_grad_()
        ye, yg = eager(xe), graphed(xg)
        (ye * ye).sum().backward()
        (yg * yg).sum().backward()
        junk = torch.full((4096,), float(i), device=dev)  # work outside the graphs
        del junk
        for got, want in ((yg, ye), (xg.grad, xe.grad), (list(graphed.parameters())[0].grad,
                                                         list(eager.parameters())[0].grad)):
            err = ((got - want).abs().max() / want.abs().max().clamp_min(1e-30)).item()
            worst = max(worst, err)
    torch.cuda.synchronize()
    print(json.dumps({"replays": replays, "worst_rel_err": worst}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", nargs="?")
    ap.add_argument("--replays", type=int, default=20)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.replays)
        return 0
    if not args.build:
        ap.error("BUILD_DIR is required")
    package = os.path.join(HERE, "..", "..", "bindings", "python")
    env = dict(os.environ, GPUMEM_LIBRARY=os.path.join(os.path.abspath(args.build), "src", "libgpumem.so"),
               GPUMEM_BACKEND="cuda", PYTHONPATH=package + os.pathsep + os.environ.get("PYTHONPATH", ""))
    failed = False
    for config in CONFIGS:
        try:
            p = subprocess.run([sys.executable, __file__, "--child", config, "--replays", str(args.replays)],
                               env=env, capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            print(f"{config}: FAIL (ran past {args.timeout:.0f} s)")
            failed = True
            continue
        lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
        if p.returncode != 0 or not lines:
            tail = "\n    ".join((p.stderr or p.stdout).strip().splitlines()[-12:])
            print(f"{config}: FAIL (exit {p.returncode})\n    {tail}")
            failed = True
            continue
        r = json.loads(lines[-1])
        ok = r["worst_rel_err"] <= RTOL
        failed = failed or not ok
        print(f"{config}: {'PASS' if ok else 'FAIL'} ({r['replays']} replays, worst relative error "
              f"{r['worst_rel_err']:.2e} against eager, limit {RTOL:g})")
    print("torch-graphs: " + ("FAIL" if failed else "PASS"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
