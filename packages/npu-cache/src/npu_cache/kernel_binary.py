"""Kernel binary cache: compiled npu kernel descriptors shared through the signed
local + Redis cache, so a kernel compiled on one machine is not compiled again elsewhere.

Descriptors belong to npu-launcher; we only see them through its public entry points
(group ``npu_inductor.kernel_launcher``: ``descriptor_to_bytes``, ``descriptor_from_bytes``).
Without npu-launcher the cache still stores and returns raw bytes (``publish_bytes`` /
``fetch_bytes``) and the descriptor methods degrade to a miss / no upload, logged once.

Flags, read at every call, are upstream's binary-remote-cache flags (``config.cutlass.*``:
the catalogue's "CATLASS equivalents" for npu kernel/template binaries):
- ``use_binary_remote_cache`` (default True): consult the cache before compiling;
- ``upload_to_binary_remote_cache`` (default False): upload what was compiled;
- ``binary_remote_cache_force_write`` (default False): overwrite an existing entry
  (republish after a polluted or wrong entry); otherwise an existing entry is kept (Redis
  ``SET NX`` on the writer thread: the compile thread never waits for an existence check).

The compile path: npu-lowering's kernel object asks ``descriptor_for_triton`` (through the
entry point ``npu_inductor.caches: kernel_binary``) for each kernel configuration it would
otherwise describe/compile; the key (``triton_kernel_key``) is Triton's own hash of the
kernel source and every jit function it calls, the compile metadata, the config, the target,
the descriptor codec's version and the software fingerprint.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from .cache import SignedCache
from .counters import Counters
from .settings import Settings

log = logging.getLogger(__name__)
LAUNCHER_GROUP = "npu_inductor.kernel_launcher"


def _flag(name: str) -> bool:
    from ._compat import binary_cache_flags

    return bool(getattr(binary_cache_flags(), name))


class _Codec:
    """npu-launcher's descriptor <-> bytes functions, found by entry point (or None)."""

    def __init__(self) -> None:
        self._loaded = False
        self._lock = threading.Lock()  # kernels' configs compile in threads (npu-autotune)
        self.to_bytes: Callable[[Any], bytes] | None = None
        self.from_bytes: Callable[[bytes], Any] | None = None
        self.version = ""  # the providing distribution's: a new launcher may describe differently

    def load(self) -> bool:
        if not self._loaded:
            with self._lock:
                if not self._loaded:
                    self._load()
                    self._loaded = True  # only once the functions are set: other threads read them
        return self.to_bytes is not None

    def _load(self) -> None:
        found = {ep.name: ep for ep in entry_points(group=LAUNCHER_GROUP)}
        try:
            self.to_bytes = found["descriptor_to_bytes"].load()
            self.from_bytes = found["descriptor_from_bytes"].load()
            dist = getattr(found["descriptor_to_bytes"], "dist", None)
            self.version = f"{dist.name} {dist.version}" if dist else ""
        except (KeyError, ImportError, AttributeError) as exc:
            self.to_bytes = self.from_bytes = None
            log.warning(
                "npu-cache: no kernel descriptor codec (npu-launcher's entry points %s in %r): "
                "kernel binaries are not cached",
                exc,
                LAUNCHER_GROUP,
            )


