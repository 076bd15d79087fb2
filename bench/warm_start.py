"""Time to first result of a transformer block on npu (npu-sim here), three fresh processes:

  cold     empty local Inductor cache, empty Redis: compile everything
  local    the cold run's local cache directory (upstream's local FX/AOTAutograd caches)
  remote   an empty local directory, Redis filled by the cold run (npu-cache's signed backend)

Each child reports the time from torch.compile(...)(x) to its result (the first call: Dynamo,
cache lookups, kernel loading, one interpreted run) and the time each signed put took on the
compile thread. Prints a table and writes JSON (--json, default bench/results/warm_start.json).

    .venv/bin/python bench/warm_start.py [--repeat 3] [--redis-url URL] [--workloads block,one-kernel,mlp8]

Target (issue #7): remote hit >= 10x faster than cold and <= 1.3x the local hit; each put
< 1 ms on the compile thread. Also reported: the compiled graph's first call (the kernels
running), which a hit pays like a cold compile, and so the best speedup a hit could reach,
and "compile": the time to first result less that call. Workloads: the transformer block
(default), and ../shared/bench/README.md's 1-kernel function and MLP8.

--mode ascend-compile (issue 17 item 6): on npu-sim no kernel compiler runs, so a hit had
nothing real to skip. In this mode every kernel compile of a child also compiles each of the
kernel's candidate configs for Ascend910B2 with Ascend's compiler up to HIVM: triton-ascend
3.2's front end (TTIR -> linalg), then bishengir-compile with the command triton-ascend
derives (bench/ascend_compile.py: a server in the Ascend check's venv, --ascend-python or
what ascend_check/setup.py makes; a bench-only hook on the npu kernel object's compile).
hivmc's own time (machine code, CANN) is the one part of the compile missing. Each child
counts what it compiled for Ascend; a hit that compiles anything is printed as a bug. Both
children still run the kernels in npu-sim's interpreter. Prints cold/remote for time to
first result and for compile time alone; JSON default bench/results/warm_start_ascend.json.

    .venv/bin/python bench/warm_start.py --mode ascend-compile --workloads block,one-kernel,mlp8

Measured 2026-12-04 05:13-05:21 UTC on "vm" (2 cores, AMD EPYC, shared: load 2.5-6.7),
torch 2.13.0+cpu, triton-ascend 3.2.0, ascendnpu-ir 1.2.0, --repeat 3 (medians), cold / remote:
block 8.5x to first result, 19.4x compile alone (32 configs of 12 kernels compiled cold);
one-kernel 3.6x / 4.7x (4 configs); mlp8 1.4x / 8.4x (11 configs of 7 kernels); hits
compiled 0 configs. Without hivmc's time. Details: packages/npu-cache/README.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from local_redis import start_redis  # noqa: E402

CHILD = r"""
import json, os, sys, time
import torch, torch.nn as nn
import npu_inductor
npu_inductor.enable()
ascend = None
if os.environ.get("WARM_START_ASCEND_PYTHON"):  # --mode ascend-compile: kernel compiles run Ascend's (bench/ascend_compile.py)
    sys.path.insert(0, os.environ["WARM_START_BENCH_DIR"])
    import ascend_compile as ascend
    ascend.install(os.environ["WARM_START_ASCEND_PYTHON"], jobs=int(os.environ["WARM_START_ASCEND_JOBS"]))  # up before the timed section
import npu_cache
from npu_cache.upstream import SignedBackend
from torch._inductor import config
from torch._dynamo.utils import counters

put_ms, put_cpu_ms, put_bytes = [], [], []
real_put = SignedBackend._put
def timed_put(self, key, data):
    # wall time, and the compile thread's CPU time: on a loaded machine the wall time of a
    # 0.1 ms section includes whatever preempted the thread
    t, c = time.perf_counter(), time.thread_time()
    real_put(self, key, data)
    put_ms.append((time.perf_counter() - t) * 1e3); put_cpu_ms.append((time.thread_time() - c) * 1e3)
    put_bytes.append(len(data))
SignedBackend._put = timed_put

# the compiled graph's own first call (kernels run, in npu-sim's interpreter): a part of the
# time to first result that a hit pays as much as a cold compile does
from torch._inductor import output_code
graph_call_s, ascend_in_call_s = [], []
real_graph_call = output_code.CompiledFxGraph.__call__
def ascend_wall():
    return sum(c.get("request_wall_s", 0.0) for c in ascend.COMPILES) if ascend else 0.0
def timed_graph_call(self, inputs):
    t, a = time.perf_counter(), ascend_wall()
    try:
        return real_graph_call(self, inputs)
    finally:
        # a kernel compiled lazily, on its first launch, is compile time, not the kernels running
        graph_call_s.append(time.perf_counter() - t); ascend_in_call_s.append(ascend_wall() - a)
