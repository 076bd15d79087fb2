"""Casts to 8- and 16-bit integers computed on a flat view of a multi-dimensional tile.

bishengir (ascendnpu-ir 1.2.0) lowers a cast to int8, uint8 or int16 of a two-dimensional
tile on 910B-class parts through per-row staging that keeps about 420 bytes of UB an element
(a [1, 4096] float32 -> int8 cast planned 1,753,088 B, past the 196,608 B UB), where the
same cast of a one-dimensional tile plans 37 bytes an element (151,584 B). A per-token int8
quantization row (a persistent reduction's [XBLOCK, R0_BLOCK] tile) pays the former. So such a
cast is written as reshape to one dimension, cast, reshape back: the same values, element for
element (a reshape of a contiguous tile moves nothing), and the 910B plan of a whole quant row
of 4096 drops from 1,794,048 B to 193,124 B (the 950 plans the same either way). Casts from
bool (a select, not a conversion) and tiles of one dimension are left as upstream writes them.
"""

from __future__ import annotations

import torch

NARROW_INTEGERS = (torch.int8, torch.uint8, torch.int16)


def flat_dims(x, dtype: torch.dtype) -> tuple[str, str] | None:
    """``(flat, dims)``: the one-dimensional size and the original dimensions, as the
    arguments of ``reshape``, when the cast of ``x`` to ``dtype`` is done flat; else None."""
    if dtype not in NARROW_INTEGERS or getattr(x, "dtype", None) in (None, torch.bool):
        return None
    shape = getattr(x, "shape", None)
    if not shape or len(shape) < 2:
        return None
    sized = [str(d) for d in shape if str(d) != "1"]
    if not sized:
        return None
    return " * ".join(sized), ", ".join(str(d) for d in shape)


def cast(upstream_to_dtype, x, dtype, src_dtype=None, use_compute_types=True) -> str:
    """Upstream's cast text, on a flat view of ``x`` where ``flat_dims`` says so."""
    flat = flat_dims(x, dtype)
    if flat is None:
        return upstream_to_dtype(x, dtype, src_dtype, use_compute_types)
    size, dims = flat
    inner = upstream_to_dtype(f"{x}.reshape({size})", dtype, src_dtype, use_compute_types)
    return f"{inner}.reshape({dims})"
