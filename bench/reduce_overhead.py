"""Per-call time of graph replay vs eager on npu-sim (and cuda where present).

    python bench/reduce_overhead.py [--calls N] [--device npu|cuda] [--json PATH] [--profile PATH]

Cases (issue #6): an 8-block MLP (width 256, batch 4: LayerNorm, Linear, GELU, Linear,
residual) and a single-op function, each timed per call as
  eager        the plain function,
  raw replay   one hand-captured graph replayed (torch.npu.NPUGraph / torch.cuda.CUDAGraph),
  ours         npu_graphtree.graphify (tree bookkeeping + replay; a new generation per call),
and on cuda only (Inductor for cuda; chosen explicitly, as the comparison needs):
  compile      torch.compile(fn) (default mode),
  upstream ro  torch.compile(fn, mode="reduce-overhead"): upstream's cudagraph trees,
  ours ro      the same compile after ``npu_graphtree.policy.use_for_cuda(True)``: Inductor's
               cuda graphs in our trees (torch 2.13: the policy; 2.11: the post_compile patch).
Timing is per call over --calls calls after 20 warm calls, best of --repeats runs (the box
may be shared). Prints a table and JSON. On npu-sim the numbers measure host bookkeeping.
--profile PATH writes a cProfile table of ``ours`` on the single op.
"""

from __future__ import annotations

import argparse
import json
import sys
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


def per_call_us(fn, calls, sync, repeats=3):
    for _ in range(20):  # first calls are far slower (op caches, compiles): keep them out
        fn()
    sync()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / calls * 1e6)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="npu")
    ap.add_argument("--json", default=None)
    ap.add_argument("--profile", default=None)
    ap.add_argument("--watchdog", type=float, default=0, help="dump every thread's stack and exit after S seconds")
    args = ap.parse_args()
    if args.watchdog:
        import faulthandler

        faulthandler.dump_traceback_later(args.watchdog, exit=True)
    if args.device == "npu" and not hasattr(torch, "npu"):
        import npu_sim  # the bench may import the simulator; the package never does

        npu_sim.start()
    import npu_graphtree as G

    dev = torch.device(args.device, 0)
    mod = getattr(torch, args.device)
    Graph = mod.CUDAGraph if args.device == "cuda" else mod.NPUGraph
    sync = mod.synchronize
    def timed(fn, what):
        us = per_call_us(fn, args.calls, sync, args.repeats)
        print(f"  {what}: {us:.1f} us", file=sys.stderr, flush=True)  # progress (a timeout keeps it)
        return us

    mark = torch.compiler.cudagraph_mark_step_begin  # one step per call for every tree, ours and upstream's
    torch.manual_seed(0)
    blocks = mlp().to(dev)
    cases = {
        "mlp8x256": (lambda x: mlp_forward(blocks, x), torch.randn(4, 256, device=dev)),
        "single_op": (lambda x: x + 1, torch.randn(4, 256, device=dev)),
    }
    rows = {}
    with torch.no_grad():
        for name, (fn, x) in cases.items():
            row = {"eager": timed(lambda: fn(x), f"{name} eager")}
            # raw replay: one graph on a static input
            static = x.clone()
            g = Graph()
            s = mod.Stream()
            with mod.stream(s):
                fn(static)  # warm up
                g.capture_begin()
                fn(static)
                g.capture_end()
            sync()
            row["raw_replay"] = timed(g.replay, f"{name} raw_replay")
            tree_fn = G.graphify(lambda a, fn=fn: [fn(a[0])], [x], name=name)

            def ours():
                G.mark_step_begin()
                tree_fn([x])

            row["ours"] = timed(ours, f"{name} ours")
            if args.profile and name == "single_op":
                profile(ours, args.calls * 5, args.profile)
            if args.device == "cuda":
                torch._dynamo.reset()
                compiled = torch.compile(fn)
                row["compile"] = timed(lambda: compiled(x), f"{name} compile")
                torch._dynamo.reset()
                upstream = torch.compile(fn, mode="reduce-overhead")
                row["upstream_ro"] = timed(lambda: (mark(), upstream(x)), f"{name} upstream_ro")
            rows[name] = row
        if args.device == "cuda":  # last: choosing our trees for cuda stays for the process
            G.register()
            G.policy.use_for_cuda(True)
            for name, (fn, x) in cases.items():
                torch._dynamo.reset()
                ours_ro = torch.compile(fn, mode="reduce-overhead")
                rows[name]["ours_ro"] = timed(lambda: (mark(), ours_ro(x)), f"{name} ours_ro")
                m = G.manager_for(args.device, 0)
                rows[name]["ours_ro_replays"] = m.counters["replays"] if m is not None else 0
    cols = [c for c in ("eager", "compile", "upstream_ro", "raw_replay", "ours", "ours_ro") if c in rows["single_op"]]
    print(f"{'case':<12}" + "".join(f"{c + ' us':>16}" for c in cols) + f"{'ours/raw':>10}"
          + (f"{'ours/upstream':>15}" if "upstream_ro" in cols else ""))
    for name, r in rows.items():
        line = f"{name:<12}" + "".join(f"{r[c]:>16.1f}" for c in cols) + f"{r['ours'] / r['raw_replay']:>10.2f}"
        if "upstream_ro" in cols:
            line += f"{r['ours'] / r['upstream_ro']:>15.2f}"
        print(line)
    reader = G.upstream_config._reader("cudagraph_trees", True)
    data = {"device": str(dev), "torch": torch.__version__, "calls": args.calls, "repeats": args.repeats,
            "direct_config_reads": bool(getattr(reader, "fast", False)), "config_read_note": getattr(reader, "why", ""),
            "per_call_us": rows}
    print(json.dumps(data))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(data, f, indent=1)


def profile(fn, calls, path):
    import cProfile
    import io
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(30)
    with open(path, "w") as f:
        f.write(out.getvalue())


if __name__ == "__main__":
    main()
