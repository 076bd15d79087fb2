"""npu-sim's Triton backend: what ``triton.compile`` makes for the simulator loads and runs
through Triton's own CompiledKernel launcher (Inductor's fallback when its static launcher is
off, e.g. on the Ascend route), on every supported Triton."""

import torch
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3.0, mask=mask)


def test_a_compiled_kernel_loads_and_runs_through_tritons_launcher():
    src = ASTSource(
        scale_kernel,
        signature={"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        constexprs={"BLOCK": 64},
    )
    kernel = triton.compile(src, target=GPUTarget("npu_sim", "interpreter", 1))
    # Triton 3.9 checks num_warps * metadata.warp_size against the loaded binary's thread limit
    assert kernel.metadata.warp_size == 1
    x = torch.randn(100, device="npu")
    out = torch.empty_like(x)
    # CompiledKernel._init_handles, then the driver's launcher, given every argument as JIT gives them
    kernel[(2, 1, 1)](x, out, 100, 64)
    assert torch.allclose(out.cpu(), x.cpu() * 3.0)
