"""Graph passes components add to npu compiles: on post-grad graphs and on joint graphs.

Post-grad (``post_grad``): npu-lowering's post-grad pass (npu's ``device_custom_pass``, run by
Inductor on graphs with npu tensors) runs these, and puts each one's ``cache_key()`` in its
uuid (so in the FX graph cache key); npu-autotune registers npu's shape padding of GEMMs,
npu-fusion its half-concatenation rewrite. ``call_function`` builds the nodes they add.

Joint (``joint``): the forward-and-backward graph a training compile builds, before the
partitioner splits it. Inductor has no per-device joint hook, only the user's
``joint_custom_post_pass``; for a compile whose inputs are on npu the core's ``compile_fx``
context sets that config to the user's passes followed by npu's (``NpuJointPasses``, a
``CustomGraphPass`` whose uuid names every registered pass, so graph caches stay keyed), and
leaves it as it was for every other compile.
Components may not import each other: the core package holds the registration.
"""

from __future__ import annotations

import threading
from typing import Callable

_passes: dict[str, tuple[Callable, Callable[[], str]]] = {}
_joint: dict[str, tuple[Callable, Callable[[], str]]] = {}
_lock = threading.Lock()


def post_grad(owner: str, fn: Callable, cache_key: Callable[[], str]) -> None:
    """Run ``fn(gm)`` on each npu post-grad graph, in registration order; ``cache_key()``
    says what of it changes graphs. Idempotent per owner."""
    with _lock:
        _passes.setdefault(owner, (fn, cache_key))


def owners() -> list[str]:
    return list(_passes)


def run_post_grad(gm) -> None:
    for fn, _ in list(_passes.values()):
        fn(gm)


def key() -> str:
    return ",".join(f"{owner}={ck()}" for owner, (_, ck) in sorted(_passes.items()))


def joint(owner: str, fn: Callable, cache_key: Callable[[], str]) -> None:
    """Run ``fn(graph)`` (a ``torch.fx.Graph``) on the joint graph of each npu training
    compile, after upstream's joint passes and the user's, before the partitioner;
    ``cache_key()`` says what of it changes graphs. Idempotent per owner."""
    from . import compile_hooks

    with _lock:
        _joint.setdefault(owner, (fn, cache_key))
    compile_hooks.around_compile_fx("npu-joint-passes", _joint_context)


def joint_owners() -> list[str]:
    return list(_joint)


def _joint_context(model, example_inputs):
    """For an npu compile: the user's joint passes, then npu's; None (nothing changed) else."""
    from torch._inductor import config
    from torch._inductor.custom_graph_pass import get_custom_graph_passes

    from .compile_hooks import graph_on_npu
    from .joint_passes import NpuJointPasses

    if not _joint or not graph_on_npu(model, example_inputs):
        return None
    users = get_custom_graph_passes(config.joint_custom_post_pass)
    return config.patch(joint_custom_post_pass=(*users, NpuJointPasses(dict(_joint))))


def call_function(graph, target, args: tuple, kwargs: dict | None = None, *, like):
    """A new node ``target(*args, **kwargs)`` at the graph's insert point for a pass that
    replaces ``like``: its fake value (``meta["val"]``, in ``like``'s fake mode) and ``like``'s
    stack trace and original ATen op, which later passes and Inductor's lowering read."""
    import torch

    kwargs = kwargs or {}
    node = graph.call_function(target, args, kwargs)
    vals, kwvals = torch.fx.node.map_arg((args, kwargs), lambda n: n.meta["val"])
    with like.meta["val"].fake_mode:
        node.meta["val"] = target(*vals, **kwvals)
    node.meta.update({k: like.meta[k] for k in ("stack_trace", "original_aten") if k in like.meta})
    return node
