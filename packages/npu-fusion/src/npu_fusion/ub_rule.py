"""The UB rule: a fused npu kernel must fit its buffers, at a DMA-efficient tile, in the UB.

On Ascend every tensor a fused kernel keeps live is a buffer in the core's unified buffer
(UB): the tiles it loads from global memory (GM), those it stores, and the intermediates the
fusion keeps on chip. Fusing more nodes adds buffers, and the tiler answers by shrinking every
tile; below a few KiB per transfer the DMA engines stop streaming efficiently, so an over-fused
kernel loses more bandwidth than the GM round trip the fusion saved, or does not fit at all.

``footprint(node1, node2)`` prices the fused node at the smallest efficient tile: every
distinct buffer it reads or writes holds ``tile`` elements of its dtype, loaded ones twice
when multi-buffered. The README states the rule and where the numbers come from.
"""

from __future__ import annotations

import dataclasses

from . import _compat, config

BLOCK_BYTES = 32  # Ascend's UB block: every buffer is a whole number of 32-byte blocks


@dataclasses.dataclass(frozen=True)
class Footprint:
    loaded: int  # buffers read from GM
    kept: int  # buffers written (stored, or intermediates the fused kernel keeps on chip)
    tile: int  # elements per buffer
    copies: int  # copies of each loaded buffer (2 when multi-buffered)
    nbytes: int  # the whole footprint
    ub_bytes: int  # what it must fit

    @property
    def fits(self) -> bool:
        return self.nbytes <= self.ub_bytes

    def explain(self) -> str:
        return (f"{self.loaded} loaded x{self.copies} + {self.kept} kept buffers x {self.tile} elems "
                f"= {self.nbytes} B > UB {self.ub_bytes} B")


def ub_bytes(index: int = 0) -> int:
    """The UB bytes the rule plans with: the setting, else what the compiler plans on npu
    ``index`` (npu-inductor-core's device facts)."""
    if config.ub_bytes is not None:
        return int(config.ub_bytes)
    from npu_inductor_core.device import device

    return device(index).ub_bytes


def _elements(node) -> int:
    """Elements the node iterates (pointwise x reduction): a tensor smaller than the minimal
    tile is priced whole."""
    try:
        _, (numel, rnumel) = node.group
    except (AttributeError, TypeError, ValueError):
        return config.min_tile_elems
    fallback = config.min_tile_elems
    return _compat.size_hint(numel, fallback) * _compat.size_hint(rnumel, 1)


def _dtype_bytes(name: str) -> int:
    from torch._inductor.virtualized import V

    try:
        return V.graph.get_dtype(name).itemsize
    except Exception:  # a name the graph cannot type (a mutation alias): price it as float32
        return 4


def _pad(nbytes: int) -> int:
    return -(-nbytes // BLOCK_BYTES) * BLOCK_BYTES


def footprint(node1, node2) -> Footprint:
    from torch._inductor.dependencies import WeakDep

    reads: dict[str, None] = {}
    writes: dict[str, None] = {}
    for node in (node1, node2):
        for dep in node.read_writes.reads:
            if not isinstance(dep, WeakDep):  # an ordering edge, no data
                reads[dep.name] = None
        for dep in node.read_writes.writes:
            writes[dep.name] = None
    loaded = [n for n in reads if n not in writes]  # node2's reads of node1's writes stay on chip
    tile = max(1, min(config.min_tile_elems, max(_elements(node1), _elements(node2))))
    copies = 2 if config.multibuffer else 1
    nbytes = sum(_pad(tile * _dtype_bytes(n)) * copies for n in loaded)
    nbytes += sum(_pad(tile * _dtype_bytes(n)) for n in writes)
    index = getattr(node1.get_device(), "index", None) or 0
    return Footprint(len(loaded), len(writes), tile, copies, nbytes, ub_bytes(index))
