"""Graph passes components add to npu's post-grad pass.

npu-lowering's post-grad pass (npu's ``device_custom_pass``, run by Inductor on graphs with npu
tensors) runs these first, and puts each one's ``cache_key()`` in its uuid (so in the FX
graph cache key); npu-autotune registers npu's shape padding of GEMMs (A04, A05, A07),
npu-fusion its half-concatenation rewrite. ``call_function`` builds the nodes they add.
Components may not import each other: the core package holds the registration.
"""

from __future__ import annotations

import threading
from typing import Callable

_passes: dict[str, tuple[Callable, Callable[[], str]]] = {}
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
