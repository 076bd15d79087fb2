"""The npu kernel object autotunes on npu-sim through upstream's machinery."""

import pytest
import torch
from torch._dynamo.utils import counters
from torch._inductor import config


def _pointwise(x, y):
    return torch.sin(x) * y + 1


def _args(n=2048):
    return torch.randn(n, device="npu"), torch.randn(n, device="npu")


def _check(out, fn, *args):
    torch.testing.assert_close(out.cpu(), fn(*[a.cpu() for a in args]), atol=1e-4, rtol=1e-4)


def test_provider_found_through_entry_point():
    from npu_inductor_core import kernel_objects
    from npu_lowering.runtime import heuristics

    from npu_autotune.autotuner import KernelTuning

    assert kernel_objects.owner_of("npu", "pointwise") == "npu-autotune"
    assert kernel_objects.owner_of("npu", "template") == "npu-autotune"
    assert kernel_objects.kernel_class("npu") is heuristics.NpuCachingAutotuner
    assert isinstance(kernel_objects.tuning("npu"), KernelTuning)


@pytest.mark.feature("A42")
def test_autotuning_changes_the_chosen_config(fresh, kernels, fake_timings):
    # cost = XBLOCK: the smallest block wins, never the default (largest block first)
    fake_timings(lambda kw: kw["XBLOCK"])
    x, y = _args()
    with config.patch(max_autotune_pointwise=True):
        _check(torch.compile(_pointwise)(x, y), _pointwise, x, y)
    (k,) = kernels()
    (best,) = k.configs
    tried = {c[1]["XBLOCK"] for c in fresh}
    assert len(tried) >= 3 and best.kwargs["XBLOCK"] == min(tried) < max(tried)
    from npu_lowering.runtime.autotuner import LAUNCHES

    assert LAUNCHES[-1][2] == best.kwargs  # the real call (through the lowering) ran the winner
    assert counters["npu_autotune"]["sim_tuned"] == 1


@pytest.mark.feature("A42")
def test_max_autotune_pointwise_benchmarks_with_the_real_benchmarker(fresh, kernels):
    x, y = _args()
    _check(torch.compile(_pointwise)(x, y), _pointwise, x, y)
    assert counters["npu_autotune"]["bench.calls"] == 0  # default on npu-sim: no benchmarking
    torch._dynamo.reset()
    with config.patch(max_autotune_pointwise=True, force_disable_caches=True):
        _check(
            torch.compile(lambda a, b: _pointwise(a, b) - 2)(x, y),
            lambda a, b: _pointwise(a, b) - 2,
            x,
            y,
        )
    assert len({c[1]["XBLOCK"] for c in fresh}) >= 3  # each candidate launched on npu-sim
    assert (
        counters["npu_autotune"]["bench.calls"] >= 3 and counters["npu_autotune"]["sim_tuned"] == 1
    )


@pytest.mark.feature("A32")
def test_max_autotune_tunes_reductions_with_more_candidates(fresh, kernels):
    from npu_inductor_core import tiles

    # a looped reduction: a float32 row of 16384 does not stay whole in one core's UB
    x = torch.randn(4, 16384, device="npu")
    fn = lambda a: a.sum(dim=-1)  # noqa: E731
    with config.patch(max_autotune=True):
        torch.testing.assert_close(torch.compile(fn)(x).cpu(), fn(x.cpu()), atol=1e-3, rtol=1e-4)
    rblocks = {c[1].get("R0_BLOCK") for c in fresh}
    assert len(rblocks) >= 2  # sub-block sizes tried, not only the program count
    assert counters["npu_autotune"]["sim_tuned"] >= 1
    default = tiles.reduction(
        {"x": 4, "r0_": 16384},
        {"signature": {"in_ptr0": "*fp32", "out_ptr0": "*fp32"}},
        tiles.Device(),
        persistent=False,
    )
    assert len({c[1]["R0_BLOCK"] for c in fresh}) > len({c.kwargs["R0_BLOCK"] for c in default})


@pytest.mark.feature("A53")
@pytest.mark.parametrize("on", [True, False])
def test_triton_autotune_pointwise(fresh, kernels, on):
    import npu_autotune.config as npu_config

    x, y = _args()
    old, npu_config.autotune_on_sim = npu_config.autotune_on_sim, True
    try:
        with config.patch({"triton.autotune_pointwise": on}):
            _check(torch.compile(_pointwise)(x, y), _pointwise, x, y)
    finally:
        npu_config.autotune_on_sim = old
    ks = kernels()
    assert ks
    if on:
        assert counters["npu_autotune"]["bench.calls"] >= 2
        assert len({tuple(c[1].items()) for c in fresh}) >= 2
    else:
        assert (
            counters["npu_autotune"]["bench.calls"] == 0 and len(fresh) == 0
        )  # nothing benchmarked
        assert all(len(k.configs) == 1 for k in ks)


def test_mutated_input_restored_between_configs(fresh):
    x = torch.randn(1024, device="npu")
    ref = x.cpu() * 2 + 1

    def f(a):
        a.mul_(2).add_(1)
        return a

    with config.patch(max_autotune_pointwise=True):
        torch.compile(f)(x)
    assert len({c[1]["XBLOCK"] for c in fresh}) >= 2  # several configs ran on (clones of) x
    torch.testing.assert_close(x.cpu(), ref)  # yet x was updated exactly once
