"""Which npu nodes may share a combo kernel: npu's narrowing of upstream's grouping.

Upstream's grouping (``ForeachKernelSchedulerNode._default_group_nodes_for_combo_kernels``)
puts up to 8 independent kernels of a topological level into one launch, any kinds mixed. On
npu only the case upstream's fusion cannot reach is taken: reductions over rows of one length
that read a common buffer, e.g. Q's and K's RMSNorm + RoPE (32 and 8 heads of 128, both
reading the cos/sin cache and the positions), and reductions over columns of one count (the
same backward's weight gradients: 128 columns each, over Q's 32 and K's 8 heads' rows). Such
sub-kernels share one block size (upstream's combo kernels share XBLOCK / R0_BLOCK), which
fits each of them as it fits one: a row's length or a column count is the tile's other side,
equal in both. In training
graphs also two reductions that read one buffer element for element (a norm backward's row
and column reductions) where ``MIN_SHARED_ROWS`` rows of the longer one fit a block (below),
with the pointwise nodes that write
other parts of a concatenated buffer they write; their shared block is sized to the UB as any
combo kernel's (the LLM training rows' kernels pass the Ascend check), and npu's partition
(``_partition``) keeps such a group in one kernel. Every other npu node keeps its own kernel;
other devices' groups are the previous algorithm's, unchanged.

Set with upstream's registration point for this decision,
``ForeachKernelSchedulerNode.set_group_algorithm_for_combo_kernels`` (read only while combo
kernels' peak-memory gate is off), and only while an npu graph compiles (``narrowed()``,
entered by ``combo.graph_context``): loading the backend leaves it upstream's.
"""

from __future__ import annotations

import contextlib
import threading

from . import _compat

_lock = threading.Lock()
_depth = 0  # npu graphs compiling now (threads, nesting): the last one out restores
_previous = None
_previous_partition = None


@contextlib.contextmanager
def narrowed():
    """npu's grouping registered for the duration (a user's own algorithm stays in charge)."""
    global _depth, _previous, _previous_partition
    from torch._inductor.codegen import triton_combo_kernel as combo_kernel
    from torch._inductor.scheduler import ForeachKernelSchedulerNode as Foreach

    with _lock:
        if _depth == 0:
            _previous = Foreach.group_algorithm_for_combo_kernels
            if _previous is Foreach._default_group_nodes_for_combo_kernels:
                Foreach.set_group_algorithm_for_combo_kernels(_grouping)
            _previous_partition = _partition_algorithm()
            if (
                _previous_partition
                is combo_kernel._default_custom_combo_kernel_horizontal_partition
            ):
                combo_kernel.set_custom_combo_kernel_horizontal_partition(_partition)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                if Foreach.group_algorithm_for_combo_kernels is _grouping:
                    Foreach.set_group_algorithm_for_combo_kernels(_previous)
                if _partition_algorithm() is _partition:
                    combo_kernel.set_custom_combo_kernel_horizontal_partition(_previous_partition)
                _previous = _previous_partition = None


def _partition_algorithm():
    from torch._inductor.codegen import triton_combo_kernel as combo_kernel

    return combo_kernel._custom_combo_kernel_horizontal_partition_algorithm


def _partition(nodes, scheduling, node_info_map) -> list[list]:
    """Upstream's partition of a combo group into kernels, with an npu group kept in one
    kernel. Upstream separates reductions over more than 2048 elements from shorter ones
    ("usually has long execution time", a GPU heuristic: one launch's blocks wait for its
    longest sub-kernel) and pointwise kernels from reductions. The nodes npu's grouping joins
    read common buffers or write parts of one (a norm backward's row and column reductions of
    one gradient, Q's and K's rows, the parts of split QKV's gradient); on npu each sub-kernel
    runs in programs of its own, so one launch saves launches and costs the shorter
    sub-kernels nothing. Upstream's other separations stay: block dimensions (its base
    partition, after this one) and kernels over more than ``LARGE_NUMELS`` elements alone."""
    from torch._inductor.codegen import triton_combo_kernel as combo_kernel
    from torch._inductor.virtualized import V

    parts = combo_kernel._default_custom_combo_kernel_horizontal_partition(
        nodes, scheduling, node_info_map
    )
    if any(getattr(n.get_device(), "type", None) != "npu" for n in nodes):
        return parts

    def hint(expr) -> int:
        return V.graph.sizevars.optimization_hint(expr, fallback=1)

    def joined(node) -> bool:
        info = node_info_map[node]
        return hint(info.numel) * hint(info.rnumel) <= combo_kernel.LARGE_NUMELS

    kept = [n for p in parts for n in p if joined(n)]
    others = [p for p in ([n for n in p if not joined(n)] for p in parts) if p]
    return ([kept] if kept else []) + others


