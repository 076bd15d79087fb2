"""Loads of a row the kernel already holds, taken from the held row instead of GM.

A persistent reduction holds its whole row in the UB. Rotary embedding after a norm then reads
the same row again at permuted places: npu-fusion's half concatenation reads each half over
the full width at ``j % h`` (``x[j % h]``, ``x[h + j % h]``) after the norm's sum of squares
read ``x[j]``. Inductor loads each from GM: the row crosses GM twice, and triton-ascend lowers
a modular offset to one scalar DMA an element. Here such a load becomes ``tl.gather`` of the
row already loaded, along the reduction axis (passes triton-ascend's front end and bishengir
for both SoCs; the HIVM DMA of a Q/K norm + RoPE kernel drops by the two half reads).

Taken only where it is the same value: one reduction axis whose block is its whole (static,
power-of-two) length, so every lane is a real element; the row loaded at ``base + r`` with no
mask but the axes' own; the new load at ``base + g(r)`` with ``g`` a function of ``r`` alone,
inside ``[0, length)`` for every ``r``; the buffer not written by this kernel. A lane the
new load masks off takes the row's value instead of ``other``: Inductor replaces masked lanes
after the load (``tl.where``), and the axes' masks are the row's too.
"""

from __future__ import annotations

import sympy
import torch
from torch.utils._sympy.functions import FloorDiv, ModularIndexing
from torch.utils._sympy.value_ranges import ValueRanges, bound_sympy

# the row dtypes whose gather the Ascend check has seen compile for both SoCs
FLOATS = (torch.float32, torch.float16, torch.bfloat16)


def _row_axis(kernel):
    """The reduction axis' variable and length where the kernel holds whole rows, else None."""
    from . import config

    if not config.row_reuse or not getattr(kernel, "persistent_reduction", False):
        return None
    if kernel._load_mask is not None:
        return None
    trees = [tree for tree in kernel.range_trees if tree.is_reduction]
    if len(trees) != 1 or len(trees[0].var_list) != 1:
        return None
    length = trees[0].numel
    if not isinstance(length, (int, sympy.Integer)) or length < 2 or length & (length - 1):
        return None
    if trees[0].tensor_dim is None:
        return None
    return trees[0].var_list[0], int(length), trees[0].tensor_dim


def _split(index, var):
    """``index`` as (base, g): base the terms free of ``var``, g the rest (``var`` alone)."""
    base, along = [], []
    for term in sympy.Add.make_args(sympy.expand(index)):
        free = term.free_symbols
        if free and var not in free:
            base.append(term)
        elif free <= {var}:  # a constant offset: where the row starts, or a place in it
            along.append(term)
        else:
            return None
    return sympy.Add(*base), sympy.Add(*along)


def _in_tree_indices(kernel, base, row_var):
    """``base`` over the axes' own indices (``xindex``...) with ``(a // b) % c`` written as
    ``a // b - c * (a // (b * c))``: one address spelled through the flat x index or its split
    (``128*x0`` and ``128*x2 + 4096*x3`` with ``x0 = 32*x3 + x2``) comes out as one expression."""
    nodes = kernel.range_tree_nodes
    base = base.subs({v: nodes[v].expr for v in base.free_symbols if v in nodes and v != row_var})
    base = base.replace(
        lambda e: isinstance(e, ModularIndexing),
        lambda e: (
            FloorDiv(e.args[0], e.args[1]) - e.args[2] * FloorDiv(e.args[0], e.args[1] * e.args[2])
        ),
    )
    return sympy.expand(base)


def plan(kernel, name, index):
    """This load's row key, place in the row and axis, or None where no row can be held
    (computed once per load: ``gather`` before it, ``record`` after it)."""
    from torch._inductor.virtualized import V

    axis = _row_axis(kernel)
    if axis is None or name in kernel.store_buffer_names or V.graph.get_dtype(name) not in FLOATS:
        return None
    parts = _split(index, axis[0])
    if parts is None:
        return None
    return (name, _in_tree_indices(kernel, parts[0], axis[0])), parts[1], axis


def record(kernel, found, value) -> None:
    """Remember ``value`` as the row at its base if the load ``found`` (``plan``) read a whole
    row (``base + c + r``: the row starts ``c`` elements past the base)."""
    if found is not None:
        start = sympy.expand(found[1] - found[2][0])
        if start.is_Integer:
            kernel._npu_rows.setdefault(found[0], (value, start))


def gather(kernel, found):
    """The held row gathered at the positions of the load ``found`` (``plan``), or None to
    load from GM."""
    if found is None or found[0] not in kernel._npu_rows:
        return None
    key, along, (var, length, dim) = found
    row, start = kernel._npu_rows[key]
    along = sympy.expand(along - start)  # the place in the row
    if along == var or getattr(row, "shape", None) is None:
        return None
    bounds = bound_sympy(along, {var: ValueRanges(0, length - 1)})
    if not (bounds.is_int and bounds.lower >= 0 and bounds.upper <= length - 1):
        return None
    # the same base reads the same other axes: the load's shape is the row's
    shape = "[" + ", ".join(map(str, row.shape)) + "]"
    positions = kernel.cse.generate(
        kernel.loads,
        f"tl.broadcast_to({kernel.index_to_str(along)}, {shape})",
        dtype=torch.int32,
        shape=row.shape,
    )
    return kernel.cse.generate(
        kernel.loads, f"tl.gather({row}, {positions}, {dim})", dtype=row.dtype, shape=row.shape
    )
