"""Version differences and the upstream patches of npu-autotune (one function each)."""

from __future__ import annotations

import functools

import torch
from npu_inductor_core.patches import upstream_patch


def register_npu_benchmarker(device: str, fn) -> bool:
    """Put ``fn`` in upstream's per-device benchmarker registry
    (``torch._inductor.runtime.benchmarking.register_benchmarker``): not a patch."""
    from torch._inductor.runtime import benchmarking

    register = getattr(benchmarking, "register_benchmarker", None)
    if register is None:  # torch 2.11 (the cuda benchmarks' proxy mode; npu needs 2.13 or newer)
        return False
    register(device, fn, override=True)
    return False


@upstream_patch(
    "torch._inductor.autotune_process._visible_device_env_var_maps",
    torch=("2.14", "2.15"),
    versions="torch 2.14, 2.15 (npu tuning workers only)",
    removed_by="the device interface naming its visible-devices variable (or a registration for "
    "that table) upstream",
)
def visible_devices_variable_for_npu() -> bool:
    """Torch 2.14's tuning worker (``TuningProcess.process_main``) looks up the GPU type's
    visible-devices variable (``get_visible_devices_env_var``) before serving any job, in a
    table of cuda's and xpu's only: in an npu tuning worker (``get_gpu_type()`` is npu there) it
    raised, and every candidate config counted as infinitely slow. The table gets npu's entry,
    ``ASCEND_RT_VISIBLE_DEVICES`` (torch_npu's variable); installed by the npu tuning worker
    (``_tuning_main``) alone, never in the compiling process. Torch 2.13 names
    ``CUDA_VISIBLE_DEVICES`` there and needs none."""
    from npu_inductor_core import torch_versions

    if not torch_versions.at_least("2.14"):
        return False
    from torch._inductor import autotune_process

    table = autotune_process._visible_device_env_var_maps
    if "npu" in table:
        return False
    table["npu"] = "ASCEND_RT_VISIBLE_DEVICES"
    return True


@upstream_patch(
    "torch._inductor.scheduler._is_gpu_triton_backend",
    versions="torch 2.13, 2.14, 2.15",
    removed_by="upstream asking the device's scheduling whether it supports mix-order reductions",
)
def mix_order_reductions_on_npu() -> bool:
    """Upstream fuses sibling reductions over different dimensions of one input into a
    mix-order reduction (``triton.mix_order_reduction``; its split size is autotuned under
    ``triton.mix_order_reduction_autotune_split_size``) only for cuda and xpu:
    ``MixOrderReduction.can_fuse`` asks ``scheduler._is_gpu_triton_backend``, which names
    those two devices. Torch 2.13 (2.11 checks the device inline, no mix-order on npu there): the helper also answers True for two npu nodes whose
    backend is Triton (the npu scheduling is upstream's TritonScheduling, which generates the
    kernel; npu-lowering writes its row loop in a form triton-ascend lowers, so also where
    triton-ascend is installed) when neither node is an ancestor of the other. That is every
    pair mix-order fusion can take (it refuses producer/consumer pairs right after asking),
    and none that the helper's other caller, nested reductions (``NestedReduction``: only
    dependent pairs), can: those, and every other device, keep upstream's answer. Removed
    when upstream asks the device's scheduling whether it supports mix-order reductions."""
    from torch._inductor import scheduler
    from torch._inductor.utils import get_current_backend

    if not hasattr(scheduler, "_is_gpu_triton_backend"):  # torch 2.11 checks the device inline
        return False
    helper = scheduler._is_gpu_triton_backend
    if getattr(helper, "_npu_autotune", False):
        return False

    @functools.wraps(helper)
    def _is_gpu_triton_backend(node1, node2):
        devices = {getattr(n.get_device(), "type", None) for n in (node1, node2)}
        if devices == {"npu"} and node1.is_gpu() and node2.is_gpu() and not _related(node1, node2):
            return get_current_backend("npu") == "triton"
        return helper(node1, node2)

    _is_gpu_triton_backend._npu_autotune = True
    scheduler._is_gpu_triton_backend = _is_gpu_triton_backend
    return True


