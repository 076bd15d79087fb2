"""Cache policy from upstream's own flags: force_disable_caches (K01) and file_lock_timeout
(K04), read at every call; and registering the component changes nothing upstream."""

import os
import subprocess
import sys
import textwrap
import time

import pytest
import torch
import torch._inductor.config as inductor_config
import torch._inductor.remote_cache as remote_cache

import npu_cache
from npu_cache import LockTimeout, SignedCache, location_of


@pytest.mark.feature("K01")
@pytest.mark.parametrize("flag", ["torch.compiler.config", "torch._inductor.config"])
def test_force_disable_caches_stops_every_read_and_write(flag, make_settings, writer, redis_url):
    cache = SignedCache("kernel-binary", make_settings(redis_url), writer=writer)
    cache.put("old", b"1")
    assert writer.flush(5)
    config = torch.compiler.config if flag == "torch.compiler.config" else inductor_config
    with config.patch(force_disable_caches=True):
        assert cache.get("old") is None  # present locally and remotely, not read
        cache.put("new", b"2")
        assert writer.flush(5)
    assert cache.counters["disabled"] == 2
    assert cache.local.read(location_of("kernel-binary", "new")) is None
    assert cache.remote.read(location_of("kernel-binary", "new")) is None
    assert writer.stats()["queued"] == 1  # only the put made before the flag
    assert cache.get("old") == b"1" and cache.get("new") is None


def _hold_lock(path, seconds):
    script = textwrap.dedent(f"""
        import fcntl, os, sys, time
        os.makedirs(os.path.dirname({str(path)!r}), exist_ok=True)
        fd = os.open({str(path)!r}, os.O_RDWR | os.O_CREAT)
        fcntl.flock(fd, fcntl.LOCK_EX)
        print("locked", flush=True)
        time.sleep({seconds})
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


@pytest.mark.feature("K04")
def test_file_lock_timeout_bounds_the_wait_with_a_clear_error(make_settings, writer):
    cache = SignedCache("kernel-binary", make_settings(), writer=writer)
    cache.put("k", b"v1")
    lock = cache.local.lock_path(location_of("kernel-binary", "k"))
    holder = _hold_lock(lock, 8)  # another "compile" holds the entry's lock for 8 s
    try:
        with inductor_config.patch(file_lock_timeout=1):
            t = time.monotonic()
            with pytest.raises(LockTimeout) as info:
                cache.put("k", b"v2")
            waited = time.monotonic() - t
            assert 0.9 <= waited < 4, (
                waited
            )  # the flag's 1 s, not the 8 s hold nor the default 600 s
            msg = str(info.value)
            assert str(lock) in msg and "file_lock_timeout" in msg and "waited 1s" in msg
            assert cache.get("k") == b"v1"  # readers take no lock and see the whole old entry
    finally:
        holder.kill()
        holder.wait()
    cache.put("k", b"v2")  # the kernel released the dead holder's lock
    assert cache.get("k") == b"v2"


def test_a_held_lock_does_not_fail_a_remote_hit(make_settings, writer, redis_url):
    s = make_settings(redis_url)
    SignedCache("autotune", s, writer=writer, local=False).put("k", b"remote")
    assert writer.flush(5)
    cache = SignedCache("autotune", s, writer=writer)
    holder = _hold_lock(cache.local.lock_path(location_of("autotune", "k")), 8)
    try:
        with inductor_config.patch(file_lock_timeout=0.2):
            assert cache.get("k") == b"remote"  # copying it locally is skipped, not fatal
        assert cache.counters["local_lock_timeout"] == 1
    finally:
        holder.kill()
        holder.wait()


def test_register_is_idempotent_and_changes_nothing_upstream(make_settings, writer):
    # register() installs its npu-only patches once (_compat.py); a second call, and opening a
    # cache, change nothing more: no upstream flag, class hook or environment variable
    names = [
        "RemoteFxGraphCache",
        "RemoteAutotuneCache",
        "RemoteBundledAutotuneCache",
        "LocalAutotuneCache",
    ]  # LocalAutotuneCache: torch 2.13, absent in 2.11
    classes = [getattr(remote_cache, n) for n in names if hasattr(remote_cache, n)]
    npu_cache.register()
    before = (
        remote_cache.create_cache,
        [c.backend_override_cls for c in classes],
        inductor_config.force_disable_caches,
        inductor_config.file_lock_timeout,
        dict(os.environ),
    )
    assert remote_cache.create_cache._npu_cache_upstream is not None
    npu_cache.register()
    SignedCache("fx-graph", make_settings(), writer=writer).put(
        "k", b"v"
    )  # opening a cache neither
    after = (
        remote_cache.create_cache,
        [c.backend_override_cls for c in classes],
        inductor_config.force_disable_caches,
        inductor_config.file_lock_timeout,
        dict(os.environ),
    )
    assert after == before
