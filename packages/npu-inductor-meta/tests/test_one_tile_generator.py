"""One UB model and one tile generator: every config source sizes its blocks through
npu-inductor-core's ``tiles`` (which prices with ``ub_model``), none computes a UB budget of
its own. Each source is exercised with the UB model made to raise: a source that prices the
UB itself would return instead of raising."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from triton import Config

from npu_inductor_core import tiles, ub_model

PACKAGES = Path(__file__).resolve().parents[2]
SIG = {"signature": {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32", "r0_numel": "i32"}}


class Priced(Exception):
    """Raised by the UB model while a source is exercised."""


@pytest.fixture
def ub_model_raises(monkeypatch):
    def priced(*args, **kwargs):
        raise Priced

    monkeypatch.setattr(ub_model, "estimate_buffers", priced)
    monkeypatch.setattr(ub_model, "estimate", priced)
    monkeypatch.setattr(ub_model, "floor_bytes", priced)
    tiles._budget.cache_clear()
    yield
    tiles._budget.cache_clear()


def _sources(props):
    """(name, call) of every config source; each call must reach the UB model."""
    from npu_lowering.runtime import heuristics as lowering
    from npu_autotune import combo, flex_configs, gemm_templates
    from npu_autotune.heuristics import decorators
    from npu_autotune.coordesc import NpuCoordescTuner
    from npu_fusion import ub_rule

    dev = tiles.Device()
    meta = {**SIG, "device": props}
    red = {"x": 64, "r0_": 256}

    def coordesc():
        tuner = NpuCoordescTuner(
            name="k",
            size_hints=red,
            inductor_meta={},
            triton_meta=meta,
            dev=dev,
            persistent=False,
            pointwise=False,
            filename=None,
        )
        tuner.is_valid_config(Config({"XBLOCK": 8, "R0_BLOCK": 64}, num_warps=1, num_stages=1))

    tuned = decorators(object)
    return [
        ("npu-autotune pointwise", lambda: tuned["pointwise"]({"x": 1024}, meta, inductor_meta={})),
        (
            "npu-autotune reduction",
            lambda: tuned["reduction"](red, triton_meta=meta, inductor_meta={}),
        ),
        (
            "npu-lowering default pointwise",
            lambda: lowering.DEFAULTS["pointwise"]({"x": 1024}, meta, inductor_meta={}),
        ),
        (
            "npu-lowering default reduction",
            lambda: lowering.DEFAULTS["reduction"](red, triton_meta=meta, inductor_meta={}),
        ),
        (
            "npu-lowering default persistent reduction",
            lambda: lowering.DEFAULTS["persistent_reduction"](
                red, triton_meta=meta, inductor_meta={}
            ),
        ),
        (
            "npu-autotune pointwise candidates",
            lambda: combo._candidates(
                "pointwise", {"x": 1024}, meta, dev, exhaustive=True, multibuffer=True
            ),
        ),
        (
            "npu-autotune reduction candidates",
            lambda: combo._candidates(
                "reduction", red, meta, dev, exhaustive=True, multibuffer=True
            ),
        ),
        ("npu-autotune coordinate descent", coordesc),
        ("GEMM template tiles", lambda: gemm_templates.fits(64, 64, 64)),
        ("GEMM swap-A/B tiles", lambda: gemm_templates.fits(64, 64, 64, accumulators=2)),
        ("flex-attention forward tiles", lambda: flex_configs.fwd_fits(64, 64, 64, 1, 2, dev)),
        (
            "flex-attention backward tiles",
            lambda: flex_configs.bwd_fits(32, 64, 64, 32, 64, 1, 2, dev),
        ),
        ("npu-fusion refusal rule", lambda: ub_rule.estimate({4: 2}, {4: 1}, 1024, True, "910B")),
    ]


def test_every_config_source_prices_the_ub_through_the_one_model(ub_model_raises, npu_props):
    own = []
    for name, call in _sources(npu_props):
        try:
            call()
        except Priced:
            continue
        own.append(name)
    assert not own, f"config sources that did not ask the UB model: {own}"


def test_the_generator_budget_is_the_models_floor():
    """The cap before a body is read is the UB model's floor of the pointer blocks, below every
    estimate the model gives a body holding them (so fit_to_ub only ever shrinks it)."""
    dev = tiles.Device()
    for mb in (False, True):
        n = tiles.element_budget(SIG, dev, mb)
        counts = tiles.block_buffers(SIG)
        assert (
            ub_model.floor_bytes(counts, n, mb)
            <= dev.ub_bytes
            < ub_model.floor_bytes(counts, 2 * n, mb)
        )
        for fam in ("910B", "950"):
            assert ub_model.floor_bytes(counts, n, mb) <= ub_model.estimate_buffers(
                {"l": counts["v"]} if mb else counts, n, mb, fam
            )


# a UB budget computed outside the one model: the UB divided or multiplied in an expression
_OWN_BUDGET = re.compile(r"ub_bytes\s*(//|/|\*)|(//|\*)\s*[\w.()]*ub_bytes|ub\s*//\s*\d")
_MODEL = {"tiles.py", "ub_model.py", "ub_profile.py", "device.py"}


def test_no_source_computes_its_own_ub_budget():
    found = []
    for path in sorted(PACKAGES.glob("*/src/**/*.py")):
        if path.parent.name == "npu_inductor_core" and path.name in _MODEL:
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if _OWN_BUDGET.search(code):
                found.append(f"{path.relative_to(PACKAGES)}:{i}: {line.strip()}")
    assert not found, (
        "UB budgets computed outside npu_inductor_core.tiles / ub_model:\n" + "\n".join(found)
    )


def test_the_near_copies_are_gone():
    assert not (PACKAGES / "npu-lowering/src/npu_lowering/runtime/tiling.py").exists()
    assert not (PACKAGES / "npu-autotune/src/npu_autotune/tiles.py").exists()


def test_one_implementation_of_the_decorators():
    """Both packages that register npu decorators build them with npu-inductor-core's one
    implementation (a policy each), and neither heuristics module tiles or fits configs."""
    from npu_inductor_core import decorators, kernel_objects
    from npu_lowering.runtime import heuristics as lowering

    registered = [kernel_objects.heuristic("npu", n) for n in kernel_objects.HEURISTIC_NAMES]
    for fn in [*lowering.DEFAULTS.values(), *registered]:
        assert fn.__module__ == decorators.__name__, fn
    for path in (
        PACKAGES / "npu-lowering/src/npu_lowering/runtime/heuristics.py",
        PACKAGES / "npu-autotune/src/npu_autotune/heuristics.py",
    ):
        code = path.read_text()
        assert not re.search(r"\btiles\.|\bfits_ub\b|fit_to_ub|cached_autotune", code), path
