"""Per-call time of graph replay vs eager on npu-sim (and cuda where present).

    python bench/reduce_overhead.py [--calls N] [--device npu|cuda] [--json PATH]

Cases (issue #6): an 8-block MLP (width 256, batch 4: LayerNorm, Linear, GELU, Linear,
residual) and a single-op function, each timed as
  eager        the plain function,
  raw replay   one hand-captured graph replayed (torch.npu.NPUGraph / torch.cuda.CUDAGraph),
  ours         npu_graphtree.graphify (tree bookkeeping + replay).
Upstream reduce-overhead and default compile need Inductor for the device (cuda only until
the npu lowering lands): columns for them are filled on cuda only. Prints a table and JSON.
Skeleton: numbers on npu-sim measure host bookkeeping, not device time.
"""

from __future__ import annotations

import argparse
import json
import time

import torch


def mlp(width=256, blocks=8):
    layers = []
    for _ in range(blocks):
        layers.append(torch.nn.ModuleList([torch.nn.LayerNorm(width), torch.nn.Linear(width, width),
                                           torch.nn.Linear(width, width)]))
    return torch.nn.ModuleList(layers)


def mlp_forward(blocks, x):
    for ln, a, b in blocks:
        x = x + b(torch.nn.functional.gelu(a(ln(x))))
    return x


def per_call_us(fn, calls, sync):
    for _ in range(20):  # first calls on npu-sim are far slower (op caches): keep them out
        fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - t0) / calls * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--device", default="npu")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if args.device == "npu" and not hasattr(torch, "npu"):
        import npu_sim  # the bench may import the simulator; the package never does

        npu_sim.start()
    import npu_graphtree as G

    dev = torch.device(args.device, 0)
    mod = getattr(torch, args.device)
    Graph = mod.CUDAGraph if args.device == "cuda" else mod.NPUGraph
    sync = mod.synchronize
    torch.manual_seed(0)
    blocks = mlp().to(dev)
    cases = {
        "mlp8x256": (lambda x: mlp_forward(blocks, x), torch.randn(4, 256, device=dev)),
        "single_op": (lambda x: x + 1, torch.randn(4, 256, device=dev)),
    }
    rows = {}
    with torch.no_grad():
        for name, (fn, x) in cases.items():
            row = {"eager": per_call_us(lambda: fn(x), args.calls, sync)}
            # raw replay: one graph on a static input
            static = x.clone()
            g = Graph()
            s = mod.Stream()
            with mod.stream(s):
                fn(static)  # warm up
                g.capture_begin()
                fn(static)
                g.capture_end()
            row["raw_replay"] = per_call_us(g.replay, args.calls, sync)
            tree_fn = G.graphify(lambda a, fn=fn: [fn(a[0])], [x], name=name)

            def ours():
                G.mark_step_begin()
                tree_fn([x])

            row["ours"] = per_call_us(ours, args.calls, sync)
            rows[name] = row
    print(f"{'case':<12}{'eager us':>12}{'raw replay us':>16}{'ours us':>12}{'ours/raw':>10}")
    for name, r in rows.items():
        print(f"{name:<12}{r['eager']:>12.1f}{r['raw_replay']:>16.1f}{r['ours']:>12.1f}{r['ours'] / r['raw_replay']:>10.2f}")
    data = {"device": str(dev), "torch": torch.__version__, "calls": args.calls, "per_call_us": rows}
    print(json.dumps(data))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(data, f, indent=1)


if __name__ == "__main__":
    main()
