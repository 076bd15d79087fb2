"""Discovery and registration of npu-inductor components.

A component is an installed distribution that declares an entry point in the group
``npu_inductor.components`` whose object is an idempotent ``register()`` callable.
A register function may carry ``after = ("other-component", ...)``: those components,
when installed, are registered first. Missing ones are ignored, so every component stays
optional. A register function with ``provides_device = "npu"`` (npu-sim's) is skipped where
torch_npu is installed: torch_npu is then the device.

Before any component is loaded, every installed component's declared sibling ranges are
checked (versions.py): a sibling outside its range fails ``enable()`` with both versions and
the pip command that fixes it.
"""

from __future__ import annotations

import importlib.util
import threading
from dataclasses import dataclass
from importlib import metadata

from . import versions

GROUP = "npu_inductor.components"


class ComponentError(RuntimeError):
    """A component could not be loaded or registered; ``component`` names it."""

    def __init__(self, component: str, target: str, cause: BaseException):
        self.component = component
        super().__init__(
            f"npu-inductor component {component!r} ({target}) failed to register: "
            f"{type(cause).__name__}: {cause}"
        )


@dataclass(frozen=True)
class Component:
    name: str
    target: str  # "module:attr" of the register callable
    distribution: str | None
    version: str | None


def _entry_points() -> list[metadata.EntryPoint]:
    return sorted(metadata.entry_points(group=GROUP), key=lambda ep: ep.name)


def discover() -> list[Component]:
    """Installed components, without loading them."""
    out = []
    for ep in _entry_points():
        dist = getattr(ep, "dist", None)
        out.append(
            Component(
                ep.name, ep.value, dist.name if dist else None, dist.version if dist else None
            )
        )
    return out


def _ordered(loaded: dict[str, object]) -> list[str]:
    """Names in an order where every component follows the installed ones it names in ``after``."""
    order: list[str] = []
    state: dict[str, str] = {}

    def visit(name: str, chain: tuple[str, ...]) -> None:
        if state.get(name) == "done":
            return
        if state.get(name) == "visiting":
            raise ValueError(
                f"cycle in component 'after' declarations: {' -> '.join(chain + (name,))}"
            )
        state[name] = "visiting"
        for dep in getattr(loaded[name], "after", ()):
            if dep in loaded:
                visit(dep, chain + (name,))
        state[name] = "done"
        order.append(name)

    for name in sorted(loaded):
        visit(name, ())
    return order


_lock = threading.Lock()
_enabled: list[str] | None = None


def enable() -> list[str]:
    """Register every installed component; return their names in registration order.

    Idempotent: later calls return the first result. A component that fails to load or
    register raises :class:`ComponentError` naming it, and nothing is marked enabled, so a
    fixed environment can call ``enable()`` again.
    """
    global _enabled
    with _lock:
        if _enabled is not None:
            return list(_enabled)
        eps = _entry_points()
        targets = {ep.name: ep.value for ep in eps}
        try:
            versions.check([ep.dist.name for ep in eps if getattr(ep, "dist", None)])
        except versions.SiblingVersionError as exc:
            raise ComponentError(
                exc.row.component, f"{exc.row.component} {exc.row.version}", exc
            ) from exc
        loaded: dict[str, object] = {}
        for ep in eps:
            try:
                loaded[ep.name] = ep.load()
            except Exception as exc:
                raise ComponentError(ep.name, ep.value, exc) from exc
        if importlib.util.find_spec("torch_npu") is not None:
            loaded = {
                n: f for n, f in loaded.items() if getattr(f, "provides_device", None) != "npu"
            }
        order = _ordered(loaded)
        for name in order:
            try:
                loaded[name]()
            except Exception as exc:
                raise ComponentError(name, targets[name], exc) from exc
        _enabled = order
        return list(order)


def enabled() -> list[str] | None:
    """Names registered by a successful :func:`enable`, or None before one."""
    return None if _enabled is None else list(_enabled)
