"""The registry of upstream patches: what npu-inductor changed in torch and Triton, and who.

Every installer of a patch (a function in a package's ``_compat.py`` that replaces an upstream
symbol) is decorated with :func:`upstream_patch`. The decorator only wraps the install call:
when the installer ran and did not return ``False`` (its way of saying "nothing patched":
another torch, symbol absent, already installed), one :class:`Patch` per symbol is recorded.
:func:`active` lists them (``npu-inductor doctor --patches`` prints them); :func:`declared`
lists every decorated installer of the modules imported so far, installed or not.

A symbol may be replaced by one owner only (issue 18: "no upstream symbol is replaced at two
sites"): an installer whose symbol another distribution already replaced raises
:class:`PatchConflict` before it runs.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import threading
from typing import Callable, TypeVar

F = TypeVar("F", bound=Callable)


@dataclasses.dataclass(frozen=True)
class Patch:
    symbol: str  # the upstream name replaced, e.g. "torch._inductor.utils.is_big_gpu"
    owner: str  # the installing distribution, e.g. "npu-lowering"
    versions: str  # the torch / Triton versions the patch is written for
    reason: str
    removed_by: str  # the upstream hook that would make it unnecessary
    installer: str  # "module.function" that installs it
    # the torch release series ("2.13", ...) whose upstream needs it; None: every supported torch
    # (a Triton patch, or one no torch release has removed yet)
    torch: tuple[str, ...] | None = None

    def needed_on(self, torch_series: str) -> bool:
        """Whether this torch series needs the patch (doctor: "not needed on this torch")."""
        return self.torch is None or torch_series in self.torch


class PatchConflict(RuntimeError):
    """Two distributions replace the same upstream symbol."""


_declared: dict[str, tuple[Patch, ...]] = {}  # installer -> its patches, installed or not
_active: dict[str, tuple[Patch, ...]] = {}  # installer -> its patches, once installed
_lock = threading.Lock()


def upstream_patch(
    *symbols: str,
    versions: str,
    removed_by: str,
    reason: str | None = None,
    owner: str | None = None,
    torch: tuple[str, ...] | None = None,
) -> Callable[[F], F]:
    """Decorate the installer of a patch of ``symbols`` (dotted upstream names).

    ``torch`` names the torch release series whose upstream needs the patch (on any other the
    installer returns ``False``, and doctor says the patch is not needed there); None (the
    default) is every supported torch.

    ``reason`` defaults to the first sentence of the installer's docstring, ``owner`` to the
    distribution named after the installer's top-level package (``npu_lowering`` ->
    ``npu-lowering``). The installer returns ``False`` when it patched nothing."""
    if not symbols:
        raise ValueError("upstream_patch needs at least one symbol")

    def decorate(install: F) -> F:
        name = f"{install.__module__}.{install.__qualname__}"
        by = owner or install.__module__.split(".")[0].replace("_", "-")
        why = reason or first_sentence(install.__doc__ or "")
        if not why:
            raise ValueError(f"{name}: a patch needs a reason (docstring or reason=)")
        records = tuple(
            Patch(s, by, versions, why, removed_by, name, tuple(torch) if torch else None)
            for s in symbols
        )
        _declared[name] = records

        @functools.wraps(install)
        def installer(*args, **kwargs):
            if name in _active:  # recorded already: the call only does the installer's own work
                return install(*args, **kwargs)
            _check_owner(records)
            result = install(*args, **kwargs)
            if result is not False:
                with _lock:
                    _check_owner(records)
                    _active[name] = records
            return result

        installer.patches = records
        return installer  # type: ignore[return-value]

    return decorate


def withdraw(installer: Callable) -> None:
    """Forget an installer's patches: it restored upstream's symbols (a benchmark-only route)."""
    with _lock:
        for p in getattr(installer, "patches", ()):
            _active.pop(p.installer, None)


def active() -> list[Patch]:
    """Every patch installed in this process, in installation order."""
    return [p for records in list(_active.values()) for p in records]


def declared() -> list[Patch]:
    """Every patch whose installer was imported, installed or not (lazily installed ones, those
    for another torch, benchmark-only ones)."""
    return [p for records in list(_declared.values()) for p in records]


def _check_owner(records: tuple[Patch, ...]) -> None:
    for other in active():
        for p in records:
            if other.symbol == p.symbol and other.owner != p.owner:
                raise PatchConflict(
                    f"{p.symbol} is replaced by {other.owner} ({other.installer}) and "
                    f"{p.owner} ({p.installer}): one upstream symbol, one owner; "
                    "register a callback with the first instead"
                )


# a period after a word (not "e.g." inside a sentence, not "2.13", not "torch._inductor") and
# before a capital, a quote or the end
_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\"'`])\.(?=\s+[A-Z(`\"]|\s*$)")


def first_sentence(doc: str) -> str:
    """The first sentence of a docstring, on one line, without reST literal quotes."""
    text = " ".join(doc.replace("``", "").split())
    end = _SENTENCE_END.search(text)
    return text[: end.end()] if end else text
