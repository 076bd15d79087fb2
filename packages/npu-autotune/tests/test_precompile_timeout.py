"""One precompilation budget for all candidate configs of an npu kernel (Y07)."""

import time

import pytest
import torch
from torch._dynamo.utils import counters
from torch._inductor import config


def _f(a):
    return torch.exp(a) - a


@pytest.fixture
def slow_largest_block(monkeypatch):
    """The candidate with the largest XBLOCK takes 2.5 s to compile (the others: no delay)."""
    from npu_lowering.runtime import heuristics

    real = heuristics.NpuCachingAutotuner._precompile_config
    slow = []

    def precompile_config(self, cfg):
        if cfg.kwargs["XBLOCK"] == max(c.kwargs["XBLOCK"] for c in self.configs):
            slow.append(dict(cfg.kwargs))
            time.sleep(2.5)
        return real(self, cfg)

    monkeypatch.setattr(heuristics.NpuCachingAutotuner, "_precompile_config", precompile_config)
    return slow


@pytest.mark.feature("Y07")
@pytest.mark.parametrize("timeout", [1, 0])
def test_candidates_over_the_budget_are_dropped_and_the_kernel_runs(
    fresh, kernels, slow_largest_block, timeout
):
    x = torch.randn(512, device="npu")
    with config.patch(
        compile_threads=1, max_autotune_pointwise=True, precompilation_timeout_seconds=timeout
    ):
        out = torch.compile(_f)(x)
    torch.testing.assert_close(out.cpu(), _f(x.cpu()), atol=1e-5, rtol=1e-5)
    (k,) = kernels()
    (slow,) = slow_largest_block
    tried = [c[1] for c in fresh]
    if timeout:  # cancelled and dropped, never launched; tuned over the configs that compiled
        assert slow not in tried and len({tuple(t.items()) for t in tried}) >= 2
        assert counters["npu_autotune"]["precompile_timed_out"] == 1
        assert k.configs[0].kwargs != slow
    else:  # no budget: the slow candidate is waited for and tuned too
        assert slow in tried and counters["npu_autotune"]["precompile_timed_out"] == 0


def test_nothing_compiled_in_time_is_an_error_naming_the_kernel(fresh, monkeypatch):
    from npu_lowering.runtime import heuristics

    real = heuristics.NpuCachingAutotuner._precompile_config

    def every_config_slow(self, cfg):
        time.sleep(1.5)
        return real(self, cfg)

    monkeypatch.setattr(heuristics.NpuCachingAutotuner, "_precompile_config", every_config_slow)
    x = torch.randn(384, device="npu")
    with (
        config.patch(
            compile_threads=1, max_autotune_pointwise=True, precompilation_timeout_seconds=1
        ),
        pytest.raises(
            Exception,
            match=r"npu kernel triton_poi_\w+: none of \d+ configs compiled "
            r"\(precompilation_timeout_seconds=1",
        ),
    ):
        torch.compile(_f)(x)


@pytest.mark.feature("Y07")
def test_configs_compile_with_the_callers_inductor_config(fresh, monkeypatch):
    """torch >= 2.13 keeps config values per context: the budget's compile threads must see the
    settings of the compile that started them, not the defaults."""
    from npu_lowering.runtime import heuristics

    real = heuristics.NpuCachingAutotuner._precompile_config
    seen = []

    def precompile_config(self, cfg):
        seen.append((config.max_autotune_pointwise, config.precompilation_timeout_seconds))
        return real(self, cfg)

    monkeypatch.setattr(heuristics.NpuCachingAutotuner, "_precompile_config", precompile_config)
    x = torch.randn(640, device="npu")
    with config.patch(
        compile_threads=1, max_autotune_pointwise=True, precompilation_timeout_seconds=77
    ):
        torch.compile(_f)(x)
    assert len(seen) >= 2 and set(seen) == {(True, 77)}, seen


def test_a_config_whose_parse_failed_beside_another_is_compiled_again(fresh, monkeypatch):
    """Python 3.11/3.12 can fail one of two parses running in threads at once with a spurious
    SystemError (cpython gh-106905): that config is compiled again alone, not the compile
    failed; any other SystemError still fails it."""
    from npu_lowering.runtime import heuristics

    real = heuristics.NpuCachingAutotuner._precompile_config
    calls = []

    def precompile_config(self, cfg, message="AST constructor recursion depth mismatch (1, 2)"):
        calls.append(dict(cfg.kwargs))
        if len(calls) == 1:
            raise SystemError(message)
        return real(self, cfg)

    monkeypatch.setattr(heuristics.NpuCachingAutotuner, "_precompile_config", precompile_config)
    x = torch.randn(768, device="npu")
    flags = dict(compile_threads=1, max_autotune_pointwise=True, precompilation_timeout_seconds=60)
    with config.patch(**flags):
        out = torch.compile(_f)(x)
    torch.testing.assert_close(out.cpu(), _f(x.cpu()), atol=1e-5, rtol=1e-5)
    assert counters["npu_autotune"]["precompile_parse_retried"] == 1
    assert calls.count(calls[0]) == 2  # the failed config, compiled again

    calls.clear()
    monkeypatch.setattr(
        heuristics.NpuCachingAutotuner,
        "_precompile_config",
        lambda self, cfg: precompile_config(self, cfg, "something else"),
    )
    torch._dynamo.reset()
    with config.patch(**flags), pytest.raises(Exception, match="something else"):
        torch.compile(_f)(torch.randn(896, device="npu"))
