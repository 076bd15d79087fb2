"""Nodes of a graph tree: a warmup run or a recorded graph, each with its outputs' liveness.

A node's path (root .. node) is one execution order of functions within a generation. A
recorded node reuses the pool memory of path outputs that were dead when it was recorded;
it may replay only while those outputs are still dead (``expected_dead``), else replaying
would overwrite memory someone holds.
"""

from __future__ import annotations

import enum
import itertools
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from . import storage as st
from .streams import current_stream_as_external_object


class Mode(enum.Enum):
    FORWARD = 1
    BACKWARD = 2
    INFERENCE = 3


class Status(enum.Enum):
    OK = 0
    STATIC_INPUT_MOVED = 1  # a static input (parameter, opaque object) changed: re-record freely
    MANAGED_INPUT_MOVED = 2  # an input from an earlier graph's pool changed address
    LIVENESS_CHANGED = 3  # memory this graph reuses is held again
    LAYOUT_CHANGED = 4  # a copied input changed size/stride/dtype

    @property
    def counts(self) -> bool:
        """Counts toward triton.cudagraph_unexpected_rerecord_limit (GT09)."""
        return self is not Status.STATIC_INPUT_MOVED


@dataclass(eq=False)
class WrappedFunction:
    model: Callable[[list], Any]
    id: int
    name: str
    static_input_idxs: frozenset[int]
    mode: Mode
    compile_id: Any = None
    constants: tuple = ()
    mutated_input_idxs: frozenset[int] = frozenset()
    stack_traces: list | None = None
    kernel_free: bool | None = None  # True: never capture; None: find out at capture
    disabled: str | None = None  # why this function now always runs without capture


_ids = itertools.count()


class Node:
    """What warmup and graph nodes share: the path and the liveness of its outputs."""

    def __init__(self, manager, fn: WrappedFunction, parent: "Node | None"):
        self.manager = manager
        self.fn = fn
        self.parent = parent
        self.id = next(_ids)
        self.depth = 0 if parent is None else parent.depth + 1
        self.children: dict[int, list[GraphNode]] = defaultdict(list)
        self.output_refs: list[st.StorageRef | None] = []
        self.tensor_refs: list[st.TensorRef | None] = []

    @property
    def path(self) -> list["Node"]:
        nodes, node = [], self
        while node is not None:
            nodes.append(node)
            node = node.parent
        return nodes[::-1]

    def path_live_refs(self):
        for node in self.path:
            for ref in node.output_refs:
                if ref is not None and ref.live():
                    yield ref

    def all_outputs_dead(self) -> bool:
        return next(self.path_live_refs(), None) is None

    def path_storage_ptrs(self) -> dict[int, st.StorageRef]:
        return {ref.ptr: ref for ref in self.path_live_refs()}


class WarmupNode(Node):
    """The function run eagerly with allocations from the pool, so its outputs are tracked
    like graph outputs; a warmup can only be followed by warmups in the same generation."""

    def run(self, inputs: list) -> Any:
        m = self.manager
        existing = set(self.parent.path_storage_ptrs()) if self.parent is not None else set()
        input_ptrs = {x.untyped_storage().data_ptr() for x in itertools.chain(inputs, self.fn.constants)
                      if isinstance(x, torch.Tensor)}
        with m.adapter.allocate_to_pool(m.device_index, m.pool, m.stream), current_stream_as_external_object(m.adapter):
            out = self.fn.model(list(inputs))
        for o in out:
            new = (isinstance(o, torch.Tensor) and o.device.type == m.adapter.type
                   and (p := o.untyped_storage().data_ptr()) != 0 and p not in input_ptrs and p not in existing)
            self.output_refs.append(st.StorageRef(o.untyped_storage(), owned=True) if new else None)
            self.tensor_refs.append(st.TensorRef(o) if new else None)
        return out


