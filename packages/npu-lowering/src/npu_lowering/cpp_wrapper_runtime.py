"""What the generated C++ of an npu graph (cpp_wrapper=True, cpp_wrapper.py) calls back in
Python, through include/npu_cpp_wrapper.h:

- ``start_kernel_compile``: upstream's (``triton_lazy_compile``): the kernel object from its
  ``async_compile.triton(...)`` source, when the compiled module is first called;
- ``run_kernel_first``: a kernel's first call. It runs the kernel object once (precompile,
  autotune, launch: the same code the Python wrapper runs) and returns, in upstream's
  ``TritonKernelCompileResult``, the path of the npu-launcher descriptor of the config it
  chose: the C++ then loads it through npu-launcher's C ABI and launches every later call
  itself;
- ``get_raw_stream``: the stream the Python wrapper would launch on.
"""

from __future__ import annotations

from typing import Any

from npu_inductor_core.torch_versions import at_least
from torch._inductor.runtime.triton_lazy_compile import (
    TritonKernelCompileResult,
    start_kernel_compile,
)

from .runtime.device import get_raw_stream

__all__ = ["get_raw_stream", "run_kernel_first", "start_kernel_compile"]


def _kernel(pending: dict, name: str):
    from torch._inductor.codecache import CodeCacheFuture

    if name not in pending:
        raise RuntimeError(f"npu cpp_wrapper: kernel {name} was not started")
    kernel = pending[name]
    if isinstance(kernel, CodeCacheFuture):
        kernel = pending[name] = kernel.result()
    return kernel


def _descriptor(kernel) -> tuple[str, Any, str]:
    """(descriptor file, config, entry name) of the config the kernel object launches."""
    results = [
        r
        for r in kernel.compile_results
        if getattr(r.kernel, "cubin_path", None) is not None or hasattr(r.kernel, "location")
    ]
    if kernel.launchers and len(kernel.launchers) == 1:  # Ascend: the tuned config
        chosen = kernel.launchers[0].config
        results = [
            r
            for r in results
            if r.config.kwargs == chosen.kwargs and r.config.num_warps == chosen.num_warps
        ] or results
    name = kernel.inductor_meta.get("kernel_name")
    if not results or not hasattr(results[0].kernel, "location"):
        raise RuntimeError(
            f"npu cpp_wrapper: kernel {name} has no npu-launcher descriptor; the C++ wrapper launches "
            "npu kernels only through npu-launcher (install it, keep use_static_triton_launcher on)"
        )
    result = results[0]
    if not result.kernel.cubin_path:
        result.reload_cubin_path()
    return result.kernel.cubin_path, result.config, result.kernel.name


def run_kernel_first(
    pending: dict, name: str, stream: Any, args: list
) -> TritonKernelCompileResult:
    kernel = _kernel(pending, name)
    kernel.run(*args, stream=stream)
    path, config, entry = _descriptor(kernel)
    kw = config.kwargs
    # torch 2.15 added tensordesc_meta (TMA descriptors, a CUDA feature): none on npu
    extra = {"tensordesc_meta": []} if at_least("2.15") else {}
    return TritonKernelCompileResult(
        cubin_path=path,
        mangled_name=entry,
        num_warps=config.num_warps,
        shared_mem=0,
        xblocks=[kw.get("XBLOCK", 1)],
        yblocks=[kw.get("YBLOCK", 1)],
        zblocks=[kw.get("ZBLOCK", 1)],
        r0blocks=[kw.get("R0_BLOCK", 1)],
        rsplit=kw.get("RSPLIT", 1),
        rsplit_size=kw.get("RSPLIT_SIZE", 1),
        config_index=None,
        global_scratch=None,
        profile_scratch=None,
        **extra,
    )
