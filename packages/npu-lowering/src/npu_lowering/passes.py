"""The post-grad pass Inductor runs on graphs that hold npu tensors (registered as npu's
device_custom_pass).

- Dtypes Ascend's vector cores cannot compute (float64, complex, float8) raise an error
  naming the op and the dtype, instead of failing deep in a Triton compile.
- Its uuid is a hash of npu-lowering's sources and of the device facts generated code bakes
  in (UB bytes, vector cores: block sizes and the sub-block grid cap), and Inductor puts that
  uuid in the FX graph cache key: a changed lowering or another SoC never serves stale code.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import torch
from torch._inductor.custom_graph_pass import CustomGraphModulePass

UNSUPPORTED = {
    torch.float64: "Ascend vector cores have no float64; cast to float32",
    torch.complex64: "complex tensors are not supported on npu",
    torch.complex128: "complex tensors are not supported on npu",
    torch.float8_e4m3fn: "float8 needs the cube unit's GEMM path, not vector kernels",
    torch.float8_e5m2: "float8 needs the cube unit's GEMM path, not vector kernels",
}


class UnsupportedDtype(TypeError):
    pass


@functools.cache
def source_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


class NpuPostGradPass(CustomGraphModulePass):
    def __call__(self, gm: torch.fx.GraphModule) -> None:
        for node in gm.graph.nodes:
            if node.op != "call_function":
                continue
            val = node.meta.get("val")
            for t in val if isinstance(val, (list, tuple)) else (val,):
                if isinstance(t, torch.Tensor) and t.device.type == "npu" and t.dtype in UNSUPPORTED:
                    raise UnsupportedDtype(f"npu-lowering: {node.target} produces {t.dtype} on npu, which is not "
                                           f"supported: {UNSUPPORTED[t.dtype]}")

    def uuid(self) -> str:
        from . import small_gemm
        from .runtime import tiling

        dev = tiling.device(0)
        return (f"npu-lowering-{source_hash()}-ub{dev.ub_bytes}-cores{dev.vector_cores}-"
                f"{small_gemm.settings_key()}")
