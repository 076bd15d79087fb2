"""Split compiled graphs around ops the device cannot capture (issue 37), with upstream's
mechanism: Inductor's graph partition (``torch._inductor.config.graph_partition``, on by
default) puts every node its scheduler's ``should_partition`` names outside the partitions, and
``post_compile`` hands the partitions to the graph tree (``policy.wrap_compiled_graph`` wraps
each with ``graphify``); the rest runs between replays, uncaptured.

The per-op hook upstream offers is ``config.custom_should_partition_ops`` (op names, asked with
``in`` for every fallback kernel). ``install()`` makes its value a ``DeviceRefusals``: a list
holding exactly the user's entries (so the FX graph cache key and every cuda/cpu compile stay as
they were) whose membership also answers "yes" for an op the device of the graph being
compiled refuses to capture (``adapter.uncapturable_reason``: npu-sim's capturable set; an
Ascend NPU's, since npu-sim's list is torch_npu's). No upstream symbol is replaced.

Each split op is logged once (event ``partition_split`` on the ``npu_graphtree`` logger and
``TORCH_LOGS="+cudagraphs"``) with the device's reason, and counted per compiled graph in its
tree's counters when the graph is wrapped (``splits``, ``split.<op>``, ``partitions``); both
come from the generated code (``splits_in``), so a graph from the FX graph cache counts too.

A partition input that is a tuple or list of tensors (a multi-output fallback's result, e.g.
``median``'s (values, indices), handed whole to the next partition) would be an opaque input
whose identity changes every call (a re-record per call): ``flat_partition`` passes its
tensors as inputs of their own, copied into the graph's placeholders like any other.
"""

from __future__ import annotations

import logging
import re
import threading

import torch

from . import logs

_lock = threading.Lock()
_logged: set[str] = set()


class DeviceRefusals(list):
    """``custom_should_partition_ops``: the user's op names, plus -- for membership, while a graph
    on a device with capture rules compiles -- the ops that device cannot capture."""

    def __contains__(self, name) -> bool:
        if list.__contains__(self, name):
            return True
        if not isinstance(name, str) or "." not in name.split("::", 1)[-1]:
            return False  # upstream asks the packet and the overload name: answer for the overload only
        return _device_refuses(name) is not None

    def __reduce_ex__(
        self, protocol
    ):  # pickled (config copies, the FX cache key) as the user's list
        return (list, (list(self),))

    def __copy__(self):
        return DeviceRefusals(list(self))

    def __deepcopy__(self, memo):
        return DeviceRefusals(list(self))


def _graph_device_type() -> str | None:
    from torch._inductor.virtualized import V

    try:
        types = set(V.graph.device_types) - {"cpu", "meta"}
    except Exception:  # noqa: BLE001  (no graph being compiled: V.graph is a null handler)
        return None
    return next(iter(types)) if len(types) == 1 else None


def _device_refuses(op_name: str) -> str | None:
    device_type = _graph_device_type()
    if device_type is None or device_type == "cuda":
        return None
    from .adapter import AdapterUnavailable, get_adapter

    try:
        return get_adapter(device_type).uncapturable_reason(op_name)
    except AdapterUnavailable:
        return None


# an op call in the generated code: torch.ops.<namespace>.<op>.<overload>(
_OP_CALL = re.compile(r"torch\.ops\.(\w+)\.(\w+)\.(\w+)\(")


def splits_in(compiled_graph, adapter) -> dict[str, str]:
    """The ops the device refuses that run outside the partitions of a compiled graph, with the
    device's reason, read from its generated code (the ``call`` between partition calls), so a
    graph loaded from the FX graph cache says the same as one compiled now."""
    src = getattr(compiled_graph, "source_code", None) or ""
    start = src.find("class Runner")
    if start < 0:
        return {}
    end = src.find("\nrunner = Runner", start)
    out = {}
    for ns, op, overload in _OP_CALL.findall(src[start : end if end > 0 else None]):
        name = f"{ns}::{op}.{overload}"
        if name not in out and (reason := adapter.uncapturable_reason(name)) is not None:
            out[name] = reason
    return out


def say(op_name: str, reason: str, compile_id) -> None:
    """Log a split once per op and process (event ``partition_split``)."""
    with _lock:
        first = op_name not in _logged
        _logged.add(op_name)
    if first:
        logs.event(
            "partition_split",
            logging.INFO,
            op=op_name,
            reason=reason,
            compile_id=str(compile_id),
            remedy="the graph is captured in partitions around it; the op runs between replays",
        )


def install() -> bool:
    """Make ``custom_should_partition_ops`` a ``DeviceRefusals`` (keeping the user's entries)."""
    from torch._inductor import config

    if not hasattr(
        config, "custom_should_partition_ops"
    ):  # a torch without the hook: nothing to split by
        return False
    current = config.custom_should_partition_ops
    if isinstance(current, DeviceRefusals):
        return False
    config.custom_should_partition_ops = DeviceRefusals(current or [])
    return True


def flat_partition(partition_fn, graphify, static_input_idxs, mutated_input_idxs, **kwargs):
    """``graphify`` for one partition function, with tuple/list-of-tensor inputs flattened into
    tensor inputs of their own (the structure is the partition's, fixed at its first call)."""
    state: dict = {}

    def unflat(flat: list) -> list:
        args, pos = [], 0
        for n in state["spec"]:
            if n is None:
                args.append(flat[pos])
                pos += 1
            else:
                args.append(tuple(flat[pos : pos + n]))
                pos += n
        flat.clear()
        return args

    def model(flat: list):
        return partition_fn(unflat(flat))

    model._boxed_call = True

    def run(args: list):
        if "run" not in state:
            spec = [
                len(a)
                if isinstance(a, (tuple, list))
                and a
                and all(isinstance(t, torch.Tensor) for t in a)
                else None
                for a in args
            ]
            state["spec"] = spec
            if not any(n is not None for n in spec):
                state["run"] = graphify(
                    partition_fn,
                    [],
                    static_input_idxs,
                    mutated_input_idxs=mutated_input_idxs,
                    **kwargs,
                )
            else:
                where, pos = [], 0
                for n in spec:
                    where.append(pos)
                    pos += 1 if n is None else n
                state["run"] = graphify(
                    model,
                    [],
                    [where[i] for i in static_input_idxs if spec[i] is None],
                    mutated_input_idxs=[where[i] for i in mutated_input_idxs if spec[i] is None],
                    **kwargs,
                )
                state["flat"] = True
        if state.get("flat"):
            flat = []
            for a, n in zip(args, state["spec"]):
                if n is None:
                    flat.append(a)
                else:
                    flat.extend(a)
            args.clear()
            return state["run"](flat)
        return state["run"](args)

    run._boxed_call = True
    return run
