"""Kernel binary cache (R03-R05): compiled npu kernel descriptors shared through the signed
local + Redis cache, so a kernel compiled on one machine is not compiled again elsewhere.

Descriptors belong to npu-launcher; we only see them through its public entry points
(group ``npu_inductor.kernel_launcher``: ``descriptor_to_bytes``, ``descriptor_from_bytes``).
Without npu-launcher the cache still stores and returns raw bytes (``publish_bytes`` /
``fetch_bytes``) and the descriptor methods degrade to a miss / no upload, logged once.

Flags, read at every call, are upstream's binary-remote-cache flags (``config.cutlass.*``:
the catalogue's "CATLASS equivalents" for npu kernel/template binaries):
- ``use_binary_remote_cache`` (default True): R05, consult the cache before compiling;
- ``upload_to_binary_remote_cache`` (default False): R04, upload what was compiled;
- ``binary_remote_cache_force_write`` (default False): R03, overwrite an existing entry
  (republish after a polluted or wrong entry); otherwise an existing entry is kept.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from .cache import SignedCache
from .counters import Counters

log = logging.getLogger(__name__)
LAUNCHER_GROUP = "npu_inductor.kernel_launcher"


def _flag(name: str) -> bool:
    from torch._inductor import config

    return bool(getattr(config.cutlass, name))


class _Codec:
    """npu-launcher's descriptor <-> bytes functions, found by entry point (or None)."""

    def __init__(self) -> None:
        self._loaded = False
        self.to_bytes: Callable[[Any], bytes] | None = None
        self.from_bytes: Callable[[bytes], Any] | None = None

    def load(self) -> bool:
        if not self._loaded:
            self._loaded = True
            found = {ep.name: ep for ep in entry_points(group=LAUNCHER_GROUP)}
            try:
                self.to_bytes = found["descriptor_to_bytes"].load()
                self.from_bytes = found["descriptor_from_bytes"].load()
            except (KeyError, ImportError, AttributeError) as exc:
                self.to_bytes = self.from_bytes = None
                log.warning("npu-cache: no kernel descriptor codec (npu-launcher's entry points %s in %r): "
                            "kernel binaries are not cached", exc, LAUNCHER_GROUP)
        return self.to_bytes is not None


class KernelBinaryCache:
    """``fetch(key)`` / ``publish(key, descriptor)`` / ``get_or_compile(key, compile_fn)``.

    ``key`` identifies one compiled kernel for one target (e.g. the kernel source hash, its
    config and the device arch); the caller owns it. Entries are signed and fingerprinted
    like every entry of ours; refused ones read as misses."""

    def __init__(self, cache: SignedCache | None = None, codec: _Codec | None = None):
        self.cache = cache or SignedCache("kernel-binary")
        self.codec = codec or _Codec()
        self.counters = Counters()

    # -- bytes: no npu-launcher needed --------------------------------------------------------
    def fetch_bytes(self, key: str) -> bytes | None:
        if not _flag("use_binary_remote_cache"):
            self.counters.add("fetch_off")
            return None
        return self.cache.get(key)

    def publish_bytes(self, key: str, blob: bytes, force: bool | None = None) -> bool:
        """Store ``blob`` unless an entry exists (R04), or overwrite it when ``force`` (R03,
        default: the force-write flag). True when written."""
        if not _flag("upload_to_binary_remote_cache"):
            self.counters.add("upload_off")
            return False
        force = _flag("binary_remote_cache_force_write") if force is None else force
        if not force and self.cache.get(key) is not None:
            self.counters.add("upload_kept_existing")
            return False
        self.cache.put(key, blob)
        self.counters.add("uploaded_forced" if force else "uploaded")
        return True

    # -- descriptors, through npu-launcher ----------------------------------------------------
    def fetch(self, key: str):
        """The cached KernelDescriptor (verified, decoded by npu-launcher) or None."""
        if not self.codec.load():
            self.counters.add("no_codec")
            return None
        blob = self.fetch_bytes(key)
        if blob is None:
            return None
        try:
            return self.codec.from_bytes(blob)
        except Exception as exc:  # a signed entry npu-launcher cannot read (e.g. other schema)
            self.counters.add("undecodable")
            log.warning("npu-cache: kernel-binary entry for %s is not a descriptor npu-launcher reads: %s", key, exc)
            return None

    def publish(self, key: str, descriptor, force: bool | None = None) -> bool:
        if not self.codec.load():
            self.counters.add("no_codec")
            return False
        return self.publish_bytes(key, self.codec.to_bytes(descriptor), force)

    def get_or_compile(self, key: str, compile_fn: Callable[[], Any]):
        """(descriptor, hit): a cached descriptor skips ``compile_fn`` (R05); otherwise
        compile locally and upload when uploading is on (R04)."""
        descriptor = self.fetch(key)
        if descriptor is not None:
            self.counters.add("hit")
            return descriptor, True
        self.counters.add("compiled")
        descriptor = compile_fn()
        self.publish(key, descriptor)
        return descriptor, False

    def stats(self) -> dict:
        return {**self.counters.snapshot(), "cache": self.cache.stats()}


_lock = threading.Lock()
_default: KernelBinaryCache | None = None


def open_kernel_binary_cache() -> KernelBinaryCache:
    """The process's kernel-binary cache (entry point ``npu_inductor.caches: kernel_binary``)."""
    global _default
    with _lock:
        if _default is None:
            _default = KernelBinaryCache()
        return _default
