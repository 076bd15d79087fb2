"""Calls components register to run on an npu graph just before its wrapper code is generated.

npu-lowering's wrapper codegen (the npu graphs' ``PythonWrapperCodegen`` subclass) runs them
when it is created for a graph, which is where upstream's cpp wrapper collects sample inputs
(``extract_autotune_inputs``) before its codegen; npu-autotune registers that step.
Components may not import each other: the core package holds the registration.
"""

from __future__ import annotations

import threading
from typing import Callable

_hooks: dict[str, Callable[[object], None]] = {}
_lock = threading.Lock()


def before_wrapper_codegen(owner: str, fn: Callable[[object], None]) -> None:
    """Run ``fn(graph)`` before each npu graph's wrapper code is generated, in registration
    order. Idempotent per owner."""
    with _lock:
        _hooks.setdefault(owner, fn)


def owners() -> list[str]:
    return list(_hooks)


def run_before_wrapper_codegen(graph) -> None:
    """Called by the npu wrapper codegen (npu-lowering) for the graph it generates."""
    for fn in list(_hooks.values()):
        fn(graph)
