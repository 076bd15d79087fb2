"""SignedBackend speaks upstream Inductor's RemoteCacheBackend interface: upstream's own
RemoteCache controller and JSON serde run on it unchanged, and a tampered entry never reaches
their decoder. (No compile: selecting it for npu compiles waits for npu-lowering.)"""

import json

import pytest
from torch._inductor.remote_cache import RemoteCache, RemoteCacheJsonSerde, cache_stats

from npu_cache import SignedCache, location_of
from npu_cache.upstream import SignedBackend


class NpuRemoteFxGraphCache(RemoteCache):
    pass


@pytest.mark.feature("X01")
def test_upstream_remote_cache_on_the_signed_backend(make_settings, writer, redis_url, monkeypatch):
    cache = SignedCache("fx-graph", make_settings(redis_url, cache_dir=None), writer=writer)
    upstream = NpuRemoteFxGraphCache(SignedBackend(cache), RemoteCacheJsonSerde())
    value = {"data": "base64-of-a-compiled-graph", "time_taken_ms": 12}
    upstream.put("pt2:fx-graph-v1::abc:c1", value)
    assert writer.flush(5)
    assert upstream.get("pt2:fx-graph-v1::abc:c1") == value
    assert upstream.get("pt2:fx-graph-v1::other:c1") is None

    decoded = []
    monkeypatch.setattr(
        RemoteCacheJsonSerde, "decode", lambda self, data: decoded.append(data) or json.loads(data)
    )
    loc = location_of("fx-graph", "pt2:fx-graph-v1::abc:c1")
    blob = bytearray(cache.remote.read(loc))
    blob[-40] ^= 1
    cache.remote.write(loc, bytes(blob))
    assert upstream.get("pt2:fx-graph-v1::abc:c1") is None
    assert decoded == []  # upstream's decoder never saw the tampered bytes
    assert cache.counters["refused_bad-signature"] == 1
    assert cache_stats._stats["NpuRemoteFxGraphCache"].miss >= 2
