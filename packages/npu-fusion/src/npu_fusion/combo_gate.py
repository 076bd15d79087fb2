"""Which npu nodes may share a combo kernel: npu's narrowing of upstream's grouping.

Upstream's grouping (``ForeachKernelSchedulerNode._default_group_nodes_for_combo_kernels``)
puts up to 8 independent kernels of a topological level into one launch, any kinds mixed. On
npu only the case upstream's fusion cannot reach is taken: reductions over rows of one length
that read a common buffer, e.g. Q's and K's RMSNorm + RoPE (32 and 8 heads of 128, both
reading the cos/sin cache and the positions). Such sub-kernels share one block size (upstream's
combo kernels share XBLOCK / R0_BLOCK), which fits each of them as it fits one. Every other
npu node keeps its own kernel; other devices' groups are the previous algorithm's, unchanged.

Set with upstream's registration point for this decision,
``ForeachKernelSchedulerNode.set_group_algorithm_for_combo_kernels`` (read only while combo
kernels' peak-memory gate is off), and only while an npu graph compiles (``narrowed()``,
entered by ``combo.graph_context``): loading the backend leaves it upstream's.
"""

from __future__ import annotations

import contextlib
import threading

_lock = threading.Lock()
_depth = 0  # npu graphs compiling now (threads, nesting): the last one out restores
_previous = None


@contextlib.contextmanager
def narrowed():
    """npu's grouping registered for the duration (a user's own algorithm stays in charge)."""
    global _depth, _previous
    from torch._inductor.scheduler import ForeachKernelSchedulerNode as Foreach

    with _lock:
        if _depth == 0:
            _previous = Foreach.group_algorithm_for_combo_kernels
            if _previous is Foreach._default_group_nodes_for_combo_kernels:
                Foreach.set_group_algorithm_for_combo_kernels(_grouping)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                if Foreach.group_algorithm_for_combo_kernels is _grouping:
                    Foreach.set_group_algorithm_for_combo_kernels(_previous)
                _previous = None


def _grouping(scheduler) -> list[list]:
    """Upstream's groups, each npu group cut down to the reductions npu combines."""
    from torch._inductor.scheduler import ForeachKernelSchedulerNode as Foreach

    out = []
    for group in Foreach._default_group_nodes_for_combo_kernels(scheduler):
        device = group[0].get_device() if group else None
        if getattr(device, "type", None) != "npu":
            out.append(group)
            continue
        out.extend(g for g in _same_rows_sharing_reads(group) if len(g) > 1)
    return out


def _same_rows_sharing_reads(group: list) -> list[list]:
    """Reductions of ``group`` by row length, each kept when it reads a buffer another of its
    row length reads."""
    by_rows: dict[object, list] = {}
    for node in group:
        if node.is_reduction():
            by_rows.setdefault(node.group[1][1], []).append(node)
    kept = []
    for nodes in by_rows.values():
        reads = [_reads(n) for n in nodes]
        kept.append(
            [
                n
                for i, n in enumerate(nodes)
                if any(reads[i] & r for j, r in enumerate(reads) if j != i)
            ]
        )
    return kept


def _reads(node) -> set[str]:
    from torch._inductor.dependencies import WeakDep

    return {d.name for d in node.read_writes.reads if not isinstance(d, WeakDep)}
