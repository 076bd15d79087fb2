"""Two concatenated halves computed over the full width, on npu post-grad graphs
(``config.half_cat``).

Why: Inductor lowers ``cat([A, B], d)`` to masked loads, the second half's at ``index - h``.
Where such a load has no other term than the position along ``d`` (a norm's weight, a cos/sin
row gathered once per token), its offset is a negative constant, which triton-ascend 3.2's
front end refuses ("expected offsets to be non-negative"). RoPE's rotated half does exactly
this in every Llama / Qwen model: ``cat((-x2, x1))``, vLLM's
``cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin))`` and the ``cat((freqs, freqs))`` of its
cos/sin cache.

The same values over the full width: ``where(j < h, A', B')``, where ``A'`` and ``B'`` are the
halves' pointwise computations with each half-wide input read at ``j % h`` (its start plus a
modular offset, never negative). Each half's inputs are read as often as the masked loads read
them, and each value is computed by the same operations on the same operands: bit-identical.

Only where both halves read a common tensor (the rotate-half shape): halves of unrelated
tensors would each be read twice. Sizes must be static; anything else is left to upstream.
"""

from __future__ import annotations

import operator

import torch
from npu_inductor_core.graph_hooks import call_function
from torch.fx.node import map_arg

from . import config

aten = torch.ops.aten
_MAX_NODES = 64  # per half: a RoPE half is about ten; past this, leave the graph as it is
_VIEWS = {
    aten.slice.Tensor,
    aten.unsqueeze.default,
    aten.view.default,
    aten.reshape.default,
    aten.expand.default,
    aten.squeeze.dim,
    aten.split.Tensor,
    aten.split_with_sizes.default,
}


def apply(gm: torch.fx.GraphModule) -> int:
    """Rewrite the npu graph's half concatenations that qualify; returns how many."""
    if not config.half_cat:
        return 0
    done = sum(
        _rewrite(gm.graph, node)
        for node in list(gm.graph.find_nodes(op="call_function", target=aten.cat.default))
    )
    if done:
        gm.graph.eliminate_dead_code()
        gm.graph.lint()
        gm.recompile()
    return done


def cache_key() -> str:
    """What of this pass changes graphs beyond Inductor's own flags."""
    return f"npu-half-cat-2-{config.half_cat}"


class _Halves:
    """One ``cat([A, B], d)``: its dim counted from the end, the half width ``h``."""

    def __init__(self, cat: torch.fx.Node, out: torch.Tensor, from_end: int, half: int):
        self.cat, self.out, self.from_end, self.half = cat, out, from_end, half
        self.copies: dict[torch.fx.Node, torch.fx.Node] = {}  # shared by both halves
        self.positions = self.index = None  # j and j % h over the full width, built once

    def size_along(self, node) -> int | None:
        """The size of ``node`` along the cat's dim; None where the dim is broadcast."""
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor) or val.ndim < self.from_end:
            return None
        return val.shape[val.ndim - self.from_end]

    def walk(self, node: torch.fx.Node, seen: dict, bases: set) -> bool:
        """Collect a half's inputs; False where the half is not pointwise over them."""
        if node in seen:
            return True
        if len(seen) >= _MAX_NODES:
            return False
        size = self.size_along(node)
        if size is None or size == 1:
            seen[node] = "broadcast"
            return True
        if type(size) is not int or size != self.half:
            return False
        target = node.target
        if node.op == "call_function" and torch.Tag.pointwise in getattr(target, "tags", ()):
            seen[node] = "pointwise"
            return all(self.walk(a, seen, bases) for a in node.all_input_nodes)
        seen[node] = "input"
        bases.add(_base(node))
        return True

    def full(self, node: torch.fx.Node, seen: dict) -> torch.fx.Node:
        """``node`` over the full width (its copy, read at ``j % h``)."""
        kind = seen[node]
        if kind == "broadcast":
            return node
        if node not in self.copies:
            if kind == "input":
                val = node.meta["val"]
                at = val.ndim - self.from_end
                copy = self.call(aten.index.Tensor, (node, [None] * at + [self.j_mod_h()]))
            else:
                args = map_arg(node.args, lambda a: self.full(a, seen))
                kwargs = map_arg(node.kwargs, lambda a: self.full(a, seen))
                copy = self.call(node.target, args, kwargs)
            self.copies[node] = copy
        return self.copies[node]

    def j_mod_h(self) -> torch.fx.Node:
        if self.index is None:
            self.index = self.call(aten.remainder.Scalar, (self.iota(), self.half))
        return self.index

    def iota(self) -> torch.fx.Node:
        if self.positions is None:
            self.positions = self.call(
                torch.ops.prims.iota.default,
                (2 * self.half,),
                dict(
                    start=0, step=1, dtype=torch.int64, device=self.out.device, requires_grad=False
                ),
            )
        return self.positions

    def first_half(self) -> torch.fx.Node:
        """``j < h``, shaped to broadcast along the cat's dim."""
        mask = self.call(aten.lt.Scalar, (self.iota(), self.half))
        if self.from_end > 1:
            mask = self.call(aten.view.default, (mask, [2 * self.half] + [1] * (self.from_end - 1)))
        return mask

    def call(self, target, args, kwargs=None) -> torch.fx.Node:
        return call_function(self.cat.graph, target, args, kwargs, like=self.cat)


def _rewrite(graph: torch.fx.Graph, cat: torch.fx.Node) -> bool:
    tensors = cat.args[0]
    dim = cat.args[1] if len(cat.args) > 1 else cat.kwargs.get("dim", 0)
    out = cat.meta.get("val")
    if len(tensors) != 2 or not isinstance(out, torch.Tensor) or out.device.type != "npu":
        return False
    if getattr(out, "fake_mode", None) is None:
        return False
    if cat.meta.get("should_fallback"):
        return False  # an ATen op on npu (its dtype has no npu kernels): no masked loads to spare
    width = out.shape[dim]
    if type(width) is not int or width % 2:
        return False
    halves = _Halves(cat, out, out.ndim - dim % out.ndim, width // 2)
    first, second = tensors
    for half in tensors:
        val = half.meta.get("val")
        if not isinstance(val, torch.Tensor) or val.dtype != out.dtype or val.ndim != out.ndim:
            return False
    seen_a, bases_a, seen_b, bases_b = {}, set(), {}, set()
    if not (halves.walk(first, seen_a, bases_a) and halves.walk(second, seen_b, bases_b)):
        return False
    if first is not second and not bases_a & bases_b:
        return False  # unrelated halves: each input would be read twice
    with graph.inserting_before(cat):
        full_a = halves.full(first, seen_a)
        if first is second:
            result = full_a
        else:
            full_b = halves.full(second, seen_b)
            result = halves.call(aten.where.self, (halves.first_half(), full_a, full_b))
    cat.replace_all_uses_with(result)
    graph.erase_node(cat)
    return True


def _base(node: torch.fx.Node) -> torch.fx.Node:
    """The tensor a view (slice, split piece, unsqueeze...) reads."""
    while True:
        if node.target is operator.getitem and node.args:
            node = node.args[0]
        elif node.target in _VIEWS and node.args and isinstance(node.args[0], torch.fx.Node):
            node = node.args[0]
        else:
            return node
