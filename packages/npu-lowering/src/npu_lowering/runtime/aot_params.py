"""Upstream's ``save_gpu_kernel`` for simulated npu kernels: what upstream's C++ wrapper codegen
reads from ``CudaKernelParamCache`` to write a kernel's load and launch in AOTInductor's model
code (``DeferredTritonCallWrapper.generate``), with the kernel's npu-launcher descriptor as its
binary.

Upstream's ``CachingAutotuner.run`` calls ``save_gpu_kernel`` when ``triton.store_cubin`` is on
(every C++ wrapper compile); the simulated branch of ``NpuCachingAutotuner.run`` launches
through its launch object instead and calls ``save_npu_kernel``. On Ascend upstream's ``run``
does call ``save_gpu_kernel``, which would read a cubin from the launcher's ``CompiledKernel``;
``NpuCachingAutotuner.save_gpu_kernel`` saves the chosen config's descriptor (triton-ascend's
npubin) here instead. The descriptor is written to
upstream's AOT output folder as ``<hash>.npld`` and named in the entry's ``cubin_path``, so
upstream's codegen packs it into the .pt2 as it packs a cubin. (``CudaKernelParamCache.set``
itself writes the binary under its own binary type as extension and hash kind, which knows only
cubin/hsaco/spv; the entry is the same dict.)
"""

from __future__ import annotations

from typing import Any

DESCRIPTOR_EXTENSION = "npld"


def launch_arg_lists(kernel, config) -> tuple[list[str], list[str]]:
    """(def_args, call_args) as upstream's launcher records them under ``store_cubin``: the
    wrapper's call arguments (config constexprs left out) and the binary's (constexprs and
    None arguments left out)."""
    from torch._inductor.runtime.triton_heuristics import config_to_dict, get_constexprs

    fn = kernel.fn
    arg_names = list(fn.arg_names)
    constexpr_idx = set(get_constexprs(fn))
    known = {a for i, a in enumerate(arg_names) if i in constexpr_idx}
    constants = kernel.triton_meta.get("constants") or {}
    signature = kernel.triton_meta["signature"]
    none_args = {k for k, v in constants.items() if v is None and k not in known} - set(signature)
    implicit = ({"num_warps", "num_stages"} | known) & set(constants)
    cfg = config_to_dict(config)
    def_args = [a for a in arg_names if a not in implicit and a not in cfg]
    call_args = [
        a for a in arg_names if signature.get(a, "constexpr") != "constexpr" and a not in none_args
    ]
    extra = kernel.inductor_meta.get("extra_launcher_args")
    if extra:
        def_args = [*def_args, *extra]
    return def_args, call_args


def save_npu_kernel(kernel, config, stream: Any, result=None) -> None:
    """Record the launched config's descriptor (``result``'s, by default the simulated
    config's, ``compile_results[0]``) in ``CudaKernelParamCache``, once per kernel."""
    from torch._inductor import config as inductor_config
    from torch._inductor.codecache import (
        CudaKernelParamCache,
        get_cpp_wrapper_cubin_path_name,
        split_aot_inductor_output_path,
        write,
    )
    from torch._inductor.runtime.triton_heuristics import config_to_dict

    name = kernel.inductor_meta.get("kernel_name")
    if name is None:
        raise RuntimeError("npu kernel without a kernel_name cannot be saved for the C++ wrapper")
    result = result if result is not None else kernel.compile_results[0]
    blob = result.kernel.descriptor_bytes()
    def_args, call_args = launch_arg_lists(kernel, config)
    _, path = write(
        blob,
        DESCRIPTOR_EXTENSION,
        hash_type="cubin",  # hash kind of a binary blob
        specified_dir=split_aot_inductor_output_path(inductor_config.aot_inductor.output_path)[0],
    )
    CudaKernelParamCache.cache[name] = {
        "mangled_name": result.kernel.name,
        "num_warps": config.num_warps,
        "shared_mem": 0,
        "stream": stream,
        "config": config_to_dict(config),
        "inductor_meta": kernel.inductor_meta,
        "triton_meta": kernel.triton_meta,
        "def_args": def_args,
        "call_args": call_args,
        "global_scratch": None,
        "profile_scratch": None,
        get_cpp_wrapper_cubin_path_name(): path,
        "runtime_bin_path": path,
        "asm": "",
    }
    kernel.cuda_kernel_saved = True


def descriptor_result(kernel, config):
    """The compile result holding ``config``'s npu-launcher descriptor, or None."""
    from .static_result import NpuStaticCompileResult

    for result in kernel.compile_results or ():
        if (
            isinstance(result, NpuStaticCompileResult)
            and result.config.kwargs == config.kwargs
            and result.config.num_warps == config.num_warps
        ):
            return result
    return None
