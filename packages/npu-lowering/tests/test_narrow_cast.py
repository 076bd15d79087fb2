"""Casts to 8- and 16-bit integers of a multi-dimensional tile are written on a flat view
(npu_lowering/narrow_cast.py: 910B's bishengir stages the two-dimensional cast at about 420
bytes of UB an element; test_ascend_validity's int8_quant_rows case shows the overflow).
These tests see the generated code and compare the values with eager on the CPU."""

import pytest
import torch
from torch._inductor.utils import run_and_get_code

pytestmark = pytest.mark.feature("X04")

FLAT = ".reshape(XBLOCK * R0_BLOCK)"


def _kernel_code(fn, *args):
    torch._dynamo.reset()
    with torch.no_grad():
        out, codes = run_and_get_code(torch.compile(fn), *args)
    return out, "\n".join(part for code in codes for part in code.split("@triton.jit")[1:])


def _quant(x, dtype):
    lo, hi = torch.iinfo(dtype).min, torch.iinfo(dtype).max
    scale = x.abs().amax(-1, keepdim=True).clamp_min(1e-10) / 127
    return (x / scale).round().clamp(lo, hi).to(dtype), scale


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16])
def test_a_narrow_cast_of_a_row_tile_is_done_flat_and_equals_eager(dtype, npu):
    x = torch.randn(6, 256) * 3
    (q, scale), code = _kernel_code(lambda t: _quant(t, dtype), x.to(npu))
    assert FLAT in code and ".reshape(XBLOCK, R0_BLOCK)" in code, code
    ref_q, ref_scale = _quant(x, dtype)
    torch.testing.assert_close(scale.cpu(), ref_scale, rtol=1e-6, atol=0)
    assert (q.cpu().to(torch.int32) - ref_q.to(torch.int32)).abs().max() <= 1


def test_one_dimensional_tiles_and_bool_sources_keep_upstreams_cast(npu):
    x = torch.randn(1000) * 50
    out, code = _kernel_code(lambda t: (t.to(torch.int8), (t > 0).to(torch.int8)), x.to(npu))
    assert ".reshape(" not in code, code
    assert torch.equal(out[0].cpu(), x.to(torch.int8))
    assert torch.equal(out[1].cpu(), (x > 0).to(torch.int8))


def test_wider_casts_of_row_tiles_are_left_alone(npu):
    x = torch.randn(6, 256)
    out, code = _kernel_code(lambda t: (t - t.amax(-1, keepdim=True)).to(torch.int32), x.to(npu))
    assert FLAT not in code, code
    assert torch.equal(out.cpu(), (x - x.amax(-1, keepdim=True)).to(torch.int32))
