"""Contexts components run around upstream's ``compile_fx`` (one patch, in ``_compat``) and
around each graph it compiles.

Several components need to be "inside" every Inductor compile: npu-cache marks whether the
compile is for npu (its caches route on it), npu-autotune records the compile's real inputs.
Each used to replace ``torch._inductor.compile_fx.compile_fx`` itself, so which wrapper ran
outermost depended on registration order. Now each registers a context factory here, and the
core package's single wrapper enters them in a declared order.

Per graph (``around_compile_graph``): a backward graph is compiled lazily, at the first
backward call, outside ``compile_fx``. The same wrapper hands upstream's ``compile_fx`` an
``inner_compile`` argument that enters the per-graph contexts, as upstream itself does for
``config_patches`` ("backwards is compiled out of scope"): every forward and backward graph
goes through it, and no further upstream symbol is replaced.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
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
_graph_hooks: list[_Hook] = []  # fn(gm, example_inputs) -> a context manager or None, per graph
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
    _compat.dispatch_compile_fx(entered, per_graph)


def around_compile_graph(owner: str, fn: ContextFactory, after: tuple[str, ...] = ()) -> None:
    """Run ``fn(gm, example_inputs)``'s context around each graph ``compile_fx`` compiles
    (forward, inference and the lazily compiled backward: upstream's ``inner_compile``, i.e.
    ``compile_fx_inner``, FX graph cache lookup included), inside the owners named in
    ``after``. Idempotent per owner."""
    from . import _compat

    with _lock:
        if any(h.owner == owner for h in _graph_hooks):
            return
        _graph_hooks.append(_Hook(owner, fn, tuple(after)))
        _graph_hooks[:] = _ordered(_graph_hooks)
    _compat.dispatch_compile_fx(entered, per_graph)


def graph_on_npu(gm, example_inputs=()) -> bool:
    """Does this graph compile for device "npu": an example input on npu, or anything the
    FX graph module places there? What a per-graph context asks before it enters."""
    from torch._inductor.utils import get_all_devices

    if any(
        getattr(getattr(t, "device", None), "type", None) == "npu" for t in example_inputs or ()
    ):
        return True
    try:
        return any(d.type == "npu" for d in get_all_devices(gm))
    except Exception:  # an unusual graph (not an FX graph module): not ours
        return False


def owners() -> list[str]:
    """The registered owners, outermost first."""
    return [h.owner for h in _hooks]


def graph_owners() -> list[str]:
    """The owners registered per graph, outermost first."""
    return [h.owner for h in _graph_hooks]


def _ordered(hooks: list[_Hook]) -> list[_Hook]:
    """Registration order, except that a hook follows every owner its ``after`` names."""
    out: list[_Hook] = []
    pending = list(hooks)
    while pending:
        placed = {h.owner for h in out}
        ready = next(
            (
                h
                for h in pending
                if all(a in placed or a not in {p.owner for p in pending} for a in h.after)
            ),
            pending[0],
        )  # a cycle: keep order
        out.append(ready)
        pending.remove(ready)
    return out


@contextlib.contextmanager
def _enter(hooks: list[_Hook], model, example_inputs):
    with contextlib.ExitStack() as stack:
        for h in list(hooks):
            cm = h.fn(model, example_inputs)
            if cm is not None:
                stack.enter_context(cm)
        yield


def entered(model, example_inputs):
    """Every registered context for this compile, outermost first."""
    return _enter(_hooks, model, example_inputs)


def graph_entered(gm, example_inputs):
    """Every per-graph context for this graph, outermost first."""
    return _enter(_graph_hooks, gm, example_inputs)


def per_graph(inner_compile):
    """``inner_compile`` entering the per-graph contexts; ``inner_compile`` itself when none
    is registered or it already does (upstream's recursive ``config_patches`` call)."""
    if not _graph_hooks or _enters_graph_hooks(inner_compile):
        return inner_compile

    @functools.wraps(inner_compile)
    def inner(gm, example_inputs, *args, **kwargs):
        with graph_entered(gm, example_inputs):
            return inner_compile(gm, example_inputs, *args, **kwargs)

    inner._npu_core_graph = True
    return inner


def _enters_graph_hooks(fn) -> bool:
    for _ in range(32):  # wrappers (functools.wraps) and partials around ours
        if fn is None:
            return False
        if getattr(fn, "_npu_core_graph", False):
            return True
        fn = getattr(fn, "__wrapped__", None) or getattr(fn, "func", None)
    return False
