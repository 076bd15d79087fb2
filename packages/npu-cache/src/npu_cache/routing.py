"""Upstream's remote caches of npu compiles, on our signed backend.

For an npu compile, ``create_cache`` (see ``_compat.route_create_cache``) returns one of the
classes below instead of upstream's Redis class of the same role. They keep upstream's
controller (``RemoteCache``), its JSON serde and its key format (``pt2:<id>::<key>:c1``),
so FxGraphCache, AutotuneCache and AutotuneCacheBundler use them unchanged; only the
backend differs: ``SignedBackend`` (HMAC + fingerprint checked before the serde sees a byte,
puts on the background writer, a dead Redis read as a miss).

The signed caches opened here have no local directory of their own: upstream's local FX
graph and autotune caches stay upstream's (``fx_graph_cache``, ``autotune_local_cache``), and
this is only the remote layer, so "remote on, local off" means exactly that.
"""

from __future__ import annotations

import threading

from torch._inductor.remote_cache import RemoteCache, RemoteCacheJsonSerde

from .cache import SignedCache
from .upstream import SignedBackend

_lock = threading.Lock()
_remote: dict[str, SignedCache] = {}


def remote_cache(kind: str) -> SignedCache:
    """The process's remote-only signed cache for ``kind`` (configured from npu_cache.config)."""
    with _lock:
        if kind not in _remote:
            _remote[kind] = SignedCache(kind, local=False)
        return _remote[kind]


def reset() -> None:
    """Forget the opened caches (tests change npu_cache.config between compiles)."""
    with _lock:
        _remote.clear()
    with _aot_lock:
        _aot.clear()


class _SignedRemoteCache(RemoteCache):
    kind = ""

    def __init__(self, cache_id: str) -> None:
        if self.__class__.backend_override_cls is not None:  # upstream's test hook, honoured
            backend = None
        else:
            backend = SignedBackend(remote_cache(self.kind))
        super().__init__(backend, RemoteCacheJsonSerde())
        self._key_fmt = f"pt2:{cache_id}::{{key}}:c1"  # upstream's RedisRemoteCache format

    def _get(self, key, sample):
        return super()._get(self._key_fmt.format(key=key), sample)

    def _put(self, key, value, sample):
        super()._put(self._key_fmt.format(key=key), value, sample)


class NpuRemoteFxGraphCache(_SignedRemoteCache):
    kind = "fx-graph"


class NpuRemoteAutotuneCache(_SignedRemoteCache):
    kind = "autotune"


class NpuRemoteBundledAutotuneCache(_SignedRemoteCache):
    kind = "bundled-autotune"


class NpuRemoteAOTAutogradCache(_SignedRemoteCache):
    kind = "aot-autograd"


_aot: list = []
_aot_lock = threading.Lock()  # not _lock: building the cache takes _lock (remote_cache)


def aot_autograd_remote_cache() -> NpuRemoteAOTAutogradCache:
    """The process's signed remote AOTAutograd cache (upstream's cache id). Without a Redis URL
    its gets miss and its puts go nowhere; a bad setting (ConfigError) raises, as for the
    routed caches of ``create_cache``."""
    with _aot_lock:
        if not _aot:
            _aot.append(NpuRemoteAOTAutogradCache("autograd-experimental"))
        return _aot[0]


# upstream's OSS class name -> ours (the fbcode names never reach us: is_fbcode is False in OSS)
ROUTED = {
    "RemoteFxGraphCache": NpuRemoteFxGraphCache,
    "RemoteAutotuneCache": NpuRemoteAutotuneCache,
    "RemoteBundledAutotuneCache": NpuRemoteBundledAutotuneCache,
}
