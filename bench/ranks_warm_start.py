"""Time to the first compiled training step on 1, 2 and 4 ranks (npu-sim), with one compile
shared by all ranks (npu-cache's rank sharing, issue 23 item 4).

Each rank is a fresh process (as torchrun starts them: RANK, WORLD_SIZE, MASTER_ADDR/PORT; the
default process group is npu-sim's "hccl", its store a TCPStore), sees one simulated device
(ASCEND_RT_VISIBLE_DEVICES), and is its own "machine": own HOME, Inductor, Triton and npu-cache
directories, all empty. They share a Redis (a local redis-server started here unless
--redis-url is given; a fresh key prefix per run, so rank 0's cache is cold). Every rank
runs one DDP training step of a transformer block (dim 64, 4 heads, batch 2 per rank, seq 16)
compiled with torch.compile, forward and backward graphs through the FX graph cache
(remote on, keep_static_cubin_raw), kernels uploaded to the kernel-binary cache.

  share     NPU_CACHE_RANK_SHARE=1: ranks > 0 wait for rank 0's entries and hit them
  no-share  rank sharing off (what happens without it): every rank compiles at once

Per rank: time to the first step (from the compiled model's first call to the step's loss
on the host; every rank starts it after a barrier; DDP's gradient all-reduce makes the ranks
finish together), compile time (Dynamo's frame compile with the forward graph, and the
backward graph's compile), seconds it waited for rank 0 (inside the compile: the FX graph
lookups), compile time less that wait (the rank's own compile work: Dynamo, AOTAutograd,
cache reads and loading), kernels built, FX graph and kernel-binary hits and misses, and the
process's wall time. A run's time to first step is its slowest rank's.

    .venv/bin/python bench/ranks_warm_start.py [--ranks 1,2,4] [--modes share,no-share] [--redis-url URL]
                                               [--remote-aot]

--remote-aot also turns on upstream's remote AOTAutograd cache. For this training step it
changes nothing: torch 2.13 saves a training graph's AOTAutograd entry at its first backward,
after the compile, so rank 0 publishes "none" for it and the other ranks trace it themselves.

Writes JSON (--json, default bench/results/ranks_warm_start.json) and a markdown table (same
name, .md). Goal: 4 ranks within 1.3x of 1 rank. On a machine with fewer cores than ranks
the ranks contend for CPU (npu-sim runs every kernel on the host): the table says so with
the cores and load average.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from local_redis import free_port, start_redis  # noqa: E402

CHILD = r"""
import datetime, json, os, sys, time
t_process = time.perf_counter()
import torch, torch.nn as nn, torch.distributed as dist
import npu_inductor
npu_inductor.enable()
import importlib.metadata
import npu_cache
from npu_cache import ranks
from torch._inductor import config
from torch._dynamo.utils import counters
from torch.nn.parallel import DistributedDataParallel as DDP

ep = next(e for e in importlib.metadata.entry_points(group="npu_inductor.kernel_launcher") if e.name == "describe_triton")
real_describe, built = ep.load(), [0]
def counting(*a, **k):
    built[0] += 1
    return real_describe(*a, **k)
setattr(sys.modules[ep.module], ep.attr, counting)  # npu-sim's kernel compile, counted

from npu_inductor.reference_models import TransformerBlock as Block  # dim 64, 4 heads

rank = int(os.environ["RANK"])
npu = torch.device("npu", 0)
dist.init_process_group(device_id=npu, timeout=datetime.timedelta(seconds=900))
torch.manual_seed(0)
block = Block()
model = DDP(Block().to(npu), device_ids=[npu])
model.module.load_state_dict(block.state_dict())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x_cpu = torch.randn(2, 16, 64, generator=torch.Generator().manual_seed(rank))
x = x_cpu.to(npu)
eager_loss = block(x_cpu).square().mean().item()
def known(flag):  # torch 2.11 (the GPU machine) lacks keep_static_cubin_raw
    try:
        config.__getattr__(flag) if "." not in flag else getattr(getattr(config, flag.split(".")[0]), flag.split(".")[1])
        return True
    except AttributeError:
        return False
flags = {"fx_graph_cache": True, "fx_graph_remote_cache": True, "keep_static_cubin_raw": True,
         "cutlass.upload_to_binary_remote_cache": True}
