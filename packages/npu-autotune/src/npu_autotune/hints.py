"""Per-hint variants of npu kernels with dynamic sizes (``multi_kernel_hints``).

Upstream (torch 2.13) turns ``multi_kernel_hints`` into a ``SizeHintMultiKernel`` only for
Triton GEMM templates: one kernel per hint, tuned as if the dynamic sizes were the hint, and
at each call the one whose shapes are nearest in log2 distance runs. npu has no Triton GEMM
templates yet, so the npu equivalent applies the same rule to its pointwise and looped
reduction kernels: the lowering records the kernel's size hints under each hint
(``inductor_meta[kernel_objects.HINT_SIZE_HINTS_KEY]``), each becomes a variant config from the tile
generator (the config a kernel of that size would get), and each call launches the variant
whose sizes are nearest to the call's ``*numel`` arguments. Where tuning is asked for
(max-autotune flags, coordinate descent, incremental, ``autotune_on_sim``), the first call
that lands on a variant times that size's candidates and the fastest stays the variant
(upstream times template variants at compile time, on inputs of the hint's size).
"""

from __future__ import annotations

import math

from npu_inductor_core import kernel_objects
from torch._inductor.runtime.hints import HeuristicType

from npu_inductor_core import tiles

from . import kernel_facts

KEY = kernel_objects.HINT_SIZE_HINTS_KEY
_KINDS = (HeuristicType.POINTWISE, HeuristicType.REDUCTION)


def variants(kernel) -> list:
    """[(size_hints, config)], one per hint (empty: no hints, static sizes, or a kernel kind
    whose blocks are not the tile generator's)."""
    cached = kernel.__dict__.get("_npu_hint_variants")
    if cached is not None:
        return cached
    out = []
    hinted = kernel.inductor_meta.get(KEY)
    if (
        hinted
        and kernel.heuristic_type in _KINDS
        and kernel_objects.COMBO_META_KEY not in kernel.inductor_meta
    ):
        for size_hints in hinted.values():
            if cands := candidates(kernel, size_hints):
                out.append((dict(size_hints), cands[0]))
    kernel._npu_hint_variants = out
    return out


def candidates(kernel, size_hints: dict, exhaustive: bool = False) -> list:
    """The tile generator's configs for ``kernel`` at ``size_hints`` (the first is the
    variant's untuned config)."""
    dev = kernel_facts.device_of(kernel)
    if kernel.heuristic_type == HeuristicType.POINTWISE:
        return tiles.pointwise(size_hints, kernel.triton_meta, dev, exhaustive=exhaustive)
    return tiles.reduction(
        size_hints, kernel.triton_meta, dev, persistent=False, exhaustive=exhaustive
    )


def _distance(actual: dict, hinted: dict) -> float:
    """Upstream's size-hint multi-kernel rule: L1 distance of log2 sizes."""

    def log2(v):
        return math.log2(v) if v > 0 else -1

    return sum(abs(log2(actual[p]) - log2(hinted[p])) for p in actual if p in hinted)


def pick(kernel, args) -> int | None:
    """Index of the variant for a call with ``args`` (None: the kernel has no variants)."""
    found = variants(kernel)
    if not found:
        return None
    names = [n for n, t in kernel.triton_meta["signature"].items() if t != "constexpr"]
    actual = {}
    for prefix in found[0][0]:
        name = f"{prefix}numel"
        if name in names and names.index(name) < len(args):
            actual[prefix] = int(args[names.index(name)])
    return min(range(len(found)), key=lambda i: _distance(actual, found[i][0]))
