"""What the benchmarks share: the per-call timing of a compiled function (Triton's do_bench on
cuda, a wall-clock mean on npu-sim, whose launches are synchronous host work) and the JSON
result file's common header (bench, date, machine, device, torch) and writing."""

from __future__ import annotations

import datetime
import json
import os
import platform
import time

import torch


def time_call(fn, args, device: str, warmup: int = 25, rep: int = 100, sim_calls: int = 5) -> float:
    """Milliseconds per call of ``fn(*args)``."""
    if device == "cuda":
        from triton.testing import do_bench

        return do_bench(lambda: fn(*args), warmup=warmup, rep=rep)
    for _ in range(2):
        fn(*args)
    t = time.perf_counter()
    for _ in range(sim_calls):
        fn(*args)
    torch.npu.synchronize()
    return (time.perf_counter() - t) * 1000 / sim_calls


def result_header(bench: str, device: str) -> dict:
    return {
        "bench": bench,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "machine": platform.node(),
        "device": device,
        "device_name": torch.cuda.get_device_name() if device == "cuda" else "npu-sim",
        "torch": torch.__version__,
    }


def out_path(name: str):
    """``$OUT/<name>`` when $OUT is set (the device tool's results folder), else None."""
    return os.path.join(os.environ["OUT"], name) if os.environ.get("OUT") else None


def write_json(path: str, result: dict) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(result, f, indent=1, default=str)
    print(f"wrote {path}")
