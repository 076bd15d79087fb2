"""The entry the lowering (and anyone) calls: wrap one compiled callable in a graph tree.

``graphify(model, inputs, static_input_idxs, *, device_index, is_backward, is_inference, ...)``
mirrors upstream's ``cudagraphify_impl``: ``model`` takes a list of inputs and returns a
list/tuple of outputs; the returned callable takes the same list. Calls whose int inputs
(dynamic sizes) are not in ``triton.cudagraph_capture_sizes`` run without capture; calls
whose inputs are on the CPU or on several devices run without capture and say why.
"""

from __future__ import annotations

import logging
import operator
import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch

from . import logs, upstream_config
from .adapter import AdapterUnavailable, supports
from .node import Mode
from .tree import get_manager, remedy


def _mode(is_backward: bool, is_inference: bool) -> Mode:
    assert not (is_backward and is_inference)
    return Mode.BACKWARD if is_backward else (Mode.INFERENCE if is_inference else Mode.FORWARD)


def _misuse(inputs: Sequence[Any], device: torch.device) -> str | None:
    devices = {x.device for x in inputs if isinstance(x, torch.Tensor)}
    if any(d.type == "cpu" for d in devices):
        return "CPU tensor inputs (a graph cannot read host memory at replay)"
    others = devices - {device}
    if others:
        return f"inputs on {sorted(map(str, devices))}, graph device {device}"
    return None


def graphify(
    model: Callable[[list], Any],
    inputs: Sequence[Any],
    static_input_idxs: Sequence[int] = (),
    *,
    device_index: int | None = None,
    device_type: str | None = None,
    is_backward: bool = False,
    is_inference: bool = False,
    stack_traces: list[str | None] | None = None,
    constants: tuple[torch.Tensor, ...] = (),
    mutated_input_idxs: Sequence[int] = (),
    compile_id: Any = None,
    name: str | None = None,
    kernel_free: bool | None = None,
    placeholders: Any = None,
) -> Callable[[list], Any]:
    """Wrap ``model`` (boxed: ``model(list) -> list``) so calls warm up, record and replay
    graphs in this thread's tree for the device.

    ``static_input_idxs``: inputs whose addresses are stable (parameters, buffers): baked
    into the graph, never copied; an address change re-records without counting toward
    ``triton.cudagraph_unexpected_rerecord_limit``. ``mutated_input_idxs``: inputs the
    model writes. ``kernel_free``: True when the caller knows the model launches no device
    kernel (not captured, allocations still from the pool). ``placeholders`` is accepted for
    signature parity with upstream and unused.
    """
    tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
    if device_type is None:
        dev_types = {t.device.type for t in tensors if t.device.type != "cpu"}
        device_type = next(iter(dev_types)) if len(dev_types) == 1 else None
    if device_index is None and device_type is not None:
        idxs = {t.device.index for t in tensors if t.device.type == device_type}
        device_index = next(iter(idxs)) if len(idxs) == 1 else 0
    mode = _mode(is_backward, is_inference)
    name = name or getattr(model, "__name__", None) or type(model).__name__
    int_idxs = [i for i, v in enumerate(inputs) if isinstance(v, int) and not isinstance(v, bool)]
    get_ints = operator.itemgetter(*int_idxs) if int_idxs else (lambda _: None)
    reason = None
    if device_type is None:
        reason = "no single device among the inputs"
    elif not supports(device_type):
        reason = f"device {device_type!r} has no graph capture"
    local = (
        threading.local()
    )  # per thread: each thread's tree has its own function ids (threads may compile at once)
    device = torch.device(device_type, device_index) if reason is None else None
    Tensor = torch.Tensor

    def run(new_inputs: list) -> Any:
        if reason is not None:
            return _plain(new_inputs, reason, "no_capture_device")
        cfg = upstream_config.snapshot()  # upstream config, read once per generation
        if not cfg.trees:
            return _plain(new_inputs, "triton.cudagraph_trees is off", "trees_off")
        key = get_ints(new_inputs)
        sizes = cfg.sizes
        if (
            sizes is not None and key not in sizes
        ):  # only the allowlisted capture sizes are captured
            return _plain(
                new_inputs,
                f"size {key} not in triton.cudagraph_capture_sizes {sizes}",
                "size_not_captured",
            )
        # inputs on another device (misuse, item 5) are checked by the tree only when no recorded
        # graph matched: a match proves every tensor input is where the graph reads it
        manager = get_manager(device_type, device_index)
        fns = getattr(local, "fns", None)
        if fns is None or local.manager is not manager:
            fns = local.fns = {}
            local.manager = manager
        fn = fns.get(key)
        if fn is None:
            fn = fns[key] = manager.add_function(
                model,
                static_input_idxs,
                mode=mode,
                name=name,
                compile_id=compile_id,
                constants=constants,
                mutated_input_idxs=mutated_input_idxs,
                stack_traces=stack_traces,
                kernel_free=kernel_free,
                check_inputs=check_inputs,
            )
        return manager.run(fn, new_inputs, cfg)

    def check_inputs(new_inputs: list) -> str | None:
        for x in new_inputs:
            if isinstance(x, Tensor) and x.device != device:
                return _misuse(new_inputs, device)
        return None

    warned: set[str] = set()

    def _plain(new_inputs: list, why: str, kind: str) -> Any:
        """A call the tree never sees: counted in the device's tree (when there is one) and said
        once per reason, with the remedy."""
        stats["eager"] += 1
        if device is not None:
            get_manager(device_type, device_index).note_fallback(
                kind, why, name=name, inputs=new_inputs
            )
        elif why not in warned:
            warned.add(why)
            logs.event(
                "run_without_capture",
                logging.WARNING,
                inputs=new_inputs,
                function=name,
                reason=why,
                remedy=remedy(kind),
            )
        return model(list(new_inputs))

    stats = {"eager": 0}
    run.stats = stats  # type: ignore[attr-defined]
    run._boxed_call = True  # type: ignore[attr-defined]
    return run


def graphify_callable(
    fn: Callable[..., Any],
    example_inputs: Sequence[Any],
    static_argnums: Sequence[int] = (),
    **kwargs: Any,
) -> Callable[..., Any]:
    """Convenience for plain functions ``fn(*args) -> tensor | tuple``."""

    def boxed(args: list) -> list:
        out = fn(*args)
        return list(out) if isinstance(out, (tuple, list)) else [out]

    boxed.__name__ = getattr(fn, "__name__", "fn")
    wrapped = graphify(boxed, list(example_inputs), static_argnums, **kwargs)

    def call(*args: Any):
        out = wrapped(list(args))
        return out[0] if len(out) == 1 else tuple(out)

    call.graphified = wrapped  # type: ignore[attr-defined]
    return call


def manager_for(device_type: str = "npu", device_index: int = 0):
    """This thread's tree for the device (None before first use)."""
    try:
        return get_manager(device_type, device_index, create=False)
    except AdapterUnavailable:
        return None


logging.getLogger("npu_graphtree").addHandler(logging.NullHandler())
