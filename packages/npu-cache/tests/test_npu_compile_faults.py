"""X03, compile half: npu compiles (npu-sim, in this process) with the FX graph remote cache
on, while Redis is absent at start, killed mid-run and restarted, and slowed by a proxy.
Every compile succeeds with correct results; the signed cache's stats say what happened.

The AOTAutograd cache is off and each compile gets a fresh local directory, so every compile
asks Redis (a remote FX graph cache lookup) and offers it the result (a put)."""

import time

import pytest
import torch

from npu_cache import flush, routing

# Redis command timeout and the breaker's cooldown. The cooldown must outlast a compile's
# Dynamo + AOT tracing on a loaded 2-core machine (an open circuit that closes between two
# lookups of one test counts a second failure), and the timeout a loaded round trip.
TIMEOUT, COOLDOWN = 1.0, 3.0


@pytest.fixture
def compile_on_npu(npu, monkeypatch, cache_env, tmp_path):
    from torch._inductor import config
    from torch._inductor.utils import fresh_cache

    cache_env("NPU_CACHE_HMAC_KEY", "x03-test-key-" + "0" * 16)
    cache_env("NPU_CACHE_REDIS_PREFIX", f"npu-cache-x03-{tmp_path.name}")
    cache_env("NPU_CACHE_REDIS_COOLDOWN", COOLDOWN)

    def use_redis(url):
        cache_env("NPU_CACHE_REDIS_URL", f"{url}?socket_timeout={TIMEOUT}")
        routing.reset()  # the next compile opens the remote cache with these settings

    def run(step):
        def fn(x):
            return torch.softmax(x * (step + 1), dim=-1) + torch.tanh(x)

        x = torch.randn(3, 8)
        torch._dynamo.reset()
        with (
            fresh_cache(),
            config.patch(fx_graph_remote_cache=True, fx_graph_cache=False),
            torch._functorch.config.patch(enable_autograd_cache=False),
        ):
            out = torch.compile(fn)(x.to(npu))
        assert out.device.type == "npu"
        torch.testing.assert_close(out.cpu(), fn(x), atol=1e-5, rtol=1e-5)

    def stats():
        cache = routing.remote_cache("fx-graph")
        return {**cache.counters.snapshot(), **cache.remote.stats()}

    run.use_redis, run.stats = use_redis, stats
    yield run
    flush(5)
    routing.reset()


@pytest.mark.feature("X03")
def test_redis_absent_at_start_then_started(compile_on_npu, redis_server, free_port):
    port = free_port()
    compile_on_npu.use_redis(f"redis://127.0.0.1:{port}/0")
    compile_on_npu(0)  # nothing listens: a miss, the compile goes on
    flush(5)
    s = compile_on_npu.stats()
    assert s["get_connection"] == 1 and s["circuit"] == "open" and s["miss"] == 1
    assert (
        s.get("put_skipped", 0) + s.get("put_connection", 0) == 1
    )  # the put was not lost silently

    redis_server(port=port)  # Redis comes up later at the configured address
    time.sleep(COOLDOWN + 0.05)
    compile_on_npu(0)  # trial call succeeds: a miss on the empty server, then a put
    assert flush(5)
    compile_on_npu(0)  # now served by Redis
    s = compile_on_npu.stats()
    assert s["circuit"] == "closed" and s["circuit_recovered"] == 1
    assert s["hit_remote"] == 1 and s["put_ok"] == 1


@pytest.mark.feature("X03")
def test_redis_killed_mid_run_and_restarted(compile_on_npu, redis_server):
    srv = redis_server()
    compile_on_npu.use_redis(srv.url)
    compile_on_npu(1)
    assert flush(5)
    compile_on_npu(1)
    assert compile_on_npu.stats()["hit_remote"] == 1

    srv.kill()
    compile_on_npu(2)  # Redis gone: still compiles, correct
    compile_on_npu(1)  # even a graph Redis held: compiled again locally
    flush(5)
    s = compile_on_npu.stats()
    assert s["circuit"] == "open" and s["circuit_opened"] == 1
    assert s.get("get_connection", 0) + s.get("get_timeout", 0) == 1 and s["get_skipped"] >= 1

    srv.start()  # restarted empty on the same port
    time.sleep(COOLDOWN + 0.05)
    compile_on_npu(3)
    assert flush(5)
    compile_on_npu(3)
    s = compile_on_npu.stats()
    assert s["circuit"] == "closed" and s["circuit_recovered"] == 1 and s["hit_remote"] == 2


@pytest.mark.feature("X03")
def test_redis_slowed_by_injected_latency(
    compile_on_npu, redis_url, port_of, delay_proxy, monkeypatch
):
    # which Redis calls reached the server: the breaker lets a call through to _connect, an
    # open circuit answers without it (counts, not times: a compile's time varies with load)
    from npu_cache.redis_store import RedisStore

    contacts = []
    real_connect = RedisStore._connect

    def counting_connect(self):
        contacts.append(1)
        return real_connect(self)

    monkeypatch.setattr(RedisStore, "_connect", counting_connect)
    proxy = delay_proxy(port_of(redis_url), delay=0.0)
    compile_on_npu.use_redis(proxy.url)
    compile_on_npu(4)
    assert flush(5)
    proxy.delay = 3 * TIMEOUT  # every reply now arrives after the command timeout
    compile_on_npu(4)  # the lookup times out: compiled locally, correct
    s = compile_on_npu.stats()
    assert s["get_timeout"] == 1 and s["circuit"] == "open" and s.get("hit_remote", 0) == 0
    contacts.clear()
    compile_on_npu(4)  # circuit open: Redis not even asked
    assert flush(5)
    assert compile_on_npu.stats()["get_skipped"] >= 1
    assert not contacts  # the open circuit saved the timeout: nothing waited on the server
    proxy.delay = 0.0
    time.sleep(COOLDOWN + 0.05)
    compile_on_npu(4)
    assert (
        compile_on_npu.stats()["hit_remote"] == 1 and compile_on_npu.stats()["circuit"] == "closed"
    )
