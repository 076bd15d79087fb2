"""Incremental autotune (A29), the local best-config cache (U01), settings misuse."""

import pytest
import torch
from torch._dynamo.utils import counters
from torch._inductor import config


def _fn(a):
    return torch.tanh(a) * 3


@pytest.mark.skipif(
    not hasattr(config, "incremental_autotune"),
    reason=f"torch {torch.__version__} has no Inductor flag incremental_autotune",
)
@pytest.mark.feature("A29")
def test_incremental_autotune_spreads_tuning_over_real_calls(fresh, kernels):
    x = torch.randn(1024, device="npu")
    with config.patch(incremental_autotune=True, max_autotune_pointwise=True):
        f = torch.compile(_fn)
        outs = [f(x)]
        assert (
            len(fresh) == 1 and counters["npu_autotune"]["bench.calls"] == 0
        )  # one config, the real call
        (k,) = kernels()
        n = len(k._npu_incremental["pending"]) + 1
        outs += [f(x) for _ in range(n)]
    for out in outs:
        torch.testing.assert_close(out.cpu(), _fn(x.cpu()))
    assert (
        counters["npu_autotune"]["incremental_runs"]
        == n
        == len({tuple(c[1].items()) for c in fresh})
    )
    assert len(k.configs) == 1 and k._npu_incremental is None  # settled on the fastest


@pytest.mark.skipif(
    not hasattr(config, "incremental_autotune"),
    reason=f"torch {torch.__version__} has no Inductor flag incremental_autotune",
)
@pytest.mark.feature("A29")
def test_without_incremental_autotune_the_first_call_benchmarks_all(fresh):
    x = torch.randn(1024, device="npu")
    with config.patch(incremental_autotune=False, max_autotune_pointwise=True):
        torch.compile(_fn)(x)
    assert (
        counters["npu_autotune"]["bench.calls"] >= 2
        and counters["npu_autotune"]["incremental_runs"] == 0
    )


@pytest.mark.feature("U01")
def test_local_autotune_cache_serves_the_best_config(fresh, kernels, fake_timings):
    from npu_lowering.runtime.autotuner import LAUNCHES

    fake_timings(lambda kw: kw["XBLOCK"])  # smallest block "fastest": not the default config
    x = torch.randn(2048, device="npu")
    with config.patch(max_autotune_pointwise=True, autotune_local_cache=True, fx_graph_cache=False):
        torch.compile(_fn)(x)
        (k,) = kernels()
        best = dict(k.configs[0].kwargs)
        assert len({tuple(c[1].items()) for c in fresh}) >= 2  # benchmarked
        torch._dynamo.reset()
        from torch._inductor.codecache import PyCodeCache

        PyCodeCache.cache_clear(purge=True)  # a new process: kernel objects rebuilt from source
        fresh.clear()
        out = torch.compile(_fn)(x)
    torch.testing.assert_close(out.cpu(), _fn(x.cpu()))
    assert not fresh  # nothing benchmarked again
    assert LAUNCHES[-1][2] == best  # the cached best config ran


@pytest.mark.feature("U01")
def test_without_the_local_cache_tuning_repeats(fresh, fake_timings):
    fake_timings(lambda kw: kw["XBLOCK"])
    x = torch.randn(2048, device="npu")
    with config.patch(
        max_autotune_pointwise=True,
        autotune_local_cache=False,
        autotune_remote_cache=False,
        fx_graph_cache=False,
    ):
        torch.compile(_fn)(x)
        tuned = len(fresh)
        torch._dynamo.reset()
        from torch._inductor.codecache import PyCodeCache

        PyCodeCache.cache_clear(purge=True)
        torch.compile(_fn)(x)
    assert tuned >= 2 and len(fresh) == 2 * tuned


def test_settings_reject_bad_values_when_set():
    import npu_autotune.config as c

    with pytest.raises(ValueError, match="autotune_on_sim must be True or False, got 'yes'"):
        c.autotune_on_sim = "yes"
    with pytest.raises(ValueError, match="multibuffer must be None, True or False"):
        c.multibuffer = 2
    with pytest.raises(AttributeError, match="autotune_on_simulator does not exist"):
        c.autotune_on_simulator = True
    c.autotune_on_sim = c.autotune_on_sim  # a valid value is accepted
