"""``mode="reduce-overhead"`` with Inductor: hand npu graphs to our trees.

torch 2.13 has the hook: ``torch._inductor.config.cudagraph_policy`` (a ``CUDAGraphPolicy``).
Inductor refuses cudagraphs for any device but cuda (``check_multiple_devices_or_any_cpu_nodes``
reports "multiple devices: npu:0"), so an npu graph never reaches ``policy.cudagraphify``; but
``policy.wrap_output`` is called for every compiled graph after ``post_compile``. Ours wraps a
graph there when (a) reduce-overhead is on (``triton.cudagraphs``), (b) the graph runs on
exactly one device of a type we capture, and (c) Inductor's only objection was that device.
Everything else -- cpu graphs, and cuda graphs unless ``use_for_cuda(True)`` -- passes
through untouched, and ``cudagraphify``/``should_wrap`` keep upstream's behaviour.

Installing: ``register()`` sets the policy only when no other policy is set. Because a set
policy makes Inductor route cuda graphs through ``cudagraph_post_compile`` instead of the
partition path (``graph_partition=True``), the policy is installed only where cuda is not
available, or when the user opts in (``use_for_cuda``): cuda compiles stay upstream's.
"""

from __future__ import annotations

import functools
import logging

import torch

from . import _compat

log = logging.getLogger("npu_graphtree")
_state = {"cuda": False, "installed": None}


def _policy_base():
    if _compat.has_cudagraph_policy():
        from torch._inductor.cudagraph_utils import CUDAGraphPolicy

        return CUDAGraphPolicy
    return object


def should_wrap(compiled_graph) -> bool:
    """Whether upstream's cudagraph tree may wrap this graph: not a cuda graph we take."""
    return not (_state["cuda"] and "cuda" in (getattr(compiled_graph, "device_types", ()) or ()))


class GraphTreePolicy(_policy_base()):
    """Upstream's policy, plus: npu graphs (and cuda ones, when chosen) get our trees."""

    def should_wrap(self, compiled_graph) -> bool:
        return should_wrap(compiled_graph)

    def wrap_output(self, output_code):
        wrap_compiled_graph(output_code)
        return output_code


def take(compiled_graph) -> tuple[str, int] | None:
    """(device type, index) when this compiled graph is ours to wrap, else None."""
    from torch._inductor import config
    from torch._inductor.cudagraph_utils import check_multiple_devices_or_any_cpu_nodes

    from .adapter import supports

    if not config.triton.cudagraphs or getattr(compiled_graph, "_npu_graphtree_wrapped", False):
        return None
    types = set(getattr(compiled_graph, "device_types", ()) or ()) - {"meta"}
    idxs = set(getattr(compiled_graph, "device_idxs", ()) or ())
    if (
        len(types) != 1
        or len(idxs) != 1
        or getattr(compiled_graph, "current_callable", None) is None
    ):
        return None
    dev_type, dev_index = next(iter(types)), next(iter(idxs))
    if dev_type == "cpu" or (dev_type == "cuda" and not _state["cuda"]) or not supports(dev_type):
        return None
    reason = getattr(compiled_graph, "disabled_cudagraphs_reason", None)
    if dev_type != "cuda":
        # the device check is the last check Inductor makes: equal to its message for our
        # single device means every earlier check passed
        if reason != check_multiple_devices_or_any_cpu_nodes(
            {torch.device(dev_type, dev_index): None}
        ):
            return None
    elif reason:
        return None
    return dev_type, dev_index


def _uncaptured_backward(compiled_graph) -> tuple[str, int] | None:
    """(device type, index) of a backward graph on a device of ours that runs without a
    graph: the forward's refusal (Inductor's device check) disabled the BoxedBool forward and
    backward share, so Inductor checked nothing for the backward, and its
    ``maybe_handle_backward_generation`` (which would tell the tree a backward ran) is only
    for upstream's own trees."""
    from torch._inductor import config

    from .adapter import supports

    fx_kwargs = getattr(compiled_graph, "fx_kwargs", {}) or {}
    types = set(getattr(compiled_graph, "device_types", ()) or ()) - {"meta", "cpu"}
    idxs = set(getattr(compiled_graph, "device_idxs", ()) or ())
    if not (
        config.triton.cudagraphs
        and fx_kwargs.get("is_backward")
        and len(types) == 1
        and len(idxs) == 1
    ):
        return None
    dev_type = next(iter(types))
    if (dev_type == "cuda" and not _state["cuda"]) or not supports(dev_type):
        return None
    return dev_type, next(iter(idxs))