def _grouping(scheduler) -> list[list]:
    """Upstream's groups, each npu group cut down to the reductions npu combines."""
    from torch._inductor.scheduler import ForeachKernelSchedulerNode as Foreach

    out = []
    for group in Foreach._default_group_nodes_for_combo_kernels(scheduler):
        device = group[0].get_device() if group else None
        if getattr(device, "type", None) != "npu":
            out.append(group)
            continue
        out.extend(
            g for g in _with_concat_parts(_same_rows_sharing_reads(group), group) if len(g) > 1
        )
    return out


def _with_concat_parts(groups: list[list], group: list) -> list[list]:
    """Each group joined by the pointwise nodes of ``group`` that write another part of a
    concatenated buffer one of its members writes (split QKV's gradient: Q's and K's
    normalisation backward write their parts of the QKV gradient, V's part is a copy of
    V's gradient): the concatenation's parts in one launch."""
    out, taken = [], set()
    for members in groups:
        if len(members) < 2:
            out.append(members)
            continue
        targets = set().union(*(_concat_targets(n) for n in members))
        extra = [
            n
            for n in group
            if not n.is_reduction()
            and n not in members
            and n not in taken  # a node joins one combo kernel at most
            and _concat_targets(n) & targets
        ]
        taken.update(extra)
        out.append(members + extra)
    return out


def _concat_targets(node) -> set[str]:
    """Buffers this node writes a part of: its outputs that alias a view of another buffer
    (Inductor's concatenation writes each input's computation into its slice)."""
    from torch._inductor import ir

    out = set()
    for sub in node.get_nodes():
        buf = getattr(sub, "node", None)
        layout = getattr(buf, "layout", None)
        if isinstance(layout, ir.NonOwningLayout):
            try:
                out.add(layout.view.get_name())
            except (AttributeError, NotImplementedError):
                continue
    return out


