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
from dataclasses import dataclass
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
        """Counts toward triton.cudagraph_unexpected_rerecord_limit."""
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
    disabled_kind: str = "other"  # its kind (tree.REMEDIES)
    mutated_unstatic: tuple[
        int, ...
    ] = ()  # mutated inputs that are not static (checked before warmup/record)
    check_inputs: Callable[[list], str | None] | None = (
        None  # misuse check, before warmup/record only
    )


_ids = itertools.count()


class Node:
    """What warmup and graph nodes share: the path and the liveness of its outputs."""

    def __init__(self, manager, fn: WrappedFunction, parent: "Node | None"):
        self.manager = manager
        self.fn = fn
        self.parent = parent
        self.id = next(_ids)
        self.depth = 0 if parent is None else parent.depth + 1
        self.path: tuple[Node, ...] = (parent.path if parent is not None else ()) + (
            self,
        )  # root .. self
        self.children: dict[int, list[GraphNode]] = defaultdict(list)
        self.output_refs: list[st.StorageRef | None] = []
        self.tensor_refs: list[st.TensorRef | None] = []

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
        input_ptrs = {
            x.untyped_storage().data_ptr()
            for x in itertools.chain(inputs, self.fn.constants)
            if isinstance(x, torch.Tensor)
        }
        with (
            m.adapter.allocate_to_pool(m.device_index, m.pool, m.stream),
            current_stream_as_external_object(m.adapter),
        ):
            out = self.fn.model(list(inputs))
        for o in out:
            new = (
                isinstance(o, torch.Tensor)
                and o.device.type == m.adapter.type
                and (p := o.untyped_storage().data_ptr()) != 0
                and p not in input_ptrs
                and p not in existing
            )
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
        self.expected_dead = [
            r
            for n in (parent.path if parent else ())
            for r in n.output_refs
            if r is not None and not r.live()
        ]
        self.dead_at_record = frozenset(
            map(id, self.expected_dead)
        )  # free in this node's checkpoint
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
            else:  # torch.Generator, process groups, script objects, any opaque object: passed through, not copied
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
        if (
            self.kernel_free
        ):  # a partition without kernels: nothing to capture, allocations still from the pool
            with (
                adapter.allocate_to_pool(dev, m.pool, m.stream),
                current_stream_as_external_object(adapter),
            ):
                out = fn.model(list(record_inputs))
        else:
            graph = adapter.new_graph()
            for x in self.opaque.values():
                if isinstance(x, torch.Generator):
                    adapter.register_generator(graph, x)
            with (
                adapter.device_ctx(dev),
                adapter.stream_ctx(m.stream),
                current_stream_as_external_object(adapter),
            ):
                adapter.capture_begin(graph, m.pool)
                try:
                    out = fn.model(list(record_inputs))
                finally:
                    empty = adapter.capture_end(graph)
            if fn.kernel_free is None and empty:
                graph.reset()  # the capture recorded no device work: run it plainly from now on
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
                    delta = (
                        o.storage_offset() * o.element_size()
                        - x.storage_offset() * x.element_size()
                    )
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
            self.tensor_refs.append(
                st.TensorRef(o)
                if ref is not None or meta[0] in ("alias_out", "alias_placeholder")
                else None
            )
        # never hand out our placeholder object itself (invalidating it later would break us):
        # an output viewing a copied input's placeholder makes that block an output of this
        # graph (tracked like a new block); the placeholder becomes a non-owning view of it
        self.first_outputs = list(out)
        owner_of: dict[int, int] = {}
        for j, meta in enumerate(self.metas):
            if meta[0] != "alias_placeholder":
                continue
            i = meta[1]
            if i in owner_of:
                self.metas[j] = ("alias_out", owner_of[i], meta[2])
                self.first_outputs[j] = st.tensor_over(
                    self.first_outputs[owner_of[i]].untyped_storage(), meta[2]
                )
            else:
                ph = self.placeholders[i]
                s = ph.untyped_storage()
                owner_of[i] = j
                self.metas[j] = ("new", s.data_ptr(), s.nbytes(), meta[2])
                self.output_refs[j] = st.StorageRef(s, owned=True)
                self.first_outputs[j] = st.tensor_over(s, meta[2])
                self.placeholders[i] = st.tensor_over(
                    adapter.storage_from_ptr(s.data_ptr(), dev, s.nbytes()), st.geometry(ph)
                )
            self.tensor_refs[j] = st.TensorRef(self.first_outputs[j])
        # the other placeholders are freed now (as upstream frees recording inputs): pool memory
        # the graph reads at replay, never live then (roots replay with no live pool output,
        # children under the liveness their recording saw), so later graphs may reuse it
        free = [ph.untyped_storage() for i, ph in self.placeholders.items() if i not in owner_of]
        if free:
            adapter.restore(
                dev,
                adapter.checkpoint(dev, m.pool),
                [],
                [(s.data_ptr(), s.nbytes()) for s in free],
                stale=free,
            )
        self.checkpoint = adapter.checkpoint(dev, m.pool)
        self._prepare_replay()

    def _prepare_replay(self) -> None:
        """What check/run/reconstruct need, as flat tuples: a replay does no dict lookups,
        tuple() conversions or adapter dispatch (host time per call is the point of a graph)."""
        self._check_managed = tuple(self.managed_ptrs.items())
        self._check_static = tuple(self.static_ptrs.items())
        self._check_opaque = tuple(self.opaque.items())
        self._check_values = tuple(self.values.items())
        self._check_layouts = tuple((i,) + self.layouts[i] for i in self.copy_idxs)
        self._copies = tuple((i, self.placeholders[i], self.overlap[i]) for i in self.copy_idxs)
        plain = [(i, self.placeholders[i]) for i in self.copy_idxs if not self.overlap[i]]
        # several plain copies go in one _foreach_copy_ (one launch where the device fuses it, as
        # upstream's tree does); an input overlapping itself is copied by byte span, as a view could not be
        self._foreach = (
            (tuple(i for i, _ in plain), [ph for _, ph in plain]) if len(plain) > 1 else None
        )
        self._single = tuple(
            (i, ph, ov) for i, ph, ov in self._copies if ov or self._foreach is None
        )
        adapter, dev = self.manager.adapter, self.manager.device_index
        storage_at = adapter.storage_maker(dev)
        prepare, make = adapter.tensor_maker()
        plan = []
        for j, meta in enumerate(self.metas):
            kind = meta[0]
            if kind == "new":
                step = (
                    _NEW,
                    self.output_refs[j],
                    storage_at,
                    meta[1],
                    meta[2],
                    make,
                    prepare(meta[3]),
                )
            elif kind == "external":
                step = (_EXTERNAL, meta[1], make, prepare(meta[2]))
            elif kind == "value":
                step = (_VALUE, meta[1])
            elif kind == "alias_out":
                step = (_ALIAS_OUT, meta[1], make, prepare(meta[2]))
            else:  # alias_input: the offset depends on the input's, so built per replay
                step = (_ALIAS_INPUT, meta[1], meta[2], meta[3])
            plan.append((j, self.tensor_refs[j] is not None) + step)
        self._plan = tuple(plan)

    # ---- replay --------------------------------------------------------------------------
    def check(self, inputs: list) -> Status:
        Tensor = torch.Tensor
        for i, ptr in self._check_managed:
            x = inputs[i]
            if not isinstance(x, Tensor) or x.data_ptr() != ptr:
                return Status.MANAGED_INPUT_MOVED
        for ref in self.expected_dead:
            if ref.live():
                return Status.LIVENESS_CHANGED
        for i, ptr in self._check_static:
            x = inputs[i]
            if not isinstance(x, Tensor) or x.data_ptr() != ptr:
                return Status.STATIC_INPUT_MOVED
        for i, obj in self._check_opaque:
            if inputs[i] is not obj:
                return Status.STATIC_INPUT_MOVED
        for i, v in self._check_values:
            if inputs[i] != v or type(inputs[i]) is not type(v):
                return Status.STATIC_INPUT_MOVED
        for i, shape, stride, dtype, device in self._check_layouts:
            x = inputs[i]
            if (
                not isinstance(x, Tensor)
                or x.shape != shape
                or x.stride() != stride
                or x.dtype != dtype
                or x.device != device
            ):
                return Status.LAYOUT_CHANGED
        return Status.OK

    def run(self, inputs: list) -> list:
        if self._foreach is not None:
            idxs, phs = self._foreach
            torch._foreach_copy_(phs, [inputs[i] for i in idxs])
        for i, ph, overlapping in self._single:
            if overlapping:
                st.copy_input(ph, inputs[i], True)
            else:
                ph.copy_(inputs[i])
        if self.graph is not None:
            self.graph.replay()
        return self.reconstruct(inputs)

    def reconstruct(self, inputs: list) -> list:
        """Fresh tensors over the recorded blocks (``_plan``, made at record time)."""
        outs: list = []
        lingering = None
        tensor_refs = self.tensor_refs
        TensorRef = st.TensorRef
        for step in self._plan:
            j, tracked, kind = step[0], step[1], step[2]
            if kind is _NEW:
                ref = step[3]
                if ref.owned and (old := ref.storage()) is not None:
                    (lingering := lingering or []).append(
                        old
                    )  # still held (e.g. an abandoned autograd graph)
                s = step[4](step[5], step[6])
                ref.swap(s, owned=False)
                t = step[7](step[8], s)
            elif kind is _EXTERNAL:
                t = step[4](step[5], step[3])
            elif kind is _VALUE:
                outs.append(step[3])
                continue
            elif kind is _ALIAS_OUT:
                t = step[4](step[5], outs[step[3]].untyped_storage())
            else:  # _ALIAS_INPUT
                x = inputs[step[3]]
                dtype, size, stride, _ = step[5]
                offset = (x.storage_offset() * x.element_size() + step[4]) // dtype.itemsize
                t = st.tensor_over(x.untyped_storage(), (dtype, size, stride, offset))
            if tracked:
                tensor_refs[j] = TensorRef(t)
            outs.append(t)
        if lingering:
            # the block is this graph's again: the old storage must never free it
            self.manager.disown(lingering)
        return outs


# reconstruct steps (identity-compared)
_NEW, _EXTERNAL, _VALUE, _ALIAS_OUT, _ALIAS_INPUT = (
    "new",
    "external",
    "value",
    "alias_out",
    "alias_input",
)
