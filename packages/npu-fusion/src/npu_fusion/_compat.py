"""Differences between the torch versions npu-fusion supports (2.11, 2.13). No patches."""

from __future__ import annotations


def size_hint(expr, fallback: int) -> int:
    """A concrete size for ``expr`` (a symbolic one's hint, else ``fallback``): torch 2.13's
    ``SizeVarAllocator.optimization_hint``, torch 2.11's ``size_hint``."""
    from torch._inductor.virtualized import V

    sizevars = V.graph.sizevars
    read = getattr(sizevars, "optimization_hint", None) or sizevars.size_hint
    try:
        return int(read(expr, fallback=fallback))
    except Exception:  # unbacked or otherwise unhinted
        return fallback
