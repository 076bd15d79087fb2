"""A pointwise value read by a norm backward's row reduction and by its weight's column
reduction, recomputed for the column reduction, on npu post-grad graphs
(``config.recompute_norm_inputs``).

Why: in a normalisation's backward the incoming gradient (QK-norm + RoPE: the gradient
rotated back through RoPE, in float32) feeds two reductions: over each row (the input's
gradient) and over the rows (the weight's gradient, a column reduction). Inductor realizes a
pointwise value that several consumers read when it reads many inputs, so that value is
stored in float32 by the row reduction's kernel and read back by the column reduction's: a
GM round trip of 8 bytes an element, and a producer / consumer edge between the two
reductions. That edge is what keeps the two reductions apart: upstream's mix-order reduction
fuses only sibling reductions, and a combo kernel only independent kernels. Recomputed from
the value's own inputs (graph inputs: the bf16 gradient, the gathered cos/sin rows), the column
reduction reads those instead (2 bytes an element for a bf16 gradient) and the two
reductions are siblings.

Only where the user left Inductor's realization thresholds alone (a user who set one chose
what is stored), the value's cone (its producers up to the graph's inputs) is pointwise ops,
views and gathers of a graph input's rows (below), at most ``_MAX_NODES`` nodes, and the users
that get the copy reach only reductions over leading dimensions (a weight's gradient) through
pointwise nodes. A post-grad pass, registered with npu-inductor-core's
``graph_hooks.post_grad``: npu graphs only.
"""

from __future__ import annotations

import operator

import torch

from . import _compat, config

aten = torch.ops.aten
prims = torch.ops.prims
_MAX_NODES = 48  # a RoPE backward's cone is about thirty nodes; past this, leave it
# Gathers of rows from a graph input (RoPE's cos/sin cache at the positions) are recomputed
# as any pointwise value: in the column reduction they are indirect loads along its rows,
# which Ascend's front end takes at two rows a block or more (npu's kernels keep such blocks).
# A gather from a computed table is not: the cone would have to recompute the table.
_GATHERS = {
    aten.index.Tensor,
    aten.index_select.default,
    aten.gather.default,
    aten.embedding.default,
    aten._unsafe_index.Tensor,
}
_VIEWS = {
    aten.slice.Tensor,
    aten.unsqueeze.default,
    aten.view.default,
    aten.reshape.default,
    aten.expand.default,
    aten.squeeze.dim,
    aten.permute.default,
    aten.split.Tensor,
    aten.split_with_sizes.default,
    prims.iota.default,
    operator.getitem,  # a split's part
}


def apply(gm: torch.fx.GraphModule) -> int:
    """Give each qualifying value's column-reduction users a copy of its cone; returns how
    many values were copied."""
    if not config.recompute_norm_inputs or not _realization_left_alone():
        return 0
    done = 0
    for node in list(gm.graph.nodes):
        done += _recompute(gm.graph, node)
    if done:
        gm.graph.eliminate_dead_code()
        gm.graph.lint()
        gm.recompile()
    return done


def cache_key() -> str:
    return f"npu-norm-grad-4-{config.recompute_norm_inputs}"


def _realization_left_alone() -> bool:
    """Whether the user left Inductor's realization thresholds (which values lowering stores
    rather than inlines into each user) at their defaults: a user who set one chose what is
    stored, and this pass, which decides the same for these values, stays out."""
    from torch._inductor import config as inductor

    return all(
        _compat.left_default(inductor, name)
        for name in inductor._config
        if "realize" in name and not name.startswith(("realize_cpu", "delay"))
    )


def _recompute(graph: torch.fx.Graph, node: torch.fx.Node) -> int:
    if not _pointwise(node) or len(node.users) < 2:
        return 0
    columns = [u for u in node.users if _reaches_only_column_reductions(u)]
    if not columns or len(columns) == len(node.users):
        return 0
    cone = _cone(node)
    if cone is None:
        return 0
    for user in columns:
        copies: dict[torch.fx.Node, torch.fx.Node] = {}
        with graph.inserting_before(user):
            for n in cone:  # in graph order: producers first
                copies[n] = graph.node_copy(n, lambda a: copies.get(a, a))
        user.replace_input_with(node, copies[node])
    return 1


def _pointwise(node: torch.fx.Node) -> bool:
    if node.op != "call_function":
        return False
    target = node.target
    if target in _VIEWS or target is prims.convert_element_type.default:
        return True
    return torch.Tag.pointwise in getattr(target, "tags", ())


def _cone(node: torch.fx.Node) -> list[torch.fx.Node] | None:
    """``node`` and its producers back to the graph's inputs, in graph order; None when one
    of them is not pointwise, a view or a gather of a graph input's rows, or there are more
    than ``_MAX_NODES``."""
    seen: set[torch.fx.Node] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if n in seen or n.op in ("placeholder", "get_attr"):
            continue
        if not (_pointwise(n) or _gathers_from_input(n)) or len(seen) >= _MAX_NODES:
            return None
        seen.add(n)
        stack.extend(n.all_input_nodes)
    order = {n: i for i, n in enumerate(node.graph.nodes)}
    return sorted(seen, key=order.__getitem__)


def _gathers_from_input(node: torch.fx.Node) -> bool:
    """A gather whose table is a graph input (its first argument), or whose indices are
    computed from no input (the half-cat rewrite's rotated half: a column permutation by
    ``iota % half``, a direct index in the generated code). Only where combo kernels carry the
    indirect mark (torch 2.14+): on 2.13 ``combo_gate`` keeps gathering reductions apart, and
    a recomputed gather would only add a kernel."""
    if node.op != "call_function" or node.target not in _GATHERS or not node.args:
        return False
    if not _compat.combo_kernels_marked():
        return False
    table = node.args[0]
    if isinstance(table, torch.fx.Node) and table.op == "placeholder":
        return True
    indices = [
        i for arg in node.args[1:] for i in (arg if isinstance(arg, (list, tuple)) else [arg])
    ]
    return all(not isinstance(i, torch.fx.Node) or _computed(i) for i in indices)


def _computed(node: torch.fx.Node) -> bool:
    """Whether ``node`` is computed by pointwise ops from constants alone (no graph input)."""
    stack, seen = [node], set()
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if n.op != "call_function" or not _pointwise(n) or len(seen) > _MAX_NODES:
            return False
        stack.extend(n.all_input_nodes)
    return True


def _reaches_only_column_reductions(user: torch.fx.Node) -> bool:
    """Every path from ``user`` through pointwise nodes ends in a sum over leading dimensions
    only (a weight's gradient); a graph output or any other consumer disqualifies."""
    stack, seen, found = [user], set(), False
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if n.op == "call_function" and n.target is aten.sum.dim_IntList:
            if not _column_sum(n):
                return False
            found = True
            continue
        if not _pointwise(n) or n.target is aten.index.Tensor:
            return False
        stack.extend(n.users)
    return found


def _column_sum(node: torch.fx.Node) -> bool:
    val = node.args[0].meta.get("val") if isinstance(node.args[0], torch.fx.Node) else None
    if val is None or val.dim() < 2:
        return False
    dims = [d % val.dim() for d in node.args[1]]
    return val.dim() - 1 not in dims