class KernelBinaryCache:
    """``fetch(key)`` / ``publish(key, descriptor)`` / ``get_or_compile(key, compile_fn)``.

    ``key`` identifies one compiled kernel for one target (e.g. the kernel source hash, its
    config and the device arch); the caller owns it. Entries are signed and fingerprinted
    like every entry of ours; refused ones read as misses."""

    def __init__(self, cache: SignedCache | None, codec: _Codec | None = None):
        self.cache = cache  # None: no Redis configured, nothing to share: every call a miss
        self.codec = codec or _Codec()
        self.counters = Counters()
        self._undecodable: set[str] = set()

    # -- bytes: no npu-launcher needed --------------------------------------------------------
    def fetch_bytes(self, key: str) -> bytes | None:
        if not _flag("use_binary_remote_cache"):
            self.counters.add("fetch_off")
            return None
        if self.cache is None:
            self.counters.add("no_remote")
            return None
        return self.cache.get(key)

    def publish_bytes(self, key: str, blob: bytes, force: bool | None = None) -> bool:
        """Store ``blob`` when uploading is on; an existing entry is kept unless ``force``
        (default: the force-write flag) overwrites it. True when handed to the cache (the Redis
        write, and whether an entry was kept there, happen on the writer thread: ``put_kept``)."""
        if not _flag("upload_to_binary_remote_cache"):
            self.counters.add("upload_off")
            return False
        if self.cache is None:
            self.counters.add("no_remote")
            return False
        force = _flag("binary_remote_cache_force_write") if force is None else force
        self.cache.put(key, blob, overwrite=force)
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
            self._undecodable.add(key)
            log.warning(
                "npu-cache: kernel-binary entry for %s is not a descriptor npu-launcher reads: %s",
                key,
                exc,
            )
            return None

    def publish(self, key: str, descriptor, force: bool | None = None) -> bool:
        if not self.codec.load():
            self.counters.add("no_codec")
            return False
        return self.publish_bytes(key, self.codec.to_bytes(descriptor), force)

    def get_or_compile(self, key: str, compile_fn: Callable[[], Any]):
        """(descriptor, hit): a cached descriptor skips ``compile_fn``; otherwise
        compile locally and upload when uploading is on."""
        descriptor = self.fetch(key)
        if descriptor is not None:
            self.counters.add("hit")
            return descriptor, True
        self.counters.add("compiled")
        descriptor = compile_fn()
        # an entry the codec could not read is replaced, not kept (keeping it would only
        # make every later process compile again)
        self.publish(key, descriptor, force=True if key in self._undecodable else None)
        self._undecodable.discard(key)
        return descriptor, False

    def triton_kernel_key(self, fn, triton_meta: dict, config, target: str) -> str:
        """The key of one compiled configuration of a Triton kernel ``fn`` (a JITFunction).

        ``fn.cache_key`` is Triton's hash of the kernel's source, every jit function it calls
        and the constexpr globals it reads (what Triton's own cache keys on); ``triton_meta``
        (signature, constants, divisibility) without the device index, which only says where
        it runs here; the config's block sizes, warps and stages; ``target`` (the caller's
        backend/arch); the codec's version; the software fingerprint (torch, Triton, CANN,
        SoC), so machines with other software never share a key."""
        meta = {k: v for k, v in triton_meta.items() if k != "device"}
        parts = {
            "fn": fn.cache_key,
            "name": getattr(fn, "__name__", ""),
            "meta": repr(sorted(meta.items(), key=lambda kv: kv[0])),
            "config": repr(sorted(dict(config.kwargs).items())),
            "launch": [
                getattr(config, a, None) for a in ("num_warps", "num_stages", "num_ctas", "maxnreg")
            ],
            "target": target,
            "codec": self.codec.version,
            "software": self.cache._fp().decode(),
        }
        digest = hashlib.sha256(
            json.dumps(parts, sort_keys=True, default=repr).encode()
        ).hexdigest()
        return f"triton/{parts['name']}/{digest}"

    def descriptor_for_triton(
        self, fn, triton_meta: dict, config, target: str, compile_fn: Callable[[], Any]
    ):
        """The compile path's hook: the cached descriptor of this kernel configuration,
        else ``compile_fn()``, uploaded when uploading is on. A kernel that cannot be
        keyed is compiled (counted ``unkeyed``)."""
        if self.cache is None or not self.codec.load():
            self.counters.add("no_codec" if self.cache else "no_remote")
            return compile_fn()
        try:
            key = self.triton_kernel_key(fn, triton_meta, config, target)
        except Exception as exc:  # e.g. a function without source; never fail the compile
            self.counters.add("unkeyed")
            log.info("npu-cache: kernel %s not keyed for the kernel-binary cache: %s", fn, exc)
            return compile_fn()
        return self.get_or_compile(key, compile_fn)[0]

    def stats(self) -> dict:
        return {**self.counters.snapshot(), "cache": self.cache.stats() if self.cache else None}


_lock = threading.Lock()
_default: KernelBinaryCache | None = None


def open_kernel_binary_cache() -> KernelBinaryCache:
    """The process's kernel-binary cache (entry point ``npu_inductor.caches: kernel_binary``).
    A remote cache: without a Redis URL it is off (no local directory, no key file made)."""
    global _default
    with _lock:
        if _default is None:
            settings = Settings.from_config()
            _default = KernelBinaryCache(
                SignedCache("kernel-binary", settings) if settings.redis_url else None
            )
        return _default


def current() -> KernelBinaryCache | None:
    """The process's cache if it was opened (for stats)."""
    return _default
