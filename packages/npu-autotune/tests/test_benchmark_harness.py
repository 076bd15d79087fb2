"""benchmark_kernel / benchmark_harness output for npu kernels runs on npu (A13, A17, A18)."""

import re
import runpy

import pytest
import torch
from torch._dynamo.utils import counters
from torch._inductor import config
from torch._inductor.utils import run_and_get_code


def _compile(**flags):
    x = torch.randn(256, device="npu")
    with config.patch(**flags):
        _, codes = run_and_get_code(torch.compile(torch.sin), x)
    return codes[0]


def _kernel_modules():
    from torch._inductor.codecache import PyCodeCache

    return [
        m
        for m in list(PyCodeCache.modules)
        if hasattr(m, "benchmark_all_configs") and hasattr(m, "get_args")
    ]


@pytest.mark.feature("A18")
@pytest.mark.parametrize("on", [True, False])
def test_benchmark_kernel_module_times_every_config_on_npu(fresh, on):
    code = _compile(benchmark_kernel=on)
    assert ("def benchmark_all_configs(args)" in code) is on
    if not on:
        return
    (mod,) = _kernel_modules()
    timings = mod.benchmark_all_configs(mod.get_args())
    assert len(timings) >= 2 and all(t > 0 for t in timings.values())  # each config, on npu-sim
    assert len({tuple(l.config.kwargs.items()) for l in timings}) == len(timings)
    assert counters["npu_autotune"]["bench.calls"] == len(timings)


@pytest.mark.feature("A13")
def test_kernel_module_main_reports_time_and_bandwidth(fresh, capsys):
    _compile(benchmark_kernel=True)
    (mod,) = _kernel_modules()
    runpy.run_path(mod.__file__, run_name="__main__")
    out = capsys.readouterr().out
    m = re.search(r"([\d.]+)ms\s+([\d.]+)GB\s+([\d.]+)GB/s", out)
    assert m and float(m.group(1)) > 0, out  # (a 2 KB kernel's GB/s prints as 0.00)
    assert counters["npu_autotune"]["bench.calls"] >= 1  # timed by the npu benchmarker


@pytest.mark.feature("A17")
@pytest.mark.parametrize("on", [True, False])
def test_benchmark_harness_of_the_compiled_module(fresh, capsys, on):
    from torch._inductor.codecache import PyCodeCache

    code = _compile(benchmark_harness=on)
    assert ("def benchmark_compiled_module" in code) is on
    if not on:
        return
    (mod,) = [m for m in list(PyCodeCache.modules) if hasattr(m, "benchmark_compiled_module")]
    ms = mod.benchmark_compiled_module(mod.get_args(), times=2, repeat=2)
    assert ms > 0