with config.patch({k: v for k, v in flags.items() if known(k)}), \
        torch._functorch.config.patch(enable_remote_autograd_cache=os.environ["RANKS_BENCH_REMOTE_AOT"] == "1"):
    compiled = torch.compile(model)
    dist.barrier()
    t = time.perf_counter()
    loss = compiled(x).square().mean()
    loss.backward()
    opt.step()
    loss = loss.item()
    first_step_s = time.perf_counter() - t
npu_cache.flush(60)
hits = npu_cache.rank_hits()
from torch._dynamo.utils import compilation_time_metrics as m
# Dynamo's frame compile (forward graph included) and the lazily compiled backward; a rank's
# wait for rank 0 happens inside them (the FX graph lookup)
compile_s = sum(m.get("_compile.compile_inner", [])) + sum(m.get("compile_fx.<locals>.bw_compiler", []))
out = {"rank": rank, "first_step_s": first_step_s, "waited_s": ranks.seconds_waited(), "compile_s": compile_s,
       "compile_own_s": compile_s - ranks.seconds_waited(), "kernels_built": built[0], "loss": loss,
       "matches_eager": abs(loss - eager_loss) <= 1e-4 * max(1.0, abs(eager_loss)),
       "inductor": {k: v for k, v in counters["inductor"].items() if k.startswith("fxgraph")},
       "aot": {k: v for k, v in counters["aot_autograd"].items() if "cache" in k},
       "kinds": hits["kinds"], "process_s": time.perf_counter() - t_process, "load_avg_1min": os.getloadavg()[0]}