output_code.CompiledFxGraph.__call__ = timed_graph_call

from npu_inductor.reference_models import MLP8, TransformerBlock as Block

torch.manual_seed(0)
workload = os.environ.get("WARM_START_WORKLOAD", "block")
if workload == "one-kernel":  # the 1-kernel function
    eager = model = lambda a, b: (a + b) * 2.0
    xs = [torch.randn(1024), torch.randn(1024)]
else:
    eager = {"block": Block, "mlp8": MLP8}[workload]().eval()
    model = type(eager)().eval(); model.load_state_dict(eager.state_dict()); model = model.to("npu")
    xs = [torch.randn(2, 16, 64) if workload == "block" else torch.randn(4, 256)]
with torch.no_grad(), config.patch(fx_graph_cache=True, fx_graph_remote_cache=True, keep_static_cubin_raw=True), \
        torch._functorch.config.patch(enable_remote_autograd_cache=True):
    xn = [x.to("npu") for x in xs]
    t = time.perf_counter()
    out = torch.compile(model)(*xn)
    out = out.cpu()
    first_s = time.perf_counter() - t
    ok = bool(torch.allclose(out, eager(*xs), atol=1e-4, rtol=1e-4))
npu_cache.flush(30)
fx = next((c for c in npu_cache.stats()["caches"] if c["kind"] == "fx-graph"), {})
print(json.dumps({"first_result_s": first_s, "graph_call_s": sum(graph_call_s), "matches_eager": ok,
                  "compile_s": first_s - sum(graph_call_s) + sum(ascend_in_call_s),
                  "ascend": ascend.summary() if ascend else None, "ascend_in_graph_call_s": sum(ascend_in_call_s), "put_ms": put_ms, "put_cpu_ms": put_cpu_ms,
                  "put_bytes": put_bytes, "load_avg_1min": __import__("os").getloadavg()[0],
                  "inductor": dict(counters["inductor"]), "aot": dict(counters["aot_autograd"]),
                  "fx_remote": {k: v for k, v in fx.items() if k != "remote"}}))
"""


def child(local_dir: Path, redis_url: str, prefix: str, extra_env: dict) -> dict:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("NPU_CACHE_", "TORCHINDUCTOR_", "WARM_START_"))
    }
    env.update(
        TORCHINDUCTOR_CACHE_DIR=str(local_dir),
        NPU_CACHE_DIR="off",
        NPU_CACHE_REDIS_URL=redis_url,
        NPU_CACHE_REDIS_PREFIX=prefix,
        NPU_CACHE_HMAC_KEY="warm-start-bench-key-0123456789",
        **extra_env,
    )
    t = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=1800
    )
    if proc.returncode != 0:
        sys.exit(proc.stderr[-4000:])
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["process_s"] = time.perf_counter() - t
    return out


def ascend_python(given: str | None) -> str:
    """The Ascend compiler venv's Python: --ascend-python, $NPU_ASCEND_PYTHON, else what the
    Ascend check's setup.py makes or reuses (.venv-ascend/ at the repository root)."""
    if given or os.environ.get("NPU_ASCEND_PYTHON"):
        return given or os.environ["NPU_ASCEND_PYTHON"]
    setup = (
        Path(__file__).resolve().parents[1]
        / "packages"
        / "npu-lowering"
        / "ascend_check"
        / "setup.py"
    )
    proc = subprocess.run(
        [sys.executable, str(setup), "--quiet"], capture_output=True, text=True, timeout=1800
    )
    if proc.returncode != 0:
        sys.exit(f"the Ascend compiler venv could not be set up: {proc.stderr[-2000:]}")
    return proc.stdout.strip().splitlines()[-1]


