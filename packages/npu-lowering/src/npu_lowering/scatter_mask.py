"""Scatter-adds to a gathered address under a mask of two axes, in a form Ascend compiles.

An embedding's backward fused with a norm's backward ends in ``tl.atomic_add(out +
(r0_2 + 24*tmp38), v, r0_mask & xmask)``: an address computed from loaded ids, masked on the
row and the column axis (a row width that is not a power of two, or a combo kernel's
sub-kernel). The 950's bishengir-compile (ascendnpu-ir 1.2.0) aborts on that (exit -6); the
same scatter under one axis' mask (``xmask`` or ``r0_mask`` alone), or with an address that is
not gathered, compiles on both SoCs. So the mask of every axis but x moves into the operands:
a lane it masks adds the sum's identity (``-0.0``, which leaves ``-0.0`` as it is; ``0``;
bool's ``False``) at its row's first element (the address with the reduction axes at 0, which
the row's first lane writes anyway: nothing outside the written rows is touched, and the extra
atomics spread over rows), and the atomic keeps x's mask. A mask of another kind (an indirect
load's, a second tiling axis') sends its lanes to element 0 of the output instead: their row,
or their index, may not exist.
"""

from __future__ import annotations

import dataclasses

import torch
from torch.utils._ordered_set import OrderedSet

X_MASK = "xmask"


@dataclasses.dataclass
class Fold:
    """The mask vars moved into the operands, and those the atomic keeps."""

    moved: str
    kept: OrderedSet
    masked_address: str  # where a lane the moved mask is off at adds the identity
    masked_index: object = None  # that address as sympy (None: 0), for the UB model's record


def plan(kernel, index) -> Fold | None:
    """The fold an atomic store at ``index`` needs, or None: only a gathered address whose
    mask spans more than one axis (a mask var that is no axis' own, the mask of an indirect
    load, counts as spanning all)."""
    opts = kernel.indexing(index, dense_indexing=True, block_ptr=False, mask_constant_index=True)
    if not hasattr(opts, "has_indirect") or not opts.has_indirect():
        return None
    axes = {
        f"{tree.prefix}mask": tree for tree in kernel.range_trees if tree.tensor_dim is not None
    }
    names = [str(var) for var in opts.mask_vars]
    if len({axes[name].tensor_dim if name in axes else "all" for name in names}) < 2:
        return None
    kept = OrderedSet(name for name in names if name == X_MASK)
    moved = [name for name in names if name not in kept]
    # a reduction axis at 0: the row's first element, its gathered index loaded there too (a
    # reduction's masked load reads ``other=0``). Another axis' masked lanes may hold an index
    # loaded under that mask, undefined there: those go to element 0
    if all(name in axes and axes[name].is_reduction for name in moved):
        at_zero = {var: 0 for name in moved for var in axes[name].var_list}
        masked_index = opts.index.subs(at_zero)
        masked_address = kernel.index_to_str(masked_index)
    else:
        masked_index, masked_address = None, "0"
    return Fold(" & ".join(sorted(moved)), kept, masked_address, masked_index)


def masked_value(kernel, fold: Fold, name: str, value):
    """``value`` where the moved mask holds, the sum's identity elsewhere."""
    dtype = _buffer_dtype(name)
    if dtype.is_floating_point:
        identity = "-0.0"
    elif dtype == torch.bool:
        identity = "False"
    else:
        identity = "0"
    return kernel.cse.generate(
        kernel.compute,
        f"tl.where({fold.moved}, {value}, {identity})",
        dtype=getattr(value, "dtype", None),
        shape=tuple(kernel.dense_size_list()),
    )


def folded_indexing(opts, fold: Fold):
    """The store's indexing with the moved mask applied to the address and only the kept
    mask left on the atomic."""
    return dataclasses.replace(
        opts,
        index_str=f"tl.where({fold.moved}, {opts.index_str}, {fold.masked_address})",
        mask_vars=OrderedSet(fold.kept),
    )


def _buffer_dtype(name: str) -> torch.dtype:
    from torch._inductor.virtualized import V

    return V.graph.get_dtype(name)
