"""Redis absent at start, killed mid-run and restarted, slowed by a proxy: gets and puts never
raise, each call is bounded by the timeouts (about 2 x timeout: connect + command), the
circuit breaker skips the server during its cool-down, and the stats say what happened."""

import time

from npu_cache import SignedCache, fingerprint, policy

TIMEOUT = 0.3
COOLDOWN = 0.5
BOUND = 2 * TIMEOUT + 0.3  # connect + command timeout, plus scheduling slack


def timed(fn, *args):
    t = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - t


def remote_cache(make_settings, writer, url):
    policy.caches_disabled(), fingerprint.current()  # loaded in any compiling process
    return SignedCache(
        "fx-graph",
        make_settings(f"{url}?socket_timeout={TIMEOUT}", cache_dir=None, redis_cooldown=COOLDOWN),
        writer=writer,
    )


def wait_cooldown():
    time.sleep(COOLDOWN + 0.05)


def test_redis_absent_at_start_then_started(make_settings, writer, redis_server, free_port):
    port = free_port()
    cache = remote_cache(make_settings, writer, f"redis://127.0.0.1:{port}/0")
    value, took = timed(cache.get, "k")
    assert value is None and took < BOUND
    value, took = timed(cache.get, "k")
    assert value is None and took < 0.05  # circuit open: not even a connect attempt
    cache.put("k", b"v")  # never raises; the writer's attempt is skipped or fails, and is counted
    assert writer.flush(5)
    s = cache.stats()["remote"]
    assert s["get_connection"] == 1 and s["get_skipped"] >= 1 and s["circuit"] == "open"
    assert "Connection refused" in s["last_error"] or "connect" in s["last_error"].lower()
    assert writer.stats()["failed"] == 1

    redis_server(port=port)  # Redis comes up later on the configured address
    wait_cooldown()
    cache.put("k", b"v")
    assert writer.flush(5)
    assert cache.get("k") == b"v"
    s = cache.stats()["remote"]
    assert s["circuit"] == "closed" and s["circuit_recovered"] == 1


def test_redis_killed_mid_run_and_restarted(make_settings, writer, redis_server):
    srv = redis_server()
    cache = remote_cache(make_settings, writer, srv.url)
    cache.put("before", b"1")
    assert writer.flush(5) and cache.get("before") == b"1"

    srv.kill()
    for _ in range(3):
        value, took = timed(cache.get, "before")
        assert value is None and took < BOUND
        cache.put("during", b"2")
    assert writer.flush(5)
    s = cache.stats()["remote"]
    assert s["circuit"] == "open" and s["circuit_opened"] == 1
    assert s["get_connection"] + s.get("put_connection", 0) >= 1 and s["get_skipped"] >= 1

    redis_server(port=srv.port)  # restarted empty (no persistence), same address
    wait_cooldown()
    cache.put("after", b"3")
    assert writer.flush(5)
    assert cache.get("after") == b"3"
    assert cache.get("before") is None  # the restarted server lost it: a plain miss
    s = cache.stats()["remote"]
    assert s["circuit"] == "closed" and s["circuit_recovered"] >= 1


def test_slow_redis_times_out_within_the_bound(
    make_settings, writer, redis_url, port_of, delay_proxy
):
    proxy = delay_proxy(port_of(redis_url), delay=0.0)
    cache = remote_cache(make_settings, writer, proxy.url)
    cache.put("k", b"v")
    assert writer.flush(5) and cache.get("k") == b"v"

    proxy.delay = 2.0  # far beyond the 0.3 s timeout
    value, took = timed(cache.get, "k")
    assert value is None and took < BOUND
    value, took = timed(cache.get, "k")
    assert value is None and took < 0.05
    _, took = timed(cache.put, "k2", b"v2")
    assert took < 0.05
    assert writer.flush(5)
    s = cache.stats()["remote"]
    assert s["get_timeout"] == 1 and s["get_skipped"] >= 1 and s["circuit"] == "open"

    proxy.delay = 0.02  # slow but within the timeout: the cache works again after the cool-down
    wait_cooldown()
    value, took = timed(cache.get, "k")
    assert value == b"v" and took < BOUND
    assert cache.stats()["remote"]["circuit"] == "closed"


def test_a_dead_redis_does_not_slow_the_local_cache(make_settings, writer, free_port):
    policy.caches_disabled(), fingerprint.current()
    cache = SignedCache(
        "autotune",
        make_settings(
            f"redis://127.0.0.1:{free_port()}/0?socket_timeout={TIMEOUT}", redis_cooldown=60
        ),
        writer=writer,
    )
    cache.put("k", b"v")
    assert cache.get("k") == b"v"  # local hit: Redis not consulted
    assert cache.get("missing") is None
    _, took = timed(cache.get, "missing-too")
    assert took < 0.05
    assert cache.counters["hit_local"] == 1 and cache.counters["miss"] == 2
