"""Version differences and the one upstream patch of npu-autotune (one function each)."""

from __future__ import annotations

import functools
import inspect

import torch


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
    signature = inspect.signature(original)

    @functools.wraps(original)
    def benchmark(self, *args, **kwargs):
        try:
            bound = dict(signature.bind(self, *args, **kwargs).arguments)
        except TypeError:
            return original(self, *args, **kwargs)
        extra = dict(bound.pop("kwargs", {}) or {})
        dev = bound.get("device", extra.get("device"))
        if dev is None or torch.device(dev).type != device:
            return original(self, *args, **kwargs)  # every other device: upstream, untouched
        extra.pop("device", None)
        call, call_args, call_kwargs = bound["fn"], bound.get("fn_args") or (), bound.get("fn_kwargs") or {}
        from torch._inductor import config

        warmup = extra.pop("warmup", config.inductor_default_autotune_warmup)
        rep = extra.pop("rep", config.inductor_default_autotune_rep)
        return fn(self, lambda: call(*call_args, **call_kwargs), warmup=warmup, rep=rep, **extra)

    benchmark._npu_autotune = True
    benchmarking.Benchmarker.benchmark = benchmark


def accelerator_empty_cache_on_sim() -> None:
    """``torch.accelerator.empty_cache()`` asserts that the accelerator's allocator is a c10
    ``DeviceAllocator``; npu-sim's is a plain ``c10::Allocator`` (torch_npu's is a
    DeviceAllocator), and upstream's ``TritonScheduling.benchmark_combo_kernel`` calls it
    after each combo benchmark (benchmark_combo_kernel, A14). Torch 2.10-2.13: where the
    original raises that assertion for device npu, the npu device module's own
    ``empty_cache`` runs instead; every other call is upstream's, unchanged. Removed when
    npu-sim's allocator derives from ``c10::CachingDeviceAllocator::DeviceAllocator``."""
    import torch.accelerator as acc

    original = acc.empty_cache
    if getattr(original, "_npu_autotune", False):
        return

    @functools.wraps(original)
    def empty_cache() -> None:
        try:
            return original()
        except RuntimeError as exc:
            current = torch.accelerator.current_accelerator()
            if current is None or current.type != "npu" or "is not a DeviceAllocator" not in str(exc):
                raise
            torch.npu.empty_cache()

    empty_cache._npu_autotune = True
    acc.empty_cache = empty_cache
