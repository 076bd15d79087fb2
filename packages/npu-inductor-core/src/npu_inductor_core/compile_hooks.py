"""Contexts components run around upstream's ``compile_fx`` (one patch, in ``_compat``).

Several components need to be "inside" every Inductor compile: npu-cache marks whether the
compile is for npu (its caches route on it), npu-autotune records the compile's real inputs.
Each used to replace ``torch._inductor.compile_fx.compile_fx`` itself, so which wrapper ran
outermost depended on registration order. Now each registers a context factory here, and the
core package's single wrapper enters them in a declared order.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from typing import Callable

# fn(model, example_inputs) -> a context manager, or None to stay out of this compile
ContextFactory = Callable[[object, object], "contextlib.AbstractContextManager | None"]


@dataclasses.dataclass(frozen=True)
class _Hook:
    owner: str
    fn: ContextFactory
    after: tuple[str, ...]


_hooks: list[_Hook] = []
_lock = threading.Lock()


def around_compile_fx(owner: str, fn: ContextFactory, after: tuple[str, ...] = ()) -> None:
    """Run ``fn``'s context around every ``compile_fx`` call, inside the contexts of the
    owners named in ``after`` (entered later than theirs). Idempotent per owner."""
    from . import _compat

    with _lock:
        if any(h.owner == owner for h in _hooks):
            return
        _hooks.append(_Hook(owner, fn, tuple(after)))
        _hooks[:] = _ordered(_hooks)
    _compat.dispatch_compile_fx(entered)


def owners() -> list[str]:
    """The registered owners, outermost first."""
    return [h.owner for h in _hooks]


def _ordered(hooks: list[_Hook]) -> list[_Hook]:
    """Registration order, except that a hook follows every owner its ``after`` names."""
    out: list[_Hook] = []
    pending = list(hooks)
    while pending:
        placed = {h.owner for h in out}
        ready = next((h for h in pending if all(a in placed or a not in {p.owner for p in pending}
                                                for a in h.after)), pending[0])  # a cycle: keep order
        out.append(ready)
        pending.remove(ready)
    return out


@contextlib.contextmanager
def entered(model, example_inputs):
    """Every registered context for this compile, outermost first."""
    with contextlib.ExitStack() as stack:
        for h in list(_hooks):
            cm = h.fn(model, example_inputs)
            if cm is not None:
                stack.enter_context(cm)
        yield
