"""Per-call host time of an AOTInductor package vs torch.compile, on the reference MLP.

    python bench/aoti.py [--device npu|cuda] [--calls N] [--rounds R] [--json PATH]

The reference MLP8 (../shared/bench/README.md: 8 blocks ``h + fc2(gelu(fc1(ln(h))))``, width
256, batch 4; bench/launch_overhead.py's ``MLP``), timed per call in turns (every mode once
per round, the median of the rounds reported) as
  aoti             ``torch._inductor.aoti_load_package(aoti_compile_and_package(export(model)))``
                   called like the model: pytree flattening, AOTIModelPackageLoader's C++
                   runner, the model's C++ (allocations, kernel launches)
  compile          ``torch.compile(model)`` (default mode)
  reduce_overhead  ``torch.compile(model, mode="reduce-overhead")`` (npu: npu-graphtree's trees)
  eager            the model itself
On npu-sim (``--device npu``, the default) the kernels are Triton's interpreter, milliseconds
each, so the aoti and compile rows are host code only: while timed, npu-sim's launch entry
point and the Python-level extern matmuls do nothing (bench/launch_overhead.py's
``host_only``): every kernel still goes through its launcher (AOTI: the model's C++ ->
npu-launcher's C ABI -> launch object -> sim driver) but computes nothing. In default mode
npu's small GEMMs are Triton templates, so no ATen matmul is left to skip. Not host-only on
npu-sim, so timed with ``--slow-calls`` calls and listed under ``not_host_only``: eager (ATen's
CPU kernels compute) and reduce_overhead (npu-sim's graph replay runs the interpreter calls
recorded at capture). ``--device cuda``: every path is
upstream's (cubins, cuda graphs), the kernels run for real.
Writes a table to stdout and JSON to ``--json`` (default ``$OUT/aoti.json`` when $OUT is set).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results_io import out_path, write_json  # noqa: E402

MODES = ("aoti", "compile", "reduce_overhead", "eager")


def per_call_us(fn, x, calls, sync, mark=None, clock=time.perf_counter):
    for _ in range(3):
        fn(x)
    sync()
    t = clock()
    for _ in range(calls):
        if mark is not None:
            mark()
        fn(x)
    sync()
    return (clock() - t) / calls * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="npu", choices=("npu", "cuda"))
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--slow-calls",
        type=int,
        default=5,
        help="npu-sim: calls per round of the rows that compute",
    )
    ap.add_argument(
        "--clock",
        choices=("wall", "thread"),
        default="wall",
        help="thread: this thread's CPU time (npu-sim on a shared box; the AOTI runner and every "
        "launch run on the calling thread); wall: perf_counter (cuda: the GPU work counts)",
    )
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if args.clock == "thread" and args.device == "cuda":
        ap.error("--clock thread misses the GPU's time: use wall on cuda")
    clock = time.thread_time if args.clock == "thread" else time.perf_counter
    if args.clock == "thread":
        torch.set_num_threads(1)  # ATen work in this thread, so its CPU time covers it
    slow = {"eager", "reduce_overhead"} if args.device == "npu" else set()

    import launch_overhead as lo  # the MLP and npu-sim's host-only switch

    device = torch.device(args.device, 0)
    if args.device == "npu":
        lo.install_switchable_sim_entry()  # before any kernel is bound (the package's too)
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    torch.manual_seed(0)
    model = lo.MLP().to(device).eval()
    x = torch.randn(4, 256, device=device)
    mark = torch.compiler.cudagraph_mark_step_begin
    fns, rows, compile_s = {}, {}, {}
    with torch.no_grad():
        ref = model(x)
        t = time.perf_counter()
        ep = torch.export.export(model, (x,))
        with tempfile.TemporaryDirectory() as folder:
            path = torch._inductor.aoti_compile_and_package(
                ep, package_path=os.path.join(folder, "mlp.pt2")
            )
            fns["aoti"] = torch._inductor.aoti_load_package(path)
            compile_s["aoti"] = time.perf_counter() - t
            kernels = sum(
                1
                for n in __import__("zipfile").ZipFile(path).namelist()
                if n.endswith((".npld", ".cubin"))
            )
        for name, kwargs in (("compile", {}), ("reduce_overhead", {"mode": "reduce-overhead"})):
            torch._dynamo.reset() if name == "compile" else None
            t = time.perf_counter()
            fn = torch.compile(lo._own_code(lambda a: model(a), name), **kwargs)
            for _ in range(3):
                mark()
                out = fn(x)
            compile_s[name] = time.perf_counter() - t
            fns[name] = fn
        fns["eager"] = model
        for name, fn in fns.items():
            if name != "reduce_overhead":
                torch.testing.assert_close(fn(x), ref, atol=2e-3, rtol=2e-3)
        turns = {name: [] for name in fns}
        with lo.host_only() if args.device == "npu" else contextlib.nullcontext():
            for _ in range(args.rounds):
                for name, fn in fns.items():
                    turns[name].append(
                        per_call_us(
                            fn,
                            x,
                            args.slow_calls if name in slow else args.calls,
                            sync,
                            mark if name == "reduce_overhead" else None,
                            clock,
                        )
                    )
        for name, values in turns.items():
            rows[name] = statistics.median(values)
    data = {
        "what": "MLP8 (width 256, batch 4) per-call host time, us"
        + (" (npu-sim: kernels no-op)" if args.device == "npu" else ""),
        "device": str(device),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": f"{platform.node()} ({os.cpu_count()} cores)",
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "calls": args.calls,
        "slow_calls": args.slow_calls,
        "rounds": args.rounds,
        "clock": args.clock,
        "not_host_only": sorted(slow),
        "kernels_in_package": kernels,
        "per_call_us": rows,
        "turns_us": {k: [round(v, 1) for v in vs] for k, vs in turns.items()},
        "first_call_s": {k: round(v, 2) for k, v in compile_s.items()},
    }
    print(f"{'mode':<18}{'us/call':>10}{'x aoti':>9}")
    for name in MODES:
        note = "  (not host-only: computes on npu-sim)" if name in slow else ""
        print(f"{name:<18}{rows[name]:>10.1f}{rows[name] / rows['aoti']:>9.2f}{note}")
    print(json.dumps(data))
    out = args.json or out_path("aoti.json")
    if out:
        write_json(out, data)


if __name__ == "__main__":
    main()
