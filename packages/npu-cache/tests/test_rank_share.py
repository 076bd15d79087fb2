"""One compile for all ranks (ranks.py, issue 23 item 4): two ranks on npu-sim's "hccl" group,
each its own "machine" (own HOME, Inductor, Triton and npu-cache directories), sharing only
Redis (the test command's server) and the process group's store. One spawn runs three phases
on both ranks, in order (a barrier before each, so both start compiling at the same time):

- ``fx``: a tiny MLP's training step (forward and backward graphs). Rank 0 compiles; rank 1
  waits for rank 0's FX entries, hits both and builds no kernel.
- ``kernels``: another function with the FX graph caches off and kernel uploads on (what
  ranks compiling for different device indices share: kernel keys hold none). Rank 1
  compiles the graph but fetches every kernel rank 0 built.
- ``fallback``: rank 0 compiles nothing; rank 1 (1 s timeout) waits, gives up and compiles.

Without ``rank_share`` rank 1 compiles at the same time as rank 0 and misses (the FX and
kernel tests fail).
"""

from __future__ import annotations

import datetime
import json
import time
import uuid
from pathlib import Path

import pytest
import torch
import torch._inductor.config

WORLD = 2
FALLBACK_TIMEOUT = 1.0
# seconds rank 0 takes longer per kernel build: long enough that rank 1, compiling the same graph
# on a loaded 2-core machine, asks for the first kernel before rank 0 has published it
RANK0_KERNEL_DELAY = 1.0
KEY = "test-key-" + "0123456789abcdef" * 2  # the HMAC key both ranks sign with
HAS_KEEP_RAW = hasattr(torch._inductor.config, "keep_static_cubin_raw")  # torch 2.11 lacks it


def _mlp(x, w1, w2):
    return torch.nn.functional.gelu(x @ w1) @ w2


def _softmax_mix(x):
    y = torch.softmax(x * 2, dim=-1)
    return (y * x).sum(-1) + torch.cos(x).mean()


def _tanh_mix(x):
    return torch.tanh(x) * 3 - x.exp()


def _count_kernel_builds(delay: float) -> list:
    """Patch npu-launcher's describe_triton (npu-sim's kernel compile), found by entry point as
    npu-lowering finds it, before any compile binds it: returns the live count. ``delay``: a
    slower compiler (Ascend's takes seconds a kernel), so rank 1 always asks before rank 0's
    entries are in Redis."""
    import importlib.metadata
    import sys

    ep = next(
        e
        for e in importlib.metadata.entry_points(group="npu_inductor.kernel_launcher")
        if e.name == "describe_triton"
    )
    real, built = ep.load(), [0]

    def counting(*a, **k):
        built[0] += 1
        time.sleep(delay)
        return real(*a, **k)

    setattr(sys.modules[ep.module], ep.attr, counting)
    return built


def _phase(name, rank, built, fn) -> dict:
    import torch.distributed as dist
    from torch._dynamo.utils import counters

    import npu_cache
    from npu_cache import ranks

    torch._dynamo.reset()
    counters.clear()
    ranks.counters.clear()
    before, waited = built[0], ranks.seconds_waited()
    dist.barrier()
    start = time.monotonic()
    ok = fn()
    out = {
        "ok": ok,
        "seconds": time.monotonic() - start,
        "built": built[0] - before,
        "waited": ranks.seconds_waited() - waited,
        "inductor": dict(counters["inductor"]),
        "rank_hits": npu_cache.rank_hits(),
    }
    npu_cache.flush(30)
    return out


def _rank_main(rank: int, init: str, out: str) -> None:
    import torch.distributed as dist
    from torch._inductor import config as inductor_config

    import npu_cache.config

    npu = torch.device("npu", 0)
    dist.init_process_group(
        init_method=init,
        rank=rank,
        world_size=WORLD,
        timeout=datetime.timedelta(seconds=120),
        device_id=npu,
    )
    built = _count_kernel_builds(RANK0_KERNEL_DELAY if rank == 0 else 0.0)
    g = torch.Generator().manual_seed(0)
    x, w1, w2 = (
        torch.randn(4, 8, generator=g),
        torch.randn(8, 16, generator=g),
        torch.randn(16, 4, generator=g),
    )
    results = {}

    def train():
        ws = [w.to(npu).requires_grad_() for w in (w1, w2)]
        ref = [w.clone().requires_grad_() for w in (w1, w2)]
        torch.compile(_mlp)(x.to(npu), *ws).square().mean().backward()
        _mlp(x, *ref).square().mean().backward()
        return all(
            torch.allclose(a.grad.cpu(), b.grad, atol=1e-5, rtol=1e-4) for a, b in zip(ws, ref)
        )

    def forward(fn):
        return torch.allclose(torch.compile(fn)(x.to(npu)).cpu(), fn(x), atol=1e-5, rtol=1e-4)

    # keep_static_cubin_raw: the FX entry carries each kernel's descriptor (another machine's
    # Triton directory is empty); no AOTAutograd cache, so the FX graph cache is what answers.
    # A torch without that flag (2.11) skips the phase (test_rank_1_hits_... skips)
    if HAS_KEEP_RAW:
        with (
            inductor_config.patch(
                fx_graph_remote_cache=True, fx_graph_cache=False, keep_static_cubin_raw=True
            ),
            torch._functorch.config.patch(enable_autograd_cache=False),
        ):
            results["fx"] = _phase("fx", rank, built, train)
    with inductor_config.patch(
        {
            "fx_graph_remote_cache": False,
            "fx_graph_cache": False,
            "cutlass.upload_to_binary_remote_cache": True,
        }
    ):
        results["kernels"] = _phase("kernels", rank, built, lambda: forward(_softmax_mix))
    with (
        npu_cache.config.patch(rank_share_timeout=FALLBACK_TIMEOUT),
        inductor_config.patch(fx_graph_remote_cache=True, fx_graph_cache=False),
    ):
        # rank 0 compiles nothing: what rank 1 waits for is never published
        results["fallback"] = _phase(
            "fallback", rank, built, lambda: rank == 0 or forward(_tanh_mix)
        )
    Path(out, f"rank{rank}.json").write_text(json.dumps(results))
    dist.barrier()