dist.barrier()
dist.destroy_process_group()
print(json.dumps(out))
"""


def run(world: int, mode: str, url: str, work: Path, timeout: float, remote_aot: bool) -> dict:
    """One job of ``world`` ranks, every rank on its own empty "machine"."""
    base = work / f"{mode}-{world}"
    port = free_port()
    prefix = (
        f"ranks-warm-start-{os.getpid()}-{mode}-{world}"  # an empty Redis namespace: rank 0 is cold
    )
    env0 = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("NPU_CACHE_", "TORCHINDUCTOR_", "TRITON_"))
    }
    procs = []
    t = time.perf_counter()
    for rank in range(world):
        home = base / f"rank{rank}"
        env = dict(
            env0,
            RANK=str(rank),
            LOCAL_RANK=str(rank),
            WORLD_SIZE=str(world),
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(port),
            NPU_SIM_DEVICE_COUNT=str(world),
            ASCEND_RT_VISIBLE_DEVICES=str(rank),
            HOME=str(home / "home"),
            XDG_CACHE_HOME=str(home / "xdg"),
            TRITON_CACHE_DIR=str(home / "triton"),
            TORCHINDUCTOR_CACHE_DIR=str(home / "inductor"),
            NPU_CACHE_DIR=str(home / "npu-cache"),
            NPU_LAUNCHER_CACHE_DIR=str(home / "launcher"),
            NPU_CACHE_REDIS_URL=url,
            NPU_CACHE_REDIS_PREFIX=prefix,
            NPU_CACHE_HMAC_KEY="ranks-warm-start-bench-key-0123456789",
            NPU_CACHE_RANK_SHARE="1" if mode == "share" else "0",
            NPU_CACHE_RANK_SHARE_TIMEOUT="600",
            RANKS_BENCH_REMOTE_AOT="1" if remote_aot else "0",
        )
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", CHILD],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    outs = []
    for rank, p in enumerate(procs):
        try:
            stdout, stderr = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            sys.exit(f"{mode} {world} ranks: rank {rank} ran past {timeout}s")
        if p.returncode != 0:
            for q in procs:
                q.kill()
            sys.exit(f"{mode} {world} ranks: rank {rank} failed:\n{stderr[-4000:]}")
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    return {
        "world": world,
        "mode": mode,
        "job_s": time.perf_counter() - t,
        "ranks": outs,
        "first_step_s": max(r["first_step_s"] for r in outs),
    }


def kind(r: dict, name: str) -> dict:
    return r["kinds"].get(name, {})


def markdown(result: dict) -> str:
    h = result
    lines = [
        f"remote AOTAutograd cache: {'on' if h.get('remote_aot') else 'off'}; machine: {h['machine']}, {h['cores']} cores ({h['cpu']}), load avg {h['load_avg_1min_start']:.1f} "
        f"before / {h['load_avg_1min_end']:.1f} after, {h['date']}, torch {h['torch']}",
        "",
        "| ranks | mode | rank | first step (s) | compile (s) | waited (s) | compile less waiting (s) "
        "| kernels built | FX hit/miss (served) | kernel-binary hit/miss (served) | process (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run_ in h["runs"]:
        for r in run_["ranks"]:
            fx, kb = kind(r, "fx-graph"), kind(r, "kernel-binary")
            lines.append(
                f"| {run_['world']} | {run_['mode']} | {r['rank']} | {r['first_step_s']:.2f} | "
                f"{r['compile_s']:.2f} | {r['waited_s']:.2f} | {r['compile_own_s']:.2f} | {r['kernels_built']} | "
                f"{fx.get('hit', 0)}/{fx.get('miss', 0)} ({fx.get('served', 0)}) | "
                f"{kb.get('hit', 0)}/{kb.get('miss', 0)} ({kb.get('served', 0)}) | {r['process_s']:.1f} |"
            )
    lines += [
        "",
        "| ranks | mode | time to first step (s, slowest rank) | vs 1 rank |",
        "|---|---|---|---|",
    ]
    one = next((r["first_step_s"] for r in h["runs"] if r["world"] == 1), None)
    for run_ in h["runs"]:
        ratio = f"{run_['first_step_s'] / one:.2f}x" if one else "-"
        lines.append(f"| {run_['world']} | {run_['mode']} | {run_['first_step_s']:.2f} | {ratio} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", default="1,2,4", help="comma-separated world sizes")
    ap.add_argument(
        "--modes",
        default="share,no-share",
        help="share (rank sharing on), no-share (off); no-share is run for world sizes > 1 only",
    )
    ap.add_argument("--redis-url", default=None, help="use this Redis instead of starting one")
    ap.add_argument(
        "--remote-aot",
        action="store_true",
        help="also upstream's remote AOTAutograd cache (enable_remote_autograd_cache): ranks > 0 "
        "then skip AOTAutograd's tracing too",
    )
    ap.add_argument("--timeout", type=float, default=1200, help="seconds a job may take")
    ap.add_argument(
        "--json", default=None, help="default bench/results/ranks_warm_start.json (and .md)"
    )
    args = ap.parse_args()
    json_path = Path(args.json or Path(__file__).parent / "results" / "ranks_warm_start.json")
    work = Path(tempfile.mkdtemp(prefix="ranks-warm-start-"))
    server, url = (None, args.redis_url) if args.redis_url else start_redis(work)
    import torch

    head = {
        "bench": "ranks_warm_start",
        "remote_aot": args.remote_aot,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="minutes"),
        "machine": platform.node(),
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "load_avg_1min_start": os.getloadavg()[0],
    }
    runs = []
    try:
        for world in (int(w) for w in args.ranks.split(",")):
            for mode in args.modes.split(","):
                if mode == "no-share" and world == 1:
                    continue  # one rank has nobody to share with: the same run as "share"
                runs.append(run(world, mode, url, work, args.timeout, args.remote_aot))
                r = runs[-1]
                print(
                    f"{world} ranks, {mode}: first step {r['first_step_s']:.2f} s (slowest rank); per rank "
                    + ", ".join(
                        f"{x['first_step_s']:.2f} s (waited {x['waited_s']:.2f}, built {x['kernels_built']})"
                        for x in r["ranks"]
                    ),
                    flush=True,
                )
    finally:
        if server:
            server.terminate()
            server.wait(10)
        shutil.rmtree(work, ignore_errors=True)
    out = {**head, "load_avg_1min_end": os.getloadavg()[0], "runs": runs}
    one = next((r["first_step_s"] for r in runs if r["world"] == 1), None)
    four = next((r["first_step_s"] for r in runs if r["world"] == 4 and r["mode"] == "share"), None)
    if one and four:
        out["four_vs_one"] = four / one
        out["goal_4_within_1_3x_of_1"] = four / one <= 1.3
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(out, indent=1))
    md = markdown(out)
    json_path.with_suffix(".md").write_text(md + "\n")
    print(md)
    bad = [
        (r["world"], r["mode"], x["rank"])
        for r in runs
        for x in r["ranks"]
        if not x["matches_eager"]
    ]
    print(
        f"first-step losses match eager on every rank: {not bad}"
        + (f" (not: {bad})" if bad else "")
    )
    out["all_match_eager"] = not bad
    json_path.write_text(json.dumps(out, indent=1))
    if one and four:
        print(f"\n4 ranks (share) / 1 rank: {four / one:.2f}x (goal <= 1.3x)")
    print(f"wrote {json_path} and {json_path.with_suffix('.md')}")


if __name__ == "__main__":
    main()