def run_workload(workload: str, args, url: str, work: Path, extra_env: dict) -> dict:
    runs = {"cold": [], "local": [], "remote": []}
    env = {**extra_env, "WARM_START_WORKLOAD": workload}
    for r in range(args.repeat):
        prefix = f"warm-start-{os.getpid()}-{workload}-{r}"  # an empty Redis namespace per round
        a, b = work / f"{workload}-round{r}-a", work / f"{workload}-round{r}-b"
        runs["cold"].append(child(a, url, prefix, env))
        runs["local"].append(child(a, url, prefix, env))
        runs["remote"].append(child(b, url, prefix, env))

    def med(name, key):
        return statistics.median(run[key] for run in runs[name])

    cold, local, remote = (med(n, "first_result_s") for n in ("cold", "local", "remote"))
    puts = [p for run in runs["cold"] for p in run["put_ms"]]
    # per round: the first put of the process (it used to pay the writer thread's start) and the rest
    put_rounds = [
        {
            "n": len(r["put_ms"]),
            "first_ms": r["put_ms"][0],
            "first_cpu_ms": r["put_cpu_ms"][0],
            "max_ms": max(r["put_ms"]),
            "max_cpu_ms": max(r["put_cpu_ms"]),
            "bytes": sum(r["put_bytes"]),
            "load_avg_1min": r["load_avg_1min"],
        }
        for r in runs["cold"]
        if r["put_ms"]
    ]
    result = {
        "workload": workload,
        "repeat": args.repeat,
        "first_result_s": {"cold": cold, "local": local, "remote": remote},
        "process_s": {n: med(n, "process_s") for n in runs},
        "remote_vs_cold_speedup": cold / remote,
        "remote_vs_local_ratio": remote / local,
        # the speedup a hit could reach if Dynamo, lookups and loading took no time: cold over
        # the compiled graph's first call alone
        "graph_call_s": {n: med(n, "graph_call_s") for n in runs},
        "speedup_bound": cold / med("remote", "graph_call_s"),
        # time to first result less the kernels' first run (which a hit pays like a cold compile)
        "compile_s": {n: med(n, "compile_s") for n in runs},
        "remote_vs_cold_compile_speedup": med("cold", "compile_s") / med("remote", "compile_s"),
        "put_ms_max": max(puts) if puts else None,
        "puts": len(puts),
        "put_rounds": put_rounds,
        "all_match_eager": all(run["matches_eager"] for rs in runs.values() for run in rs),
    }
    if args.mode == "ascend-compile":
        result["ascend"] = {
            n: {
                "configs": [run["ascend"]["configs"] for run in runs[n]],
                "kernels": [run["ascend"]["kernels"] for run in runs[n]],
                # what the compiles waited for Ascend (configs side by side)
                "seconds": med_of(runs[n], "request_wall_s"),
                "front_end_s": med_of(runs[n], "front_end_s"),
                "bishengir_s": med_of(runs[n], "bishengir_s"),
                "bishengir_cpu_s": med_of(runs[n], "bishengir_cpu_s"),
                "reached_hivm": [run["ascend"]["reached_hivm"] for run in runs[n]],
                "ub_overflow": [run["ascend"]["ub_overflow"] for run in runs[n]],
                "ub_overflows": runs[n][0]["ascend"]["ub_overflows"],
                "failed": [f for run in runs[n] for f in run["ascend"]["failed"]],
            }
            for n in runs
        }
        # a hit that still compiles for Ascend is a bug (the cache did not cover that kernel)
        result["hits_that_compiled"] = [
            f"{n} round {i + 1}: {run['ascend']['configs']} configs"
            for n in ("local", "remote")
            for i, run in enumerate(runs[n])
            if run["ascend"]["configs"]
        ]
    result["runs"] = runs
    return result


def med_of(runs: list, key: str) -> float:
    return statistics.median(run["ascend"][key] for run in runs)


