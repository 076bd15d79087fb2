"""Autotune time on npu-sim: candidates benchmarked in process vs in tuning subprocesses.

Modes (each in a fresh interpreter, so the simulated device count can differ):
- ``in-process``: upstream's default (autotune_in_subproc off);
- ``subproc``: autotune_in_subproc, one tuning worker;
- ``multi-device``: autotune_in_subproc + autotune_multi_device with NPU_SIM_DEVICE_COUNT=2
  (one worker per device, candidates spread over both).

Cases are compiled with ``max_autotune_pointwise`` so each kernel tunes several configs.
Reported: worker start time (torch + components, paid once per worker; the pool is warmed
before the case), the wall time of the case's ``autotune_to_one_config`` calls (benchmarking
every candidate and picking one), and the candidate count. Interpreter timings: this measures the
machinery's overhead (IPC, module load per candidate, parallel workers), not an NPU. Prints a
table; writes JSON to $OUT/autotune_subproc.json (or --json PATH). Not a timed test.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import textwrap

CHILD = """
    import json, time
    import torch, npu_sim, npu_lowering, npu_autotune
    npu_sim.start(); npu_lowering.register(); npu_autotune.register()
    from torch._inductor import config
    from torch._inductor.utils import fresh_cache
    from npu_autotune import subproc
    from npu_lowering.runtime import heuristics
    MODE, CASE = {mode!r}, {case!r}
    cases = {{
        "pointwise": (lambda x: torch.sin(x) * x + 1, (4096,)),
        "reduction": (lambda x: x.sum(dim=-1), (8, 512)),
        "softmax": (lambda x: torch.softmax(x, dim=-1), (8, 256)),
    }}
    fn, shape = cases[CASE]
    flags = dict(max_autotune_pointwise=True, autotune_in_subproc=MODE != "in-process",
                 autotune_multi_device=MODE == "multi-device", inductor_default_autotune_warmup=0,
                 inductor_default_autotune_rep=2)
    tune_s = []  # wall time of each kernel object's tuning (bench-only wrapper)
    original = heuristics.NpuCachingAutotuner.autotune_to_one_config
    def timed(self, *a, **k):
        t = time.perf_counter()
        try:
            return original(self, *a, **k)
        finally:
            tune_s.append(time.perf_counter() - t)
    heuristics.NpuCachingAutotuner.autotune_to_one_config = timed
    start = 0.0
    with fresh_cache(), config.patch(**flags):
        if MODE != "in-process":
            t = time.perf_counter()
            pool = subproc.get_pool()
            list(pool.executor.map(lambda p: p.ensure_ready(), pool.processes))
            start = time.perf_counter() - t
        x = torch.randn(*shape, device="npu")
        torch.compile(fn)(x)
    print("RESULT", json.dumps(dict(
        workers=len(subproc.WORKERS), worker_start_s=start,
        tune_ms=sum(tune_s) * 1e3, kernels=len(tune_s),
        candidates=len(subproc.HISTORY) if MODE != "in-process" else None)))
    subproc.shutdown()
"""


def run(mode: str, case: str) -> dict:
    env = {**os.environ, "NPU_SIM_DEVICE_COUNT": "2" if mode == "multi-device" else "1"}
    env.pop("ASCEND_RT_VISIBLE_DEVICES", None)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CHILD.format(mode=mode, case=case))],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{mode} {case} failed:\n{proc.stderr[-3000:]}")
    line = next(line for line in proc.stdout.splitlines() if line.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="pointwise,reduction,softmax")
    parser.add_argument(
        "--json", default=os.path.join(os.environ.get("OUT", "."), "autotune_subproc.json")
    )
    args = parser.parse_args()
    rows = []
    for case in args.cases.split(","):
        for mode in ("in-process", "subproc", "multi-device"):
            rows.append({"case": case, "mode": mode, **run(mode, case)})
    print(
        f"{'case':<10} {'mode':<13} {'workers':>7} {'start s':>8} {'tune ms':>9} {'candidates':>10}"
    )
    for r in rows:
        print(
            f"{r['case']:<10} {r['mode']:<13} {r['workers']:>7} {r['worker_start_s']:>8.2f} "
            f"{r['tune_ms']:>9.1f} {r['candidates'] if r['candidates'] is not None else '-':>10}"
        )
    import torch

    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="minutes"),
        "machine": f"{platform.machine()} {os.cpu_count()} cores",
        "torch": torch.__version__,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
