"""Coordinate descent on npu (upstream's tuner with the Ascend limits), with deterministic
timings so each knob's effect is visible."""

import math

import pytest
import torch
from torch._dynamo.utils import counters
from torch._inductor import config

from npu_inductor_core import tiles


def _compile_sin(n=2048, **flags):
    x = torch.randn(n, device="npu")
    with config.patch(**flags):
        out = torch.compile(torch.sin)(x)
    torch.testing.assert_close(out.cpu(), torch.sin(x.cpu()))


@pytest.mark.feature("A24", "A27")
def test_coordinate_descent_tuning_walks_to_the_best_block(fresh, kernels, fake_timings):
    fake_timings(
        lambda kw: 1 + abs(math.log2(kw["XBLOCK"]) - 4)
    )  # best: XBLOCK=16, not a candidate
    _compile_sin(coordinate_descent_tuning=True)
    (k,) = kernels()
    (best,) = k.configs
    assert best.kwargs["XBLOCK"] == 16 and getattr(best, "found_by_coordesc", False)
    assert best.num_warps == 1 and "num_warps" not in k.coordesc_tuner.tunable_fields
    assert counters["inductor"]["coordesc_tuning_bench"] > 0


@pytest.mark.feature("A27")
def test_without_coordinate_descent_the_candidates_decide(fresh, kernels, fake_timings):
    fake_timings(lambda kw: 1 + abs(math.log2(kw["XBLOCK"]) - 4))
    _compile_sin(max_autotune_pointwise=True)
    (k,) = kernels()
    assert (
        k.configs[0].kwargs["XBLOCK"] != 16 and counters["inductor"]["coordesc_tuning_bench"] == 0
    )


def _trap(kw):
    # 64 is a local optimum one step from 32/128 (both worse); 16, two steps away, is best
    return {64: 5.0, 32: 6.0, 128: 6.0, 16: 1.0}.get(kw["XBLOCK"], 9.0)


@pytest.mark.feature("A26")
@pytest.mark.parametrize("radius", [1, 2])
def test_search_radius(fresh, kernels, fake_timings, radius):
    # upstream applies the radius in the all-directions step (single-axis steps are one apart)
    fake_timings(_trap)
    _compile_sin(
        coordinate_descent_tuning=True,
        coordinate_descent_search_radius=radius,
        coordinate_descent_check_all_directions=True,
    )
    (k,) = kernels()
    assert k.configs[0].kwargs["XBLOCK"] == (64 if radius == 1 else 16)


@pytest.mark.feature("A25")
@pytest.mark.parametrize("all_directions", [True, False])
def test_check_all_directions(fresh, kernels, fake_timings, all_directions):
    # a looped reduction (XBLOCK and R0_BLOCK): a float32 row of 16384 is not kept whole
    x = torch.randn(4, 16384, device="npu")
    fn = lambda a: a.sum(dim=-1)  # noqa: E731
    torch.compile(fn)(x)
    (k,) = kernels()
    start = dict(k.configs[0].kwargs)
    # a move along both axes at once: twice the rows, half the reduction block (the same tile)
    diag = {"XBLOCK": start["XBLOCK"] * 2, "R0_BLOCK": start["R0_BLOCK"] // 2}
    assert diag["R0_BLOCK"] >= 1 and diag not in [c.kwargs for c in k.configs]

    def cost(kw):  # only a move along both axes at once improves on the start
        return 1.0 if kw == diag else 5.0 if kw == start else 6.0

    fake_timings(cost)
    torch._dynamo.reset()
    with config.patch(
        coordinate_descent_tuning=True,
        coordinate_descent_check_all_directions=all_directions,
        force_disable_caches=True,
    ):
        torch.testing.assert_close(torch.compile(fn)(x).cpu(), fn(x.cpu()), atol=1e-3, rtol=1e-4)
    (tuned,) = [t for t in kernels() if t.inductor_meta.get("coordinate_descent_tuning")]
    assert tuned.configs[0].kwargs == (diag if all_directions else start)


def test_descent_never_leaves_the_unified_buffer(fresh, kernels, fake_timings):
    fake_timings(lambda kw: 1.0 / (kw["XBLOCK"] * kw["R0_BLOCK"]))  # bigger blocks always "faster"
    x = torch.randn(32, 16384, device="npu")  # looped: rows too long to keep whole
    with config.patch(coordinate_descent_tuning=True):
        torch.compile(lambda a: a.sum(dim=-1))(x)
    (k,) = kernels()
    budget = tiles.element_budget(k.triton_meta, tiles.Device())
    best = k.configs[0].kwargs

    def fits(kw):
        return kw["XBLOCK"] * kw["R0_BLOCK"] <= budget and tiles.fits_ub_estimate(
            kw, False, k.triton_meta, k.inductor_meta, k.filename
        )

    # stopped at the UB (by the tile budget and the kernel's UB estimate), not at Triton's
    # block limits: no larger neighbour fits
    assert fits(best) and not fits({**best, "XBLOCK": best["XBLOCK"] * 2})
    assert not fits({**best, "R0_BLOCK": best["R0_BLOCK"] * 2})
    assert all(fits(kw) for _, kw, _ in fresh)
    assert k.coordesc_tuner.npu_rejected >= 1


def test_bad_radius_is_an_error(fresh):
    with pytest.raises(Exception, match="coordinate_descent_search_radius must be an int >= 1"):
        _compile_sin(coordinate_descent_tuning=True, coordinate_descent_search_radius=0)
