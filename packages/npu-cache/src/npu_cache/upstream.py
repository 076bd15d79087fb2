"""Adapter to upstream Inductor's cache interface (torch/_inductor/remote_cache.py).

``SignedBackend`` is a ``RemoteCacheBackend[bytes]``: upstream's ``RemoteCache`` classes
(RemoteFxGraphCache, RemoteAutotuneCache, RemoteBundledAutotuneCache) can sit on it
unchanged, and then every byte they read has passed our HMAC and fingerprint checks before
their serde (JSON, then pickle for FX graphs) sees it, and their puts leave the compile
thread. Nothing selects it yet: upstream's ``create_cache`` picks classes by name with no
device in sight, so routing npu compiles here waits for npu-lowering's compile context
(see the README).
"""

from __future__ import annotations

from torch._inductor.remote_cache import RemoteCacheBackend

from .cache import SignedCache


class SignedBackend(RemoteCacheBackend[bytes]):
    def __init__(self, cache: SignedCache) -> None:
        super().__init__()
        self.cache = cache

    def _get(self, key: str) -> bytes | None:
        return self.cache.get(key)

    def _put(self, key: str, data: bytes) -> None:
        self.cache.put(key, data)
