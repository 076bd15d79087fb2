"""Autotune caches of npu compiles (npu-sim, in this process) on the signed Redis backend.

Kernels are tuned on npu-sim because max_autotune_pointwise asks for it (npu-autotune's
rule); the winner goes through upstream's AutotuneCache to the local directory and to our
NpuRemoteAutotuneCache. Each step compiles afresh (FX and AOTAutograd caches off, loaded
kernel modules forgotten) in the local directory it names.

U01: best configs read local-then-remote and written to both, with a real Redis.
R02: a compile's best configs travel as one remote object; a hit fills the local cache.
"""

import glob
import os
import uuid
from unittest import mock

import pytest
import torch
from torch._dynamo.utils import counters
from torch._inductor.remote_cache import cache_stats

from npu_cache import flush, routing


@pytest.fixture
def step(npu, monkeypatch, cache_env, tmp_path, redis_url):
    from torch._inductor import config
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.utils import clear_caches

    cache_env("NPU_CACHE_HMAC_KEY", "u01-test-key-" + "0" * 16)
    cache_env(
        "NPU_CACHE_REDIS_PREFIX", f"npu-cache-u01-{uuid.uuid4().hex[:12]}"
    )  # unique per run: a reused server keeps old entries
    cache_env("NPU_CACHE_REDIS_URL", redis_url)
    routing.reset()

    def fn(x):
        return torch.sigmoid(x) * 3 + torch.cos(x)

    def run(local, **flags):
        before = {k: vars(v).copy() for k, v in cache_stats._stats.items()}
        torch._dynamo.reset()
        PyCodeCache.cache_clear(
            purge=False
        )  # the next load of a kernel module builds its kernel object
        counters.clear()
        x = torch.randn(4, 16)
        clear_caches()
        inductor_dir = str(tmp_path / local)  # a named, reusable Inductor cache directory
        with (
            mock.patch.dict(
                os.environ,
                {
                    "TORCHINDUCTOR_CACHE_DIR": inductor_dir,
                    "TRITON_CACHE_DIR": os.path.join(inductor_dir, "triton"),
                },
            ),
            config.patch(
                fx_graph_cache=False,
                max_autotune_pointwise=True,
                autotune_local_cache=True,
                **flags,
            ),
            torch._functorch.config.patch(enable_autograd_cache=False),
        ):
            out = torch.compile(fn)(x.to(npu))
        torch.testing.assert_close(out.cpu(), fn(x), atol=1e-5, rtol=1e-5)
        assert flush(5)
        delta = {}
        for name, stat in cache_stats._stats.items():
            old = before.get(name, {})
            delta[name] = {k: v - old.get(k, 0) for k, v in vars(stat).items()}
        return {
            "tuned": counters["npu_autotune"]["sim_tuned"],
            "stats": delta,
            "best_configs": glob.glob(
                str(tmp_path / local / "**" / "*.best_config"), recursive=True
            ),
        }

    yield run
    routing.reset()


def remote_entries(kind):
    return routing.remote_cache(kind).remote.stats().get("put_ok", 0)


@pytest.mark.feature("U01")
def test_best_configs_local_then_remote_written_to_both(step):
    first = step("a", autotune_remote_cache=True)
    assert first["tuned"] >= 1 and first["best_configs"]  # tuned, written locally...
    assert first["stats"]["NpuRemoteAutotuneCache"]["put"] == first["tuned"]  # ...and to Redis
    # an empty local directory: the remote entry answers, nothing is tuned again
    second = step("b", autotune_remote_cache=True)
    assert second["tuned"] == 0
    assert second["stats"]["NpuRemoteAutotuneCache"]["hit"] == first["tuned"]
    assert second["stats"]["LocalAutotuneCache"]["miss"] == first["tuned"]
    # the first directory again: the local entry answers before Redis is asked
    third = step("a", autotune_remote_cache=True)
    assert third["tuned"] == 0 and third["stats"]["LocalAutotuneCache"]["hit"] == first["tuned"]
    assert third["stats"]["NpuRemoteAutotuneCache"]["hit"] == 0
    # the flag off: no remote autotune cache at all, so an empty directory tunes again
    fourth = step("d", autotune_remote_cache=False)
    assert fourth["tuned"] == first["tuned"] and "NpuRemoteAutotuneCache" not in {
        k for k, v in fourth["stats"].items() if any(v.values())
    }


@pytest.mark.feature("R02")
def test_bundled_best_configs_fill_an_empty_local_cache(step):
    first = step("a")  # tunes, local only
    assert first["tuned"] >= 1
    # a compile that finds its configs locally bundles them into one remote object
    bundling = step("a", bundled_autotune_remote_cache=True)
    assert bundling["tuned"] == 0
    assert bundling["stats"]["NpuRemoteBundledAutotuneCache"]["put"] == 1
    # an empty directory, no per-kernel remote cache: one bundled hit fills the local cache
    fresh = step("e", bundled_autotune_remote_cache=True)
    assert fresh["tuned"] == 0
    assert fresh["stats"]["NpuRemoteBundledAutotuneCache"] == {
        "hit": 1,
        "miss": 0,
        "put": 0,
        "exception": 0,
    }
    assert fresh["stats"]["LocalAutotuneCache"]["hit"] == first["tuned"]
    assert len(fresh["best_configs"]) == len(first["best_configs"])
