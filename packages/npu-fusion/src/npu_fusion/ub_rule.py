"""The UB rule: a fused npu kernel must fit its buffers, at a DMA-efficient tile, in the UB.

On Ascend every tensor a fused kernel keeps live is a buffer in the core's unified buffer
(UB): the tiles it loads from global memory (GM), those it stores, and the intermediates the
fusion keeps on chip. Fusing more nodes adds buffers, and the tiler answers by shrinking every
tile; below a few KiB per transfer the DMA engines stop streaming efficiently, so an over-fused
kernel loses more bandwidth than the GM round trip the fusion saved, or does not fit at all.

``footprint(node1, node2)`` prices the fused node at the smallest efficient tile with the
project's one UB model through its one tile generator (npu-inductor-core's
``tiles.buffers_bytes`` -> ``ub_model.estimate_buffers``: the per-class weights calibrated
against bishengir, which the tiler's ``fit_to_ub`` uses on generated kernels):
every distinct buffer it loads is a load buffer ("l", doubled when multi-buffered), every
buffer it writes a value buffer ("v"), each ``tile`` elements of its dtype. If that estimate
exceeds the UB, the tiler would have to shrink the fused kernel's tiles below the efficient
size. The README states the rule and where the numbers come from.
"""

from __future__ import annotations

import dataclasses

from . import _compat, config


@dataclasses.dataclass(frozen=True)
class Footprint:
    loaded: int  # buffers read from GM
    kept: int  # buffers written (stored, or intermediates the fused kernel keeps on chip)
    tile: int  # elements per buffer
    copies: int  # copies of each loaded buffer (2 when multi-buffered)
    nbytes: int  # the UB model's estimate of the fused kernel at that tile
    ub_bytes: int  # what it must fit
    soc_family: str = "910B"  # the UB model's calibration used

    @property
    def fits(self) -> bool:
        return self.nbytes <= self.ub_bytes

    def explain(self) -> str:
        return (
            f"{self.loaded} loaded x{self.copies} + {self.kept} kept buffers x {self.tile} elems "
            f"= {self.nbytes} B (ub_model, {self.soc_family}) > UB {self.ub_bytes} B"
        )


def _device(index: int):
    from npu_inductor_core.device import device

    return device(index)


def ub_bytes(index: int = 0) -> int:
    """The UB bytes the rule plans with: what the compiler plans on npu ``index``
    (npu-inductor-core's device facts, the one source every config source sizes with)."""
    return _device(index).ub_bytes


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
    index = getattr(node1.get_device(), "index", None) or 0
    family = soc_family(index)
    nbytes = estimate(
        _by_dtype(loaded, tile), _by_dtype(writes, tile), tile, config.multibuffer, family
    )
    copies = 2 if config.multibuffer else 1
    return Footprint(len(loaded), len(writes), tile, copies, nbytes, ub_bytes(index), family)


def _by_dtype(names, tile: int) -> dict[tuple[int, int], int]:
    """(dtype bytes, elements) -> buffers: a buffer smaller than the tile (a row statistic, a
    weight broadcast over rows) holds only its own elements."""
    out: dict[tuple[int, int], int] = {}
    for name in names:
        key = (_dtype_bytes(name), min(tile, _numel(name, tile)))
        out[key] = out.get(key, 0) + 1
    return out


def _numel(name: str, fallback: int) -> int:
    from torch._inductor.virtualized import V

    try:
        return _compat.size_hint(V.graph.get_numel(name), fallback)
    except Exception:  # a name the graph cannot size: price it at the tile
        return fallback


def soc_family(index: int = 0) -> str:
    """The UB model's calibration for npu ``index`` (910B-class or 950)."""
    from npu_inductor_core.ascend_rules import soc_family as family

    return family(_device(index).soc)


def estimate(loaded: dict, kept: dict, tile: int, multibuffer: bool, family: str) -> int:
    """UB bytes of a kernel holding ``loaded[itemsize]`` loaded and ``kept[itemsize]`` value
    buffers of ``tile`` elements (a key ``(itemsize, elements)``: a smaller buffer), priced by
    the one tile generator's UB pricing (npu-inductor-core's ``tiles.buffers_bytes``, the UB
    model's per-class costs): one source of costs."""
    from npu_inductor_core import tiles

    return tiles.buffers_bytes({"l": loaded, "v": kept}, tile, None, multibuffer, family)
