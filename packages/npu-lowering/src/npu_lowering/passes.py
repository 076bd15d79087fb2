"""The post-grad pass Inductor runs on graphs that hold npu tensors (registered as npu's
device_custom_pass).

- Components' passes first (npu-inductor-core's ``graph_hooks``: npu-autotune's shape padding
  of GEMMs), each in the uuid through its ``cache_key()``.
- Under the opt-in ``fp64_compute = "fp32"`` float64 values are computed in float32
  (``fp64_compute``), before the dtype policy.
- Nodes with a dtype npu kernels do not take (float64, complex, float8, ...) are marked to
  lower as the device's ATen op, per node (``dtype_policy``: the one place that decides).
- Ops whose Triton kernels Ascend's compiler cannot compile (sort) stay ATen ops
  (``op_policy``).
- ATen ops Inductor has no lowering for (grid_sampler_3d, hash_tensor, nonzero_static on
  torch 2.13) stay the device's ATen op on npu, also with ``implicit_fallbacks=False``
  (``unlowered_ops``).
- Its uuid is a hash of npu-lowering's sources and of the device facts generated code bakes
  in (UB bytes, vector cores: block sizes and the sub-block grid cap), and Inductor puts that
  uuid in the FX graph cache key: a changed lowering or another SoC never serves stale code;
  so is the installed fusion policy's ``cache_key()`` (npu-fusion's sources and settings).
  Settings (``npu_lowering.config``) enter the key as npu's ``device_custom_config``.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import torch
from torch._inductor.custom_graph_pass import CustomGraphModulePass

from . import dtype_policy, fp64_compute, op_policy, unlowered_ops
from .dtype_policy import UnsupportedDtype  # noqa: F401  (raised under the "error" policy)


@functools.cache
def source_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


class NpuPostGradPass(CustomGraphModulePass):
    def __call__(self, gm: torch.fx.GraphModule) -> None:
        from npu_inductor_core import graph_hooks

        fp64_compute.narrow(gm)  # opt-in only: float64 values computed in float32
        dtype_policy.apply(gm)
        # components' passes (npu-autotune: GEMM shape padding; npu-fusion: half concatenations)
        # see the dtypes npu computes and the nodes left to ATen (``should_fallback``)
        graph_hooks.run_post_grad(gm)
        op_policy.apply(gm)  # ops Ascend's compiler cannot compile as Triton kernels
        unlowered_ops.apply(gm)  # ATen ops Inductor has no lowering for stay ATen ops on npu

    def uuid(self) -> str:
        from npu_inductor_core import graph_hooks

        from . import numerics
        from npu_inductor_core import tiles as tiling
        from .runtime.entries import fusion_policy

        dev = tiling.device(0)
        policy = fusion_policy()  # its decisions shape the kernels too
        return (
            f"npu-lowering-{source_hash()}-ub{dev.ub_bytes}-cores{dev.vector_cores}-"
            f"{dtype_policy.settings_key()}-{numerics.settings_key()}-"
            f"{policy.cache_key() if policy is not None else 'no-fusion-policy'}-{graph_hooks.key()}"
        )
