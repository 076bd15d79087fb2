"""Patches of upstream symbols, one function per patch (torch 2.13, 2.14, 2.15). Each names the
upstream hook that would remove it, and each only changes what happens for graphs on device "npu"
(the benchmark's cuda wrapper route is bench/cuda_routes.py). Also the readers of what differs
between those torch releases (no patch: ``lines_of``, ``lazy_triton_compile_available``...).
"""

from __future__ import annotations

from npu_inductor_core.patches import upstream_patch


class _GpuTypes(list):
    """Upstream's GPU types plus "npu". Membership (``is_gpu``) answers "npu"; iteration
    (``get_gpu_type``, which asserts that one GPU type at most is available, and freezing's
    device pick) leaves "npu" out while an upstream GPU type is available, so on a machine
    with cuda and npu-sim cuda stays the GPU type and cuda compiles run as without us."""

    def __iter__(self):
        items = list(super().__iter__())
        if "npu" in items and any(t != "npu" and _available(t) for t in items):
            items.remove("npu")
        return iter(items)


def _available(device_type: str) -> bool:
    import torch

    module = getattr(torch, device_type, None)
    try:
        return bool(module is not None and module.is_available())
    except Exception:  # a backend module that cannot answer is not available
        return False


@upstream_patch(
    "torch._inductor.utils.GPU_TYPES",
    versions="torch 2.13, 2.14, 2.15 (2.15: only where its snapshot lacks npu)",
    removed_by="torch 2.15's DeviceInterface.is_gpu(), from which GPU_TYPES is built once, at the "
    "import of torch._inductor.utils: not installed where that snapshot has npu; it "
    "lacks npu while npu's interface registers at the first compile (import torch "
    "imports no Dynamo), so the patch stays until the interface registers at autoload",
)
def add_npu_to_gpu_types() -> bool:
    """Inductor decides "GPU-like device: Triton codegen, device guards, streams" by
    membership in torch._inductor.utils.GPU_TYPES (is_gpu()). The list becomes a
    ``_GpuTypes`` holding "npu" too, which changes answers for "npu" only: where cuda (or
    another upstream GPU type) is available, iterating it yields upstream's types alone, so
    ``get_gpu_type()`` keeps answering cuda there instead of asserting on two GPU types.
    Torch 2.13, 2.14 and 2.15. Torch 2.15 lists every interface whose ``is_gpu()`` is True
    (npu-sim's is), but only those registered before ``torch._inductor.utils`` is imported;
    npu-sim registers its Dynamo interface at the first compile, not at ``import torch``
    (which imports no Dynamo), so there too the patch is usually installed; where the
    snapshot already has npu nothing is patched."""
    from torch._inductor import utils

    # torch 2.15 builds GPU_TYPES from the registered interfaces' is_gpu() (npu-sim's says True)
    if isinstance(utils.GPU_TYPES, _GpuTypes) or "npu" in utils.GPU_TYPES:
        return False
    utils.GPU_TYPES = _GpuTypes([*utils.GPU_TYPES, "npu"])
    return True


@upstream_patch(
    "torch._inductor.runtime.triton_heuristics.NpuGrid",
    versions="torch 2.13, 2.14, 2.15",
    removed_by="a grid-type registry, or inductor_meta carrying a qualified class name, upstream",
)
def register_npu_grid_type(grid_type: type) -> bool:
    """GridExpr.from_meta (and from_meta_lazy) find a kernel's grid class by the name in
    inductor_meta["grid_type"], looked up in triton_heuristics' module globals; there is no
    registry for a backend's own grid types. We add our one class there under its own name
    (NpuGrid; its axis count comes from inductor_meta), which only npu kernels' inductor_meta
    names, so every other kernel's grid is upstream's. Torch 2.11 and 2.13 (same lookup);
    removed by a grid-type registry, or inductor_meta carrying a qualified class name, upstream."""
    from torch._inductor.runtime import triton_heuristics

    if not issubclass(grid_type, triton_heuristics.GridExpr):
        raise TypeError(f"{grid_type!r} is not a GridExpr")
    existing = vars(triton_heuristics).get(grid_type.__name__)
    if (
        existing is not None
        and existing is not grid_type
        and existing.__module__ != grid_type.__module__
    ):
        raise RuntimeError(f"triton_heuristics already defines {grid_type.__name__} ({existing!r})")
    if existing is grid_type:
        return False
    triton_heuristics.NpuGrid = grid_type
    return True


# Cube cores an npu needs before GEMM templates are offered (910B-class parts have 20-24;
# 310-class inference parts have 1-2, where ATen's matmul is the better choice).
MIN_CUBE_CORES_FOR_TEMPLATES = 8


@upstream_patch(
    "torch._inductor.utils.is_big_gpu",
    versions="torch 2.13, 2.14, 2.15",
    removed_by='a per-device "templates supported" answer from the device interface upstream',
    reason="GEMM templates are offered where is_big_gpu(device) holds, which counts SMs; "
    'for device "npu" the answer comes from its cube-core count.',
)
def is_big_gpu_for_npu() -> bool:
    """``use_triton_template`` offers Triton GEMM templates only where
    ``utils.is_big_gpu(device)`` holds, which counts SMs (at least 68). An npu has no SMs; its
    GEMMs run on cube cores (20-24 on 910B-class parts). For device "npu" we answer from the
    device's cube-core count (``cube_core_num``, else ``multi_processor_count``); every other
    device gets upstream's answer. Torch 2.11 and 2.13; removed by a per-device
    "templates supported" answer from the device interface upstream."""
    from torch._inductor import utils

    upstream = utils.is_big_gpu
    if getattr(upstream, "_npu_aware", False):
        return False

    def is_big_gpu(index_or_device=0) -> bool:
        import torch

        if isinstance(index_or_device, torch.device) and index_or_device.type == "npu":
            return _npu_cube_cores(index_or_device) >= MIN_CUBE_CORES_FOR_TEMPLATES
        return upstream(index_or_device)

    is_big_gpu._npu_aware = True
    is_big_gpu.__wrapped__ = upstream
    utils.is_big_gpu = is_big_gpu
    return True


