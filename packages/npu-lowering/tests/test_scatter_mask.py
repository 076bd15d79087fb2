"""A scatter-add to a gathered address inside a reduction kernel keeps one axis' mask on the
atomic and moves the rest into its operands (scatter_mask.py): the 950's bishengir-compile
aborts on ``tl.atomic_add(out + (r0_2 + 24*tmp38), v, r0_mask & xmask)``, which an embedding's
backward fused with a layer norm's backward gives at a row width that is not a power of two.
"""

from __future__ import annotations

import re

import pytest
import torch
from torch._inductor.utils import run_and_get_code

ATOMIC = re.compile(r"tl\.atomic_add\((\w+) \+ \((.*)\), (\w+), (.*), sem='relaxed'\)")


@pytest.fixture(scope="module", autouse=True)
def _npu():
    import npu_inductor

    npu_inductor.enable()


def _atomics(codes):
    """(address, mask) of every scatter-add whose address is gathered (names a tmp)."""
    found = []
    for line in "\n".join(codes).splitlines():
        match = ATOMIC.search(line)
        if match and re.search(r"\btmp\d+", match.group(2)):
            found.append((match.group(2), match.group(4)))
    return found


def _assert_folded(codes):
    atomics = _atomics(codes)
    assert any("r0_mask" in address for address, _ in atomics), atomics
    for address, mask in atomics:
        assert mask in ("xmask", "None"), (address, mask)


def test_embedding_and_layer_norm_backward_at_width_24():
    torch.manual_seed(0)
    width = 24
    emb = torch.nn.Embedding(64, width).to("npu")
    pos = torch.nn.Embedding(16, width).to("npu")
    norm = torch.nn.LayerNorm(width).to("npu")
    params = [*emb.parameters(), *pos.parameters(), *norm.parameters()]

    def step(ids, grad_out):
        for p in params:
            p.grad = None
        out = norm(emb(ids) + pos(torch.arange(ids.shape[1], device=ids.device)))
        out.backward(grad_out)
        return [p.grad.clone() for p in params]

    ids = torch.randint(0, 64, (2, 7), device="npu")
    grad_out = torch.randn(2, 7, width, device="npu")
    expected = step(ids, grad_out)
    torch._dynamo.reset()
    got, codes = run_and_get_code(torch.compile(step), ids, grad_out)
    for e, g in zip(expected, got):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5)
    _assert_folded(codes)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32])
def test_index_put_accumulate_of_normalized_rows(dtype):
    """Rows of width 24 reduced and scattered with accumulate=True (negative indices too);
    int32 rows take the integer identity."""
    torch.manual_seed(0)

    def fn(x, idx):
        rows = x - x.amax(-1, keepdim=True)
        out = torch.zeros(10, x.shape[1], device=x.device, dtype=x.dtype)
        return out.index_put_((idx,), rows, accumulate=True)

    if dtype.is_floating_point:
        x = torch.randn(12, 24, device="npu", dtype=dtype)
    else:
        x = torch.randint(-50, 50, (12, 24), device="npu", dtype=dtype)
    idx = torch.randint(-10, 10, (12,), device="npu")
    with torch.no_grad():
        expected = fn(x, idx)
        torch._dynamo.reset()
        got, codes = run_and_get_code(torch.compile(fn), x, idx)
    torch.testing.assert_close(got, expected, rtol=2e-3, atol=2e-3)
    _assert_folded(codes)


def test_masked_lanes_write_only_rows_the_scatter_writes():
    """A masked lane adds the identity at its own row's first element: a row no index names
    keeps its values bit for bit (here -0.0, which an added +0.0 would turn into +0.0)."""

    def fn(x, idx):
        rows = torch.softmax(x, -1)
        out = torch.full((4, x.shape[1]), -0.0, device=x.device)
        return out.index_put_((idx,), rows, accumulate=True)

    x = torch.randn(6, 24, device="npu")
    idx = torch.tensor([1, 1, 2, 3, 2, 3], device="npu")  # row 0 is never written
    with torch.no_grad():
        expected = fn(x, idx)
        torch._dynamo.reset()
        got, codes = run_and_get_code(torch.compile(fn), x, idx)
    _assert_folded(codes)
    torch.testing.assert_close(got, expected)
    assert torch.signbit(got[0]).all()
