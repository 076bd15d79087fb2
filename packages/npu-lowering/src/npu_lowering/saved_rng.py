"""Random values the partitioner would recompute in the backward are saved on npu instead.

Under activation checkpointing (``torch.utils.checkpoint``, Hugging Face's gradient
checkpointing) the joint graph's nodes carry the region's recompute policy, and from torch 2.14
Inductor's seeds draw (``prims.inductor_seeds``, which replaces dropout's draw) carries it too.
The partitioner recomputes such a random node in the backward by replaying the forward's RNG
state, through tables that name cuda, cpu, hpu and xpu only ("Backend not supported for npu").
Saving the node's value (for the seeds draw: a few int64) gives the backward the forward's
random numbers as replaying would, on any device. Registered as a joint-graph pass with
npu-inductor-core's ``graph_hooks.joint``: npu compiles only.
"""

from __future__ import annotations

import operator

import torch
from torch.utils.checkpoint import CheckpointPolicy

_RECOMPUTED = (CheckpointPolicy.MUST_RECOMPUTE, CheckpointPolicy.PREFER_RECOMPUTE)


def apply(graph: torch.fx.Graph) -> None:
    for node in graph.nodes:
        if node.meta.get("recompute") in _RECOMPUTED and _draws_random(node):
            if isinstance(node.meta.get("val"), (tuple, list)):
                # several outputs (eager dropout's value and mask): the partitioner saves
                # the pieces, so those are saved, and the draw itself is not recomputed
                node.meta["recompute"] = CheckpointPolicy.PREFER_SAVE
                for user in node.users:
                    if user.target is operator.getitem:
                        user.meta["recompute"] = CheckpointPolicy.MUST_SAVE
            else:
                node.meta["recompute"] = CheckpointPolicy.MUST_SAVE


def cache_key() -> str:
    return "saved-rng-1"


def _draws_random(node: torch.fx.Node) -> bool:
    tags = getattr(node.target, "tags", ())
    return torch.Tag.nondeterministic_seeded in tags