def report(result: dict, mode: str) -> None:
    cold, local, remote = (result["first_result_s"][n] for n in ("cold", "local", "remote"))
    print(f"== {result['workload']} ({mode})")
    if mode == "ascend-compile":
        asc = result["ascend"]
        print(
            f"{'run':<8}{'first result (s)':>18}{'compile (s)':>13}{'graph call (s)':>16}{'Ascend configs':>16}"
            f"{'Ascend compile (s)':>20}{'process (s)':>13}"
        )
        for n, v in (("cold", cold), ("local", local), ("remote", remote)):
            print(
                f"{n:<8}{v:>18.3f}{result['compile_s'][n]:>13.3f}{result['graph_call_s'][n]:>16.3f}"
                f"{'/'.join(map(str, asc[n]['configs'])):>16}{asc[n]['seconds']:>20.3f}{result['process_s'][n]:>13.2f}"
            )
        c = asc["cold"]
        print(
            f"cold compiled {'/'.join(map(str, c['kernels']))} kernels, {'/'.join(map(str, c['configs']))} configs "
            f"for Ascend910B2 per round (front end + bishengir; {'/'.join(map(str, c['reached_hivm']))} reached HIVM, "
            f"{'/'.join(map(str, c['ub_overflow']))} UB overflows); median {c['front_end_s']:.2f} s front end + "
            f"{c['bishengir_s']:.2f} s bishengir ({c['bishengir_cpu_s']:.2f} s CPU), summed over configs; "
            f"hivmc's own time is missing"
        )
        for o in c["ub_overflows"]:
            print(
                f"  UB overflow (dropped on Ascend): {o['kernel']} {o['kwargs']} num_stages={o['num_stages']} "
                f"needs {o['ub_required_bytes']} bytes"
            )
        if c["failed"]:
            print(f"  compile failures other than UB overflows: {c['failed'][:3]}")
        print(
            f"remote hit: {result['remote_vs_cold_speedup']:.1f}x faster than cold to first result, "
            f"{result['remote_vs_cold_compile_speedup']:.1f}x in compile time alone (target >= 10x); "
            f"{result['remote_vs_local_ratio']:.2f}x the local hit (target <= 1.3x)"
        )
        print(
            "BUG: a hit compiled for Ascend: " + "; ".join(result["hits_that_compiled"])
            if result["hits_that_compiled"]
            else "hits compiled nothing for Ascend (local and remote: 0 configs)"
        )
    else:
        print(f"{'run':<8}{'first result (s)':>18}{'process (s)':>14}")
        for n, v in (("cold", cold), ("local", local), ("remote", remote)):
            print(f"{n:<8}{v:>18.3f}{result['process_s'][n]:>14.2f}")
        print(
            f"remote hit: {result['remote_vs_cold_speedup']:.1f}x faster than cold (target >= 10x), "
            f"{result['remote_vs_local_ratio']:.2f}x the local hit (target <= 1.3x)"
        )
    print(
        f"  bound on this machine: the remote hit's first graph call alone takes "
        f"{result['graph_call_s']['remote']:.3f} s (kernels run), so cold / hit <= {result['speedup_bound']:.1f}x"
    )
    puts, put_rounds = result["puts"], result["put_rounds"]
    print(
        f"signed puts on the compile thread: {puts}, max {result['put_ms_max']:.3f} ms (target < 1 ms)"
        if puts
        else "no puts recorded"
    )
    print("puts on the compile thread per cold round (wall / thread CPU time, ms):")
    print(
        f"{'round':<7}{'puts':>5}{'bytes':>10}{'first wall':>12}{'first cpu':>11}{'max wall':>10}{'max cpu':>9}{'load':>6}"
    )
    for i, r in enumerate(put_rounds, 1):
        print(
            f"{i:<7}{r['n']:>5}{r['bytes']:>10}{r['first_ms']:>12.3f}{r['first_cpu_ms']:>11.3f}"
            f"{r['max_ms']:>10.3f}{r['max_cpu_ms']:>9.3f}{r['load_avg_1min']:>6.1f}"
        )
    print(f"results match eager: {result['all_match_eager']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="rounds of cold/local/remote")
    ap.add_argument("--redis-url", default=None, help="use this Redis instead of starting one")
    ap.add_argument(
        "--mode",
        choices=("sim", "ascend-compile"),
        default="sim",
        help="ascend-compile: every kernel compile also runs Ascend's front end + bishengir (910B2)",
    )
    ap.add_argument(
        "--workloads",
        default="block",
        help="comma-separated of block (default), one-kernel, mlp8 (../shared/bench/README.md)",
    )
    ap.add_argument(
        "--ascend-python",
        default=None,
        help="the Ascend compiler venv's Python (default: $NPU_ASCEND_PYTHON, else ascend_check/setup.py's)",
    )
    ap.add_argument(
        "--ascend-jobs",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="bishengir processes at once per kernel (its candidate configs; default min(2, cores))",
    )
    ap.add_argument("--json", default=None, help="default bench/results/warm_start[_ascend].json")
    args = ap.parse_args()
    workloads = args.workloads.split(",")
    bad = [w for w in workloads if w not in ("block", "one-kernel", "mlp8")]
    if bad:
        ap.error(f"unknown workload(s) {bad}: choose from block, one-kernel, mlp8")
    json_path = Path(
        args.json
        or Path(__file__).parent
        / "results"
        / ("warm_start_ascend.json" if args.mode == "ascend-compile" else "warm_start.json")
    )
    extra_env = {}
    if args.mode == "ascend-compile":
        extra_env = {
            "WARM_START_ASCEND_PYTHON": ascend_python(args.ascend_python),
            "WARM_START_BENCH_DIR": str(Path(__file__).resolve().parent),
            "WARM_START_ASCEND_JOBS": str(max(1, args.ascend_jobs)),
        }
    work = Path(tempfile.mkdtemp(prefix="warm-start-"))
    server = None
    url = args.redis_url
    if url is None:
        server, url = start_redis(work)
    results = []
    try:
        for w in workloads:
            results.append(run_workload(w, args, url, work, extra_env))
            report(results[-1], args.mode)
    finally:
        if server:
            server.terminate()
            server.wait(10)
        shutil.rmtree(work, ignore_errors=True)
    head = {
        "bench": "warm_start",
        "mode": args.mode,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="minutes"),
        "ascend_jobs": args.ascend_jobs if args.mode == "ascend-compile" else None,
        "machine": platform.node(),
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "load_avg_1min_end": os.getloadavg()[0],
    }
    out = {**head, **results[0]} if len(results) == 1 else {**head, "workloads": results}
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(out, indent=1))
    print(f"wrote {json_path}")


if __name__ == "__main__":
    main()
