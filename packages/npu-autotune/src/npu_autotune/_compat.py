"""Version differences and the upstream patches of npu-autotune (one function each)."""

from __future__ import annotations

import functools
import inspect
import threading

import torch
from npu_inductor_core.patches import upstream_patch


# torch 2.11: the benchmarker of each device the wrapper answers for; registering again (a
# test's fake timings, then the real one back) replaces the entry, the wrapper stays one
_NPU_BENCHMARKERS: dict = {}


@upstream_patch("torch._inductor.runtime.benchmarking.Benchmarker.benchmark", versions="torch 2.11 (2.13 has a registry)",
                removed_by="torch 2.13's benchmarking.register_benchmarker (used there: no patch)",
                reason="device \"npu\" benchmarks go to npu-autotune's benchmarker; every other device takes upstream's path.")
def register_npu_benchmarker(device: str, fn) -> bool:
    """Put ``fn`` in upstream's per-device benchmarker registry.

    torch 2.13: ``torch._inductor.runtime.benchmarking.register_benchmarker`` (no patch).
    torch 2.11 (no registry; the hook that removes this branch is that registry): wrap
    ``Benchmarker.benchmark`` so only ``device == "npu"`` calls go to ``fn``; every other
    device takes upstream's unchanged path.
    """
    from torch._inductor.runtime import benchmarking

    if hasattr(benchmarking, "register_benchmarker"):
        benchmarking.register_benchmarker(device, fn, override=True)
        return False  # upstream's registry: not a patch
    _NPU_BENCHMARKERS[device] = fn
    original = benchmarking.Benchmarker.benchmark
    if getattr(original, "_npu_autotune", False):
        return False
    signature = inspect.signature(original)

    @functools.wraps(original)
    def benchmark(self, *args, **kwargs):
        try:
            bound = dict(signature.bind(self, *args, **kwargs).arguments)
        except TypeError:
            return original(self, *args, **kwargs)
        extra = dict(bound.pop("kwargs", {}) or {})
        dev = bound.get("device", extra.get("device"))
        run = None if dev is None else _NPU_BENCHMARKERS.get(torch.device(dev).type)
        if run is None:
            return original(self, *args, **kwargs)  # every other device: upstream, untouched
        extra.pop("device", None)
        call, call_args, call_kwargs = bound["fn"], bound.get("fn_args") or (), bound.get("fn_kwargs") or {}
        from torch._inductor import config

        warmup = extra.pop("warmup", config.inductor_default_autotune_warmup)
        rep = extra.pop("rep", config.inductor_default_autotune_rep)
        return run(self, lambda: call(*call_args, **call_kwargs), warmup=warmup, rep=rep, **extra)

    benchmark._npu_autotune = True
    benchmarking.Benchmarker.benchmark = benchmark
    return True


_mix_order_check = threading.local()


@upstream_patch("torch._inductor.scheduler._is_gpu_triton_backend", "torch._inductor.scheduler.MixOrderReduction.can_fuse",
                versions="torch 2.10-2.13",
                removed_by="upstream asking the device's scheduling whether it supports mix-order reductions")
def mix_order_reductions_on_npu() -> bool:
    """Upstream fuses sibling reductions over different dimensions of one input into a
    mix-order reduction (``triton.mix_order_reduction``; its split size is autotuned under
    ``triton.mix_order_reduction_autotune_split_size``, A55) only for cuda and xpu:
    ``MixOrderReduction.can_fuse`` asks ``scheduler._is_gpu_triton_backend``, which names
    those two devices. Torch 2.10-2.13: while ``can_fuse`` runs, that helper also answers
    True for two npu nodes whose backend is Triton (the npu scheduling is upstream's
    TritonScheduling, which generates the kernel; npu-lowering writes its row loop in a form
    triton-ascend lowers, so also where triton-ascend is installed); every other caller
    (nested reductions) and every other device get upstream's answer. Removed
    when upstream asks the device's scheduling whether it supports mix-order reductions."""
    from torch._inductor import scheduler
    from torch._inductor.utils import get_current_backend

    if getattr(scheduler.MixOrderReduction.can_fuse, "_npu_autotune", False):
        return False
    if not hasattr(scheduler, "_is_gpu_triton_backend"):  # torch 2.11 checks the device inline
        return False
    helper = scheduler._is_gpu_triton_backend
    can_fuse = scheduler.MixOrderReduction.can_fuse.__func__

    @functools.wraps(helper)
    def _is_gpu_triton_backend(node1, node2):
        if getattr(_mix_order_check, "active", False):
            devices = {getattr(n.get_device(), "type", None) for n in (node1, node2)}
            if devices == {"npu"} and node1.is_gpu() and node2.is_gpu():
                return get_current_backend("npu") == "triton"
        return helper(node1, node2)

    @functools.wraps(can_fuse)
    def mix_order_can_fuse(cls, node1, node2):
        _mix_order_check.active = True
        try:
            return can_fuse(cls, node1, node2)
        finally:
            _mix_order_check.active = False

    mix_order_can_fuse._npu_autotune = True
    scheduler._is_gpu_triton_backend = _is_gpu_triton_backend
    scheduler.MixOrderReduction.can_fuse = classmethod(mix_order_can_fuse)
    return True


