"""The ``triton_heuristics`` decorators of npu kernels: one implementation, built per package.

Each decorator asks upstream's heuristic for its configs first, so every flag upstream reads
keeps working (autotune hints, tile hints, determinism filters), then builds the npu configs
with the one tile generator (``tiles``):
- ``triton.autotune_pointwise`` off (and no max-autotune): one pointwise config, no tuning;
- default: the tile generator's configs, then upstream's that fit the UB, as one-warp configs;
- ``max_autotune`` / ``max_autotune_pointwise``: the generator's exhaustive set (more program
  counts, reduction sub-blocks), multibuffer variants where the policy enables them;
- kernels whose configs upstream fixes (mix-order reductions with ``RSPLIT_SIZE``, no-x-dim
  kernels) keep upstream's configs as one-warp configs, a mix-order block halved to fit the UB;
- combo kernels with per-sub-kernel blocks and the decorators without a configs-only mode
  (templates, user kernels, foreach...) are built by upstream, then taken over by the npu
  kernel class (its ``adopt``).

What differs between the packages that register decorators is a ``Policy``: npu-lowering
registers the defaults (its kernel class, no multibuffer), npu-autotune its own (the same
class through the registry, multibuffer on Ascend, combo tuning plans, its settings check).
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Callable

from torch._inductor.runtime import triton_heuristics as upstream
from torch._inductor.runtime.hints import HeuristicType

from . import kernel_objects, tiles
from .device import index_of

# upstream's decorators as imported (a benchmark may swap upstream's module names for ours)
UPSTREAM = {
    name: getattr(upstream, name)
    for name in kernel_objects.HEURISTIC_NAMES
    if hasattr(upstream, name)
}


def _never(meta: dict) -> bool:
    return False


@dataclass(frozen=True)
class Policy:
    """What a package decides for the kernels its decorators build."""

    # the kernel-object class to build (called when a kernel is defined: a registry lookup)
    kernel_class: Callable[[], type]
    # whether a kernel's candidates include multibuffer variants
    multibuffer: Callable[[dict], bool] = _never
    # re-fills an upstream-built combo kernel's tuning plan:
    # adapt_combo(kernel, device, exhaustive=..., multibuffer=...)
    adapt_combo: Callable[..., None] | None = None
    # raises for settings in inductor_meta the policy cannot honour
    check_meta: Callable[[dict], None] | None = None


def exhaustive(meta: dict) -> bool:
    return bool(meta.get("max_autotune") or meta.get("max_autotune_pointwise"))


def device_of(triton_meta: dict, meta: dict | None) -> tiles.Device:
    """The device facts a kernel is tiled for (its recorded ones, else its device's here)."""
    return tiles.device_for(meta, index_of(triton_meta))


def merged(
    ours: list, theirs: list, triton_meta: dict, dev: tiles.Device, rnumel: int | None = None
) -> list:
    """Ours first; upstream's after them where they fit the UB, as one-warp configs."""
    out = list(ours)
    for c in theirs or ():
        npu = tiles.as_npu(c)
        if tiles.fits_ub(npu, triton_meta, dev, rnumel):
            out.append(npu)
    return tiles.unique(out)


def _upstream_fixed(meta: dict) -> bool:
    return bool(meta.get("RSPLIT_SIZE") or meta.get("no_x_dim"))


def mix_order_in_ub(
    configs: list, triton_meta: dict, dev: tiles.Device, rnumel: int | None
) -> list:
    """Mix-order reductions (``RSPLIT_SIZE``): XBLOCK (rows per step of a program's split)
    halved until the block fits the UB; RSPLIT_SIZE is untouched (upstream tunes it in
    codegen)."""
    out = []
    for c in configs:
        while c.kwargs.get("XBLOCK", 1) > 1 and not tiles.fits_ub(c, triton_meta, dev, rnumel):
            c.kwargs["XBLOCK"] //= 2
        out.append(c)
    return tiles.unique(out)


def decorators(policy: Policy) -> dict:
    """The decorators generated npu kernels call, by upstream's names."""

    def adopted(decorate):
        def apply(fn):
            kernel = decorate(fn)
            if type(kernel) is upstream.CachingAutotuner:
                return policy.kernel_class().adopt(kernel)
            return kernel  # upstream's debug kernel object (profile_bandwidth) stays upstream's

        return apply

    def combo(decorate, triton_meta: dict, meta: dict):
        """A combo kernel upstream built, taken over; its tuning plan gets npu candidates."""
        adopt = adopted(decorate)
        if policy.adapt_combo is None:
            return adopt

        def apply(fn):
            kernel = adopt(fn)
            dev = device_of(triton_meta, meta)
            policy.adapt_combo(
                kernel, dev, exhaustive=exhaustive(meta), multibuffer=policy.multibuffer(meta)
            )
            return kernel

        return apply

    def autotune(size_hints, configs, triton_meta, meta, heuristic_type, filename):
        if policy.check_meta is not None:
            policy.check_meta(meta)
        configs = tiles.without_one_row_indirect(configs, size_hints, meta)
        configs = tiles.fit_to_ub(configs, size_hints, triton_meta, meta, filename)
        return upstream.cached_autotune(
            size_hints,
            configs,
            triton_meta=triton_meta,
            inductor_meta=meta,
            heuristic_type=heuristic_type,
            filename=filename,
            caching_autotuner_cls=policy.kernel_class(),
        )

    def pointwise(
        size_hints,
        triton_meta,
        tile_hint=None,
        filename=None,
        min_elem_per_thread=0,
        inductor_meta=None,
    ):
        meta = {} if inductor_meta is None else inductor_meta
        theirs = UPSTREAM["pointwise"](
            size_hints,
            triton_meta,
            tile_hint=tile_hint,
            filename=filename,
            min_elem_per_thread=min_elem_per_thread,
            inductor_meta=meta,
            return_configs=True,
        )
        if not isinstance(theirs, list):  # a combo kernel: upstream built it
            return combo(theirs, triton_meta, meta)
        kind = HeuristicType.POINTWISE
        if _upstream_fixed(meta):
            configs = [tiles.as_npu(c) for c in theirs]
            return autotune(size_hints, configs, triton_meta, meta, kind, filename)
        dev = device_of(triton_meta, meta)
        ours = tiles.pointwise(
            size_hints,
            triton_meta,
            dev,
            exhaustive=exhaustive(meta),
            multibuffer=policy.multibuffer(meta),
        )
        if not meta.get("autotune_pointwise", True) and not exhaustive(meta):
            configs = ours[:1]
        else:
            configs = merged(ours, theirs, triton_meta, dev)
        return autotune(size_hints, configs, triton_meta, meta, kind, filename)

    def any_reduction(kind, size_hints, reduction_hint, triton_meta, filename, inductor_meta):
        meta = {} if inductor_meta is None else inductor_meta
        persistent = kind == HeuristicType.PERSISTENT_REDUCTION
        theirs = UPSTREAM["persistent_reduction" if persistent else "reduction"](
            size_hints,
            reduction_hint=reduction_hint,
            triton_meta=triton_meta,
            filename=filename,
            inductor_meta=meta,
            return_configs=True,
        )
        if not isinstance(theirs, list):  # a combo kernel: upstream built it
            return combo(theirs, triton_meta, meta)
        dev = device_of(triton_meta, meta)
        rnumel = tiles.persistent_rnumel(size_hints, {}) if persistent else None
        if _upstream_fixed(meta):
            configs = [tiles.as_npu(c) for c in theirs]
            if meta.get("RSPLIT_SIZE"):
                configs = mix_order_in_ub(configs, triton_meta, dev, rnumel)
            return autotune(size_hints, configs, triton_meta, meta, kind, filename)
        ours = tiles.reduction(
            size_hints,
            triton_meta,
            dev,
            persistent=persistent,
            exhaustive=exhaustive(meta),
            multibuffer=policy.multibuffer(meta),
        )
        configs = merged(ours, theirs, triton_meta, dev, rnumel)
        return autotune(size_hints, configs, triton_meta, meta, kind, filename)

    def reduction(
        size_hints, reduction_hint=False, triton_meta=None, filename=None, inductor_meta=None
    ):
        kind = HeuristicType.REDUCTION
        return any_reduction(kind, size_hints, reduction_hint, triton_meta, filename, inductor_meta)

    def persistent_reduction(
        size_hints, reduction_hint=False, triton_meta=None, filename=None, inductor_meta=None
    ):
        kind = HeuristicType.PERSISTENT_REDUCTION
        return any_reduction(kind, size_hints, reduction_hint, triton_meta, filename, inductor_meta)

    def upstream_built(name):
        decorate = UPSTREAM[name]

        def wrap(*args, **kwargs):
            return adopted(decorate(*args, **kwargs))

        wrap.__name__ = wrap.__qualname__ = name
        return wrap

    out = {
        "pointwise": pointwise,
        "reduction": reduction,
        "persistent_reduction": persistent_reduction,
    }
    for name in kernel_objects.HEURISTIC_NAMES:
        if name not in out and name in UPSTREAM:
            out[name] = upstream_built(name)
    return out


@functools.cache
def _upstream_parameters() -> tuple:
    """The parameters of upstream's ``CachingAutotuner.__init__`` after ``self``."""
    return tuple(inspect.signature(upstream.CachingAutotuner.__init__).parameters.values())[1:]


def adopted_arguments(kernel: upstream.CachingAutotuner) -> dict:
    """The constructor arguments upstream's decorator gave ``kernel`` (every parameter of
    upstream's ``CachingAutotuner.__init__``, read from the attribute of that name; the device
    properties back in ``triton_meta``), so a kernel class builds its own object from them."""
    out = {}
    for p in _upstream_parameters():
        if p.name == "triton_meta":
            out[p.name] = {**kernel.triton_meta, "device": kernel.device_props}
        elif hasattr(kernel, p.name):
            out[p.name] = getattr(kernel, p.name)
        elif p.default is inspect.Parameter.empty:
            raise TypeError(
                f"cannot take over upstream's kernel object {type(kernel).__qualname__}: its "
                f"constructor's {p.name!r} is not kept under that name (a torch change)"
            )
    return out
