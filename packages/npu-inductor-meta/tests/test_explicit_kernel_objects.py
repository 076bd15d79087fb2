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


# an object's class changed, or its state copied into an object built without its constructor
@pytest.mark.parametrize(
    "pattern",
    [r"globals\(\)\.update", r"__class__\s*=(?!=)", r"__dict__\.update", r"object\.__new__"],
)
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


def _pointwise_kernel(props):
    """A one-block pointwise Triton kernel and the triton_meta codegen would give it."""
    import triton
    import triton.language as tl

    @triton.jit
    def k(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
        pass

    signature = {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32"}
    return k, {"signature": signature, "device": props, "constants": {}}


def test_an_upstream_built_kernel_object_is_taken_over_through_the_constructor(npu_props):
    """A decorator with no configs-only mode (here ``fixed_config``) is built by upstream; the
    npu kernel class builds its own object from the arguments upstream gave (no state copied
    into an object made without its constructor), keeping every one of them."""
    import inspect

    from npu_inductor_core import decorators, kernel_objects
    from torch._inductor.runtime import triton_heuristics as upstream

    k, triton_meta = _pointwise_kernel(npu_props)
    meta = {"kernel_name": "k", "mutated_arg_names": ["out_ptr0"], "npu_flavour": "interpreter"}
    built = upstream.fixed_config({"XBLOCK": 64}, __file__, dict(triton_meta), dict(meta))(k)
    assert type(built) is upstream.CachingAutotuner
    cls = kernel_objects.kernel_class("npu")
    ours = cls.adopt(built)
    assert type(ours) is cls and ours.tuning is kernel_objects.tuning("npu")
    params = list(inspect.signature(upstream.CachingAutotuner.__init__).parameters)[1:]
    args = decorators.adopted_arguments(built)
    assert set(args) == set(params)  # every argument upstream's constructor takes is kept
    for name in params:
        if name not in ("triton_meta", "inductor_meta"):
            assert getattr(ours, name) == getattr(built, name), name
    assert ours.device_props == npu_props and ours.mutated_arg_names == ["out_ptr0"]
    assert [c.kwargs for c in ours.configs] == [{"XBLOCK": 64}]
    # and through the registry, what a generated kernel gets
    via_registry = kernel_objects.heuristic("npu", "fixed_config")(
        {"XBLOCK": 64}, __file__, dict(triton_meta), dict(meta)
    )(k)
    assert type(via_registry) is cls


def test_the_lowering_defaults_build_npu_kernel_objects_with_the_generators_configs(npu_props):
    """npu-lowering's own decorators (what kernels get where npu-autotune is not installed):
    the npu kernel class, the tile generator's first config first, every config one warp."""
    from npu_inductor_core import tiles
    from npu_lowering.runtime import heuristics

    k, triton_meta = _pointwise_kernel(npu_props)
    meta = {"kernel_name": "k", "npu_flavour": "interpreter"}
    kernel = heuristics.DEFAULTS["pointwise"](
        {"x": 4096}, dict(triton_meta), inductor_meta=dict(meta), filename=__file__
    )(k)
    assert type(kernel) is heuristics.NpuCachingAutotuner
    first = tiles.pointwise({"x": 4096}, triton_meta, tiles.device_for(meta, 0))[0]
    assert kernel.configs[0].kwargs == first.kwargs
    assert all(c.num_warps == 1 for c in kernel.configs)