@upstream_patch("torch._inductor.async_compile.AsyncCompile.triton", versions="torch 2.11-2.13",
                removed_by="a per-device hook around async compile waits upstream")
def tag_npu_kernel_futures() -> bool:
    """Y02/Y03/D02: ``AsyncCompile.triton(kernel_name, source_code, device_str)`` returns a
    future with no device on it; for ``device_str == "npu"`` the future gets the kernel's
    name and submit time (``compile_wait.tag``) so the wait can tell npu kernels apart.
    Every other device: upstream's call, unchanged. Torch 2.11-2.13; removed by a
    per-device hook around async compile waits upstream."""
    from torch._inductor.async_compile import AsyncCompile

    from . import compile_wait

    original = AsyncCompile.triton
    if getattr(original, "_npu_autotune", False):
        return False

    @functools.wraps(original)
    def triton(self, kernel_name, source_code, device_str="cuda"):
        result = original(self, kernel_name, source_code, device_str)
        if device_str == "npu":
            compile_wait.tag(result, kernel_name)
        return result

    triton._npu_autotune = True
    AsyncCompile.triton = triton
    return True


@upstream_patch("torch._inductor.async_compile.AsyncCompile._wait_futures", versions="torch 2.11-2.13",
                removed_by="upstream watchdog/progress hooks that take the device into account")
def npu_aware_compile_wait() -> bool:
    """Y02/Y03/D02: ``AsyncCompile._wait_futures(scope)`` for a scope holding npu kernel
    futures runs inside ``compile_wait.wait`` (flag check, a crashed worker named by its
    kernel, watchdog events, progress line); a scope without npu futures is upstream's call,
    unchanged. Torch 2.11-2.13; removed by upstream watchdog/progress hooks that take the
    device into account."""
    from torch._inductor.async_compile import AsyncCompile

    from . import compile_wait

    original = getattr(AsyncCompile, "_wait_futures", None)
    if original is None or getattr(original, "_npu_autotune", False):
        return False  # (a torch whose wait has another shape: upstream's wait, unwrapped)

    @functools.wraps(original)
    def _wait_futures(self, scope):
        return compile_wait.wait(original, self, scope)

    _wait_futures._npu_autotune = True
    AsyncCompile._wait_futures = _wait_futures
    return True


@upstream_patch("torch._inductor.ir.UserDefinedTritonKernel.__init__", versions="torch 2.11-2.13",
                removed_by="upstream's TritonHOPifier.init_variable reading Triton 3's warmup/rep parameters")
def refuse_unsupported_autotune_args_on_npu() -> bool:
    """A56: ``UserDefinedTritonKernel.__init__`` (where Inductor lowers a user kernel and its
    device is known) refuses, for npu kernels, the ``triton.autotune`` benchmarking arguments
    that upstream's Dynamo check means to refuse but misses with Triton 3.x (``warmup``,
    ``rep``; ``user_kernel_args``), unless unsafe_ignore_unsupported_triton_autotune_args.
    Torch 2.11-2.13; other devices: upstream's, unchanged. Removed when upstream's
    ``TritonHOPifier.init_variable`` reads Triton 3's ``warmup``/``rep`` parameters."""
    from torch._inductor import ir

    from . import user_kernel_args

    original = ir.UserDefinedTritonKernel.__init__
    if getattr(original, "_npu_autotune", False):
        return False

    @functools.wraps(original)
    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        user_kernel_args.check(self.kernel_idx, self.device)

    __init__._npu_autotune = True
    ir.UserDefinedTritonKernel.__init__ = __init__
    return True
