"""The npu kernel object is explicit (issue 35 item 2): one class, parts as named fields, the
decorators a kernel gets looked up in npu-inductor-core's registry, and the facts packages
share about a kernel (its flavour, its hint sizes) named once, in npu-inductor-core.

Read from the sources (not imported): what no package may do again.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PACKAGES = Path(__file__).resolve().parents[2]
SOURCES = sorted(f for f in PACKAGES.glob("*/src/**/*.py"))
CORE = PACKAGES / "npu-inductor-core" / "src"
# a Python tensor made to raise on use: it must be the object the user already holds, so its
# class changes in place (upstream's cudagraph trees do this natively; npu-graphtree does it
# in Python only where the device has no storage access error)
TENSOR_RECLASS = PACKAGES / "npu-graphtree" / "src" / "npu_graphtree" / "storage.py"


def _own_code(path: Path) -> bool:
    # a ``_compat.py`` holds the registered patches of upstream symbols (npu-sim's swaps the
    # class of Triton's one interpreter builder instance): upstream's objects, not ours
    return path != TENSOR_RECLASS and path.name != "_compat.py"


def _code_lines(path: Path):
    for n, line in enumerate(path.read_text().splitlines(), 1):
        code = line.split("#", 1)[0]
        if code.strip():
            yield n, code


@pytest.mark.parametrize("pattern", [r"globals\(\)\.update", r"__class__\s*=(?!=)"])
def test_no_composition_at_run_time(pattern):
    found = [
        f"{p.relative_to(PACKAGES)}:{n}"
        for p in SOURCES
        if _own_code(p)
        for n, code in _code_lines(p)
        if re.search(pattern, code)
    ]
    assert not found, found


def test_shared_kernel_meta_keys_are_named_once():
    keys = ('"npu_flavour"', '"npu_hint_size_hints"', "'npu_flavour'", "'npu_hint_size_hints'")
    found = [
        f"{p.relative_to(PACKAGES)}:{n}"
        for p in SOURCES
        if not p.is_relative_to(CORE)
        for n, code in _code_lines(p)
        if any(k in code for k in keys)
    ]
    assert not found, found


def test_no_private_reads_of_the_lowering_kernel_object():
    # what npu-autotune once read of npu-lowering's NpuCachingAutotuner
    private = re.compile(r"\._simulated\b|\._sim_config\b|\._declared_constants\b|\"_simulated\"")
    autotune = PACKAGES / "npu-autotune" / "src"
    found = [
        f"{p.relative_to(PACKAGES)}:{n}"
        for p in SOURCES
        if p.is_relative_to(autotune)
        for n, code in _code_lines(p)
        if private.search(code)
    ]
    assert not found, found


def test_the_registry_holds_the_lowering_class_and_its_decorators():
    from npu_inductor_core import kernel_objects
    from npu_lowering.runtime import heuristics

    assert kernel_objects.kernel_class("npu") is heuristics.NpuCachingAutotuner
    for name in kernel_objects.HEURISTIC_NAMES:
        assert callable(kernel_objects.heuristic("npu", name))
        assert callable(getattr(heuristics, name))
    part = kernel_objects.tuning("npu")
    if part is not None:  # npu-autotune installed: its part takes every hook
        names = kernel_objects.TUNING_HOOKS + kernel_objects.TUNING_QUERIES
        assert all(callable(getattr(part, name)) for name in names)
