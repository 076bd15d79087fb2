"""Graph passes components add to npu's post-grad pass.

npu-lowering's post-grad pass (npu's ``device_custom_pass``, run by Inductor on graphs with npu
tensors) runs these first, and puts each one's ``cache_key()`` in its uuid (so in the FX
graph cache key); npu-autotune registers npu's shape padding of GEMMs (A04, A05, A07).
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
