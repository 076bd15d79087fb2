"""`triton_heuristics` for generated npu kernels: upstream's decorators with the Ascend
tile generator's configs (npu_inductor_core.tiles) and the npu kernel object (autotuner.py).

Upstream computes its configs first (so the config flags it reads keep working); those are
then re-shaped for Ascend: num_warps=1, blocks within the UB, and our ordered tiling configs
first. Decorators without a configs-only mode are upstream's, with the result re-classed.
"""

from __future__ import annotations

from torch._inductor.runtime import triton_heuristics as upstream
from torch._inductor.runtime.triton_heuristics import HeuristicType, cached_autotune

from npu_inductor_core import tiles as tiling
from .autotuner import NpuCachingAutotuner


def _device(triton_meta: dict, inductor_meta: dict | None = None) -> tiling.Device:
    props = triton_meta.get("device")
    return tiling.device_for(inductor_meta, getattr(props, "index", 0) or 0)


def _merge(ours: list, theirs: list, triton_meta: dict, persistent_rblock: int | None = None,
           inductor_meta: dict | None = None) -> list:
    """Our configs first; upstream's after them when they fit the UB, as num_warps=1."""
    dev = _device(triton_meta, inductor_meta)
    out = list(ours)
    for c in theirs or ():
        if tiling.fits_ub(c.kwargs, triton_meta, dev, persistent_rblock):
            out.append(tiling.make_config(c.kwargs))
    return tiling.unique(out)


def _mix_order_configs(theirs: list, triton_meta: dict, persistent_rblock: int,
                       inductor_meta: dict | None = None) -> list:
    """Mix-order reductions (``RSPLIT_SIZE``): upstream's configs only (each carries the
    kernel's RSPLIT_SIZE and NUM_STAGES, which ours lack), as num_warps=1, XBLOCK (rows per
    step of a program's split) halved until the block fits the UB."""
    dev = _device(triton_meta, inductor_meta)
    out = []
    for c in theirs or ():
        kwargs = dict(c.kwargs)
        while kwargs.get("XBLOCK", 1) > 1 and not tiling.fits_ub(kwargs, triton_meta, dev, persistent_rblock):
            kwargs["XBLOCK"] //= 2
        out.append(tiling.make_config(kwargs))
    return tiling.unique(out)


def _autotune(size_hints, configs, triton_meta, inductor_meta, heuristic_type, filename):
    configs = tiling.without_one_row_indirect(configs, size_hints, inductor_meta)
    configs = tiling.fit_to_ub(configs, size_hints, triton_meta, inductor_meta, filename)
    return cached_autotune(size_hints, configs, triton_meta=triton_meta, inductor_meta=inductor_meta,
                           heuristic_type=heuristic_type, filename=filename,
                           caching_autotuner_cls=NpuCachingAutotuner)


def pointwise(size_hints, triton_meta, tile_hint=None, filename=None, min_elem_per_thread=0, inductor_meta=None):
    inductor_meta = {} if inductor_meta is None else inductor_meta
    theirs = upstream.pointwise(size_hints, triton_meta, tile_hint=tile_hint, filename=filename,
                                min_elem_per_thread=min_elem_per_thread, inductor_meta=inductor_meta,
                                return_configs=True)
    configs = _merge(tiling.pointwise(size_hints, triton_meta, _device(triton_meta, inductor_meta)), theirs,
                     triton_meta, inductor_meta=inductor_meta)
    return _autotune(size_hints, configs, triton_meta, inductor_meta, HeuristicType.POINTWISE, filename)


def reduction(size_hints, reduction_hint=False, triton_meta=None, filename=None, inductor_meta=None):
    inductor_meta = {} if inductor_meta is None else inductor_meta
    theirs = upstream.reduction(size_hints, reduction_hint=reduction_hint, triton_meta=triton_meta,
                                filename=filename, inductor_meta=inductor_meta, return_configs=True)
    ours = tiling.reduction(size_hints, triton_meta, _device(triton_meta, inductor_meta), persistent=False)
    return _autotune(size_hints, _merge(ours, theirs, triton_meta, inductor_meta=inductor_meta), triton_meta, inductor_meta,
                     HeuristicType.REDUCTION, filename)


def persistent_reduction(size_hints, reduction_hint=False, triton_meta=None, filename=None, inductor_meta=None):
    inductor_meta = {} if inductor_meta is None else inductor_meta
    theirs = upstream.persistent_reduction(size_hints, reduction_hint=reduction_hint, triton_meta=triton_meta,
                                           filename=filename, inductor_meta=inductor_meta, return_configs=True)
    rblock = tiling.next_power_of_2(max(1, size_hints.get("r0_", 1)))
    if inductor_meta.get("RSPLIT_SIZE"):
        configs = _mix_order_configs(theirs, triton_meta, rblock, inductor_meta)
        return _autotune(size_hints, configs, triton_meta, inductor_meta, HeuristicType.PERSISTENT_REDUCTION, filename)
    ours = tiling.reduction(size_hints, triton_meta, _device(triton_meta, inductor_meta), persistent=True)
    return _autotune(size_hints, _merge(ours, theirs, triton_meta, rblock, inductor_meta), triton_meta, inductor_meta,
                     HeuristicType.PERSISTENT_REDUCTION, filename)


def _reclassed(upstream_decorator):
    """Upstream decorators with no configs-only mode: build as upstream, run as npu."""

    def wrap(*args, **kwargs):
        decorate = upstream_decorator(*args, **kwargs)

        def apply(fn):
            kernel = decorate(fn)
            if type(kernel) is upstream.CachingAutotuner:
                kernel.__class__ = NpuCachingAutotuner
            return kernel

        return apply

    wrap.__name__ = upstream_decorator.__name__
    return wrap


split_scan = _reclassed(upstream.split_scan)
template = _reclassed(upstream.template)
user_autotune = _reclassed(upstream.user_autotune)
foreach = _reclassed(upstream.foreach)
fixed_config = _reclassed(upstream.fixed_config)
cooperative_reduction = _reclassed(upstream.cooperative_reduction)


# ---- heuristics provider lookup (npu-autotune's part of this file) ----------------------
# An installed provider (entry point ``npu_inductor.heuristics: npu``, e.g. npu-autotune)
# supplies ``KernelObjectMixin`` and ``decorators(cls)``; the mixin goes in front of the npu
# kernel object here, so the class pickles under this module's name, and the provider's
# decorators replace the ones above. Without a provider the ones above serve.
PROVIDER_GROUP = "npu_inductor.heuristics"


def _load_provider():
    from importlib import metadata

    eps = [ep for ep in metadata.entry_points(group=PROVIDER_GROUP) if ep.name == "npu"]
    if not eps:
        return None
    try:
        return eps[0].load()
    except Exception as exc:  # a broken provider is an error, not a silent fallback
        raise RuntimeError(f"npu heuristics provider {eps[0].value!r} ({PROVIDER_GROUP}) failed to load: {exc}") from exc


provider = _load_provider()
if provider is not None:
    class NpuTunedAutotuner(provider.KernelObjectMixin, NpuCachingAutotuner):
        """The npu kernel object with the installed provider's autotuning."""

    globals().update(provider.decorators(NpuTunedAutotuner))
