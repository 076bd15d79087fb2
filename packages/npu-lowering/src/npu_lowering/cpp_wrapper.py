"""C++ wrapper codegen for npu graphs (``torch._inductor.config.cpp_wrapper=True``): upstream's
``CppWrapperGpu`` (allocation through the AOTI shim, views, dynamic shapes, fallback ATen ops,
upstream's lazy first-run compile of Triton kernels), with npu's device specifics:

- kernels launch through npu-launcher's C ABI (``npu_launcher_capi.h``): ``loadKernel`` binds
  the kernel's npu-launcher descriptor into a launch object, ``launchKernel`` launches it with
  the C arguments (tensor arguments as ``AtenTensorHandle``: the sim driver needs the tensor,
  and the launch object checks device and dtype as a Python call does);
- the device is ``PrivateUse1`` for the AOTI shim (``aoti_torch_device_type_privateuse1``);
- the JIT header is npu's (include/npu_cpp_wrapper.h, through a generated ``npu.h`` that also
  includes npu-launcher's C ABI header by path), and the generated module loads through
  ``NpuCppWrapperCodeCache``, whose only change is that header as the one to precompile
  (``cpp_cache_precompile_headers``: upstream knows the headers of its own devices only).

AOTInductor (``aot_mode``, ``torch._inductor.aoti_compile_and_package``) is the same class
in upstream's AOT mode: every kernel runs once at compile time (upstream's
``autotune_at_compile_time``), which records its npu-launcher descriptor in upstream's
``CudaKernelParamCache`` (npu-lowering's kernel object, ``runtime/autotuner.py``); upstream's
codegen then writes the model's ``loadKernel``/``launchKernel`` calls from it, and the
descriptor files go into the .pt2 as cuda's cubins do. The AOT header is npu_aoti.h. npu
specifics in the generated model: upstream's ``AOTInductorModelBase`` knows only
cpu/cuda/xpu/mps device strings, so the constructor maps "npu[:i]" and sets the device type to
npu itself, and copies the weights into device memory (the base would put them in host
memory); the model's kernels struct holds ``NpuLoadedKernels`` as its ``loaded_modules_``; the
stream guard is ``NpuStreamGuard``. ``aot_inductor.embed_kernel_binary`` embeds the descriptors
in the model .so (upstream's object embedding; npu_aoti.h's ``loadKernel`` overload hands the
embedded bytes to the C ABI through an anonymous in-memory file); ``package_cpp_only`` and
``emit_multi_arch_kernel`` are refused.
Torch 2.11 has no lazy kernel compile (``_compat.lazy_triton_compile_available``): cpp_wrapper
and AOTInductor on npu are refused there.
"""

from __future__ import annotations

import hashlib
import json
import os

import torch
from torch._inductor.codecache import CppWrapperCodeCache
from torch._inductor.codegen.common import get_device_op_overrides
from torch._inductor.codegen.cpp_wrapper_gpu import CppWrapperGpu, UnwrapUnspecArg
from torch._inductor.virtualized import V

_UPSTREAM_CACHE_IMPORT = "from torch._inductor.codecache import CppWrapperCodeCache"
_NPU_CACHE_IMPORT = (
    "from npu_lowering.cpp_wrapper import NpuCppWrapperCodeCache as CppWrapperCodeCache"
)