def wrap_compiled_graph(compiled_graph) -> bool:
    target = take(compiled_graph)
    if target is None:
        if (backward := _uncaptured_backward(compiled_graph)) is not None and not getattr(
            compiled_graph, "_npu_graphtree_wrapped", False
        ):
            from . import tree

            compiled_graph.current_callable = tree.notify_backward(
                compiled_graph.current_callable, lambda: backward
            )
            compiled_graph._npu_graphtree_wrapped = True
        return False
    from . import api, partition, tree

    fx_kwargs = getattr(compiled_graph, "fx_kwargs", {}) or {}
    info = getattr(compiled_graph, "cudagraph_info", None)
    compile_id = torch._guards.CompileContext.current_compile_id()
    common = dict(
        device_type=target[0],
        device_index=target[1],
        is_backward=bool(fx_kwargs.get("is_backward")),
        is_inference=bool(fx_kwargs.get("is_inference")),
        compile_id=compile_id,
    )
    static = tuple(fx_kwargs.get("static_input_idxs") or ())
    mutated = tuple(getattr(compiled_graph, "mutated_input_idxs", ()) or ())
    maps = getattr(compiled_graph, "partition_maps", None) or []
    apply = getattr(compiled_graph, "recursively_apply_fns", None)
    manager = tree.get_manager(*target)
    if maps and apply is not None:
        # Inductor's graph partitions (as upstream's partition path): each is a tree function of
        # its own; ops the device cannot capture (partition.py) run between their replays
        splits = partition.splits_in(compiled_graph, manager.adapter)
        wrappers = []
        for pm in maps:
            idx = pm.input_index_mapping
            wrappers.append(
                functools.partial(
                    partition.flat_partition,
                    graphify=api.graphify,
                    static_input_idxs=[
                        i for i, g in enumerate(idx) if g is not None and g in static
                    ],
                    mutated_input_idxs=[
                        i for i, g in enumerate(idx) if g is not None and g in mutated
                    ],
                    name=f"inductor_graph.partition_{pm.id}",
                    **common,
                )
            )
        apply(wrappers)
        manager.counters["partitions"] += len(maps)
        manager.counters["splits"] += len(splits)
        for op, reason in splits.items():
            manager.counters["split." + op] += 1
            partition.say(op, reason, compile_id)
        log.info(
            "npu_graphtree: reduce-overhead graph on %s:%s wrapped in %d partition(s)%s",
            *target,
            len(maps),
            f" around {', '.join(sorted(splits))}" if splits else "",
        )
    else:
        compiled_graph.current_callable = api.graphify(
            compiled_graph.current_callable,
            [],
            static,
            stack_traces=getattr(info, "stack_traces", None),
            mutated_input_idxs=mutated,
            name="inductor_graph",
            **common,
        )
        manager.counters["partitions"] += 1
        log.info("npu_graphtree: reduce-overhead graph on %s:%s wrapped", *target)
    compiled_graph._npu_graphtree_wrapped = True
    return True


def install() -> str | None:
    """Install the hook (Inductor's ``cudagraph_policy``); returns "policy", or None."""
    if _state["installed"]:
        return _state["installed"]
    if torch.cuda.is_available() and not _state["cuda"]:
        return None  # a set policy would change cuda's partition path: opt-in only
    from . import partition

    partition.install()  # Inductor partitions npu graphs around ops the device cannot capture
    if _compat.has_cudagraph_policy():
        from torch._inductor import config

        if config.cudagraph_policy is None:
            config.cudagraph_policy = GraphTreePolicy()
            _state["installed"] = "policy"
        elif isinstance(config.cudagraph_policy, GraphTreePolicy):
            _state["installed"] = "policy"
    return _state["installed"]


def use_for_cuda(enabled: bool = True) -> str | None:
    """Choose our trees for cuda reduce-overhead too (to compare with upstream's)."""
    _state["cuda"] = enabled
    return install() if enabled else _state["installed"]
