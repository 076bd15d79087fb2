"""Patches of upstream symbols, one function per patch (torch 2.13 on CI, 2.11 on the GPU
machine). Each names the upstream hook that would remove it, and each only changes what
happens for graphs on device "npu" (``route_cuda_wrapper`` only while a benchmark sets it).
"""

from __future__ import annotations


def add_npu_to_gpu_types() -> None:
    """Inductor decides "GPU-like device: Triton codegen, device guards, streams" by
    membership in torch._inductor.utils.GPU_TYPES (is_gpu()). Appending "npu" changes
    answers for "npu" only. Torch 2.11 and 2.13; removed by a device-registration flag
    for GPU-likeness (none upstream yet)."""
    from torch._inductor import utils

    if "npu" not in utils.GPU_TYPES:
        utils.GPU_TYPES.append("npu")


def scheduler_has_triton_for_npu() -> None:
    """Scheduler.create_backend refuses a GPU-like device when has_triton() is False, and
    has_triton() only knows cuda, xpu, cpu and mtia. We rebind the scheduler module's
    has_triton to answer True while the graph being scheduled has npu devices and the npu
    device interface is triton-capable; every other answer is upstream's. Torch 2.11 and
    2.13; removed if has_triton consulted DeviceInterface.is_triton_capable."""
    from torch._inductor import scheduler

    upstream = scheduler.has_triton
    if getattr(upstream, "_npu_aware", False):
        return

    def has_triton() -> bool:
        return upstream() or (_graph_on_npu() and _npu_triton_capable())

    has_triton._npu_aware = True
    has_triton.cache_clear = upstream.cache_clear
    scheduler.has_triton = has_triton


def _graph_on_npu() -> bool:
    from torch._inductor.virtualized import V

    try:
        return "npu" in V.graph.device_types
    except (AttributeError, AssertionError):
        return False


def _npu_triton_capable() -> bool:
    from torch._dynamo.device_interface import get_interface_for_device
    from torch.utils._triton import has_triton_package

    if not has_triton_package():
        return False
    try:
        return bool(get_interface_for_device("npu").is_triton_capable())
    except Exception:  # no npu device interface registered
        return False


def register_npu_grid_types(*grid_types: type) -> None:
    """GridExpr.from_meta (and from_meta_lazy) find a kernel's grid class by the name in
    inductor_meta["grid_type"], looked up in triton_heuristics' module globals; there is no
    registry for a backend's own grid types. We add our classes there under their own names
    (NpuGrid1D/2D/3D), which only npu kernels' inductor_meta names, so every other kernel's
    grid is upstream's. Torch 2.11 and 2.13 (same lookup); removed by a grid-type registry,
    or inductor_meta carrying a qualified class name, upstream."""
    from torch._inductor.runtime import triton_heuristics

    for cls in grid_types:
        if not issubclass(cls, triton_heuristics.GridExpr):
            raise TypeError(f"{cls!r} is not a GridExpr")
        existing = vars(triton_heuristics).get(cls.__name__)
        if existing is not None and existing is not cls and existing.__module__ != cls.__module__:
            raise RuntimeError(f"triton_heuristics already defines {cls.__name__} ({existing!r})")
        setattr(triton_heuristics, cls.__name__, cls)


_cuda_wrapper: dict = {}


def route_cuda_wrapper(wrapper_cls=None) -> None:
    """Benchmark mode (bench/launch_overhead.py): cuda graphs are written by ``wrapper_cls``
    (``direct_launch.cuda_wrapper_class()``) instead of upstream's PythonWrapperCodegen while
    set; None restores upstream's class. Never applied by register(): it changes cuda compiles.
    Torch 2.11 and 2.13 (``device_codegens[...].wrapper_codegen``); removed by a per-compile
    wrapper-codegen option upstream."""
    from torch._inductor.codegen import common

    common.init_backend_registration()
    entry = common.device_codegens["cuda"]
    upstream = _cuda_wrapper.setdefault("upstream", entry.wrapper_codegen)
    entry.wrapper_codegen = wrapper_cls or upstream