def _related(node1, node2) -> bool:
    """One node is a producer of the other (what mix-order fusion refuses, nested takes); a
    node without ancestors computed counts as related (upstream's answer)."""
    a1, a2 = getattr(node1, "ancestors", None), getattr(node2, "ancestors", None)
    if a1 is None or a2 is None:
        return True
    return bool(a1 & node2.get_operation_names() or a2 & node1.get_operation_names())


@upstream_patch(
    "torch._inductor.select_algorithm.AlgorithmSelectorCache.benchmark_collective_choice",
    versions="torch 2.13, 2.14, 2.15",
    removed_by="upstream timing collective benchmarks through the device interface "
    "(get_interface_for_device) instead of torch.cuda",
)
def collective_benchmarks_on_npu() -> bool:
    """``AlgorithmSelectorCache.benchmark_collective_choice`` (the cross-rank
    benchmark of a custom op's collective decompositions, which reads
    ``collective_benchmark_nruns`` and ``collective_benchmark_timeout``) times with
    ``torch.cuda`` events on ``cuda:<rank>``, so on npu every choice failed and the default
    was always taken; for a choice whose benchmark tensors are on npu it runs
    ``collective_bench.benchmark_collective_choice`` (same protocol, npu timing events, the
    timeout agreed by all ranks). Every other device: upstream's call, unchanged. No hook
    exists (upstream's selector is a module global); removed when upstream times through the
    device interface."""
    from torch._inductor.select_algorithm import AlgorithmSelectorCache

    from . import collective_bench

    original = getattr(AlgorithmSelectorCache, "benchmark_collective_choice", None)
    if original is None or getattr(original, "_npu_autotune", False):
        return False
    upstream = original.__func__

    @functools.wraps(upstream)
    def benchmark_collective_choice(cls, choice, autotune_args):
        if collective_bench.on_npu(cls, choice, autotune_args):
            return collective_bench.benchmark_collective_choice(cls, choice, autotune_args)
        return upstream(cls, choice, autotune_args)

    benchmark_collective_choice._npu_autotune = True
    AlgorithmSelectorCache.benchmark_collective_choice = classmethod(benchmark_collective_choice)
    return True


def should_coordesc_tune(autotuner) -> bool:
    """Whether a kernel object is eligible for coordinate descent tuning. Torch 2.13:
    upstream's ``CachingAutotuner._should_coordesc_tune`` (a cached property); torch 2.11 only
    (no such property): the same rule, which its ``coordinate_descent_tuning`` checks inline (no
    template, user-autotuned or fixed kernels; no reductions or split scans in deterministic
    mode). Not a patch: a version difference."""
    from torch._inductor.runtime.hints import HeuristicType

    found = getattr(type(autotuner), "_should_coordesc_tune", None)
    if found is not None:
        return bool(autotuner._should_coordesc_tune)
    if autotuner.heuristic_type in (
        HeuristicType.TEMPLATE,
        HeuristicType.USER_AUTOTUNE,
        HeuristicType.FIXED,
    ):
        return False
    return not (
        getattr(autotuner, "deterministic_mode", False)
        and autotuner.heuristic_type
        in (HeuristicType.REDUCTION, HeuristicType.PERSISTENT_REDUCTION, HeuristicType.SPLIT_SCAN)
    )


@functools.cache
def autoheuristic_builds() -> bool:
    """Whether upstream's ``AutoHeuristic`` can be built in this process. Torch 2.13: yes (its
    metadata takes (0, 0) for the CUDA device capability without CUDA). Torch 2.11 only: its
    ``__init__`` calls ``torch.cuda.get_device_capability()`` unconditionally, which raises
    without a CUDA device (npu-sim, an Ascend host); so only with one. Not a patch: a version
    difference (``pad_mm`` then times instead of running the autoheuristic)."""
    major, minor = (int(p) for p in torch.__version__.split(".")[:2])
    return (major, minor) >= (2, 13) or torch.cuda.is_available()
