"""The benchmarker for device "npu", registered in upstream's benchmarker registry.

``benchmarker.benchmark(fn, device="npu")`` (what every upstream autotuning path calls)
dispatches here. Timing uses device events (``Event(enable_timing=True)``) where the device
interface has them, else the host clock around a synchronize. Upstream flags read per call:
- ``inductor_default_autotune_warmup`` / ``inductor_default_autotune_rep`` (ms): the warmup
  and measuring budgets; upstream's kernel autotuner passes a fixed rep=40, which
  npu kernels replace by the flag (``autotuner.KernelTuning.bench``);
- ``use_experimental_benchmarker``: upstream's experimental strategy (flush the L2
  between runs, minimum of per-run event pairs) instead of the default (median of the runs);
- ``autotune_cudagraph_benchmarking`` (torch 2.13 has only its environment variable): the
  callable is captured once into a device graph and the replays are timed (no launch
  overhead in the comparison).
"""

from __future__ import annotations

import contextlib
import contextvars
import statistics

import torch
from npu_inductor_core import env_config as _env
from torch._dynamo.utils import counters
from torch._inductor import config as inductor_config
from torch._inductor.runtime import benchmarking

from . import _compat
from .estimate import estimated_ms
from .device_timer import DeviceTimer, device_interface
from .config import validate_bench_settings

DEVICE = "npu"
MAX_RUNS = 1000
_flag_reps = contextvars.ContextVar("npu_autotune_flag_reps", default=False)


@contextlib.contextmanager
def flag_reps():
    """Within: warmup and rep come from the upstream flags, whatever the caller passed."""
    token = _flag_reps.set(True)
    try:
        yield
    finally:
        _flag_reps.reset(token)


def _runs(budget_ms: float, estimate_ms: float) -> int:
    return int(min(MAX_RUNS, max(1, budget_ms // max(estimate_ms, 1e-3))))


def graph_benchmarking() -> bool:
    """Upstream's ``autotune_cudagraph_benchmarking`` where this torch has the flag (2.14,
    2.15), else its environment variable (the flag is not in torch 2.13's config)."""
    value = getattr(inductor_config, "autotune_cudagraph_benchmarking", None)
    if value is None:
        value = _env.text("TORCHINDUCTOR_AUTOTUNE_CUDAGRAPH_BENCHMARKING", "0") == "1"
    return bool(value)


def _as_graph(fn):
    """Capture ``fn`` once into a device graph; the returned callable replays it."""
    npu = torch.npu
    graph = npu.NPUGraph()
    fn()  # warm (allocations outside the capture)
    npu.synchronize()
    with npu.graph(graph):
        fn()
    npu.synchronize()
    counters["npu_autotune"]["bench.graph_captures"] += 1
    return graph.replay, graph


@benchmarking.may_distort_benchmarking_result  # upstream's test knob (test_configs.distort_benchmarking_result)
def benchmark_npu(bench_self, fn, *, warmup, rep, **kwargs) -> float:
    """Runtime of ``fn`` on npu in ms (the registry's signature: self, callable, warmup, rep)."""
    if _flag_reps.get():
        warmup, rep = (
            inductor_config.inductor_default_autotune_warmup,
            inductor_config.inductor_default_autotune_rep,
        )
    validate_bench_settings(warmup, rep)
    if not kwargs.pop("is_vetted_benchmarking", False):
        benchmarking.may_ban_benchmarking()
    counters["npu_autotune"]["bench.calls"] += 1
    if estimates():
        counters["npu_autotune"]["bench.estimates"] += 1
        return estimated_ms(fn)
    timer = DeviceTimer()
    graph = None
    if graph_benchmarking() and hasattr(torch.npu, "NPUGraph"):
        fn, graph = _as_graph(fn)
    timer.iface.synchronize()
    estimate = min(timer.run(fn, 1))  # also catches failures before timing
    for _ in range(_runs(warmup, estimate)):
        fn()
    n = _runs(rep, estimate)
    counters["npu_autotune"]["bench.timed_runs"] += n
    if inductor_config.use_experimental_benchmarker:
        counters["npu_autotune"]["bench.experimental"] += 1
        flush = _flush_buffer()
        times = timer.run(fn, n, before=flush.zero_)
        result = min(min(times), estimate)
    else:
        counters["npu_autotune"]["bench.default"] += 1
        result = statistics.median(timer.run(fn, n))
    del graph
    return float(result)


def estimates() -> bool:
    """Whether this process's benchmarks are the cost model's estimates: on npu-sim, unless
    ``npu_autotune.config.sim_timing`` asks to time the interpreter."""
    from npu_inductor_core.device import device

    from . import config

    return config.sim_timing == "estimate" and device().flavour == "sim"


def _flush_buffer():
    """A buffer of the device's L2 size, zeroed before each run (upstream's experimental rule)."""
    props = device_interface().get_device_properties(device_interface().current_device())
    size = getattr(props, "L2_cache_size", 0) or 64 * 1024 * 1024
    # the simulator's L2 is a number, not a cache: a small buffer keeps the rule without the cost
    if getattr(torch.npu, "__name__", "").startswith("npu_sim"):
        size = min(size, 1 << 20)
    return torch.empty(size // 4, dtype=torch.int, device=DEVICE)


_registered = False


def ensure_registered() -> None:
    """Register ``benchmark_npu`` for device npu (idempotent; never touches cpu/cuda)."""
    global _registered
    if _registered:
        return
    _compat.register_npu_benchmarker(DEVICE, benchmark_npu)
    _registered = True
