"""The tree manager: one per (thread, device), owning a private pool and the tree of nodes.

Per call it decides: warm up (run eagerly into the pool), replay a child whose invariants
hold, or record a new child after restoring the pool to the path's checkpoint (so the new
graph reuses memory of dead outputs and never memory someone holds). Generations: a new
torch.compile invocation (or ``mark_step_begin``) ends the current path -- unless a forward
still waits for its backward -- and outputs the user still holds are invalidated (accessing
them raises an error naming them) or, with generation cloning, copied out of the pool.
"""

from __future__ import annotations

import functools
import itertools
import logging
import threading
import warnings
from collections import defaultdict
from typing import Any

import torch

from . import _compat, config, logs, upstream_config
from . import storage as st
from .adapter import DeviceAdapter, get_adapter
from .node import GraphNode, Mode, Node, Status, WarmupNode, WrappedFunction

# Capture and pool warmup are process-wide device state on cuda (capture_error_mode,
# allocator pool switches): one thread captures or warms up at a time (threads may share a process).
capture_lock = threading.Lock()

_tls = threading.local()  # per-thread managers: each thread's graphs are its own tree
_all_managers: "list[TreeManager]" = []
_all_lock = threading.Lock()


_TLS_KEY = "npu_graphtree_managers"

# Why a call ran without a graph (or could not start a new step), and what the user can do.
# Each kind is counted per call in ``TreeManager.counters`` ("eager" for every call run without a
# graph, plus "eager.<kind>"; "pending_backward" per step that could not start) and logged once
# per function and kind (event ``run_without_capture`` / ``pending_backward``, WARNING).
REMEDIES = {
    "rerecord_limit": "keep the inputs that come from earlier graphs' outputs at stable addresses (clone them "
    "outside the compiled region) or call torch.compiler.cudagraph_mark_step_begin() before each "
    "step; or raise torch._inductor.config.triton.cudagraph_unexpected_rerecord_limit",
    "unsupported_inputs": "pass every tensor input on the graph's device (CPU tensors and tensors of other devices "
    "cannot be read by a replay)",
    "mutated_inputs": "mutate only parameters/buffers (or tensors marked with torch._dynamo.mark_static_address) or "
    "outputs of earlier graphs inside the compiled region",
    "host_outputs": "return device tensors from the compiled region (move .cpu()/.item() out of it)",
    "size_not_captured": "add the size to torch._inductor.config.triton.cudagraph_capture_sizes",
    "trees_off": "set torch._inductor.config.triton.cudagraph_trees = True",
    "no_capture_device": "give the function inputs on one device that supports graph capture",
    "capture_refused": "keep ops the device cannot capture out of the captured region: with Inductor, leave "
    "torch._inductor.config.graph_partition on (the graph is then captured around them); the "
    "device's error says which op or call it refused",
    "pending_backward": "call backward() on the previous step's outputs or detach them before the next step; for "
    "inference run the model under torch.no_grad() or torch.inference_mode()",
}


def remedy(kind: str) -> str:
    return REMEDIES.get(kind, "")


def _managers() -> dict:
    """This thread's managers. Stashed in torch's ThreadLocalState, which autograd carries
    into its device worker threads: a backward run there finds the forward's tree."""
    if torch._C._is_key_in_tls(_TLS_KEY):
        return torch._C._get_obj_in_tls(_TLS_KEY)
    managers: dict = {}
    _compat.stash_in_tls(_TLS_KEY, managers)
    return managers


@functools.cache
def _time_replays():
    """A ~0.1 us reader of ``config.time_replays`` (read per replay; patches are seen)."""
    return _compat.fast_config_reader(config, "time_replays", False)


def get_manager(device_type: str, device_index: int, create: bool = True) -> "TreeManager | None":
    managers = _managers()
    key = (device_type, device_index)
    manager = managers.get(key)
    if manager is None and create:
        manager = managers[key] = TreeManager(get_adapter(device_type), device_index)
        with _all_lock:
            _all_managers.append(manager)
    return manager


