"""Patches of upstream symbols, one function per patch. Each is for torch 2.13, 2.14 and 2.15,
names the upstream hook that would remove it, and changes nothing
for cpu/cuda compiles: both only act while a graph with npu devices is being compiled.
"""

from __future__ import annotations

import functools
import inspect

from npu_inductor_core.patches import upstream_patch

# modules that bound ``create_cache`` by name at import (``from ..remote_cache import create_cache``)
_CREATE_CACHE_USERS = (
    "torch._inductor.remote_cache",
    "torch._inductor.codecache",
    "torch._inductor.runtime.autotune_cache",
)


@upstream_patch(
    "torch._inductor.remote_cache.create_cache",
    versions="torch 2.13, 2.14, 2.15",
    removed_by="a per-device remote-cache backend registration upstream",
)
def route_create_cache() -> bool:
    """For an npu compile, ``create_cache(..., oss_cache_cls="RemoteFxGraphCache" |
    "RemoteAutotuneCache" | "RemoteBundledAutotuneCache")`` returns our signed class of the
    same role (``routing.ROUTED``) instead of upstream's unsigned Redis class; every other
    call (cpu/cuda compiles, local caches, fbcode, AOTAutograd and PGO caches) is answered by
    upstream's create_cache unchanged. Upstream's callers decide *whether* to create a remote
    cache from its flags (fx_graph_remote_cache, autotune_remote_cache,
    bundled_autotune_remote_cache), so the flags keep working. Torch 2.11 and 2.13; removed
    by a per-device remote-cache backend registration upstream."""
    import importlib

    from torch._inductor import remote_cache

    upstream = remote_cache.create_cache
    if getattr(upstream, "_npu_cache_routed", False):
        return False
    signature = inspect.signature(upstream)

    @functools.wraps(upstream)
    def create_cache(*args, **kwargs):
        from .routing import ROUTED
        from .scope import in_npu_compile

        if in_npu_compile():
            bound = signature.bind_partial(*args, **kwargs).arguments
            ours = ROUTED.get(bound.get("oss_cache_cls"))
            if (
                ours is not None
                and not bound.get("is_fbcode")
                and bound.get("local_cache_cls") is None
                and "key" in bound
            ):
                # a bad setting (ConfigError) raises: upstream would log it and silently run uncached
                return ours(bound["key"])
        return upstream(*args, **kwargs)

    create_cache._npu_cache_routed = True
    create_cache._npu_cache_upstream = upstream
    for name in _CREATE_CACHE_USERS:
        module = importlib.import_module(name)
        if getattr(module, "create_cache", None) is upstream:
            module.create_cache = create_cache
    return True


@upstream_patch(
    "torch._inductor.runtime.autotune_cache.AutotuneCache._make_local_cache_key",
    versions="torch 2.13, 2.14, 2.15",
    removed_by="upstream's bundler recording the relative path it read",
)
def bundled_autotune_local_paths() -> bool:
    """Where an npu kernel's local best-config file lives: upstream puts it beside the kernel's
    source file (``<cache>/<kernel hash[1:3]>/<key>.best_config``), but a bundled-autotune hit
    (``_AutotuneCacheBundlerImpl._load_cache``) writes each entry back to
    ``codecache.get_path(<key>, "best_config")`` = ``<cache>/<key[1:3]>/<key>.best_config``, a
    different directory, so the kernels never saw what the bundle brought and tuned again.
    For kernels created during an npu compile, ``AutotuneCache._make_local_cache_key`` returns
    the path the bundle restores to (same file name, same key). Kernels created in a compile
    worker (no npu scope there) keep upstream's path: a bundled hit is then only a miss.
    Torch 2.13, 2.14, 2.15; removed when upstream's bundler records the relative path it read."""
    import os

    from torch._inductor import codecache
    from torch._inductor.runtime.autotune_cache import AutotuneCache

    upstream = AutotuneCache._make_local_cache_key
    if getattr(upstream, "_npu_cache_paths", False):
        return False

    def _make_local_cache_key(dirname: str, cache_key: str) -> str:
        from .scope import in_npu_compile

        path = upstream(dirname, cache_key)
        if not in_npu_compile():
            return path
        root, ext = os.path.splitext(os.path.basename(path))
        return codecache.get_path(root, ext[1:])[2]

    _make_local_cache_key._npu_cache_paths = True
    AutotuneCache._make_local_cache_key = staticmethod(_make_local_cache_key)
    return True


