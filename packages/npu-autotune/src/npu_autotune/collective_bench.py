"""Collective benchmarking on npu (``collective_benchmark_nruns``,
``collective_benchmark_timeout``).

Inductor autotunes a custom op whose decompositions hold collectives
(``register_custom_op_autotuning``: e.g. two all-reduce strategies) by benchmarking each
choice on every rank at once (``AlgorithmSelectorCache.benchmark_collective_choice``): a
barrier, ``inductor_default_autotune_warmup`` warmup runs, ``collective_benchmark_nruns``
timed runs, the per-run average all-reduced (AVG) so every rank picks the same choice.
Upstream's implementation times with ``torch.cuda`` events and puts the result on
``cuda:<rank>``; for choices on npu this module runs the same protocol with the npu's timing
events (npu-autotune's benchmarker timer) on the choice's own npu device.

``collective_benchmark_timeout`` (seconds) bounds a choice's benchmark on every rank: upstream
bounds its barrier and result waits with it, relying on NCCL's asynchronous work. An npu
collective may complete before it returns (npu-sim's "hccl" does; a barrier then cannot time
out), so here each rank measures its whole benchmark of the choice (barrier, warmup, runs)
against the timeout and a rank over it contributes an infinite time to the all-reduce: every
rank then sees ``inf`` for that choice (upstream's "one rank timed out: all ranks fall back to
the default implementation"), and no rank is left waiting in a collective the others skipped.
A choice that fails on a rank also contributes ``inf`` (the all-reduce still runs).
"""

from __future__ import annotations

import logging
import math
import time

import torch

log = logging.getLogger(__name__)
DEVICE = "npu"


def on_npu(cls, choice, autotune_args) -> bool:
    """Whether this choice's benchmark tensors live on npu (then this module benchmarks it)."""
    try:
        _, output = autotune_args.get_benchmark_tensors(cls._is_extern(choice)).unpack()
    except Exception:  # upstream's path then reports it
        return False
    return isinstance(output, torch.Tensor) and output.device.type == DEVICE


def benchmark_collective_choice(cls, choice, autotune_args) -> float:
    """Average ms of one run of ``choice`` across ranks (default process group), or ``inf``
    when it failed or ran past ``collective_benchmark_timeout`` on any rank."""
    import torch.distributed as dist
    from torch._inductor import config

    from .device_timer import DeviceTimer

    nruns = max(1, int(config.collective_benchmark_nruns))
    nwarmup = max(0, int(config.inductor_default_autotune_warmup))
    timeout_s = float(config.collective_benchmark_timeout)
    inputs, output = autotune_args.get_benchmark_tensors(cls._is_extern(choice)).unpack()
    output.zero_()

    def run() -> None:
        choice.benchmark_collective(*inputs, out=output)

    start = time.monotonic()
    try:
        timer = DeviceTimer()
        dist.barrier()
        for _ in range(nwarmup):
            run()
        timer.iface.synchronize()
        dist.barrier()
        times = timer.run(run, nruns)
        local = sum(times) / nruns
        elapsed = time.monotonic() - start
        if elapsed > timeout_s:
            log.warning(
                "Collective benchmark of %s took %.3f s on this rank, over collective_benchmark_timeout"
                " (%.3f s): the choice is dropped on every rank.",
                choice.name,
                elapsed,
                timeout_s,
            )
            local = math.inf
    except Exception:
        log.warning(
            "Collective benchmark exception for choice %s: dropped on every rank.",
            getattr(choice, "name", "<unknown>"),
            exc_info=True,
        )
        local, nruns = math.inf, 0
    # inf from any rank makes the average inf on every rank: all agree to drop the choice
    result = torch.tensor([local], dtype=torch.float32, device=output.device)
    dist.all_reduce(result, op=dist.ReduceOp.AVG)
    timing = float(result.item())
    log.info("Collective benchmark for %s: %d runs, %.6f ms", choice.name, nruns, timing)
    return timing if math.isfinite(timing) else math.inf
