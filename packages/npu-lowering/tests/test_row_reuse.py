"""A persistent reduction that reads its row again at other places takes those values from the
row it holds (``tl.gather``) instead of loading them from GM again (row_reuse.py): Q/K RMSNorm +
rotary embedding read each head's row for the norm, then its halves for the rotation.
Inference (no_grad), as users run it; each compiled result is compared with eager and with the
same compile taking every value from GM.
"""

from __future__ import annotations

import re

import pytest
import torch
from torch._inductor.utils import run_and_get_code

from npu_lowering import config


@pytest.fixture(scope="module", autouse=True)
def _npu():
    import npu_inductor

    npu_inductor.enable()


def _norm(x, w):
    xf = x.float()
    return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()


def norm_rope(x, w, cos, sin):
    """Qwen3-style: RMSNorm per head, then neox rotary embedding (cat of the rotated halves)."""
    y = _norm(x, w)
    y1, y2 = y.chunk(2, -1)
    c, s = cos[:, None, :], sin[:, None, :]
    return torch.cat((y1 * c - y2 * s, y2 * c + y1 * s), -1).to(x.dtype)


def norm_flip(x, w):
    y = _norm(x, w)
    return y - x.float().flip(-1)


def norm_roll(x, w):
    return _norm(x, w) + torch.roll(x.float(), 3, -1)


def _inputs(dtype, width, tokens=3, heads=2):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(tokens, heads, width, generator=g).to(dtype)
    w = torch.randn(width, generator=g).to(dtype)
    angles = torch.randn(tokens, width // 2, generator=g)
    return x.to("npu"), w.to("npu"), angles.cos().to("npu"), angles.sin().to("npu")


def _compiled(fn, args, held=True):
    torch._dynamo.reset()
    with config.patch(row_reuse=held), torch.no_grad():
        out, codes = run_and_get_code(torch.compile(fn), *args)
    return out, "\n".join(codes)


def _row_loads(code: str, pointer: str) -> list[str]:
    return re.findall(rf"tl\.load\({pointer} \+ \(([^)]*\)*)", code)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_norm_then_rope_reads_the_row_once(dtype):
    args = _inputs(dtype, 16)
    expected = norm_rope(*args)
    out, code = _compiled(norm_rope, args)
    assert "tl.gather(" in code, code
    # x (the kernel's first pointer) is loaded once, at the row's own positions
    assert len(_row_loads(code, "in_ptr0")) == 1, code
    tol = {"atol": 1e-2, "rtol": 1e-2} if dtype != torch.float32 else {}
    torch.testing.assert_close(out, expected, **tol)

    from_gm, code_gm = _compiled(norm_rope, args, held=False)
    assert "tl.gather(" not in code_gm
    assert len(_row_loads(code_gm, "in_ptr0")) == 3, code_gm
    assert torch.equal(out, from_gm)  # the same values, bit for bit


@pytest.mark.parametrize("fn", [norm_flip, norm_roll])
def test_permuted_reads_of_the_row(fn):
    args = _inputs(torch.float32, 32)[:2]
    out, code = _compiled(fn, args)
    assert "tl.gather(" in code, code
    torch.testing.assert_close(out, fn(*args))
    from_gm, _ = _compiled(fn, args, held=False)
    assert torch.equal(out, from_gm)


def test_a_row_shorter_than_its_block_is_loaded_again():
    # head dim 24: the block is 32 wide, its last lanes are no element of the row
    args = _inputs(torch.float32, 24)
    out, code = _compiled(norm_rope, args)
    assert "tl.gather(" not in code
    torch.testing.assert_close(out, norm_rope(*args))


def test_a_row_the_kernel_writes_is_loaded_again():
    def update(x, w):
        x.mul_(2.0)  # an in-place write of the held row's buffer before its permuted read
        return _norm(x, w) + x.flip(-1)

    x, w = _inputs(torch.float32, 16)[:2]
    expected = update(x.clone(), w)
    got = x.clone()
    out, _ = _compiled(update, (got, w))
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(got, x * 2)
