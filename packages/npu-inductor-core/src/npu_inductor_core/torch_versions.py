"""The torch release series the backend supports, and the one switch code uses to tell them
apart (``at_least("2.14")``): a difference between torch releases is written as a test of the
running torch's series, with the releases named, never as a probe of upstream internals.

The series list is the packages' ``torch>=2.13,<2.16`` requirement spelled out; npu-sim's
pyproject pairs each with its Triton (``triton-for-torch``), npu-inductor's with its torch_npu
(the ``ascend-torch2XX`` extras).
"""

from __future__ import annotations

SUPPORTED = ("2.13", "2.14", "2.15")


def series(version: str | None = None) -> str:
    """'2.14.1+cu130' -> '2.14' (the running torch's when ``version`` is None)."""
    if version is None:
        import torch

        version = torch.__version__
    return ".".join(str(version).split("+")[0].split(".")[:2])


def _key(s: str) -> tuple[int, ...]:
    return tuple(int(p) for p in s.split("."))


def at_least(minimum: str, version: str | None = None) -> bool:
    """True where the running torch (or ``version``) is of series ``minimum`` or newer."""
    return _key(series(version)) >= _key(minimum)


def template_heuristics(submodule: str):
    """A module of Inductor's template-heuristics package (``"registry"``, ``"triton"``): torch
    2.14 moved it from ``torch._inductor.template_heuristics`` to
    ``torch._inductor.heuristics.template`` (the old path is a shim upstream will remove)."""
    import importlib

    base = (
        "torch._inductor.heuristics.template"
        if at_least("2.14")
        else "torch._inductor.template_heuristics"
    )
    return importlib.import_module(f"{base}.{submodule}")