def _npu_cube_cores(device) -> int:
    from npu_inductor_core.device import device as facts

    return facts(device.index if device.index is not None else 0).cube_cores


@upstream_patch(
    "torch._inductor.select_algorithm.TritonTemplate.kernel_type",
    versions="torch 2.13, 2.14, 2.15",
    removed_by="a per-device template kernel class upstream (e.g. from the device's scheduling)",
)
def npu_template_kernel_class(npu_kernel_cls) -> bool:
    """``TritonTemplate.kernel_type`` is one kernel class for every device's GEMM/conv
    templates (``TritonTemplateKernel``), so an npu template would be rendered with upstream's
    runtime imports (CUDA libdevice, upstream heuristics) and epilogue loads triton-ascend
    refuses. Instance access now returns a factory that builds ``npu_kernel_cls`` (a subclass of
    upstream's class) when the template's output node is on "npu", and upstream's class for
    every other device; class access, and templates that set their own ``kernel_type``, are
    unchanged. Torch 2.11 and 2.13 (both construction sites pass ``output_node=``); removed by
    a per-device template kernel class upstream (e.g. from the device's scheduling)."""
    from torch._inductor.select_algorithm import TritonTemplate

    current = TritonTemplate.__dict__["kernel_type"]
    if isinstance(current, _PerDeviceTemplateKernel):
        return False
    if not issubclass(npu_kernel_cls, current):
        raise TypeError(f"{npu_kernel_cls!r} must subclass {current!r}")
    TritonTemplate.kernel_type = _PerDeviceTemplateKernel(current, npu_kernel_cls)
    return True


class _PerDeviceTemplateKernel:
    """Non-data descriptor: upstream's class on the class, a device-dispatching factory on
    instances (an instance may still assign its own ``kernel_type``)."""

    def __init__(self, upstream, npu):
        self.upstream, self.npu = upstream, npu

    def __get__(self, obj, owner):
        if obj is None:
            return self.upstream

        def make(*args, **kwargs):
            return self.class_for(kwargs.get("output_node"))(*args, **kwargs)

        return make

    def class_for(self, output_node):
        return self.npu if _on_npu(output_node) else self.upstream


def _on_npu(node) -> bool:
    try:
        device = node.get_device()
    except AttributeError:
        return False
    return device is not None and device.type == "npu"


def ensure_kernel_source(autotuner) -> None:
    """Give a kernel object that lost its Python function (pickled back from a compile worker,
    or restored from the FX cache) its function again. Torch 2.13 has
    ``CachingAutotuner._ensure_kernel_loaded``; torch 2.11 only keeps ``_reload_kernel`` (the
    loader ``precompile`` was given). Not a patch: a version difference."""
    if getattr(autotuner.fn, "fn", None) is not None:
        return
    ensure = getattr(autotuner, "_ensure_kernel_loaded", None)
    if ensure is not None:
        ensure()
        return
    reload_kernel = getattr(autotuner, "_reload_kernel", None)
    if reload_kernel is None:
        raise RuntimeError(
            f"npu kernel {autotuner.inductor_meta.get('kernel_name')}: its source is gone "
            "and there is no loader to rebuild it"
        )
    autotuner.fn = reload_kernel().fn


def apply_feature_required_overrides(kernel_type, kernel_features, kernel_kwargs) -> None:
    """What a kernel's features force on its kwargs (``sort``: persistent, not cooperative; a
    dynamic reduction numel without a persistent RBLOCK: not persistent). Torch 2.13 has
    ``TritonKernel.apply_feature_required_overrides``; torch 2.11 only (no such method): the
    same two rules, as its ``TritonScheduling.create_kernel_choices`` writes them inline. Not
    a patch: a version difference."""
    apply = getattr(kernel_type, "apply_feature_required_overrides", None)
    if apply is not None:
        apply(kernel_features, kernel_kwargs)
        return
    if kernel_features.contains_op("sort"):
        kernel_kwargs["override_persistent_reduction"] = True
        kernel_kwargs["override_cooperative_reduction"] = False
    if not kernel_type.has_persistent_RBLOCK(kernel_features.reduction_numel):
        assert not kernel_kwargs.get("override_persistent_reduction")
        kernel_kwargs["override_persistent_reduction"] = False


def lazy_triton_compile_available() -> bool:
    """Whether upstream's C++ wrapper compiles Triton kernels lazily, at the compiled module's
    first call (torch 2.13: ``torch._inductor.runtime.triton_lazy_compile``, used while
    ``triton.autotune_at_compile_time`` is not True), which npu's cpp_wrapper is built on
    (``cpp_wrapper_runtime``: the kernel's first run picks its npu-launcher descriptor).
    Torch 2.11 only: absent (its C++ wrapper autotunes every kernel at compile time into
    ``CudaKernelParamCache``, a CUDA binary cache npu kernels do not fill), so cpp_wrapper on
    npu is refused there with a clear error. Not a patch: a version difference."""
    import importlib.util

    return importlib.util.find_spec("torch._inductor.runtime.triton_lazy_compile") is not None


def lines_of(buffer) -> list:
    """An IndentedBuffer's own line list: ``get_lines_ref()`` from torch 2.12, the attribute
    it returns before (torch 2.11)."""
    get = getattr(buffer, "get_lines_ref", None)
    return get() if get is not None else buffer._lines
