"""npu's fusion policy, consulted by npu's scheduling (npu-lowering's ``NpuScheduling``) for
every fusion of two npu nodes that upstream's scheduler, choices and Triton scheduling allowed.

Entry point ``npu_inductor.fusion: policy`` names this module. Its contract, for any policy:
``can_fuse(kind, node1, node2) -> bool`` (``kind`` is "vertical" or "horizontal"; False
refuses the fusion) and ``cache_key() -> str`` (what the decisions depend on besides the
graph; npu's post-grad pass puts it into the FX graph cache key). It only ever refuses:
upstream's flags and heuristics keep deciding everything else. Optional:
``score_fusion(scheduler, node1, node2, upstream_score) -> Sortable``, the order of candidate
fusions (npu-lowering's choices object asks it when present).
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from . import combo_gate, config, score, ub_rule
from .log import log


def score_fusion(scheduler, node1, node2, upstream):
    """The order of candidate fusions (npu-lowering's ``NpuChoices.score_fusion`` asks this
    with upstream's score): for two npu nodes, GM bytes saved with removed round trips counted
    twice (score.py), then upstream's order; any other pair keeps upstream's order."""
    npu = all(getattr(n.get_device(), "type", None) == "npu" for n in (node1, node2))
    if not (config.prefer_round_trips and npu):
        return score.NpuFusionScore(upstream, None)
    return score.NpuFusionScore(upstream, score.saved_bytes(scheduler, node1, node2, upstream))


def can_fuse(kind: str, node1, node2) -> bool:
    if (
        kind == "horizontal"
        and config.combo_kernels
        and not _benchmarked()
        and _orders_norm_pair(node1, node2)
    ):
        log.debug(
            "refused horizontal fusion %s + %s: the pointwise node reads a reduction that reads "
            "the other's input element for element",
            node1.get_name(),
            node2.get_name(),
        )
        return False
    if not config.ub_rule or not _priced(node1) or not _priced(node2):
        return True
    fp = ub_rule.footprint(node1, node2)
    if fp.fits:
        return True
    log.debug(
        "refused %s fusion %s + %s: rule ub_footprint: %s",
        kind,
        node1.get_name(),
        node2.get_name(),
        fp.explain(),
    )
    return False


def _benchmarked() -> bool:
    """Whether the user asked Inductor to time fusions (``benchmark_fusion``): then a fusion
    this policy would refuse by preference (the norm pair below) is left to that timing; the
    UB rule still refuses what cannot fit."""
    from torch._inductor import config as inductor

    return bool(inductor.benchmark_fusion)


def _orders_norm_pair(node1, node2) -> bool:
    """A reduction fused side by side with a pointwise node that reads another reduction's
    output, where the two reductions read one buffer element for element (a norm backward: the
    row reduction's epilogue, the input's gradient, taken into the weight's column reduction
    by loop reordering, as happens at one token). Fused so, the row reduction becomes the
    column reduction's producer, and the pair that one combo kernel runs side by side
    (combo_gate) takes two kernels and a stored intermediate; refused, the epilogue fuses into
    its own reduction."""
    for red, other in ((node1, node2), (node2, node1)):
        if not red.is_reduction() or other.is_reduction():
            continue
        whole = combo_gate.whole_reads(red)
        if not whole:
            continue
        for producer in _producers(other):
            if producer is not red and producer.is_reduction():
                if combo_gate.whole_reads(producer) & whole:
                    return True
    return False


def _producers(node) -> list:
    """The scheduler nodes (fused as they are now, on ``node``'s device) that write what
    ``node`` reads. A producer on another device (a cpu computation a graph moves to npu) is
    never in a kernel with it, and its scheduling group is its own backend's (cpp's nests its
    sizes)."""
    scheduler = node.scheduler
    out = []
    for dep in node.unmet_dependencies:
        buf = scheduler.name_to_buf.get(dep.name)
        if buf is None:
            continue
        producer = scheduler.name_to_fused_node.get(buf.defining_op_name())
        if (
            producer is not None
            and producer not in out
            and producer.get_device() == node.get_device()
        ):
            out.append(producer)
    return out


def _priced(node) -> bool:
    """The UB rule prices vector kernels: a template's operands stream through L1/L0 (cube
    unit), and a foreach (combo) kernel runs each sub-kernel in its own programs."""
    return not (node.is_template() or node.is_foreach())


@functools.cache
def _source_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cache_key() -> str:
    settings = ",".join(
        f"{k}={getattr(config, k)}"
        for k in (
            "ub_rule",
            "min_tile_elems",
            "multibuffer",
            "prefer_round_trips",
            "combo_kernels",
        )
    )
    return f"npu-fusion-{_source_hash()}-{settings}-ub{ub_rule.ub_bytes()}"
