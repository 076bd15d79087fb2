"""Compile time of npu kernels on npu-sim: synchronous (compile_threads=1) vs the upstream
subprocess pool (compile_threads=N, warmed before timing).

A function whose graph lowers to several independent kernels (pointwise and reductions) is
compiled afresh (caches off, new shapes per run); the time of the first call (compile + one
run) is reported per mode, best of --repeat. On npu-sim a worker compiles nothing (the
interpreter needs no binary) and the parent rebuilds each worker-loaded kernel object
(npu-autotune's compile_pool), so the pool can only cost time here; on Ascend the workers
run triton-ascend. Prints a table; writes JSON to $OUT/async_compile.json (or --json PATH).
Not a timed test.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time

import torch


SHAPES = ((1, 64), (2, 48), (3, 80), (1, 96), (5, 1))  # (rows factor, columns) per input


def _graph(a, b, c, d, e):
    # inputs of different shapes: no fusion, one kernel each (pointwise, reductions, softmax)
    return (
        torch.sin(a) * 2,
        b.sum(dim=-1),
        c.amax(dim=-1),
        torch.softmax(d, dim=-1),
        torch.cos(e) + 1,
    )


def _first_call_s(rows: int) -> tuple[float, int]:
    from torch._dynamo.utils import counters
    from torch._inductor import config

    inputs = [torch.randn(rows * k, n, device="npu") for k, n in SHAPES]
    torch._dynamo.reset()
    counters.clear()
    with config.patch(force_disable_caches=True):
        start = time.perf_counter()
        torch.compile(_graph, dynamic=False)(*inputs)
        torch.npu.synchronize()
        return time.perf_counter() - start, counters["inductor"]["async_compile_cache_miss"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument(
        "--json", default=os.path.join(os.environ.get("OUT", "."), "async_compile.json")
    )
    args = parser.parse_args()

    import npu_inductor

    npu_inductor.enable()
    from torch._inductor import config
    from torch._inductor.async_compile import AsyncCompile, shutdown_compile_workers

    rows_seen = 8
    results = []
    for threads in args.threads:
        shutdown_compile_workers()
        with config.patch(compile_threads=threads, worker_start_method="subprocess"):
            if threads > 1:
                AsyncCompile.warm_pool()
                AsyncCompile.wait_pool_ready(timeout=180)
            times, kernels = [], 0
            for _ in range(args.repeat):
                rows_seen += 1  # a new shape: new kernels, nothing reused
                took, kernels = _first_call_s(rows_seen)
                times.append(took)
        results.append(
            {
                "compile_threads": threads,
                "best_s": min(times),
                "all_s": times,
                "async_compile_triton_calls": kernels,
                "pool": threads > 1,
            }
        )
    shutdown_compile_workers()

    print(f"{'compile_threads':>15} | {'triton() calls':>14} | {'first call s (best)':>19} | all")
    print("-" * 77)
    for r in results:
        print(
            f"{r['compile_threads']:>15} | {r['async_compile_triton_calls']:>14} | {r['best_s']:>19.2f} | "
            f"{', '.join(f'{t:.2f}' for t in r['all_s'])}"
        )
    report = {
        "bench": "async_compile",
        "device": "npu-sim",
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "results": results,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(report, f, indent=2)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
