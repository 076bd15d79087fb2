"""FX graph cache of npu compiles on npu-sim, three fresh processes on one graph with a
tensor constant and several kernels: A compiles (local + remote, a cpu compile beside it),
B shares A's local directory, C is another machine (own HOME, Inductor, Triton and npu-cache
directories, local caching off) sharing only Redis.

R01: npu compiles' remote FX cache is our signed Redis backend, shared between processes;
cpu compiles keep upstream's class. P03: the graph with a tensor constant is served from the
cache in a new process. P04: the hit restores the bundled kernels, none is rebuilt.
The AOTAutograd cache is off so that the FX graph cache is what answers.
"""

import pytest
import redis
import torch
import torch._inductor.config

from npu_cache import entry

# every test here turns keep_static_cubin_raw on (torch 2.11 lacks that flag)
pytestmark = pytest.mark.skipif(
    not hasattr(torch._inductor.config, "keep_static_cubin_raw"),
    reason=f"torch {torch.__version__} has no Inductor flag keep_static_cubin_raw",
)
NO_AOT_CACHE = {"enable_autograd_cache": False}
# keep_static_cubin_raw: the entry carries each kernel's launch descriptor, so a machine
# without A's local Triton directory restores kernels from it (upstream's flag for this)
BOTH = {"fx_graph_remote_cache": True, "fx_graph_cache": True, "keep_static_cubin_raw": True}
REMOTE_ONLY = {
    "fx_graph_remote_cache": True,
    "fx_graph_cache": False,
    "keep_static_cubin_raw": True,
}


def our_keys(url, prefix, kind):
    return sorted(redis.Redis.from_url(url).scan_iter(f"{prefix}:v1:{kind}:*"))


@pytest.fixture(scope="module")
def runs(module_npu_job):
    job = module_npu_job
    a = job(
        {"fn": "with_constant", "inductor": BOTH, "functorch": NO_AOT_CACHE, "cpu": True},
        local="a",
        machine="a",
    )
    b = job(
        {"fn": "with_constant", "inductor": BOTH, "functorch": NO_AOT_CACHE}, local="a", machine="a"
    )
    # another machine: own HOME, Inductor, Triton and npu-cache directories; only Redis shared
    c = job(
        {"fn": "with_constant", "inductor": REMOTE_ONLY, "functorch": NO_AOT_CACHE},
        local="c",
        machine="c",
    )
    return job, a, b, c


def fx_stats(run):
    return next(c for c in run["npu_cache"]["caches"] if c["kind"] == "fx-graph")


@pytest.mark.feature("R01")
def test_fx_graph_remote_cache_shared_between_processes(runs):
    job, a, _, c = runs
    assert all(a["ok"]) and a["flushed"]
    # the npu compile used our class, the cpu compile upstream's own
    assert a["created"].count("NpuRemoteFxGraphCache") == 1
    assert "RemoteFxGraphCache" in a["created"]
    assert a["inductor"]["fxgraph_cache_miss"] == 2
    keys = our_keys(job.redis_url, job.prefix, "fx-graph")
    assert len(keys) == 1
    assert redis.Redis.from_url(job.redis_url).get(keys[0])[:4] == entry.MAGIC  # a signed entry

    # an empty local directory and local caching off: Redis serves the graph
    assert all(c["ok"])
    assert c["inductor"].get("fxgraph_cache_hit") == 1 and "fxgraph_cache_miss" not in c["inductor"]
    assert fx_stats(c)["hit_remote"] == 1 and "local" not in fx_stats(c)  # remote layer only
    assert c["cache_stats"]["NpuRemoteFxGraphCache"]["hit"] == 1


@pytest.mark.feature("P03")
def test_graph_with_tensor_constant_hits_in_a_new_process(runs):
    _, a, b, _ = runs
    assert (
        a["graph_constants"] and a["graph_constants"][0] >= 1
    )  # the graph holds a tensor constant
    assert b["ok"] == [True]
    assert b["inductor"].get("fxgraph_cache_hit") == 1 and "fxgraph_cache_miss" not in b["inductor"]
    assert b["cache_stats"]["LocalFxGraphCache"]["hit"] == 1


@pytest.mark.feature("P04")
def test_hit_restores_bundled_kernels_without_rebuilding(runs):
    _, a, b, c = runs
    # A built its npu kernels (one counted miss each) and bundled them into the entry
    built = a["inductor"][
        "async_compile_cache_miss"
    ]  # the cpu compile's C++ kernel is not counted here
    assert built >= 2 and a["inductor"]["triton_bundler_save_static_autotuner"] == 1
    assert a["compiled_kernels"]["described"] == built
    for hit in (b, c):  # local and remote (other machine) hits
        # every kernel came back from the bundle: a hit in the compiled-kernel table each
        assert hit["inductor"].get("triton_bundler_load_static_autotuner") == built
        assert hit["inductor"].get("async_compile_cache_hit") == built
        # and none was compiled: nothing described (npu-sim's compile), no triton.compile
        assert hit["compiled_kernels"] == {"described": 0, "triton_compile": 0}
        assert hit["ok"] == [True]


@pytest.mark.feature("R01")
def test_aot_autograd_entries_travel_through_redis_too(npu_job):
    # upstream's remote AOTAutograd cache (enable_remote_autograd_cache): for npu compiles our
    # signed backend; another machine then skips AOTAutograd as well as Inductor
    spec = {
        "fn": "two_kernels",
        "inductor": REMOTE_ONLY,
        "functorch": {"enable_remote_autograd_cache": True},
    }
    p = npu_job({**spec, "cpu": True}, local="p", machine="p")
    assert all(p["ok"]) and p["flushed"]
    assert p["dynamo"]["aot_autograd"].get("autograd_cache_saved", 0) >= 1
    keys = our_keys(npu_job.redis_url, npu_job.prefix, "aot-autograd")
    assert (
        len(keys) == 1 and redis.Redis.from_url(npu_job.redis_url).get(keys[0])[:4] == entry.MAGIC
    )
    q = npu_job(spec, local="q", machine="q")
    assert q["ok"] == [True]
    assert q["dynamo"]["aot_autograd"].get("autograd_cache_hit") == 1
    assert q["inner_calls"] == 0  # neither AOTAutograd nor Inductor compiled anything
