"""User @triton.jit kernels launched eagerly on npu tensors (outside torch.compile, e.g. after
a graph break): Triton's JIT picks npu-sim's driver, compiles to TTIR with npu-sim's backend
and launches through the driver's launcher, which runs the kernel in the interpreter."""

import math

import torch
import triton
import triton.language as tl
from triton.compiler import CompiledKernel


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(
        out_ptr + offs,
        tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
        mask=mask,
    )


@triton.autotune(
    configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 64})],
    key=["n"],
    reset_to_zero=["total"],
)
@triton.jit
def scaled_sum(x_ptr, out_ptr, total, n, ALPHA: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask, other=0.0) * ALPHA
    tl.store(out_ptr + offs, v, mask=mask)
    tl.atomic_add(total, tl.sum(v, 0))


@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def shift_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:  # no mask: a wrong EVEN would read and write past n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 1.0)
    else:
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) - 1.0, mask=mask)


def test_eager_add_kernel_on_npu_tensors():
    x, y = torch.randn(100, device="npu"), torch.randn(100, device="npu")
    out = torch.empty(100, device="npu")
    compiled = add_kernel[(triton.cdiv(100, 32),)](x, y, out, 100, BLOCK=32)
    assert torch.equal(out.cpu(), x.cpu() + y.cpu())
    # Triton's own compile result, for npu-sim's target, its TTIR kept as the binary
    assert isinstance(compiled, CompiledKernel)
    assert compiled.metadata.target.backend == "npu_sim" and compiled.name == "add_kernel"
    assert "tt.func public @add_kernel" in compiled.asm["ttir"].decode()


def test_eager_autotuned_kernel_benchmarks_configs_and_runs_the_best():
    x = torch.randn(100, device="npu")
    out, total = torch.empty(100, device="npu"), torch.full((1,), 123.0, device="npu")
    scaled_sum[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, out, total, 100, ALPHA=3.0)
    expected = x.cpu() * 3
    assert torch.equal(out.cpu(), expected)
    torch.testing.assert_close(
        total.cpu(), expected.sum().reshape(1), rtol=1e-5, atol=1e-4
    )  # zeroed first
    assert (
        len(scaled_sum.configs_timings) == 2
        and scaled_sum.best_config in scaled_sum.configs_timings
    )


def test_eager_heuristics_kernel_gets_its_computed_constexpr():
    x = torch.randn(100, device="npu")
    out = torch.zeros(100, device="npu")
    shift_kernel[(4,)](x, out, 100, BLOCK=32)  # 100 % 32 != 0: masked branch
    assert torch.equal(out.cpu(), x.cpu() - 1)
    shift_kernel[(3,)](x, out, 96, BLOCK=32)  # even: unmasked branch
    assert torch.equal(out.cpu()[:96], x.cpu()[:96] + 1) and torch.equal(
        out.cpu()[96:], x.cpu()[96:] - 1
    )


def test_eager_launch_on_a_second_call_reuses_the_compiled_kernel():
    x = torch.ones(8, device="npu")
    out = torch.empty(8, device="npu")
    first = add_kernel[(1,)](x, x, out, 8, BLOCK=8)
    second = add_kernel[(1,)](out, x, out, 8, BLOCK=8)
    assert first is second and out.cpu().tolist() == [3.0] * 8


def test_eager_launch_during_capture_is_recorded():
    x = torch.ones(16, device="npu")
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        out = torch.empty(16, device="npu")
        add_kernel[(1,)](x, x, out, 16, BLOCK=16)
    assert g.recorded_ops == ["triton:add_kernel"]
    assert math.isnan(out.cpu()[0].item())  # not run yet
    g.replay()
    assert out.cpu().tolist() == [2.0] * 16
