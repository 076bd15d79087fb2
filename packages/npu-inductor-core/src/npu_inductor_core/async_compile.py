"""The ``AsyncCompile`` of npu graphs' generated modules.

npu-lowering's wrapper codegen binds ``async_compile`` to ``NpuAsyncCompile()`` right after
upstream's header line ``async_compile = AsyncCompile()``, so npu graphs compile and wait for
their kernels through this subclass while every other graph keeps upstream's class, and no
upstream symbol is replaced. Components register what happens around it (npu-autotune: tag
each npu kernel future, run the wait with its timeout, watchdog and progress line).
Components may not import each other: the core package holds the registration.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from torch._inductor.async_compile import AsyncCompile

_lock = threading.Lock()
_taggers: dict[str, Callable[[Any, str], Any]] = {}
_waiter: list[Callable[..., Any]] = []  # one owner: a wait runs inside at most one wrapper


def on_triton_future(owner: str, fn: Callable[[Any, str], Any]) -> None:
    """Call ``fn(future, kernel_name)`` for each npu kernel an npu graph submits. Idempotent
    per owner."""
    with _lock:
        _taggers.setdefault(owner, fn)


def around_wait(owner: str, fn: Callable[..., Any]) -> None:
    """``fn(upstream_wait, async_compile, scope)`` runs an npu graph's wait for its kernels.
    One owner; a second owner is an error (two wrappers would each need the other's order)."""
    with _lock:
        if _waiter and getattr(_waiter[0], "_owner", owner) != owner:
            raise RuntimeError(
                f"npu_inductor_core.async_compile: the wait is already wrapped by "
                f"{_waiter[0]._owner}; {owner} cannot wrap it too"
            )
        fn._owner = owner
        _waiter[:] = [fn]


class NpuAsyncCompile(AsyncCompile):
    def triton(self, kernel_name: str, source_code: str, device_str: str = "cuda"):
        result = super().triton(kernel_name, source_code, device_str)
        if device_str == "npu":
            for fn in list(_taggers.values()):
                result = fn(result, kernel_name) or result
        return result

    def _wait_futures(self, scope: dict) -> None:
        if _waiter:
            return _waiter[0](AsyncCompile._wait_futures, self, scope)
        return super()._wait_futures(scope)