class GraphNode(Node):
    """A recorded graph: inputs sorted into static (address baked in), managed (outputs of
    earlier nodes in the pool, address baked in), copied (into pool placeholders) and opaque
    (objects and generators, identity baked in); outputs described so each replay rebuilds
    them over the same blocks without running anything on the host."""

    def __init__(self, manager, fn: WrappedFunction, parent: Node | None, inputs: list):
        super().__init__(manager, fn, parent)
        m = manager
        adapter, dev = m.adapter, m.device_index
        path_ptrs = parent.path_storage_ptrs() if parent is not None else {}
        # memory this node may reuse: path outputs dead now must stay dead at replay
        self.expected_dead = [r for n in (parent.path if parent else []) for r in n.output_refs
                              if r is not None and not r.live()]
        self.static_ptrs: dict[int, int] = {}
        self.managed_ptrs: dict[int, int] = {}
        self.opaque: dict[int, Any] = {}
        self.values: dict[int, Any] = {}
        self.copy_idxs: list[int] = []
        self.layouts: dict[int, tuple] = {}
        self.overlap: dict[int, bool] = {}
        for i, x in enumerate(inputs):
            if isinstance(x, torch.Tensor):
                if i in fn.static_input_idxs:
                    self.static_ptrs[i] = x.data_ptr()
                elif x.untyped_storage().data_ptr() in path_ptrs:
                    self.managed_ptrs[i] = x.data_ptr()
                else:
                    self.copy_idxs.append(i)
                    self.layouts[i] = (tuple(x.shape), tuple(x.stride()), x.dtype, x.device)
                    self.overlap[i] = st.overlaps_itself(x)
            elif x is None or isinstance(x, (int, float, bool, str)):
                self.values[i] = x
            else:  # torch.Generator, process groups, script objects, any opaque object (GT06/GT07)
                self.opaque[i] = x

        # placeholders for copied inputs live in the pool, allocated before the capture
        self.placeholders: dict[int, torch.Tensor] = {}
        with adapter.allocate_to_pool(dev, m.pool, m.stream):
            for i in self.copy_idxs:
                x = inputs[i]
                ph = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)
                st.copy_input(ph, x, self.overlap[i])
                self.placeholders[i] = ph
        record_inputs = [self.placeholders.get(i, x) for i, x in enumerate(inputs)]

        before = adapter.live_blocks(dev, m.pool)
        self.graph = None
        self.kernel_free = fn.kernel_free is True
        if self.kernel_free:  # GT10: nothing to capture, allocations still from the pool
            with adapter.allocate_to_pool(dev, m.pool, m.stream), current_stream_as_external_object(adapter):
                out = fn.model(list(record_inputs))
        else:
            graph = adapter.new_graph()
            for x in self.opaque.values():
                if isinstance(x, torch.Generator):
                    adapter.register_generator(graph, x)
            with adapter.device_ctx(dev), adapter.stream_ctx(m.stream), current_stream_as_external_object(adapter):
                adapter.capture_begin(graph, m.pool)
                try:
                    out = fn.model(list(record_inputs))
                finally:
                    graph.capture_end()
            if fn.kernel_free is None and adapter.graph_is_empty(graph):
                graph.reset()  # GT10: the capture recorded no device work
                self.kernel_free = True
            else:
                self.graph = graph
                graph.replay()  # capture does not run the work: this first replay does
        after = adapter.live_blocks(dev, m.pool)
        new_blocks = None if before is None or after is None else after - before

        self.metas: list[tuple] = []
        input_storage = {}
        for i, x in enumerate(record_inputs):
            if isinstance(x, torch.Tensor):
                input_storage.setdefault(x.untyped_storage().data_ptr(), i)
        first_of_storage: dict[int, int] = {}
        for j, o in enumerate(out):
            ref = None
            if not isinstance(o, torch.Tensor):
                meta = ("value", o)
            else:
                sp = o.untyped_storage().data_ptr()
                geo = st.geometry(o)
                if sp in first_of_storage:
                    meta = ("alias_out", first_of_storage[sp], geo)
                elif sp in input_storage and input_storage[sp] in self.placeholders:
                    # a view of a copied input is a view of its placeholder: pool memory at a
                    # stable address (a backward that saved it sees the same address each step)
                    meta = ("alias_placeholder", input_storage[sp], geo)
                elif sp in input_storage:
                    i = input_storage[sp]
                    x = record_inputs[i]
                    delta = o.storage_offset() * o.element_size() - x.storage_offset() * x.element_size()
                    meta = ("alias_input", i, delta, geo)
                elif o.device.type == adapter.type and (new_blocks is None or sp in new_blocks):
                    first_of_storage[sp] = j
                    meta = ("new", sp, o.untyped_storage().nbytes(), geo)
                    ref = st.StorageRef(o.untyped_storage(), owned=True)
                else:  # memory the graph did not allocate (a buffer from a closure, a constant)
                    first_of_storage[sp] = j
                    meta = ("external", o.untyped_storage(), geo)
            self.metas.append(meta)
            self.output_refs.append(ref)
            self.tensor_refs.append(st.TensorRef(o) if ref is not None or meta[0] in ("alias_out", "alias_placeholder")
                                    else None)
        self.checkpoint = adapter.checkpoint(dev, m.pool)
        # placeholders stay allocated through the checkpoints from now on; their Python
        # storages must not free the blocks when this node goes away
        placeholders = [ph.untyped_storage() for ph in self.placeholders.values()]
        if placeholders:
            m.disown(placeholders)
        # never hand out our placeholder object itself (invalidating it later would break us)
        self.first_outputs = [st.tensor_over(self.placeholders[m[1]].untyped_storage(), m[2])
                              if m[0] == "alias_placeholder" else o for o, m in zip(out, self.metas)]
        for j, m in enumerate(self.metas):
            if m[0] == "alias_placeholder":
                self.tensor_refs[j] = st.TensorRef(self.first_outputs[j])

    # ---- replay --------------------------------------------------------------------------
    def check(self, inputs: list) -> Status:
        for i, ptr in self.managed_ptrs.items():
            x = inputs[i]
            if not isinstance(x, torch.Tensor) or x.data_ptr() != ptr:
                return Status.MANAGED_INPUT_MOVED
        for ref in self.expected_dead:
            if ref.live():
                return Status.LIVENESS_CHANGED
        for i, ptr in self.static_ptrs.items():
            x = inputs[i]
            if not isinstance(x, torch.Tensor) or x.data_ptr() != ptr:
                return Status.STATIC_INPUT_MOVED
        for i, obj in self.opaque.items():
            if inputs[i] is not obj:
                return Status.STATIC_INPUT_MOVED
        for i, v in self.values.items():
            if inputs[i] != v or type(inputs[i]) is not type(v):
                return Status.STATIC_INPUT_MOVED
        for i in self.copy_idxs:
            x = inputs[i]
            if not isinstance(x, torch.Tensor) or (tuple(x.shape), tuple(x.stride()), x.dtype, x.device) != self.layouts[i]:
                return Status.LAYOUT_CHANGED
        return Status.OK

    def run(self, inputs: list) -> list:
        for i in self.copy_idxs:
            st.copy_input(self.placeholders[i], inputs[i], self.overlap[i])
        if self.graph is not None:
            self.graph.replay()
        return self.reconstruct(inputs)

    def reconstruct(self, inputs: list) -> list:
        adapter, dev = self.manager.adapter, self.manager.device_index
        outs: list = []
        lingering = []
        for j, meta in enumerate(self.metas):
            kind = meta[0]
            if kind == "value":
                outs.append(meta[1])
                continue
            if kind == "new":
                ref = self.output_refs[j]
                if ref.owned and (old := ref.storage()) is not None:
                    lingering.append(old)  # still held (e.g. by an abandoned autograd graph)
                s = adapter.storage_from_ptr(meta[1], dev, meta[2])
                self.output_refs[j].swap(s, owned=False)
                t = st.tensor_over(s, meta[3])
            elif kind == "alias_out":
                t = st.tensor_over(outs[meta[1]].untyped_storage(), meta[2])
            elif kind == "alias_placeholder":
                t = st.tensor_over(self.placeholders[meta[1]].untyped_storage(), meta[2])
            elif kind == "alias_input":
                x = inputs[meta[1]]
                dtype, size, stride, _ = meta[3]
                offset = (x.storage_offset() * x.element_size() + meta[2]) // dtype.itemsize
                t = st.tensor_over(x.untyped_storage(), (dtype, size, stride, offset))
            else:
                t = st.tensor_over(meta[1], meta[2])
            if self.tensor_refs[j] is not None:
                self.tensor_refs[j] = st.TensorRef(t)
            outs.append(t)
        if lingering:
            # the block is this graph's again: the old storage must never free it
            self.manager.disown(lingering)
        return outs
