"""Triton kernel codegen for npu: upstream's TritonKernel, importing npu runtime helpers.

Everything upstream generates (indexing, loads/stores, reductions, masks, and the config
flags they read) is kept; what changes is where a kernel finds its helpers: libdevice and
math resolved per Triton flavour (no tl.extra.cuda), and heuristics decorators that apply
the Ascend tiling model and build npu kernel objects.
"""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path

from torch._inductor.codegen.triton import TritonKernel

from .runtime.flavour import flavour

UPSTREAM_HEURISTICS = "from torch._inductor.runtime import triton_helpers, triton_heuristics"
UPSTREAM_MATH = "from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math"
NPU_HEURISTICS = ("from npu_lowering.runtime import helpers as triton_helpers\n"
                  "from npu_lowering.runtime import heuristics as triton_heuristics")
NPU_MATH = "from npu_lowering.runtime.math import libdevice, math as tl_math"
SET_GPU_DRIVER = "triton_helpers.set_driver_to_gpu()\n"
SAVE_ENV = "NPU_LOWERING_SAVE_KERNELS"


def npu_imports(upstream_imports: str) -> str:
    if UPSTREAM_HEURISTICS not in upstream_imports or UPSTREAM_MATH not in upstream_imports:
        raise RuntimeError("npu-lowering: upstream Triton kernel imports changed; update npu_lowering.kernel")
    return upstream_imports.replace(UPSTREAM_HEURISTICS, NPU_HEURISTICS).replace(UPSTREAM_MATH, NPU_MATH)


def save_kernel(src: str) -> None:
    """With $NPU_LOWERING_SAVE_KERNELS=<dir>, keep every generated kernel's source there
    (the test command checks each one with triton-ascend's front end)."""
    folder = os.environ.get(SAVE_ENV)
    if not folder:
        return
    digest = hashlib.sha256(src.encode()).hexdigest()[:16]
    path = Path(folder) / f"npu_kernel_{digest}.py"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        # names are placeholders until the wrapper defines the kernel; any name will do here
        named = src.replace("Placeholder.KERNEL_NAME", path.stem).replace("Placeholder.DESCRIPTIVE_NAME", path.stem)
        tmp.write_text(named)
        os.replace(tmp, path)


class NpuTritonKernel(TritonKernel):
    @classmethod
    @lru_cache(None)
    def gen_common_triton_imports(cls) -> str:
        return npu_imports(super().gen_common_triton_imports())

    def codegen_kernel(self, name=None) -> str:
        # Upstream pins non-cpu kernels to a GPU driver at import; an npu kernel uses the
        # process's own Triton backend (triton-ascend's, or none in a compile worker on the
        # simulator), so the line goes.
        src = super().codegen_kernel(name).replace(SET_GPU_DRIVER, "", 1)
        save_kernel(src)
        return src

    @classmethod
    def inductor_meta_common(cls):
        # decided here, in the process that owns the device: compile workers have no npu
        return {**super().inductor_meta_common(), "npu_flavour": flavour()}
