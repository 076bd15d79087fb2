"""Per-op host overhead of small ops on npu-sim against the same ops on CPU tensors.

    hatch run python bench/npu_sim_overhead.py [--iters N] [--json PATH]

Prints a table (µs per op, ratio npu-sim / cpu, both taken in this run) and writes JSON.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import time

import torch

OPS = {
    "add (fallback)": lambda a, b: a + b,
    "add_ in place (fallback)": lambda a, b: a.add_(b),
    "empty (native)": lambda a, b: torch.empty(1024, device=a.device),
    "view (native)": lambda a, b: a.view(32, 32),
    "copy_ (native)": lambda a, b: a.copy_(b),
    "sum (fallback)": lambda a, b: a.sum(),
    "mm 32x32 (fallback)": lambda a, b: a.view(32, 32) @ b.view(32, 32),
}


def per_op_us(fn, a, b, iters: int) -> float:
    for _ in range(min(100, iters)):
        fn(a, b)
    start = time.perf_counter()
    for _ in range(iters):
        fn(a, b)
    return (time.perf_counter() - start) / iters * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iters", type=int, default=20000)
    parser.add_argument("--json", default="bench/results/npu_sim_overhead.json")
    args = parser.parse_args()

    import npu_sim

    npu_sim.start()
    rows = []
    for name, fn in OPS.items():
        cpu = per_op_us(fn, torch.randn(1024), torch.randn(1024), args.iters)
        npu = per_op_us(
            fn, torch.randn(1024, device="npu"), torch.randn(1024, device="npu"), args.iters
        )
        rows.append(
            {
                "op": name,
                "cpu_us": round(cpu, 2),
                "npu_sim_us": round(npu, 2),
                "ratio": round(npu / cpu, 2),
            }
        )
    print(f"{'op':28} {'cpu µs':>8} {'npu-sim µs':>11} {'ratio':>6}")
    for r in rows:
        print(f"{r['op']:28} {r['cpu_us']:8.2f} {r['npu_sim_us']:11.2f} {r['ratio']:6.2f}")
    result = {
        "benchmark": "npu_sim_overhead",
        "date": datetime.date.today().isoformat(),
        "machine": platform.node(),
        "processor": platform.processor() or platform.machine(),
        "torch": torch.__version__,
        "iters": args.iters,
        "rows": rows,
    }
    import os

    os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(result, f, indent=2)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
