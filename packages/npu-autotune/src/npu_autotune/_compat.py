"""Version differences and the one upstream patch of npu-autotune (one function each)."""

from __future__ import annotations

import functools


def register_npu_benchmarker(device: str, fn) -> None:
    """Put ``fn`` in upstream's per-device benchmarker registry.

    torch 2.13: ``torch._inductor.runtime.benchmarking.register_benchmarker`` (no patch).
    torch 2.11 (no registry; the hook that removes this branch is that registry): wrap
    ``Benchmarker.benchmark`` so only ``device == "npu"`` calls go to ``fn``; every other
    device takes upstream's unchanged path.
    """
    from torch._inductor.runtime import benchmarking

    if hasattr(benchmarking, "register_benchmarker"):
        benchmarking.register_benchmarker(device, fn, override=True)
        return
    original = benchmarking.Benchmarker.benchmark
    if getattr(original, "_npu_autotune", False):
        return

    @functools.wraps(original)
    def benchmark(self, fn_, fn_args=None, fn_kwargs=None, device_=None, **kwargs):
        dev = kwargs.pop("device", device_)
        if dev is not None and str(dev).split(":")[0] == device:
            from torch._inductor import config

            warmup = kwargs.pop("warmup", config.inductor_default_autotune_warmup)
            rep = kwargs.pop("rep", config.inductor_default_autotune_rep)
            args, kw = fn_args or (), fn_kwargs or {}
            return fn(self, lambda: fn_(*args, **kw), warmup=warmup, rep=rep, **kwargs)
        if dev is not None:
            kwargs["device"] = dev
        return original(self, fn_, fn_args, fn_kwargs, **kwargs)

    benchmark._npu_autotune = True
    benchmarking.Benchmarker.benchmark = benchmark