def header_path(aot: bool = False) -> str:
    """npu's cpp_wrapper header (``aot``: the AOTInductor one): a file in Inductor's current
    cache dir that includes npu-launcher's C ABI header and ours by absolute path (Inductor's
    compile command has only torch's include dirs, and the precompiled header must be a single
    file). Not memoized: the cache dir can change (fresh_cache(), $TORCHINDUCTOR_CACHE_DIR) and
    a temporary one is deleted with the file in it."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    from .runtime.entries import capi_header_dir

    header_dir = capi_header_dir()
    if header_dir is None:
        raise RuntimeError(
            "cpp_wrapper on npu needs npu-launcher (its C ABI launches the kernels): "
            "pip install npu-launcher, or compile without cpp_wrapper"
        )

    ours = os.path.join(
        os.path.dirname(__file__), "include", "npu_aoti.h" if aot else "npu_cpp_wrapper.h"
    )
    from .runtime.flavour import flavour

    # where kernels are triton-ascend's: a model runs on torch_npu (its raw streams), and both
    # modes launch through npu-launcher's C ABI without Python, this npu-launcher's library first
    ascend = ""
    if flavour() == "ascend":
        ascend = "#define NPU_AOTI_ASCEND 1\n" if aot else ""
        ascend += "#define NPU_DIRECT_LAUNCH 1\n"
        from .runtime.entries import capi_direct_library

        library = capi_direct_library()
        if library is not None:
            ascend += f"#define NPU_DIRECT_LIBRARY {json.dumps(library())}\n"
    text = (
        "#pragma once\n"
        + ascend
        + f'#include "{os.path.join(header_dir(), "npu_launcher_capi.h")}"\n'
        f'#include "{ours}"\n'
    )
    folder = os.path.join(cache_dir(), "npu_cpp_wrapper")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(
        folder, f"npu{'-aoti' if aot else ''}-{hashlib.sha256(text.encode()).hexdigest()[:16]}.h"
    )
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    return path


class NpuCppWrapperCodeCache(CppWrapperCodeCache):
    """Upstream's cache of compiled C++ wrappers; npu's header is the one precompiled."""

    @classmethod
    def _get_uncompiled_header(cls, device: str) -> str | None:
        if device.split(":", 1)[0] == "npu":
            return header_path()
        return super()._get_uncompiled_header(device)


class NpuCppWrapperGpu(CppWrapperGpu):
    def __init__(self) -> None:
        super().__init__()
        # upstream takes the process's GPU type (cuda/xpu); this wrapper is npu's
        self.device = "npu"
        self.device_codegen = get_device_op_overrides("npu")

    @staticmethod
    def create(is_subgraph, subgraph_name, parent_wrapper, partition_signatures=None):
        from . import _compat

        if not _compat.lazy_triton_compile_available():  # torch 2.11 only
            raise NotImplementedError(
                "cpp_wrapper and AOTInductor on npu need upstream's lazy kernel compile "
                "(torch._inductor.runtime.triton_lazy_compile, torch 2.13); this torch "
                f"({torch.__version__}) lacks it: compile without cpp_wrapper"
            )
        from npu_inductor_core.codegen_hooks import run_before_wrapper_codegen

        if V.graph.aot_mode:
            from torch._inductor import config

            for flag in ("package_cpp_only", "emit_multi_arch_kernel"):
                if getattr(config.aot_inductor, flag, False):
                    raise NotImplementedError(
                        f"AOTInductor on npu: aot_inductor.{flag} is not supported (npu "
                        "kernels are npu-launcher descriptors, built where the model is "
                        "compiled, for one target)"
                    )

        # upstream's cpp wrappers lift no subgraphs either (CppWrapperGpu.create)
        wrapper = NpuCppWrapperGpu()
        run_before_wrapper_codegen(V.graph)
        return wrapper

    @classmethod
    def _get_triton_info_kernel_cls(cls):
        # user @triton.jit kernels take their imports and inductor_meta from this class: npu's
        # kernel object (as the Python wrapper's, wrapper.py), also in the C++ wrappers'
        # compile-time run of the kernels (AOTInductor)
        from .kernel import NpuTritonKernel

        return NpuTritonKernel

    @staticmethod
    def get_device_include_path_jit(device: str) -> str:
        if device == "npu":
            return f'#include "{header_path()}"'
        return CppWrapperGpu.get_device_include_path_jit(device)

    @staticmethod
    def get_device_include_path_aot(device: str) -> str:
        if device == "npu":
            return f'#include "{header_path(aot=True)}"'
        return CppWrapperGpu.get_device_include_path_aot(device)

    def codegen_model_kernels(self):
        super().codegen_model_kernels()
        # upstream's AOT codegen hands loadKernel the kernels struct's loaded_modules_ (cuda's
        # CUmodule list, declared by its base only under USE_CUDA): npu's holds the launch objects
        lines = self.prefix._lines
        end = max(
            i for i, line in enumerate(lines) if isinstance(line, str) and line.strip() == "};"
        )
        lines.insert(end, "    NpuLoadedKernels loaded_modules_;")

    def codegen_model_constructor(self):
        super().codegen_model_constructor()
        # upstream's AOTInductorModelBase parses cpu/cuda/xpu/mps device strings only: it gets
        # "cpu[:i]" for "npu[:i]", and the body (run before any constant is loaded) sets npu
        lines = self.prefix._lines
        start = next(
            i
            for i, line in enumerate(lines)
            if isinstance(line, str)
            and f"{self.aoti_model_class_name}::{self.aoti_model_class_name}(" in line
        )
        arg = next(
            i
            for i in range(start, len(lines))
            if isinstance(lines[i], str) and lines[i].strip() == "device_str,"
        )
        lines[arg] = lines[arg].replace("device_str,", "npu_aoti_base_device(device_str),")
        body = next(
            i
            for i in range(arg, len(lines))
            if isinstance(lines[i], str) and lines[i].rstrip().endswith("{")
        )
        lines.insert(body + 1, "    npu_aoti_model_device(device_type_, device_idx_);")
        # the weights go to device memory here, not through the base's host-memory blob
        end = next(
            i
            for i in range(body, len(lines))
            if isinstance(lines[i], str) and lines[i].rstrip() == "}"
        )
        lines[end:end] = [
            "    if (include_weights) {  // npu: weights into device memory (npu_aoti.h)",
            "        npu_aoti_load_constants(*this, *constants_map_, _get_constants_start(), device_idx_);",
            "        include_weights = false;  // nothing left for AOTInductorModelBase::load_constants",
            "        update_constants_array_from_map();",
            "    }",
        ]

    def write_header(self):
        super().write_header()
        # the compiled module loads through npu's code cache (its precompiled header)
        lines = self.header._lines
        for i, line in enumerate(lines):
            if isinstance(line, str) and line.strip() == _UPSTREAM_CACHE_IMPORT:
                lines[i] = line.replace(_UPSTREAM_CACHE_IMPORT, _NPU_CACHE_IMPORT)

    def codegen_device(self, device):
        if device.type == "npu":  # the AOTI shim knows npu as PrivateUse1
            self.used_cached_devices.add("privateuse1")
            return f"cached_torch_device_type_privateuse1, {device.index if device.index else 0}"
        return super().codegen_device(device)

    def generate_fallback_kernel(self, node):
        # ATen fallbacks: upstream calls aoti_torch_<device>_<op>, which exists for cpu/cuda/xpu
        # only; on npu the op goes through upstream's runtime dispatch (the FallbackKernel
        # branch for ops missing a C shim)
        device = node.get_device()
        if device is None or device.type != "npu" or node.op_overload is None:
            return super().generate_fallback_kernel(node)
        self.generate_fallback_kernel_with_runtime_lookup(
            node.get_name(),
            node.python_kernel_name,
            lambda: [*node.codegen_args(), *node.codegen_kwargs()],
            node.op_overload,
            node.export_extern_kernel_node(),
            node.outputs if node.outputs else node.mutation_outputs,
        )

    def generate_args_decl(
        self, code, call_args, arg_types, arg_signatures, is_triton_kernel=True, scratch_spaces=None
    ):
        # tensor arguments go to npu-launcher's C ABI as tensor handles, not data pointers
        if not is_triton_kernel:
            return super().generate_args_decl(
                code, call_args, arg_types, arg_signatures, is_triton_kernel, scratch_spaces
            )
        if scratch_spaces:
            raise NotImplementedError(
                "npu kernels with Triton scratch memory are not launchable (npu-launcher)"
            )
        out = []
        for arg, arg_type, sig in zip(call_args, arg_types, arg_signatures):
            if isinstance(arg_type, torch.dtype) and not isinstance(arg_type, UnwrapUnspecArg):
                var = f"var_{next(self.arg_var_id)}"
                code.writeline(f"AtenTensorHandle {var} = npuTensorHandle({arg});")
                out.append(f"&{var}")
            else:
                out.append(
                    super().generate_args_decl(code, [arg], [arg_type], [sig], is_triton_kernel)
                )
        return ", ".join(out)
