"""Row gathers from a graph input recomputed in the backward of npu training compiles
(``config.recompute_gathers``), instead of saved.

Why: AOTAutograd's partitioner saves, rather than recomputes, a node whose output is under a
quarter of its inputs' size (its rule for reductions). A gather of rows from a table (RoPE's
cos/sin cache at the tokens' positions, an embedding's rows) looks like that, though it reads
only the rows it returns. Saved, the rows are written by the forward in a kernel of their own
(the consumers iterate over heads too, so the gather does not fuse into their kernel) and read
back by the backward; recomputed, the backward reads the same rows from the table, the forward
writes nothing more and its consumers fuse the gather as they do in inference.

Only where the table is a graph input (available to the backward as it is) and no policy was
set for the node (activation checkpointing's is kept). A joint-graph pass, registered with
npu-inductor-core's ``graph_hooks.joint``: npu compiles only.
"""

from __future__ import annotations

import torch
from torch.utils.checkpoint import CheckpointPolicy

from . import config

aten = torch.ops.aten
# (op, position of the table among its arguments)
GATHERS = {
    aten.index.Tensor: 0,
    aten.index_select.default: 0,
    aten.gather.default: 0,
    aten.embedding.default: 0,
}


def apply(graph: torch.fx.Graph) -> None:
    if not config.recompute_gathers:
        return
    for node in graph.nodes:
        at = GATHERS.get(node.target) if node.op == "call_function" else None
        if at is None or len(node.args) <= at or "recompute" in node.meta:
            continue
        table = node.args[at]
        if isinstance(table, torch.fx.Node) and table.op == "placeholder":
            node.meta["recompute"] = CheckpointPolicy.PREFER_RECOMPUTE


def cache_key() -> str:
    return f"npu-gather-recompute-1-{config.recompute_gathers}"
