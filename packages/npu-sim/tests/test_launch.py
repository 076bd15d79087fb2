"""The kernel launch entry: Triton kernels on npu memory in the interpreter."""

import math
from importlib import metadata

import pytest
import torch
import triton
import triton.language as tl

from npu_sim.launch import launch


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(
        out_ptr + offs,
        tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
        mask=mask,
    )


def test_launch_runs_in_the_interpreter_on_npu_memory():
    x, y = torch.randn(100, device="npu"), torch.randn(100, device="npu")
    out = torch.empty(100, device="npu")
    launch(add_kernel, (2,), (x, y, out, 100), {"BLOCK": 64})
    assert torch.allclose(out.cpu(), x.cpu() + y.cpu())


def test_launch_is_the_registered_entry_point():
    (ep,) = [
        e for e in metadata.entry_points(group="npu_inductor.sim_launch") if e.name == "launch"
    ]
    assert ep.load() is launch


@pytest.mark.feature("X02")
def test_launch_is_recorded_during_capture():
    x = torch.ones(32, device="npu")
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        out = torch.empty(32, device="npu")
        launch(add_kernel, (1,), (x, x, out, 32), {"BLOCK": 32})
    assert g.recorded_ops == ["triton:add_kernel"]
    assert math.isnan(out.cpu()[0].item())  # not run yet
    g.replay()
    assert out.cpu().tolist() == [2.0] * 32


def test_launch_rejects_bad_input():
    x = torch.ones(4, device="npu")
    with pytest.raises(ValueError, match="grid"):
        launch(add_kernel, (1, 1, 1, 1), (x, x, x, 4), {"BLOCK": 4})
    with pytest.raises(TypeError, match="triton.jit"):
        launch(lambda: None, (1,), (), {})


def test_kernels_calling_other_jit_functions_run_interpreted():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    try:
        from kernels_nested import helper, nested_kernel
    finally:
        sys.path.pop(0)
    x = torch.randn(10, device="npu")
    out = torch.empty(10, device="npu")
    launch(nested_kernel, (1,), (x, out, 10), {"B": 16})
    xc = x.cpu()
    assert torch.allclose(out.cpu(), xc * 2 + xc.exp() + xc.clamp(min=0))
    # outside an npu-sim launch, calling a jit function stays an error, as upstream
    with pytest.raises(RuntimeError, match="outside of the scope of a kernel"):
        helper(x)


def test_interpreting_npu_kernels_leaves_triton_language_untouched():
    import sys
    from pathlib import Path

    builtins_before = {
        name: getattr(tl, name) for name in ("program_id", "arange", "load", "store", "exp")
    }
    core_before = {name: getattr(tl.core, name) for name in ("program_id", "arange")}
    math_before = tl.math.exp
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        from kernels_nested import nested_kernel
    finally:
        sys.path.pop(0)
    x = torch.randn(10, device="npu")
    launch(nested_kernel, (1,), (x, torch.empty(10, device="npu"), 10), {"B": 16})
    # a later real (cuda) compile in this process must see Triton's own builtins
    assert {name: getattr(tl, name) for name in builtins_before} == builtins_before
    assert {name: getattr(tl.core, name) for name in core_before} == core_before
    assert tl.math.exp is math_before


def test_nested_calls_do_not_patch_triton_language_again_per_call(monkeypatch):
    # Each nested @triton.jit call patched every language builtin again (~2-4 ms a call: most
    # of a reduction kernel's interpreted time); the patches are recorded once and replayed,
    # and skipped where the launch already made them. Triton's own tensor/dtype attributes
    # must be back as they were afterwards.
    import sys
    from pathlib import Path

    from triton.runtime import interpreter

    sys.path.insert(0, str(Path(__file__).parent))
    try:
        from kernels_nested import looped_max_kernel
    finally:
        sys.path.pop(0)
    steps, block = 40, 8
    x = torch.randn(steps * block, device="npu")
    out = torch.empty(block, device="npu")
    launch(looped_max_kernel, (1,), (x, out, block), {"B": block, "STEPS": steps})  # records
    to_ir, index = tl.dtype.to_ir, getattr(tl.tensor, "__index__", None)
    calls = []
    upstream = interpreter._patch_builtin
    monkeypatch.setattr(
        interpreter, "_patch_builtin", lambda *a: (calls.append(1), upstream(*a))[1]
    )
    launch(looped_max_kernel, (1,), (x, out, block), {"B": block, "STEPS": steps})
    assert torch.equal(out.cpu(), x.cpu().view(steps, block).amax(0))
    assert len(calls) < steps, f"{len(calls)} builtin patch passes for {steps} nested calls"
    assert (tl.dtype.to_ir, getattr(tl.tensor, "__index__", None)) == (to_ir, index)


@triton.jit
def scale_kernel(x_ptr, out_ptr, s, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, (tl.load(x_ptr + offs) + s).to(tl.float32))


def test_python_float_arguments_are_scalars_of_their_signature_type():
    # Inductor's unbacked-float arguments typed fp64 add in float64, as compiled Triton does
    x = torch.full((8,), 2.0**-24, device="npu")
    for fp64, expected in ((True, 1 + 2.0**-23), (False, 1.0)):
        out = torch.empty(8, device="npu")
        launch(
            scale_kernel,
            (1,),
            (x, out, 1 + 2.0**-40),
            {"BLOCK": 8, "fp64_args": "s" if fp64 else ""},
        )
        # fp64: 2^-24 + (1 + 2^-40) rounds up in float32; fp32: s is 1.0, the sum ties to 1.0
        assert out.cpu().tolist() == [expected] * 8
