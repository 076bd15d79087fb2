"""Bytes npu-sim's kernels actually move through GM, counted in Triton's interpreter.

Inductor's ``num_bytes_accessed`` is a compile-time count per scheduled node: it takes a
combo kernel's on-chip intermediates as stored and a gathered table as read whole. Running the
kernels in npu-sim instead, every load, store and atomic the interpreter executes is counted:
a load at its distinct addresses under the mask (a DMA moves an address once per load; lanes
that repeat an address, a row's weight broadcast over the block's rows, are copies in the UB),
a store and an atomic at their unmasked lanes, times the element size. So a weight or a
gathered row re-read per block counts each time, as on the device (ATen ops npu-sim runs
outside Triton are not counted). Bench-only: the interpreter's builder is wrapped while
``counting()`` is open.

    with gm_traffic.counting() as moved:
        fn(*args)
    moved.total  # bytes
"""

from __future__ import annotations

import contextlib
import dataclasses

import numpy as np


@dataclasses.dataclass
class Moved:
    loaded: int = 0
    stored: int = 0
    atomic: int = 0

    @property
    def total(self) -> int:
        return self.loaded + self.stored + self.atomic


def _itemsize(handle) -> int:
    element = handle.get_element_ty() if hasattr(handle, "get_element_ty") else handle.dtype
    return max(1, getattr(element, "primitive_bitwidth", 8) // 8)


def _lanes(mask) -> int:
    return int(np.count_nonzero(mask.data))


def _addresses(ptrs, mask) -> int:
    data = np.broadcast_to(ptrs.data, np.broadcast_shapes(ptrs.data.shape, mask.data.shape))
    return int(np.unique(data[np.broadcast_to(mask.data, data.shape)]).size)


@contextlib.contextmanager
def counting():
    """Count the GM bytes of every Triton kernel the interpreter runs meanwhile (one thread)."""
    from triton.runtime.interpreter import InterpreterBuilder

    moved = Moved()
    originals = {
        name: getattr(InterpreterBuilder, name)
        for name in ("create_masked_load", "create_masked_store", "create_atomic_rmw")
    }

    def load(self, ptrs, mask, *rest, **kw):
        moved.loaded += _addresses(ptrs, mask) * _itemsize(ptrs)
        return originals["create_masked_load"](self, ptrs, mask, *rest, **kw)

    def store(self, ptrs, value, mask, *rest, **kw):
        moved.stored += _lanes(mask) * _itemsize(ptrs)
        return originals["create_masked_store"](self, ptrs, value, mask, *rest, **kw)

    def atomic(self, op, ptrs, value, mask, *rest, **kw):
        moved.atomic += 2 * _lanes(mask) * _itemsize(ptrs)  # read and write
        return originals["create_atomic_rmw"](self, op, ptrs, value, mask, *rest, **kw)

    InterpreterBuilder.create_masked_load = load
    InterpreterBuilder.create_masked_store = store
    InterpreterBuilder.create_atomic_rmw = atomic
    try:
        yield moved
    finally:
        for name, fn in originals.items():
            setattr(InterpreterBuilder, name, fn)
