"""ATen ops torch 2.13's Inductor has no lowering for stay the device's ATen op on npu, also
with implicit fallbacks off as upstream's OpInfo test runs Inductor (unlowered_ops.py); cpu
compiles are unchanged."""

import pytest
import torch
import torch.nn.functional as F
from torch._inductor import config
from torch._inductor.exc import InductorError
from torch._inductor.lowering import lowerings
from torch._inductor.utils import run_and_get_code

CASES = {  # name: (fn, cpu inputs)
    "grid_sampler_3d": (
        lambda x, g: F.grid_sample(x, g, align_corners=False),
        lambda: (torch.randn(1, 2, 2, 3, 3), torch.rand(1, 2, 2, 2, 3) * 2 - 1),
    ),
    # hash_tensor hashes bits: its input comes from a kernel exact in any order (x * 2)
    "hash_tensor": (lambda x: torch.hash_tensor(x * 2, dim=[1]), lambda: (torch.randn(4, 3),)),
    "nonzero_static": (
        lambda x: torch.nonzero_static(x.relu(), size=4),
        lambda: (torch.tensor([0.0, 1.0, -1.0, 2.0]),),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_compiles_on_npu_with_implicit_fallbacks_off(name):
    fn, make = CASES[name]
    torch.manual_seed(0)
    args = [a.to("npu") for a in make()]
    torch._dynamo.reset()
    # upstream's OpInfo test (and Ascend's adapted suites) run Inductor with implicit fallbacks off
    with torch.no_grad(), config.patch(implicit_fallbacks=False):
        out, code = run_and_get_code(torch.compile(fn, fullgraph=True), *args)
    torch.testing.assert_close(out, fn(*args))
    # our stand-in while upstream has no lowering for the op; upstream's own fallback, which
    # calls the ATen op, once it has one (torch 2.15 lowers nonzero_static so)
    op = getattr(torch.ops.aten, name).default
    called = f"torch.ops.aten.{name}.default(" if op in lowerings else f"npu_fallback.{name}"
    assert called in "\n".join(code)


def test_cpu_compiles_unchanged():
    fn, make = CASES["grid_sampler_3d"]
    torch._dynamo.reset()
    with (
        torch.no_grad(),
        config.patch(implicit_fallbacks=False),
        pytest.raises(InductorError, match="MissingOperatorWithoutDecomp"),
    ):
        torch.compile(fn, fullgraph=True)(*make())