@pytest.fixture(scope="module")
def ranks(tmp_path_factory, redis_url):
    from npu_sim.testing import spawn_ranks

    tmp = tmp_path_factory.mktemp("rank-share")
    prefix = f"npu-cache-test-{uuid.uuid4().hex[:12]}"

    def machine(rank):
        home = tmp / f"machine-{rank}"
        return {
            "HOME": str(home / "home"),
            "TRITON_CACHE_DIR": str(home / "triton"),
            "TORCHINDUCTOR_CACHE_DIR": str(home / "inductor"),
            "NPU_CACHE_DIR": str(home / "npu-cache"),
            "NPU_LAUNCHER_CACHE_DIR": str(home / "launcher"),
            "NPU_CACHE_REDIS_URL": redis_url,
            "NPU_CACHE_REDIS_PREFIX": prefix,
            "NPU_CACHE_HMAC_KEY": KEY,
            "NPU_CACHE_RANK_SHARE": "1",
            "NPU_CACHE_RANK_SHARE_TIMEOUT": "120",
            "XDG_CACHE_HOME": str(home / "xdg"),
        }

    spawn_ranks(_rank_main, WORLD, tmp, str(tmp), timeout=300, env=machine).check()
    return [json.loads((tmp / f"rank{r}.json").read_text()) for r in range(WORLD)]


@pytest.mark.skipif(
    not HAS_KEEP_RAW,
    reason=f"torch {torch.__version__} has no Inductor flag keep_static_cubin_raw "
    "(the FX entry carries the kernel descriptors only with it)",
)
def test_rank_1_hits_rank_0s_fx_graphs_and_builds_no_kernel(ranks):
    leader, follower = (r["fx"] for r in ranks)
    assert leader["ok"] and follower["ok"]
    assert leader["inductor"].get("fxgraph_cache_miss") == 2 and leader["built"] > 0, (
        leader
    )  # forward, backward
    assert follower["inductor"].get("fxgraph_cache_hit") == 2, follower
    assert "fxgraph_cache_miss" not in follower["inductor"], follower
    assert follower["built"] == 0, follower
    fx = follower["rank_hits"]["kinds"]["fx-graph"]
    assert fx["served"] == 2 and fx["waited"] == 2 and "timeout" not in fx, fx
    assert follower["rank_hits"]["rank"] == 1 and leader["rank_hits"]["rank"] == 0
    assert leader["rank_hits"]["kinds"]["fx-graph"]["miss"] == 2


def test_rank_1_fetches_every_kernel_rank_0_built(ranks):
    leader, follower = (r["kernels"] for r in ranks)
    assert leader["ok"] and follower["ok"]
    assert leader["built"] > 0, leader
    assert follower["built"] == 0, follower  # it compiled the graph itself, but no kernel
    kb = follower["rank_hits"]["kinds"]["kernel-binary"]
    # every kernel from rank 0: the first after waiting for it (later ones may be in Redis by then)
    assert kb["hit"] == leader["built"] and kb["miss"] == 0 and kb.get("served", 0) >= 1, (
        kb,
        leader,
    )
    assert "timeout" not in kb, kb


def test_rank_1_compiles_itself_when_rank_0_never_publishes(ranks):
    follower = ranks[1]["fallback"]
    assert follower["ok"]
    assert follower["inductor"].get("fxgraph_cache_miss") == 1 and follower["built"] > 0, follower
    kinds = follower["rank_hits"]["kinds"]
    # one bounded wait per kind (fx-graph, then the first kernel), then it stops waiting
    assert kinds["fx-graph"]["timeout"] == 1 and kinds["fx-graph"]["gave_up"] == 1, kinds
    assert kinds["kernel-binary"].get("timeout") == 1, kinds
    assert FALLBACK_TIMEOUT * 2 <= follower["waited"] < FALLBACK_TIMEOUT * 2 + 2, follower
