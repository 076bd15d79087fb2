"""Per-call host time of an AOTInductor package built for Ascend, served through npu-launcher's
C ABI without Python (libnpu_launcher_direct.so) vs its Python C ABI (the capsule, whose
launches go through the launch objects), on the reference MLP8.

    python bench/aoti_ascend_launch.py [--calls N] [--rounds R] [--clock thread|wall] [--json PATH]

Without an NPU: the package is built as where triton-ascend is installed (npu-launcher's test
stand-ins: tests/fake_triton_ascend.py compiles, tests/fake_cann/fake_cann.c is CANN's
runtime, here without its log, so ``rtKernelLaunch`` returns at once). The kernels compute
nothing, so the time is host work only: pytree flattening, upstream's C++ runner, the model's
C++ (allocations), and per kernel the C ABI launch (argument checks and packing) down to
``rtKernelLaunch``. MLP8 (../shared/bench/README.md: 8 blocks ``h + fc2(gelu(fc1(ln(h))))``,
width 256, batch 4; bench/launch_overhead.py's ``MLP``). Each way is served by its own fresh
process; the processes take turns (``--rounds``), each timing ``--calls`` calls per turn; rows
are medians. Writes a table and JSON (``--json``, default $OUT/aoti_ascend_launch.json when
$OUT is set).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "packages" / "npu-launcher" / "tests"


def build(folder: Path) -> dict:
    """In this (child) process: MLP8 exported and packaged with kernels as on Ascend."""
    sys.path[:0] = [str(TESTS), str(HERE)]
    import torch

    import fake_triton_ascend
    import launch_overhead as lo

    fake_triton_ascend.compile_as_on_ascend()
    torch.manual_seed(0)
    model = lo.MLP().to("npu").eval()
    with torch.no_grad():
        ep = torch.export.export(model, (torch.randn(4, 256, device="npu"),))
        torch._inductor.aoti_compile_and_package(ep, package_path=str(folder / "mlp8.pt2"))
    return {"kernels": sorted(set(fake_triton_ascend.COMPILES))}


def serve(folder: Path, calls: int, clock: str) -> dict:
    """In this (child) process: one turn of ``calls`` calls, after a warm-up; us per call."""
    import torch

    now = time.thread_time if clock == "thread" else time.perf_counter
    if clock == "thread":
        torch.set_num_threads(1)  # any ATen work on this thread, so its CPU time covers it

    runner = torch._inductor.aoti_load_package(str(folder / "mlp8.pt2"))
    x = torch.randn(4, 256, device="npu")
    with torch.no_grad():
        for _ in range(5):
            runner(x)
        t = now()
        for _ in range(calls):
            runner(x)
        us = (now() - t) / calls * 1e6
    return {"us": us, "python_capi": "npu_launcher.capi" in sys.modules}


def child(args, env, *extra) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, *args, *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-4000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument(
        "--clock",
        choices=("thread", "wall"),
        default="thread",
        help="thread: the serving thread's CPU time (the runner, the model and every launch run on "
        "it; other processes on a shared machine do not count); wall: perf_counter",
    )
    ap.add_argument("--json", default=None)
    ap.add_argument("--child", choices=("build", "serve"), help=argparse.SUPPRESS)
    ap.add_argument("--folder", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        folder = Path(args.folder)
        print(
            json.dumps(
                build(folder) if args.child == "build" else serve(folder, args.calls, args.clock)
            )
        )
        return
    sys.path[:0] = [str(TESTS), str(HERE)]
    import fake_triton_ascend
    from results_io import out_path, write_json

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = {
            **os.environ,
            "NPU_LAUNCHER_CANN_LIBS": str(fake_triton_ascend.fake_cann_library(folder)),
            "TORCHINDUCTOR_CACHE_DIR": str(folder / "inductor"),
        }
        env.pop("FAKE_CANN_LOG", None)
        t = time.perf_counter()
        built = child(["--child", "build", "--folder", str(folder)], env)
        build_s = time.perf_counter() - t
        ways = {"direct": {}, "python_capi": {"NPU_LAUNCHER_DIRECT": "0"}}
        turns = {name: [] for name in ways}
        for _ in range(args.rounds):
            for name, extra_env in ways.items():
                got = child(
                    [
                        "--child",
                        "serve",
                        "--folder",
                        str(folder),
                        "--calls",
                        str(args.calls),
                        "--clock",
                        args.clock,
                    ],
                    {**env, **extra_env},
                )
                assert got["python_capi"] == (name == "python_capi"), (name, got)
                turns[name].append(got["us"])
    rows = {name: statistics.median(v) for name, v in turns.items()}
    data = {
        "what": "MLP8 (width 256, batch 4) AOTInductor package built for Ascend, per-call host time, us "
        "(CANN stand-in: launches return at once)",
        "kernels_in_package": len(built["kernels"]),
        "torch": __import__("torch").__version__,
        "python": platform.python_version(),
        "machine": f"{platform.node()} ({os.cpu_count()} cores)",
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "calls": args.calls,
        "rounds": args.rounds,
        "clock": args.clock,
        "build_s": round(build_s, 1),
        "per_call_us": rows,
        "turns_us": {k: [round(v, 1) for v in vs] for k, vs in turns.items()},
    }
    print(f"{'C ABI':<14}{'us/call':>10}{'x direct':>10}")
    for name, us in rows.items():
        print(f"{name:<14}{us:>10.1f}{us / rows['direct']:>10.2f}")
    print(json.dumps(data))
    out = args.json or out_path("aoti_ascend_launch.json")
    if out:
        write_json(out, data)


if __name__ == "__main__":
    main()