@upstream_patch(
    "torch._inductor.runtime.autotune_cache._AutotuneCacheBundlerImpl.put",
    versions="torch 2.13, 2.14, 2.15",
    removed_by="upstream's bundler copying (or _load_cached_autotuning not mutating its argument)",
)
def bundled_autotune_entry_copies() -> bool:
    """``AutotuneCache._read`` hands the dict it read to ``AutotuneCacheBundler.put`` and then
    to ``_load_cached_autotuning``, which pops ``configs_hash`` (and more) from that same dict:
    the bundle saved at the end of the compile holds entries without their configs_hash, and
    every kernel restored from it rejects its config and tunes again. For bundles that go to
    our signed cache (``_cache`` is NpuRemoteBundledAutotuneCache, i.e. npu compiles only),
    ``_AutotuneCacheBundlerImpl.put`` keeps a copy. Torch 2.11 and 2.13; removed when
    upstream's bundler copies (or _load_cached_autotuning stops mutating its argument)."""
    import copy

    from torch._inductor.runtime.autotune_cache import _AutotuneCacheBundlerImpl

    from .routing import NpuRemoteBundledAutotuneCache

    upstream = _AutotuneCacheBundlerImpl.put
    if getattr(upstream, "_npu_cache_copies", False):
        return False

    @functools.wraps(upstream)
    def put(self, basename, data):
        if isinstance(getattr(self, "_cache", None), NpuRemoteBundledAutotuneCache):
            data = copy.deepcopy(data)
        return upstream(self, basename, data)

    put._npu_cache_copies = True
    _AutotuneCacheBundlerImpl.put = put
    return True


def binary_cache_flags():
    """Not a patch: where upstream keeps the binary-remote-cache flags. ``config.cutlass`` in
    torch 2.13; releases before the rename called the same class ``config.cuda``."""
    from torch._inductor import config

    flags = getattr(config, "cutlass", None)
    return flags if flags is not None and hasattr(flags, "use_binary_remote_cache") else config.cuda


@upstream_patch(
    "torch._inductor.kernel.mm.gen_best_config",
    versions="torch 2.13, 2.14, 2.15",
    removed_by="upstream's OSS gen_best_config not raising, or a per-device remote-GEMM-cache hook",
)
def gen_best_config_off_for_npu() -> bool:
    """``tuned_mm`` calls ``gen_best_config(mat1, mat2)`` (bound by name in
    ``torch._inductor.kernel.mm``) whenever ``remote_gemm_autotune_cache`` is on, and in open
    source that raises NotImplementedError, so the flag could not be turned on at all. For npu
    operands the call returns None (no upstream filtering; ``gemm_select`` serves the remote
    GEMM autotune cache through select_algorithm's preprocessing and feedback hooks, for mm,
    addmm and bmm alike); any
    other device still gets upstream's function. Torch 2.13 (2.11 has the same call); removed
    when upstream's OSS ``gen_best_config`` stops raising, or by a per-device
    remote-GEMM-cache hook."""
    from torch._inductor.kernel import mm

    upstream = getattr(mm, "gen_best_config", None)
    if upstream is None or getattr(upstream, "_npu_cache_off", False):
        return False

    @functools.wraps(upstream)
    def gen_best_config(mat1, mat2):
        try:
            on_npu = mat1.get_device().type == "npu"
        except AttributeError:
            on_npu = False
        return None if on_npu else upstream(mat1, mat2)

    gen_best_config._npu_cache_off = True
    mm.gen_best_config = gen_best_config
    return True


@upstream_patch(
    "torch._functorch._aot_autograd.autograd_cache.AOTAutogradCache.get_remote_cache",
    versions="torch 2.13, 2.14, 2.15",
    removed_by="a per-device remote-cache registration upstream",
)
def aot_autograd_remote_cache_for_npu() -> bool:
    """``AOTAutogradCache.get_remote_cache`` (a ``functools.cache``d staticmethod: one remote
    cache per process, whichever device compiled first) returns, inside an npu compile, our
    signed remote cache of AOTAutograd entries (``routing.NpuRemoteAOTAutogradCache``); every
    other compile gets upstream's cached answer. Upstream's flag
    (``torch._functorch.config.enable_remote_autograd_cache``) still decides whether it is
    asked. Torch 2.13 and 2.11; removed by a per-device remote-cache registration upstream."""
    from torch._functorch._aot_autograd.autograd_cache import AOTAutogradCache

    current = AOTAutogradCache.__dict__.get("get_remote_cache")
    upstream = getattr(current, "__func__", current)
    if upstream is None or getattr(upstream, "_npu_cache_routed", False):
        return False

    def get_remote_cache():
        from .routing import aot_autograd_remote_cache
        from .scope import in_npu_compile

        return aot_autograd_remote_cache() if in_npu_compile() else upstream()

    get_remote_cache._npu_cache_routed = True
    AOTAutogradCache.get_remote_cache = staticmethod(get_remote_cache)
    return True
