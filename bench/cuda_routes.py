"""Benchmark-only routes that change cuda compiles (bench/launch_overhead.py's cuda modes and
npu-launcher's cuda tests), kept out of the production packages: loading npu-inductor never
changes a cpu or cuda compile, and nothing in ``enable()`` imports this module.

- ``route_cuda_kernels(True)``: a cuda kernel that upstream would launch with Triton's launcher
  (TritonCompileResult, i.e. ``use_static_cuda_launcher`` off) gets an npu-launcher cuda launch
  object instead (``npu_launcher.inductor.cuda_launcher``); ``ROUTED_CUDA_KERNELS`` records
  the kernels routed.
- ``route_cuda_wrapper(cls)``: cuda graphs are written by ``cls`` (``cuda_wrapper_class()``:
  npu-lowering's ``DirectLaunchWrapperMixin`` over upstream's PythonWrapperCodegen) instead of
  upstream's PythonWrapperCodegen.

Both are registered with npu-inductor-core's ``upstream_patch`` (owner "bench"), so
``npu-inductor doctor --patches`` lists them while a benchmark has them installed, and each
restores upstream's symbol when turned off.
"""

from __future__ import annotations

from npu_inductor_core.patches import upstream_patch, withdraw

ROUTED_CUDA_KERNELS: list[str] = []  # entry names routed, for benchmarks and tests
_route = {"make": None}
_cuda_wrapper: dict = {}


@upstream_patch(
    "torch._inductor.runtime.triton_heuristics.TritonCompileResult.make_launcher",
    versions="torch 2.11, 2.13, 2.14, 2.15",
    removed_by="a launcher hook in CompileResult (none upstream)",
    owner="bench",
)
def route_triton_compile_results(route_to) -> bool:
    """Benchmark mode for cuda: ``TritonCompileResult.make_launcher`` (Inductor's launcher for a
    kernel compiled by Triton) asks ``route_to(result)`` first for cuda kernels while it is
    set; None restores upstream's method."""
    from torch._inductor.runtime import triton_heuristics

    cls = triton_heuristics.TritonCompileResult
    if route_to is None:
        upstream = getattr(cls.make_launcher, "__wrapped__", None)
        if getattr(cls.make_launcher, "_npu_routed", False) and upstream is not None:
            cls.make_launcher = upstream
        _route["make"] = None
        withdraw(route_triton_compile_results)
        return False
    if not getattr(cls.make_launcher, "_npu_routed", False):
        upstream = cls.make_launcher

        def make_launcher(self):
            route = _route["make"]
            if route is not None and self.compile_meta.get("device_type") == "cuda":
                launcher = route(self)
                if launcher is not None:  # None: a kernel the launcher refuses (scratch, PDL...)
                    return launcher
            return upstream(self)

        make_launcher._npu_routed = True
        make_launcher.__wrapped__ = upstream
        cls.make_launcher = make_launcher
    _route["make"] = route_to
    return True


def route_cuda_kernels(enabled: bool = True) -> None:
    """Inductor's cuda kernels through npu-launcher's cuda launch objects (on), or upstream's
    launcher again (off)."""
    from npu_launcher.inductor import cuda_launcher

    def routed(result):
        launcher = cuda_launcher(result)
        if launcher is not None:
            ROUTED_CUDA_KERNELS.append(getattr(result.kernel, "name", "?"))
        return launcher

    route_triton_compile_results(routed if enabled else None)


@upstream_patch(
    "torch._inductor.codegen.common.device_codegens['cuda'].wrapper_codegen",
    versions="torch 2.11, 2.13, 2.14, 2.15",
    removed_by="a per-compile wrapper-codegen option upstream",
    owner="bench",
)
def route_cuda_wrapper(wrapper_cls=None) -> bool:
    """Benchmark mode for cuda: cuda graphs are written by ``wrapper_cls`` instead of upstream's
    PythonWrapperCodegen while set; None restores upstream's class."""
    from torch._inductor.codegen import common

    common.init_backend_registration()
    entry = common.device_codegens["cuda"]
    upstream = _cuda_wrapper.setdefault("upstream", entry.wrapper_codegen)
    entry.wrapper_codegen = wrapper_cls or upstream
    if wrapper_cls is None:
        withdraw(route_cuda_wrapper)  # upstream's class again
        return False
    return True


def cuda_wrapper_class():
    """Upstream's cuda Python wrapper with direct launch (the benchmark's cuda proxy mode:
    npu-lowering's ``direct_launch.DirectLaunchWrapperMixin`` over upstream's
    PythonWrapperCodegen), for ``route_cuda_wrapper``. Its kernels get a direct slot only when
    their launcher offers the probe (npu-launcher's routed cuda kernels, ``route_cuda_kernels``)."""
    from npu_lowering.direct_launch import DirectLaunchWrapperMixin
    from torch._inductor.codegen.wrapper import PythonWrapperCodegen

    class CudaDirectLaunchWrapperCodegen(DirectLaunchWrapperMixin, PythonWrapperCodegen):
        @staticmethod
        def create(is_subgraph, subgraph_name, parent_wrapper, partition_signatures=None):
            if is_subgraph:
                return PythonWrapperCodegen.create(
                    is_subgraph, subgraph_name, parent_wrapper, partition_signatures
                )
            return CudaDirectLaunchWrapperCodegen()

    return CudaDirectLaunchWrapperCodegen
