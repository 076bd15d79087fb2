"""What components add to Inductor's choices object for npu graphs.

npu-lowering's choices class (``NpuChoices``, Inductor's ``inductor_choices_class`` when the
user set none) asks these; components register them (npu-autotune: swap-A/B GEMM templates;
Cube-aware flex-attention configs). Components may not import each other: the core
package holds the registration. Upstream's hooks they ride on: ``InductorChoices.
get_template_configs`` (the templates a GEMM lowering offers, per op) and
``InductorChoices.get_config_heuristics`` (the device's config lists: flex attention).
"""

from __future__ import annotations

import threading
from typing import Any, Callable

_template_hooks: dict[str, Callable[[Any, list, str], list]] = {}
_heuristic_hooks: dict[str, Callable[[str], Any]] = {}
_lock = threading.Lock()


def extra_templates(owner: str, fn: Callable[[Any, list, str], list]) -> None:
    """``fn(kernel_inputs, templates, op_name)`` returns templates to offer next to the ones
    upstream's lowering chose for an npu GEMM (their configs come from upstream's
    template-heuristic registry). Idempotent per owner."""
    with _lock:
        _template_hooks.setdefault(owner, fn)


def config_heuristics(owner: str, fn: Callable[[str], Any]) -> None:
    """``fn(device_type)`` returns the device's config heuristic (a ``BaseConfigHeuristic``)
    or None. The first owner's answer that is not None wins. Idempotent per owner."""
    with _lock:
        _heuristic_hooks.setdefault(owner, fn)


def owners() -> list[str]:
    return sorted(set(_template_hooks) | set(_heuristic_hooks))


def with_extra_templates(kernel_inputs, templates: list, op_name: str) -> list:
    """Upstream's templates followed by those the components add (each once)."""
    out = list(templates)
    for fn in list(_template_hooks.values()):
        for t in fn(kernel_inputs, out, op_name) or ():
            if all(t is not u for u in out):
                out.append(t)
    return out


def heuristic_for(device_type: str):
    for fn in list(_heuristic_hooks.values()):
        h = fn(device_type)
        if h is not None:
            return h
    return None
