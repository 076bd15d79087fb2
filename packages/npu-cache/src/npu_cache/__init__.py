"""npu_cache: signed local and Redis compile caches (see this package's README).

cache = npu_cache.open_cache("kernel-binary")   # one per kind and process
cache.put(key, payload_bytes)                      # local now, Redis in the background
cache.get(key)                                     # verified bytes or None; never raises for Redis
npu_cache.flush()                                  # when a compile context ends
"""

from __future__ import annotations

import threading

from . import ranks
from .cache import SignedCache, all_stats, location_of
from .entry import Refused
from .locks import LockTimeout
from .settings import ConfigError, Settings
from .writer import flush

__all__ = [
    "SignedCache",
    "Settings",
    "ConfigError",
    "LockTimeout",
    "Refused",
    "open_cache",
    "flush",
    "compile_context_end",
    "stats",
    "rank_hits",
    "location_of",
    "register",
]

_lock = threading.Lock()
_open: dict[str, SignedCache] = {}
_registered = False


def open_cache(kind: str) -> SignedCache:
    """The process's cache for ``kind``, configured from npu_cache.config on first use."""
    with _lock:
        if kind not in _open:
            _open[kind] = SignedCache(kind)
        return _open[kind]


def compile_context_end(timeout: float | None = 30.0) -> bool:
    """Hook for the compile path: flush pending remote writes (bounded); False if some remain."""
    return flush(timeout)


def stats() -> dict:
    """Counters of this process: each cache (hits, misses, refusals by reason, Redis
    failures by kind, circuit state), the background writer and the kernel-binary cache."""
    from . import gemm_autotune, gemm_select, kernel_binary

    kb, gc = kernel_binary.current(), gemm_autotune.current()
    gemm = {**(gc.counters.snapshot() if gc else {}), **gemm_select.counters.snapshot()}
    return {
        **all_stats(),
        "kernel_binary": kb.stats() if kb else None,
        "gemm_autotune": gemm,
        "ranks": ranks.stats(),
    }


def rank_hits() -> dict:
    """This rank's cache hits and misses per kind (every signed cache of the kind: the routed
    remote ones, the kernel-binary and GEMM caches), with what one compile for all ranks did
    (``served``: hits that waited for rank 0; ``waited``, ``timeout``...; ranks.py):
    ``{"rank", "world", "seconds_waited", "kinds": {kind: {"hit", "miss", "served", ...}}}``."""
    from .cache import _registry, _registry_lock

    with _registry_lock:
        caches = list(_registry)
    kinds: dict = {}
    for c in caches:
        snap = c.counters.snapshot()
        k = kinds.setdefault(c.kind, {"hit": 0, "miss": 0})
        k["hit"] += snap.get("hit_local", 0) + snap.get("hit_remote", 0)
        k["miss"] += snap.get("miss", 0)
    for name, n in ranks.counters.snapshot().items():
        kind, sep, what = name.partition(":")
        if sep:
            kinds.setdefault(kind, {"hit": 0, "miss": 0})[what] = n
    share = ranks.stats() or {}
    rank, world = share.get("rank"), share.get("world")
    if rank is None:
        try:
            import torch.distributed as dist

            if dist.is_available() and dist.is_initialized():
                rank, world = dist.get_rank(), dist.get_world_size()
        except Exception:
            pass
    return {
        "rank": rank,
        "world": world,
        "seconds_waited": share.get("seconds_waited", 0.0),
        "kinds": kinds,
    }


def register() -> None:
    """Component hook of the ``npu_inductor.components`` entry-point group. Idempotent.

    Routes upstream's FX graph, autotune, bundled-autotune and AOTAutograd remote caches of
    npu compiles (and only those) to the signed backend, lets ``remote_gemm_autotune_cache``
    be switched on for npu (six patches, in ``_compat.py``; the compile scope around
    ``compile_fx`` and around each graph, the lazy backward included, goes through
    npu-inductor-core's ``compile_hooks``), and puts the shared GEMM
    autotune cache in front of npu GEMM autotuning (``gemm_select``, no patch).
    """
    global _registered
    with _lock:
        if _registered:
            return
        from npu_inductor_core.compile_hooks import around_compile_fx, around_compile_graph
        from npu_inductor_core.triton_device import count_npu_as_triton_device

        from . import _compat, failed_compile, gemm_select, scope

        around_compile_fx("npu-cache", scope.compile_context)
        around_compile_graph("npu-cache", scope.graph_context)
        # a failed npu graph compile drops what it measured (autotune timings, best configs)
        around_compile_graph(
            "npu-cache-failed-compile", failed_compile.graph_context, after=("npu-cache",)
        )
        around_compile_fx(
            "npu-cache-ranks", ranks.graph_context
        )  # both: None unless this rank leads
        around_compile_graph("npu-cache-ranks", ranks.graph_context)
        _compat.aot_autograd_remote_cache_for_npu()
        _compat.route_create_cache()
        count_npu_as_triton_device()  # inductor_meta_from_config's backend_hash (the core's one patch)
        _compat.bundled_autotune_local_paths()
        _compat.bundled_autotune_entry_copies()
        _compat.gen_best_config_off_for_npu()
        gemm_select.install()  # the remote GEMM autotune cache, through upstream's select_algorithm registration APIs (no patch)
        _warm_up_writer()
        _registered = True


def _warm_up_writer() -> None:
    """With a Redis URL configured, start the background writer at setup: a compile's first
    put then only queues (it paid the thread start, ~4 ms on a busy machine)."""
    from . import writer

    try:
        configured = Settings.from_config().redis_url is not None
    except ConfigError:
        return  # the compile that opens a cache reports it
    if configured:
        writer.warm_up()