def _same_rows_sharing_reads(group: list) -> list[list]:
    """The reductions of ``group`` joined where two of them reduce rows of one length and
    read a common buffer, or both reduce columns of one count (no gather in either), or where
    both iterate over one buffer they read element for element (a normalisation's backward:
    the input's gradient reduces the rows of the incoming gradient, the weight's gradient its
    columns); each joined set is one group."""
    nodes = [n for n in group if n.is_reduction()]
    reads = [_reads(n) for n in nodes]
    whole = [whole_reads(n) for n in nodes]
    paired = [_paired_accumulator(n) for n in nodes]
    indirect = [_indirect(n) for n in nodes]
    columns = [_over_columns(n, w) for n, w in zip(nodes, whole)]
    parent = list(range(len(nodes)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(nodes)):
        for j in range(i):
            rows = nodes[i].group[1][1] == nodes[j].group[1][1] and reads[i] & reads[j]
            if paired[i] or paired[j]:
                continue
            direct = not (indirect[i] or indirect[j])
            orders = whole[i] & whole[j] and direct and _columns_share_a_block(nodes[i], nodes[j])
            cols = columns[i] and columns[j] and nodes[i].group[1][0] == nodes[j].group[1][0]
            if rows or orders or (cols and direct):
                parent[root(i)] = root(j)
    kept: dict[int, list] = {}
    for i, n in enumerate(nodes):
        kept.setdefault(root(i), []).append(n)
    return list(kept.values())


# A row and a column reduction joined share one XBLOCK, which the longer of their reductions
# sizes (the combo kernel's block holds XBLOCK of its rows whole). Where fewer rows than this fit
# a block, the column sub-kernel reads fewer columns than a 32-byte block of bf16 from each row
# and re-reads its per-row values (a norm's statistics) once per column block; add + RMSNorm's
# backward at hidden 4096 (XBLOCK 1 on the 910B2) moved 1.48x the minimum GM bytes at 16 tokens
# and 1.50x at 256 where its two kernels apart move 1.16x and 1.36x (bench/fusion_llm_traffic.py).
MIN_SHARED_ROWS = 16


def _columns_share_a_block(a, b) -> bool:
    """Whether ``MIN_SHARED_ROWS`` rows of the longer of the two reductions fit the UB by
    the row fact (npu-inductor-core's ``tiles.row_kept_whole``), over the buffers the two
    reductions read and write."""
    from npu_inductor_core import tiles
    from npu_inductor_core.device import device
    from torch._inductor.dependencies import WeakDep
    from torch._inductor.virtualized import V

    length = max(V.graph.sizevars.optimization_hint(n.group[1][1], fallback=1) for n in (a, b))
    names = {
        d.name
        for n in (a, b)
        for d in (*n.read_writes.reads, *n.read_writes.writes)
        if not isinstance(d, WeakDep)
    }
    index = getattr(a.get_device(), "index", None) or 0
    return tiles.row_kept_whole(len(names), length, device(index), rows=MIN_SHARED_ROWS)


# Reductions that carry more than one value per row (argmax / argmin: value and index; Welford:
# mean, M2, weight; online softmax: max and sum). A combo kernel gives its sub-kernels one
# XBLOCK; a row and a column reduction at one XBLOCK hold tiles of other shapes than each
# alone, and a column reduction's accumulators all stay in its strided read's layout on 910B
# (a dynamic-shape row + column argmax combo needed 231,456 B of a 910B2's 196,608 B: the UB
# profile then read a run-time stride as contiguous). With that read fixed such combos fit
# (checked at 6, 20 and 300 square), but their peak estimate is 0.82x bishengir's plan, held
# only by the plan bound: those keep kernels of their own until the profile prices a combo's
# paired accumulators (no norm or RoPE kernel the gate is for has one).
_PAIRED = ("argmax", "argmin", "welford", "online_softmax")


def _paired_accumulator(node) -> bool:
    for sub in node.get_nodes():
        buf = getattr(sub, "node", None)
        try:
            kind = buf.get_reduction_type() if buf is not None else None
        except NotImplementedError:
            continue
        if kind and kind.startswith(_PAIRED):
            return True
    return False


def _indirect(node) -> bool:
    """Whether the node loads through a computed index (a gather), where that keeps it out of
    a row and column join: on torch 2.13 only. A gather indexed by a row's own loaded index
    (``table[ids]``) fails Ascend's front end at one row per block; a kernel marked as
    gathering keeps its configs above one row (Ascend's config rules), and a combo kernel
    carries the mark from torch 2.14 (``_compat.combo_kernels_marked``). Unmarked, the combo
    kernel's shared XBLOCK went to 1 (the column sub-kernel's), which the gathering row
    sub-kernel's front end refused (a tiny Llama's first RMSNorm backward)."""
    if _compat.combo_kernels_marked():
        return False
    return any(
        getattr(getattr(sub, "_body", None), "indirect_vars", None) for sub in node.get_nodes()
    )


def _over_columns(node, whole: set[str]) -> bool:
    """Whether the node reduces over columns: every buffer it reads element for element
    (``whole``, its ``whole_reads``) is read with a stride along the reduction (Inductor's
    hint says OUTER only above some row count; a weight's gradient over one token's heads is
    DEFAULT)."""
    from torch._inductor.dependencies import MemoryDep

    deps = [
        d
        for sub in node.get_nodes()
        if sub.is_reduction()
        for d in sub.read_writes.reads
        if isinstance(d, MemoryDep) and d.name in whole
    ]
    return bool(deps) and not any(d.stride1_for_last_dim() for d in deps)


def whole_reads(node) -> set[str]:
    """Buffers of more than one element the reduction reads once per step of its iteration:
    the buffer has as many elements as the reduction iterates over."""
    from torch._inductor.dependencies import MemoryDep
    from torch._inductor.utils import sympy_product
    from torch._inductor.virtualized import V

    sizevars = V.graph.sizevars
    steps = sympy_product(node.group[1])
    out = set()
    for dep in node.read_writes.reads:
        if not isinstance(dep, MemoryDep):
            continue
        try:
            numel = V.graph.get_numel(dep.name)
        except (KeyError, AttributeError):
            continue
        if sizevars.statically_known_equals(numel, steps) and not sizevars.statically_known_leq(
            numel, 1
        ):
            out.add(dep.name)
    return out


def _reads(node) -> set[str]:
    from torch._inductor.dependencies import WeakDep

    return {d.name for d in node.read_writes.reads if not isinstance(d, WeakDep)}
