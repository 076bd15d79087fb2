"""The npu benchmarker: registered for device npu, upstream's warmup/rep, experimental and
graph-benchmarking switches.

These are tests of the timing machinery, so they time (``sim_timing="interpreter"``): on
npu-sim a benchmark is the cost model's estimate by default (test_estimate_determinism.py,
and the first test below)."""

import time

import pytest
import torch
from torch._dynamo.utils import counters
from torch._inductor import config
from torch._inductor.runtime.benchmarking import benchmarker


@pytest.fixture(autouse=True)
def timed():
    import npu_autotune.config as npu_config

    with npu_config.patch(sim_timing="interpreter"):
        yield


def test_by_default_npu_sim_answers_with_an_estimate():
    import npu_autotune.config as npu_config

    calls = []
    counters.clear()
    with npu_config.patch(sim_timing="estimate"):
        ms = benchmarker.benchmark(_sleeper(50, calls), device="npu", warmup=0, rep=10)
    # run once, priced (no npu kernel or op in it: nothing to price), never timed
    assert calls == [1] and ms == 0.0
    assert counters["npu_autotune"]["bench.estimates"] == 1
    assert counters["npu_autotune"]["bench.timed_runs"] == 0


def _sleeper(ms, calls):
    def fn():
        calls.append(1)
        time.sleep(ms / 1000)

    return fn


def test_registered_for_npu_only():
    from torch._inductor.runtime import benchmarking

    from npu_autotune.benchmarker import benchmark_npu

    table = benchmarking._BENCHMARK_DISPATCH  # upstream's per-device registry
    assert table["npu"] is benchmark_npu
    assert table.get("cpu") is not benchmark_npu
    assert table.get("cuda") is not benchmark_npu


def test_timing_uses_device_events(monkeypatch):
    from npu_autotune.device_timer import DeviceTimer

    timer = DeviceTimer()
    assert timer.event is torch.npu.Event  # npu-sim has timing events
    calls = []
    ms = benchmarker.benchmark(_sleeper(2, calls), device="npu", warmup=0, rep=10)
    # no upper bound: a 2 ms sleep takes what a loaded machine gives it
    assert ms > 1.5 and len(calls) >= 2


@pytest.mark.feature("A30")
def test_rep_flag_sets_the_measuring_budget():
    # budgets far apart (2 vs 300 ms): a 1 ms sleep can take 5 ms on a loaded machine
    few, many = [], []
    counters.clear()
    with config.patch(inductor_default_autotune_warmup=0, inductor_default_autotune_rep=2):
        benchmarker.benchmark(_sleeper(1, few), device="npu")
    with config.patch(inductor_default_autotune_warmup=0, inductor_default_autotune_rep=300):
        benchmarker.benchmark(_sleeper(1, many), device="npu")
    assert len(many) > 3 * len(few)


@pytest.mark.feature("A31")
def test_warmup_flag_sets_the_warmup_budget():
    cold, warm = [], []
    with config.patch(inductor_default_autotune_warmup=0, inductor_default_autotune_rep=1):
        benchmarker.benchmark(_sleeper(1, cold), device="npu")
    with config.patch(
        inductor_default_autotune_warmup=300, inductor_default_autotune_rep=1
    ):  # as above
        benchmarker.benchmark(_sleeper(1, warm), device="npu")
    assert len(warm) > len(cold) + 5


@pytest.mark.feature("A30", "A31")
def test_kernel_autotuning_reads_the_flags_not_upstreams_fixed_rep(fresh):
    x = torch.randn(256, device="npu")
    with config.patch(max_autotune_pointwise=True, inductor_default_autotune_rep=1):
        torch.compile(torch.sin)(x)
    short = counters["npu_autotune"]["bench.timed_runs"] / counters["npu_autotune"]["bench.calls"]
    torch._dynamo.reset()
    counters.clear()
    with config.patch(
        max_autotune_pointwise=True, inductor_default_autotune_rep=200, force_disable_caches=True
    ):
        torch.compile(torch.cos)(x)
    long = counters["npu_autotune"]["bench.timed_runs"] / counters["npu_autotune"]["bench.calls"]
    assert long > 2 * short


def test_bad_warmup_or_rep_is_an_error():
    with config.patch(inductor_default_autotune_rep=0):
        with pytest.raises(ValueError, match="inductor_default_autotune_rep must be > 0"):
            benchmarker.benchmark(lambda: None, device="npu")
    with config.patch(inductor_default_autotune_warmup=-1):
        with pytest.raises(ValueError, match="inductor_default_autotune_warmup must be >= 0"):
            benchmarker.benchmark(lambda: None, device="npu")


@pytest.mark.feature("A57")
@pytest.mark.parametrize("experimental", [True, False])
def test_experimental_benchmarker_switch(experimental):
    counters.clear()
    x = torch.zeros(4, device="npu")

    def fn():
        x.fill_(1)

    with config.patch(
        use_experimental_benchmarker=experimental,
        inductor_default_autotune_warmup=0,
        inductor_default_autotune_rep=5,
    ):
        benchmarker.benchmark(fn, device="npu")
    strategy = "bench.experimental" if experimental else "bench.default"
    other = "bench.default" if experimental else "bench.experimental"
    assert counters["npu_autotune"][strategy] == 1 and counters["npu_autotune"][other] == 0


@pytest.mark.feature("A08")
@pytest.mark.parametrize("graphs", [True, False])
def test_graph_based_benchmarking(monkeypatch, graphs):
    monkeypatch.setenv("TORCHINDUCTOR_AUTOTUNE_CUDAGRAPH_BENCHMARKING", "1" if graphs else "0")
    if hasattr(config, "autotune_cudagraph_benchmarking"):
        # torch 2.14 and 2.15 have the flag again (read from the variable at import): set it
        monkeypatch.setattr(config, "autotune_cudagraph_benchmarking", graphs)
    x = torch.zeros(8, device="npu")
    calls = []

    def fn():
        calls.append(1)
        x.add_(1)

    counters.clear()
    with config.patch(inductor_default_autotune_warmup=0, inductor_default_autotune_rep=5):
        benchmarker.benchmark(fn, device="npu")
    runs = int(x[0].item())
    if graphs:
        # Python ran twice (warm + capture); every timed run was a replay of the recording
        assert (
            len(calls) == 2 and runs > 2 and counters["npu_autotune"]["bench.graph_captures"] == 1
        )
    else:
        assert len(calls) == runs and counters["npu_autotune"]["bench.graph_captures"] == 0
