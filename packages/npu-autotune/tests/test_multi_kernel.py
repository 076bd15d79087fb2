"""multi_kernel_hints on npu (A02): kernels with dynamic sizes get one variant per hint and
each call runs the variant nearest to its sizes (upstream's size-hint multi-kernel rule;
upstream 2.13 applies it to Triton GEMM templates only, which npu does not have yet)."""

import pytest
import torch
from torch._inductor import config

import npu_autotune.autotuner as at
import npu_inductor_core.tiles as tiles
from npu_lowering.runtime import autotuner as lowering_autotuner

HINTS = [64, 4096]


def _f(x):
    return torch.sin(x) * 2


def _blocks_per_call(sizes, hints, dynamic=True):
    """XBLOCK of the config each call launched (through a variant or the kernel's own)."""
    out = []
    with config.patch({"compile_threads": 1, "multi_kernel_hints": hints}):
        compiled = torch.compile(_f, dynamic=dynamic)
        for n in sizes:
            x = torch.randn(n, device="npu")
            at.LAUNCHED.clear()
            before = len(lowering_autotuner.LAUNCHES)
            last = lowering_autotuner.LAUNCHES[-1] if before else None
            torch.testing.assert_close(compiled(x).cpu(), _f(x.cpu()))
            if at.LAUNCHED:  # the call's own launch comes after any timing runs
                out.append(at.LAUNCHED[-1][1]["XBLOCK"])
            else:
                assert lowering_autotuner.LAUNCHES[-1] is not last
                out.append(lowering_autotuner.LAUNCHES[-1][2]["XBLOCK"])
    return out


@pytest.mark.feature("A02")
def test_each_call_runs_the_variant_of_the_nearest_hint(fresh):
    from npu_autotune import hints

    small, large = (
        tiles.pointwise(
            {"x": h}, {"signature": {"in_ptr0": "*fp32", "out_ptr0": "*fp32"}}, tiles.device(0)
        )[0].kwargs["XBLOCK"]
        for h in HINTS
    )
    assert small != large
    # 3000 elements are nearest the 4096 hint, 48 and 50 the 64 hint
    assert _blocks_per_call([3000, 48, 3000, 50], HINTS) == [large, small, large, small]
    import gc

    from npu_lowering.runtime import heuristics

    (k,) = [
        o
        for o in gc.get_objects()
        if type(o) is heuristics.NpuCachingAutotuner and o.__dict__.get("_npu_hint_variants")
    ]
    assert sorted(k.inductor_meta[hints.KEY]) == HINTS and len(k._npu_hint_variants) == len(HINTS)


@pytest.mark.feature("A02")
def test_without_hints_every_call_runs_the_one_config(fresh):
    blocks = _blocks_per_call([3000, 48, 3000, 50], [])
    assert len(set(blocks)) == 1


@pytest.mark.feature("A02")
def test_static_sizes_get_no_variants(fresh, kernels):
    from npu_autotune import hints

    assert _blocks_per_call([48], HINTS, dynamic=False)
    assert not at.LAUNCHED  # the kernel's own config ran, no variant
    (k,) = kernels()
    assert hints.KEY not in k.inductor_meta


@pytest.mark.parametrize("bad", [[0], [64, -1], [2.5]])
def test_bad_multi_kernel_hints_are_an_error(fresh, bad):
    with pytest.raises(Exception, match="multi_kernel_hints must be a list of ints >= 1"):
        _blocks_per_call([48], bad)


@pytest.mark.feature("A02")
@pytest.mark.parametrize("tune", [True, False])
def test_a_variant_is_tuned_on_the_first_call_that_lands_on_it(fresh, fake_timings, tune):
    """With max_autotune_pointwise each variant's candidates for its hint size are timed (here
    the smallest block is made fastest); without tuning the variant keeps the first one."""
    from torch._dynamo.utils import counters

    fake_timings(lambda kwargs: kwargs["XBLOCK"])
    meta = {"signature": {"in_ptr0": "*fp32", "out_ptr0": "*fp32"}}
    small = tiles.pointwise({"x": 64}, meta, tiles.device(0), exhaustive=True)
    assert len(small) > 1
    with config.patch(max_autotune_pointwise=tune):
        blocks = _blocks_per_call([48, 50], HINTS)
    expected = min(c.kwargs["XBLOCK"] for c in small) if tune else small[0].kwargs["XBLOCK"]
    assert blocks == [expected, expected]
    assert counters["npu_autotune"]["hint_variants_tuned"] == (1 if tune else 0)  # once per variant