def notify_backward(run_backward, where):
    """``run_backward`` (boxed) wrapped so that, run without a graph, it still tells its
    forward's tree that the backward ran (the pending forward ends). ``where()`` gives
    the tree's (device type, index), or None while unknown. Used by the Dynamo backend's
    device-less backwards and the reduce-overhead policy's uncaptured Inductor backwards."""

    def run(inputs):
        dev = where()
        if dev is not None and (m := get_manager(dev[0], dev[1], create=False)) is not None:
            m.set_to_running_backward()
        return run_backward(inputs)

    run._boxed_call = True
    return run


def reset_trees() -> None:
    """Forget this thread's trees (functions wrapped earlier re-record on next call) and, as
    upstream's reset does, the user's mark-step counter."""
    _compat.reset_mark_step()
    upstream_config.refresh()
    managers = _managers()
    for manager in list(managers.values()):
        manager.shutdown()
    managers.clear()


class TreeManager:
    def __init__(self, adapter: DeviceAdapter, device_index: int):
        self.adapter = adapter
        self.device_index = device_index
        self.pool = adapter.new_pool()
        adapter.begin_pool(device_index, self.pool)  # the manager's own reference to its pool
        adapter.end_pool(device_index, self.pool)
        self.stream = adapter.new_stream(device_index)
        self.functions: dict[int, WrappedFunction] = {}
        self.roots: dict[int, list[GraphNode]] = defaultdict(list)
        self.current: Node | None = None
        self.state = "none"  # none | warmup | recording | execution
        self.warmed_up: set[int] = set()
        self.current_gen: int | None = None
        self.pending_backward = False
        self.num_rerecord: dict[tuple, int] = defaultdict(int)
        self.warmup_incomplete = False
        self.warned: set[tuple] = set()
        self.counters: dict[str, int] = defaultdict(int)
        # blocks kept allocated for storages held past invalidation (no native poisoning):
        # where the device poisons natively these would have been freed
        self.kept_for_holders: set[int] = set()
        self.thread = threading.get_ident()
        self._ids = itertools.count()
        self._time_replays = _time_replays()  # ~0.1 us reader, made once
        self._pending_counted: int | None = (
            None  # the generation last counted as blocked by a pending backward
        )
        self._clock = (
            itertools.count()
        )  # recency of graph nodes (record, replay) for the graph budget

    # ---- functions -----------------------------------------------------------------------
    def add_function(
        self,
        model,
        static_input_idxs,
        *,
        mode: Mode,
        name: str,
        compile_id=None,
        constants=(),
        mutated_input_idxs=(),
        stack_traces=None,
        kernel_free=None,
        check_inputs=None,
    ) -> WrappedFunction:
        static, mutated = frozenset(static_input_idxs), frozenset(mutated_input_idxs)
        fn = WrappedFunction(
            model=model,
            id=next(self._ids),
            name=name,
            static_input_idxs=static,
            mode=mode,
            compile_id=compile_id,
            constants=tuple(constants),
            mutated_input_idxs=mutated,
            stack_traces=stack_traces,
            kernel_free=kernel_free,
            mutated_unstatic=tuple(sorted(mutated - static)),
            check_inputs=check_inputs,
        )
        self.functions[fn.id] = fn
        return fn

    def run(
        self, fn: WrappedFunction, inputs: list, cfg: upstream_config.Snapshot | None = None
    ) -> Any:
        out = self._run(fn, inputs, cfg if cfg is not None else upstream_config.snapshot())
        if fn.mode is Mode.FORWARD:  # pending from now until its backward runs
            self.pending_backward = True
        elif fn.mode is Mode.BACKWARD:
            self.pending_backward = False
        return out

    def set_to_running_backward(self) -> None:
        """A backward that runs without capture still ends the pending forward."""
        self.pending_backward = False

    # ---- the decision --------------------------------------------------------------------
    def _run(self, fn: WrappedFunction, inputs: list, cfg: upstream_config.Snapshot) -> Any:
        # cfg: upstream config for this generation (upstream_config.snapshot), never re-read per call.
        # A replay proves its inputs (static and managed ones by address, copied ones by layout,
        # device included): the per-call input checks (device, mutated inputs) run only on the
        # way to a warmup or a recording (``_refuse``).
        if fn.disabled:
            return self.eager(fn, inputs, fn.disabled, fn.disabled_kind)
        gen = cfg.generation
        state = self.state
        if state == "recording" or state == "warmup":
            self._try_end_path(fn, gen)
        elif (
            state == "execution"
            and self.current_gen != gen
            and fn.id not in self.current.children
            and fn.id in self.warmed_up
            and not cfg.force_warmup
        ):
            # a new step and nothing under the current path for fn: end the path now, as the loop
            # below would after finding no child (one pass instead of two per step)
            self._try_end_path(fn, gen)
        while True:  # at most twice: again from the root once the current path ended
            current = self.current
            node_id = current.id if current is not None else None
            if (
                self.num_rerecord
                and self.num_rerecord.get((node_id, fn.id), 0) > cfg.rerecord_limit
            ):
                return self.eager(fn, inputs, "re-record limit exceeded", "rerecord_limit")

            state = self.state
            if (
                (fn.id not in self.warmed_up and not cfg.skip_warmup)
                or state == "warmup"
                or cfg.force_warmup
            ):
                if (refused := self._refuse(fn, inputs)) is not None:
                    return self.eager(fn, inputs, *refused)
                if state == "execution":
                    self.apply_checkpoint(current)
                with capture_lock:
                    return self._warmup(fn, inputs, gen)

            children = self.roots if current is None else current.children
            if state != "recording":
                counted = None
                for child in children.get(fn.id, ()):
                    status = child.check(inputs)
                    if status is Status.OK:
                        return self._execute(child, inputs, gen)
                    if status.counts:
                        counted = status
                    logs.event(
                        "rerecord_candidate",
                        logging.DEBUG,
                        fn=fn,
                        node=child.id,
                        reason=status.name,
                    )
                # children first (as upstream): only a function no child matched goes back to the root
                if current is not None and fn.id in self.roots:
                    self._try_end_path(fn, gen)
                    if self.current is None:
                        continue
                if (refused := self._refuse(fn, inputs)) is not None:
                    return self.eager(fn, inputs, *refused)
                if counted is not None:
                    key = (node_id, fn.id)
                    self.num_rerecord[key] += 1
                    if self.num_rerecord[key] > cfg.rerecord_limit:
                        return self.eager(
                            fn,
                            inputs,
                            f"re-record limit ({cfg.rerecord_limit}) exceeded on node "
                            f"{node_id}: {counted.name}",
                            "rerecord_limit",
                        )
                self._try_end_path(fn, gen)
                if self.current is not None and self.state == "execution":
                    self.apply_checkpoint(self.current)
            elif (refused := self._refuse(fn, inputs)) is not None:
                return self.eager(fn, inputs, *refused)
            with capture_lock:
                return self._record(fn, inputs, gen)

    def _refuse(self, fn: WrappedFunction, inputs: list) -> tuple[str, str] | None:
        """(reason, kind) when these inputs cannot be warmed up into the pool or captured."""
        if fn.check_inputs is not None and (why := fn.check_inputs(inputs)) is not None:
            return why, "unsupported_inputs"
        if fn.mutated_unstatic and (mutated := self._unmanaged_mutation(fn, inputs)) is not None:
            return mutated, "mutated_inputs"
        return None

    def _unmanaged_mutation(self, fn: WrappedFunction, inputs: list) -> str | None:
        """A graph that writes a copied input would write our placeholder, not the caller's
        tensor: such calls run without capture (misuse, item 5)."""
        if not fn.mutated_unstatic:
            return None
        managed = self.current.path_storage_ptrs() if self.current is not None else {}
        bad = [
            i
            for i in fn.mutated_unstatic
            if isinstance(inputs[i], torch.Tensor)
            and inputs[i].untyped_storage().data_ptr() not in managed
        ]
        return f"mutated inputs {sorted(bad)} are neither static nor graph outputs" if bad else None

    def eager(self, fn: WrappedFunction, inputs: list, reason: str, kind: str = "other") -> Any:
        self.note_fallback(kind, reason, fn=fn, inputs=inputs)
        return fn.model(list(inputs))

    def note_fallback(
        self,
        kind: str,
        reason: str,
        *,
        fn: WrappedFunction | None = None,
        name: str | None = None,
        inputs: list | None = None,
    ) -> None:
        """A call runs without a graph: counted always, said once per function and kind with the
        reason and the remedy (REMEDIES)."""
        counters = self.counters
        counters["eager"] += 1
        counters["eager." + kind] += 1
        key = (fn.id if fn is not None else name, kind)
        if key not in self.warned:
            self.warned.add(key)
            extra = {} if fn is not None else {"function": name}
            logs.event(
                "run_without_capture",
                logging.WARNING,
                fn=fn,
                inputs=inputs,
                kind=kind,
                reason=reason,
                remedy=remedy(kind),
                **extra,
            )

    # ---- generations ---------------------------------------------------------------------
    def can_start_new_generation(self, gen: int | None = None) -> bool:
        if self.current_gen == (gen if gen is not None else _compat.current_generation()):
            return False
        if _compat.user_marked_step():
            return True
        return not self.pending_backward  # saved activations of a pending backward must stay alive

    def _try_end_path(self, fn: WrappedFunction, gen: int) -> None:
        if self.current is None:
            return
        if self.can_start_new_generation(gen):
            if self.pending_backward and any(n.fn.mode is Mode.FORWARD for n in self.current.path):
                self._forward_without_backward(fn)
            self.end_generation()
        elif self.current.all_outputs_dead():
            self._set_current(None, "none")
        elif self.current_gen != gen and self.pending_backward:
            self._pending_backward(fn, gen)

    def _pending_backward(self, fn: WrappedFunction, gen: int) -> None:
        """A new step cannot start: outputs of the last one wait for their backward, so
        this step's calls record below the old path (more graphs, memory kept). Counted once
        per blocked step, said once per function."""
        if self._pending_counted != gen:
            self._pending_counted = gen
            self.counters["pending_backward"] += 1
        if ("pending", fn.id) not in self.warned:
            self.warned.add(("pending", fn.id))
            msg = (
                "npu_graphtree: outputs of a previous step still wait for backward, so the graph tree cannot "
                "start a new generation; call backward(), detach the outputs, or "
                "torch.compiler.cudagraph_mark_step_begin() before each step."
            )
            logs.event(
                "pending_backward",
                logging.WARNING,
                fn=fn,
                reason=msg,
                remedy=remedy("pending_backward"),
            )
            warnings.warn(msg)

    def _forward_without_backward(self, fn: WrappedFunction) -> None:
        """A step ends while the last forward's backward never ran: inference run with grad
        enabled. Each such call records a training forward that saves activations, and its
        held outputs keep their blocks (a checkpoint per call): several times the no_grad
        call. Said once, counted always. (Serving it from an inference graph instead would
        give outputs without grad_fn, wrong for a caller who calls backward later.)"""
        self.counters["forward_without_backward"] += 1
        if ("no_backward",) not in self.warned:
            self.warned.add(("no_backward",))
            logs.event(
                "forward_without_backward",
                logging.WARNING,
                fn=fn,
                reason=(
                    "a reduce-overhead forward ran with grad enabled and its outputs never reached a backward; "
                    "each such call records a training graph that saves activations (several times slower). "
                    "For inference, call the model under torch.no_grad() or torch.inference_mode()."
                ),
            )

    def end_generation(self) -> None:
        """Outputs of the ending path that the user still holds are about to be overwritten."""
        node = self.current
        path = node.path
        held = [
            (n, j, t)
            for n in path
            for j, tref in enumerate(n.tensor_refs)
            if tref is not None and (t := tref()) is not None
        ]
        if held and config.generation_cloning() == "user_visible":
            clones: dict[int, torch.UntypedStorage] = {}
            for _, _, t in held:
                st.clone_out_of_pool(
                    t, clones
                )  # outputs the user holds survive the new generation as clones
            logs.event(
                "generation_clone", fn=node.fn, outputs=len(held), generation=self.current_gen
            )
        elif held or next(node.path_live_refs(), None) is not None:
            if self.state == "execution":
                self.apply_checkpoint(node)  # every live storage owns its block from here
            native = self.adapter.native_access_errors()
            msgs: dict[int, str] = {}
            for n in path:
                traces = list(n.fn.stack_traces or [])
                if traces and len(traces) != len(
                    n.tensor_refs
                ):  # a mismatch is logged; pair what exists, clean all
                    logs.event(
                        "stack_trace_mismatch",
                        logging.WARNING,
                        fn=n.fn,
                        outputs=len(n.tensor_refs),
                        stack_traces=len(traces),
                    )
                for j, (tref, trace) in enumerate(
                    itertools.zip_longest(n.tensor_refs, traces[: len(n.tensor_refs)])
                ):
                    msg = self.dealloc_message(n.fn, j, trace)
                    ref = n.output_refs[j] if j < len(n.output_refs) else None
                    if ref is not None:
                        msgs[ref.ptr] = msg
                    t = tref() if tref is not None else None
                    if t is not None:
                        st.invalidate_tensor(self.adapter, t, msg)
            lingering = [
                (ref, s)
                for ref in node.path_live_refs()
                if ref.owned and (s := ref.storage()) is not None
            ]
            if native:  # as upstream: free the block under the storage, poison its data pointer
                for ref, s in lingering:
                    self.adapter.free_and_poison_storage(s._cdata, msgs.get(ref.ptr, ""))
                    ref.release()
            elif lingering:
                # still held past invalidation (user views, an abandoned autograd graph):
                # those storages must never free blocks later checkpoints hand out again
                self.disown([s for _, s in lingering])
                for ref, _ in lingering:
                    ref.owned = False
                    self.kept_for_holders.add(ref.ptr)
            logs.event(
                "generation_end",
                fn=node.fn,
                invalidated=len(held),
                generation=self.current_gen,
                path=self.path_names(node),
            )
        self._set_current(None, "none")

    @staticmethod
    def dealloc_message(fn: WrappedFunction, index: int, stack_trace: str | None) -> str:
        where = stack_trace.strip() if stack_trace else "[no stack trace recorded]"
        what = f"output {index} of {fn.name!r} ({fn.mode.name.lower()}, compile id {fn.compile_id})"
        if fn.mode is Mode.BACKWARD:  # a gradient overwritten by a later replay: say how to keep it
            return (
                f"Error: accessing gradient {what}, which a later graph replay has overwritten. "
                f"Stack trace: {where}. This happens with reduce-overhead graph trees and gradient "
                "accumulation when a .grad tensor was allocated during graph capture. Fixes: allocate "
                "stable .grad buffers outside capture before the compiled backward runs (run one eager "
                "warmup iteration, or preallocate zeroed .grad tensors); or, without gradient accumulation, "
                "set .grad to None (optimizer.zero_grad(set_to_none=True)) before each backward."
            )
        return (
            f"Error: accessing {what}, which a later graph replay has overwritten. Stack trace: {where}. "
            "Clone the tensor outside the compiled region to keep it, or call "
            "torch.compiler.cudagraph_mark_step_begin() before each model invocation."
        )

    # ---- memory --------------------------------------------------------------------------
    def apply_checkpoint(self, node: GraphNode) -> None:
        """Allocator state := ``node``'s path: live outputs allocated (and owned by their
        storages), outputs dead since the recording freed for reuse."""
        live = {}
        for ref in node.path_live_refs():
            live.setdefault(ref.ptr, ref)
        dead = {}  # outputs live in the checkpoint (so listed there as allocated) and dead since
        skip = node.dead_at_record
        for n in node.path:
            for ref in n.output_refs:
                if ref is not None and ref.ptr not in live and id(ref) not in skip:
                    dead[ref.ptr] = ref.nbytes
        handles = [(ref, ref.storage()) for ref in live.values() if not ref.owned]
        if config.slow_asserts:  # what cuda's and torch_npu's restore insist on
            now = self.adapter.live_blocks(self.device_index, self.pool)
            listed = self.adapter.checkpoint_blocks(node.checkpoint)
            if now is not None and listed is not None:
                extra = now - listed - self.kept_for_holders
                assert not extra, (
                    f"restoring node {node.id} would free {len(extra)} block(s) whose storages it is not given"
                )
        self.adapter.restore(
            self.device_index,
            node.checkpoint,
            [s for _, s in handles if s is not None],
            list(dead.items()),
        )
        for ref, _ in handles:
            ref.owned = True
        self.counters["checkpoints"] += 1
        if config.slow_asserts:
            blocks = self.adapter.live_blocks(self.device_index, self.pool)
            if blocks is not None:
                assert set(live) <= blocks and not (set(dead) & blocks), (
                    "pool state disagrees with the tree"
                )

    def disown(self, storages: list[torch.UntypedStorage]) -> None:
        """Blocks that stay allocated through every later checkpoint; their storages must not
        free them."""
        state = self.adapter.checkpoint(self.device_index, self.pool)
        self.adapter._fn(f"{self.adapter._p}setCheckpointPoolState")(
            self.device_index, state, [s._cdata for s in storages], []
        )

    # ---- node kinds ----------------------------------------------------------------------
    def _set_current(self, node: Node | None, state: str) -> None:
        self.current = node
        self.state = state if node is not None else "none"

    def _warmup(self, fn: WrappedFunction, inputs: list, gen: int) -> Any:
        self.current_gen = gen
        upstream_config.refresh()  # the next call reads upstream config again
        node = WarmupNode(self, fn, self.current)
        self.warmup_incomplete = False
        _tls.active_manager = self
        try:
            with logs.timed("warmup", fn):
                out = node.run(inputs)
        finally:
            _tls.active_manager = None
        off = [
            o.device
            for o in out
            if isinstance(o, torch.Tensor) and o.device != self.adapter.device(self.device_index)
        ]
        if off:  # a graph would compute these on the host from poisoned inputs: never capture
            fn.disabled = f"outputs on {sorted(set(map(str, off)))}, not {self.adapter.device(self.device_index)}"
            fn.disabled_kind = "host_outputs"
            self.warned.add((fn.id, "host_outputs"))  # said here, with the warmup's inputs
            logs.event(
                "run_without_capture",
                logging.WARNING,
                fn=fn,
                inputs=inputs,
                kind="host_outputs",
                reason=fn.disabled,
                remedy=remedy("host_outputs"),
            )
        if not self.warmup_incomplete:
            self.warmed_up.add(fn.id)
        self.counters["warmups"] += 1
        self._set_current(node, "warmup")
        logs.event(
            "warmup",
            fn=fn,
            inputs=inputs,
            node=node.id,
            path=self.path_names(node),
            generation=self.current_gen,
            complete=not self.warmup_incomplete,
        )
        return out

    def _record(self, fn: WrappedFunction, inputs: list, gen: int) -> Any:
        self.current_gen = gen
        upstream_config.refresh()  # the next call reads upstream config again
        parent = self.current
        self._make_room(parent)
        try:
            with _compat.recording_callbacks(fn.compile_id), logs.timed("record", fn):
                node = GraphNode(self, fn, parent, inputs)
        except Exception as exc:  # noqa: BLE001  (only the device's capture refusals are handled)
            why = self.adapter.capture_refusal(exc)
            if why is None:
                raise
            # the device refused something in the function (an op or a host sync): it never
            # captures; said once with the device's error, counted per call (no silent eager)
            fn.disabled, fn.disabled_kind = why, "capture_refused"
            return self.eager(fn, inputs, why, "capture_refused")
        node.last_used = next(self._clock)
        (self.roots if parent is None else parent.children)[fn.id].append(node)
        self._set_current(node, "recording")
        self.counters["records"] += 1
        logs.event(
            "record",
            fn=fn,
            inputs=inputs,
            node=node.id,
            path=self.path_names(node),
            generation=self.current_gen,
            kernel_free=node.kernel_free,
            copies=len(node.copy_idxs),
        )
        return node.first_outputs

    def _execute(self, node: GraphNode, inputs: list, gen: int) -> Any:
        self.current_gen = gen
        node.last_used = next(self._clock)
        if self._time_replays():
            with logs.timed("replay", node.fn):
                out = node.run(inputs)
        else:
            out = node.run(inputs)
        self._set_current(node, "execution")
        self.counters["replays"] += 1
        if logs.log.isEnabledFor(logging.DEBUG):
            logs.event(
                "replay",
                logging.DEBUG,
                fn=node.fn,
                inputs=inputs,
                node=node.id,
                path=self.path_names(node),
                generation=self.current_gen,
            )
        return out

    @staticmethod
    def path_names(node: Node) -> str:
        return "/".join(f"{n.fn.name}#{n.id}" for n in node.path)

    def graph_nodes(self) -> list[GraphNode]:
        out, todo = [], [n for nodes in self.roots.values() for n in nodes]
        while todo:
            n = todo.pop()
            out.append(n)
            todo.extend(c for cs in n.children.values() for c in cs)
        return out

    # ---- the graph budget (issue 37) -------------------------------------------------------
    def graph_budget(self) -> int | None:
        """Live captured graphs this tree keeps at most: ``config.max_live_graphs``, else the
        device's (``adapter.graph_budget``; None: no limit)."""
        mine = config.max_live_graphs_now()
        return mine if mine > 0 else self.adapter.graph_budget()

    def live_graphs(self) -> int:
        return sum(1 for n in self.graph_nodes() if n.graph is not None)

    def _make_room(self, parent: Node | None) -> None:
        """Before a recording: evict least recently replayed graphs until one more fits the
        budget. Only leaves off the current path whose outputs nobody holds are evicted (a
        child's recording depends on its parent's pool checkpoint); the function re-records
        when called again."""
        budget = self.graph_budget()
        if budget is None:
            return
        live = [n for n in self.graph_nodes() if n.graph is not None]
        if len(live) < budget:
            return
        keep = set(map(id, parent.path)) if parent is not None else set()
        if self.current is not None:
            keep |= set(map(id, self.current.path))
        excess = len(live) - budget + 1
        while excess > 0:
            leaves = [
                n
                for n in self.graph_nodes()
                if n.graph is not None
                and id(n) not in keep
                and not any(n.children.values())
                and not any(r is not None and r.live() for r in n.output_refs)
            ]
            if not leaves:
                logs.event(
                    "graph_budget_full",
                    logging.WARNING,
                    live=len(live),
                    budget=budget,
                    reason="every live graph is on the current path or has live outputs",
                )
                return
            self._evict(min(leaves, key=lambda n: getattr(n, "last_used", -1)), budget)
            excess -= 1

    def _evict(self, node: GraphNode, budget: int) -> None:
        siblings = (self.roots if node.parent is None else node.parent.children).get(node.fn.id, [])
        if node in siblings:
            siblings.remove(node)
        node.graph.reset()
        node.graph = None
        self.counters["evictions"] += 1
        first = ("evict",) not in self.warned
        self.warned.add(("evict",))
        logs.event(
            "evict",
            logging.WARNING if first else logging.INFO,
            fn=node.fn,
            node=node.id,
            budget=budget,
            reason="graph budget reached: the least recently replayed graph is dropped (it re-records "
            "when called again)",
            remedy="raise npu_graphtree.config.max_live_graphs (up to the device's budget) or capture "
            "fewer sizes (torch._inductor.config.triton.cudagraph_capture_sizes)",
        )

    def stats(self) -> dict[str, int]:
        """The tree's counters plus the graphs alive now and the budget (0: none)."""
        out = dict(self.counters)
        out["graphs_alive"] = self.live_graphs()
        out["graph_budget"] = self.graph_budget() or 0
        return out

    def shutdown(self) -> None:
        for n in self.graph_nodes():
            if n.graph is not None:
                n.graph.reset()
                n.graph = None
        self.roots.clear()
        self.current = None
        self.state = "none"


def mark_warmup_incomplete() -> None:
    """Called from inside a function being warmed up: warm it up again next time instead of
    capturing it (torch_npu/upstream have no such API: ``torch.compiler``'s
    cudagraph_mark_step_begin sibling)."""
    manager = getattr(_tls, "active_manager", None)
    if manager is not None:
        manager.warmup_incomplete = True
