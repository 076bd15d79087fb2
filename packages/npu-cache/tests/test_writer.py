"""Non-blocking writes: puts return at once while Redis is slow; the queue is bounded and its
overflow drops the new put (counted); flush() and interpreter exit drain it; job errors are
logged and counted, never raised."""

import logging
import os
import subprocess
import sys
import textwrap
import time

import pytest
import redis

from npu_cache import SignedCache, fingerprint, policy
from npu_cache.writer import Writer


def test_puts_return_while_redis_is_slow(make_settings, writer, redis_url, port_of, delay_proxy):
    proxy = delay_proxy(port_of(redis_url), delay=0.2)  # every request and reply held 0.2 s
    cache = SignedCache(
        "fx-graph", make_settings(f"{proxy.url}?socket_timeout=5", cache_dir=None), writer=writer
    )
    policy.caches_disabled(), fingerprint.current()  # what a compiling process has loaded already
    times = []
    for i in range(5):
        t = time.perf_counter()
        cache.put(f"k{i}", os.urandom(512))
        times.append(time.perf_counter() - t)
    assert max(times) < 0.05, times  # a synchronous SET through the proxy takes >= 0.4 s
    assert writer.pending() >= 1
    assert writer.flush(20)
    assert writer.stats()["written"] == 5 and writer.pending() == 0
    assert cache.get("k4") is not None


def test_overflow_drops_the_new_put_and_counts_it(
    make_settings, redis_url, port_of, delay_proxy, caplog
):
    proxy = delay_proxy(port_of(redis_url), delay=0.2)
    w = Writer(max_items=2, max_bytes=1 << 20)
    cache = SignedCache(
        "autotune", make_settings(f"{proxy.url}?socket_timeout=5", cache_dir=None), writer=w
    )
    policy.caches_disabled(), fingerprint.current()
    with caplog.at_level(logging.WARNING, logger="npu_cache"):
        t = time.perf_counter()
        for i in range(10):
            cache.put(f"k{i}", b"x" * 100)
        assert time.perf_counter() - t < 0.1
    assert w.flush(30)
    s = w.stats()
    assert s["dropped"] >= 6 and s["queued"] + s["dropped"] == 10 and s["written"] == s["queued"]
    assert cache.counters["put_remote_dropped"] == s["dropped"]
    assert any("write queue full" in r.getMessage() for r in caplog.records)
    stored = redis.Redis.from_url(redis_url).keys(f"{cache.settings.redis_prefix}:*")
    assert len(stored) == s["written"]
    assert cache.get("k0") is not None  # FIFO: the first puts were kept, the later ones dropped
    assert cache.get("k9") is None


def test_byte_bound():
    w = Writer(max_items=100, max_bytes=1000)
    gate = []
    assert w.submit(lambda: gate.append(1) or time.sleep(0.3) or True, 600)  # taken by the thread
    time.sleep(0.05)
    assert w.submit(lambda: True, 600)  # queue empty: one oversized entry is still taken
    assert not w.submit(lambda: True, 600)  # 1200 pending + 600 > 1000: dropped
    assert w.flush(5) and w.stats()["dropped"] == 1 and w.stats()["written"] == 2


def test_job_errors_are_counted_and_logged_not_raised(caplog):
    w = Writer()
    with caplog.at_level(logging.WARNING, logger="npu_cache"):
        assert w.submit(lambda: 1 / 0, 1, "boom entry")
        assert w.submit(lambda: False, 1)
        assert w.submit(lambda: True, 1)
        assert w.flush(5)
    assert w.stats()["failed"] == 2 and w.stats()["written"] == 1
    assert any("boom entry" in r.getMessage() and r.exc_info for r in caplog.records)
    assert w.flush(0) is True and w.flush(None) is True


def test_flush_is_bounded():
    w = Writer()
    w.submit(lambda: time.sleep(1) or True, 1)
    t = time.perf_counter()
    assert w.flush(0.1) is False
    assert time.perf_counter() - t < 0.5
    assert w.flush(5) is True


EXIT_SCRIPT = textwrap.dedent("""
    import os, sys
    import npu_cache
    cache = npu_cache.open_cache("kernel-binary")
    for i in range(int(sys.argv[1])):
        cache.put(f"k{i}", os.urandom(512))
    print(npu_cache.stats()["writer"]["pending"], flush=True)
    # no flush: the interpreter exits with writes pending
""")


def _run_exit_script(make_settings, proxy_url, n, exit_timeout):
    s = make_settings(proxy_url)
    env = dict(
        os.environ,
        NPU_CACHE_REDIS_URL=f"{proxy_url}?socket_timeout=5",
        NPU_CACHE_REDIS_PREFIX=s.redis_prefix,
        NPU_CACHE_DIR="off",
        NPU_CACHE_HMAC_KEY=s.hmac_key,
        NPU_CACHE_EXIT_FLUSH_TIMEOUT=str(exit_timeout),
    )
    proc = subprocess.run(
        [sys.executable, "-c", EXIT_SCRIPT, str(n)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return s.redis_prefix, int(proc.stdout.split()[-1]), proc.stderr


def test_pending_writes_are_flushed_at_exit(make_settings, redis_url, port_of, delay_proxy):
    proxy = delay_proxy(port_of(redis_url), delay=0.05)  # ~0.1 s per SET
    prefix, pending, _ = _run_exit_script(make_settings, proxy.url, 12, exit_timeout=30)
    assert pending >= 8  # most writes were still queued when the script ended
    assert len(redis.Redis.from_url(redis_url).keys(f"{prefix}:*")) == 12


def test_exit_flush_gives_up_after_its_timeout_and_says_so(
    make_settings, redis_url, port_of, delay_proxy
):
    proxy = delay_proxy(port_of(redis_url), delay=0.1)  # ~0.2 s per SET
    t = time.perf_counter()
    prefix, _, stderr = _run_exit_script(make_settings, proxy.url, 30, exit_timeout=0.5)
    assert time.perf_counter() - t < 30
    written = len(redis.Redis.from_url(redis_url).keys(f"{prefix}:*"))
    assert written < 30
    assert "still pending after 0.5s at exit; they are lost" in stderr


def test_a_forked_child_starts_with_an_empty_writer():
    from npu_cache import writer as writer_module

    w = writer_module.get_writer()
    release = []
    w.submit(lambda: release or time.sleep(0.5) or True, 1, "parent job")
    pid = os.fork()
    if pid == 0:  # child: the parent's queue and thread are not ours
        ok = writer_module._writer is None and writer_module.flush(0.1) is True
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert w.flush(5)


WARM_SCRIPT = textwrap.dedent("""
    import threading
    import npu_cache
    npu_cache.register()  # what npu_inductor.enable() runs at setup
    print(any(t.name == "npu-cache-writer" for t in threading.enumerate()), flush=True)
""")


@pytest.mark.feature("R06")
@pytest.mark.parametrize("url", [None, "redis://127.0.0.1:1/0"])
def test_setup_starts_the_writer_so_no_put_pays_for_it(url):
    """Thread.start() waits for the new thread to run: ~4 ms on a busy machine, once paid by the
    first put of a process. With Redis configured, register() starts it; without, nothing."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("NPU_CACHE_", "TORCHINDUCTOR_REDIS"))
    }
    if url:
        env["NPU_CACHE_REDIS_URL"] = url  # never contacted: starting the writer connects nothing
    proc = subprocess.run(
        [sys.executable, "-c", WARM_SCRIPT], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split()[-1] == str(url is not None)
