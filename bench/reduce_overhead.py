"""Per-call time of graph replay vs eager on npu-sim (and cuda where present).

    python bench/reduce_overhead.py [--calls N] [--device npu|cuda] [--json PATH] [--profile PATH]

Cases (issue #6): an 8-block MLP (width 256, batch 4: LayerNorm, Linear, GELU, Linear,
residual) and a single-op function, each timed per call as
  eager        the plain function,
  raw replay   one hand-captured graph of the eager function (torch.npu.NPUGraph /
               torch.cuda.CUDAGraph): the eager kernels,
  ours         npu_graphtree.graphify of the eager function (tree bookkeeping + replay),
and, compiled by Inductor for the device (issue #24: every ratio against the same kernels),
  compile      torch.compile(fn) (default mode),
  raw compiled one hand-captured graph of the compiled function's kernels, replayed,
  aot ro       the reduce-overhead compile's AOTAutograd-wrapped callable called directly
               (what Dynamo calls after its guards: runtime wrappers, the compiled output's
               call path, the tree, the replay),
  ours ro      torch.compile(fn, mode="reduce-overhead") (npu: our tree; cuda: after
               ``npu_graphtree.policy.use_for_cuda(True)``),
  ours ro grad the same with grad enabled (parameters requiring grad, no torch.no_grad()),
  upstream ro  (cuda) torch.compile(fn, mode="reduce-overhead") with upstream's cudagraph trees.
So per layer: replay = raw compiled; AOTAutograd + output code + tree = aot ro - raw compiled;
Dynamo (frame evaluation, guards) = ours ro - aot ro. Timing is per call over --calls calls
after 20 warm calls, best of --repeats runs (the box may be shared). Prints a table and JSON.
On npu-sim the numbers measure host bookkeeping. --profile PATH writes cProfile tables of
``ours ro`` on every case.

npu-sim host proxies (issue 24 item 3): there Inductor's Triton kernels run interpreted (ms a
replay), so the compiled rows of the two cases above say nothing about host cost. ``mm`` (one
bias-free Linear, width 256) and ``linear8`` (8 Linears, width 256) compile, with
``max_autotune_gemm_backends="ATEN"``, to aten ``extern_kernels`` calls only: a replay costs
microseconds and the whole path from Dynamo to the replay is measurable (npu's default
``--cases``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time

import torch


def mlp(width=256, blocks=8):
    layers = []
    for _ in range(blocks):
        layers.append(
            torch.nn.ModuleList(
                [
                    torch.nn.LayerNorm(width),
                    torch.nn.Linear(width, width),
                    torch.nn.Linear(width, width),
                ]
            )
        )
    return torch.nn.ModuleList(layers)


def mlp_forward(blocks, x):
    for ln, a, b in blocks:
        x = x + b(torch.nn.functional.gelu(a(ln(x))))
    return x


def per_call_us(fn, calls, sync, repeats=3, clock=time.perf_counter):
    for _ in range(20):  # first calls are far slower (op caches, compiles): keep them out
        fn()
    sync()
    best = float("inf")
    for _ in range(repeats):
        t0 = clock()
        for _ in range(calls):
            fn()
        sync()
        best = min(best, (clock() - t0) / calls * 1e6)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="npu")
    ap.add_argument("--json", default=None)
    ap.add_argument("--profile", default=None)
    ap.add_argument(
        "--cases",
        default=None,
        help="comma-separated from mlp8x256,single_op,mm,linear8 (default: the first two on cuda, the "
        "last two on npu: on npu-sim the compiled MLP runs interpreted kernels, seconds a call)",
    )
    ap.add_argument(
        "--clock",
        choices=("wall", "thread"),
        default="wall",
        help="thread: this thread's CPU time (npu-sim on a shared box: other jobs' load mostly drops "
        "out; run with one intra-op thread); wall: perf_counter (cuda: the GPU work counts)",
    )
    ap.add_argument(
        "--watchdog",
        type=float,
        default=0,
        help="dump every thread's stack and exit after S seconds",
    )
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
    clock = time.perf_counter
    if args.clock == "thread":
        if args.device == "cuda":
            ap.error("--clock thread misses the GPU's time: use wall on cuda")
        torch.set_num_threads(1)  # aten kernels in this thread, so its CPU time covers them
        clock = time.thread_time

    def timed(fn, what):
        us = per_call_us(fn, args.calls, sync, args.repeats, clock)
        print(
            f"  {what}: {us:.1f} us", file=sys.stderr, flush=True
        )  # progress (a timeout keeps it)
        return us

    mark = (
        torch.compiler.cudagraph_mark_step_begin
    )  # one step per call for every tree, ours and upstream's
    torch.manual_seed(0)
    blocks = mlp().to(dev)
    mm = torch.nn.Linear(256, 256, bias=False).to(dev)
    linears = torch.nn.Sequential(*(torch.nn.Linear(256, 256) for _ in range(8))).to(dev)
    cases = {
        "mlp8x256": (lambda x: mlp_forward(blocks, x), torch.randn(4, 256, device=dev)),
        "single_op": (lambda x: x + 1, torch.randn(4, 256, device=dev)),
        "mm": (lambda x: mm(x), torch.randn(4, 256, device=dev)),
        "linear8": (lambda x: linears(x), torch.randn(4, 256, device=dev)),
    }
    wanted = args.cases or ("mlp8x256,single_op" if args.device == "cuda" else "mm,linear8")
    cases = {k: v for k, v in cases.items() if k in wanted.split(",")}

    def compiling(name):
        """Inductor config for compiling ``name`` (compiles happen at the first call)."""
        from torch._inductor import config

        return (
            config.patch(max_autotune_gemm_backends="ATEN")
            if name in ("mm", "linear8")
            else contextlib.nullcontext()
        )

    def first_call(name, fn, x):
        with compiling(name):
            fn(x)
        return fn

    def capture(fn, x):
        """A graph of fn on a static copy of x (after a warm-up call on a side stream)."""
        static = x.clone()
        g = Graph()
        s = mod.Stream()
        with mod.stream(s):
            fn(static)
            g.capture_begin()
            fn(static)
            g.capture_end()
        sync()
        return g

    def aot_callable(fn, x):
        """The reduce-overhead compile's AOTAutograd-wrapped callable and the arguments Dynamo
        passes it (the lifted parameters too), captured by a backend that hands Dynamo's graph
        to Inductor as the "inductor" backend does."""
        from torch._inductor.compile_fx import compile_fx

        got = {}

        def backend(gm, example_inputs):
            got["fn"] = compile_fx(gm, example_inputs, config_patches={"triton.cudagraphs": True})
            got["args"] = list(example_inputs)
            return got["fn"]

        torch._dynamo.reset()
        torch.compile(fn, backend=backend)(x)
        return got["fn"], got["args"]

    rows = {}
    if (
        args.device == "cuda"
    ):  # upstream's trees first: choosing ours for cuda stays for the process
        with torch.no_grad():
            for name, (fn, x) in cases.items():
                torch._dynamo.reset()
                upstream = first_call(name, torch.compile(fn, mode="reduce-overhead"), x)
                rows[name] = {
                    "upstream_ro": timed(lambda: (mark(), upstream(x)), f"{name} upstream_ro")
                }
        G.register()
        G.policy.use_for_cuda(True)
    for name, (fn, x) in cases.items():
        row = rows.setdefault(name, {})
        with torch.no_grad():
            row["eager"] = timed(lambda: fn(x), f"{name} eager")
            row["raw_replay"] = timed(capture(fn, x).replay, f"{name} raw_replay")
            tree_fn = G.graphify(
                lambda a, fn=fn: [fn(a[0])], [x], name=name, is_inference=True
            )  # runs under no_grad

            def ours():
                G.mark_step_begin()
                tree_fn([x])

            row["ours"] = timed(ours, f"{name} ours")
            torch._dynamo.reset()
            compiled = first_call(name, torch.compile(fn), x)
            row["compile"] = timed(lambda: compiled(x), f"{name} compile")
            row["raw_compiled"] = timed(capture(compiled, x).replay, f"{name} raw_compiled")
            with compiling(name):
                aot, aot_args = aot_callable(fn, x)
            row["aot_ro"] = timed(lambda: (mark(), aot(*aot_args)), f"{name} aot_ro")
            torch._dynamo.reset()
            ours_ro = first_call(name, torch.compile(fn, mode="reduce-overhead"), x)
            row["ours_ro"] = timed(lambda: (mark(), ours_ro(x)), f"{name} ours_ro")
            m = G.manager_for(args.device, 0)
            row["ours_ro_replays"] = m.counters["replays"] if m is not None else 0
            if args.profile:
                profile(lambda: (mark(), ours_ro(x)), args.calls * 5, f"{args.profile}.{name}.txt")
        # inference code as often written: parameters requiring grad, grad enabled
        torch._dynamo.reset()
        ours_ro_grad = first_call(name, torch.compile(fn, mode="reduce-overhead"), x)
        row["ours_ro_grad"] = timed(lambda: (mark(), ours_ro_grad(x)), f"{name} ours_ro_grad")
        if args.profile:  # the same layers with grad enabled (issue 24 item 2)
            profile(
                lambda: (mark(), ours_ro_grad(x)), args.calls * 5, f"{args.profile}.{name}.grad.txt"
            )
        m = G.manager_for(args.device, 0)
        row["tree_counters"] = dict(m.counters) if m is not None else {}
    cols = [
        c
        for c in (
            "eager",
            "compile",
            "upstream_ro",
            "raw_replay",
            "raw_compiled",
            "ours",
            "aot_ro",
            "ours_ro",
            "ours_ro_grad",
        )
        if c in next(iter(rows.values()))
    ]
    print(
        f"{'case':<12}"
        + "".join(f"{c + ' us':>16}" for c in cols)
        + f"{'ro/raw_cmp':>12}{'ours/raw':>10}"
        + (f"{'ro/upstream':>13}" if "upstream_ro" in cols else "")
    )
    for name, r in rows.items():
        line = (
            f"{name:<12}"
            + "".join(f"{r[c]:>16.1f}" for c in cols)
            + f"{r['ours_ro'] / r['raw_compiled']:>12.2f}"
            f"{r['ours'] / r['raw_replay']:>10.2f}"
        )
        if "upstream_ro" in cols:
            line += f"{r['ours_ro'] / r['upstream_ro']:>13.2f}"
        print(line)
    for name, r in rows.items():
        print(
            f"{name}: replay {r['raw_compiled']:.1f} us, AOTAutograd + output code + tree "
            f"{r['aot_ro'] - r['raw_compiled']:.1f} us, Dynamo {r['ours_ro'] - r['aot_ro']:.1f} us; "
            f"grad enabled {r['ours_ro_grad'] / r['ours_ro']:.2f}x no_grad"
        )
    reader = G.upstream_config._reader("cudagraph_trees", True)
    data = {
        "device": str(dev),
        "torch": torch.__version__,
        "calls": args.calls,
        "repeats": args.repeats,
        "clock": args.clock,
        "direct_config_reads": bool(getattr(reader, "fast", False)),
        "config_read_note": getattr(reader, "why", ""),
        "per_call_us": rows,
    }
    print(json.dumps(data))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(data, f, indent=1)


# the layers of one compiled reduce-overhead call, outermost first: (label, file suffix, function)
LAYERS = (
    ("torch.compile call (Dynamo frame, guards)", "_dynamo/eval_frame.py", "compile_wrapper"),
    ("AOTAutograd forward", "_functorch/aot_autograd.py", "forward"),
    ("AOTAutograd runtime wrappers", "_aot_autograd/runtime_wrappers.py", "runtime_wrapper"),
    ("compiled output (CompiledFxGraph.__call__)", "_inductor/output_code.py", "__call__"),
    ("tree: run", "npu_graphtree/tree.py", "run"),
    ("tree: node run (inputs, outputs)", "npu_graphtree/node.py", "run"),
    ("graph replay", "graphs.py", "replay"),
)


def profile(fn, calls, path):
    """cProfile of ``calls`` calls: the 30 costliest functions, and microseconds a call spent
    in each layer of LAYERS (cumulative, under the profiler: its overhead inflates them)."""
    import cProfile
    import io
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    out.write(
        "layers (cumulative us a call under the profiler; the layer's own = it minus the next)\n"
    )
    for label, suffix, name in LAYERS:
        cum = max(
            (
                v[3]
                for (file, _, func), v in stats.stats.items()
                if file.endswith(suffix) and func == name
            ),
            default=0.0,
        )
        out.write(f"  {cum / calls * 1e6:10.1f}  {label}\n")
    stats.sort_stats("tottime").print_stats(30)
    with open(path, "w") as f:
        f.write(out.getvalue())


if __name__ == "__main__":
    main()
