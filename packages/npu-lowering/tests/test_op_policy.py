"""Ops Ascend's compiler cannot compile as Triton kernels stay the device's ATen op on npu
(op_policy): sort, whose Inductor kernel aborts 910B's bishengir-compile."""

import pytest
import torch
from torch._inductor.utils import run_and_get_code

pytest.importorskip("npu_sim")


def test_sort_stays_an_aten_op_and_matches_eager(npu):
    x = torch.randn(6, 16)

    def fn(a):
        v, i = torch.sort(a.relu() * 2, dim=-1, descending=True)
        return v + 1, i

    torch._dynamo.reset()
    (v, i), (code, *_) = run_and_get_code(torch.compile(fn), x.to(npu))
    ref_v, ref_i = fn(x)
    torch.testing.assert_close(v.cpu(), ref_v)
    torch.testing.assert_close(torch.gather(x.relu() * 2, 1, i.cpu()), ref_v - 1)
    assert "sort_with_index" not in code and "aten.sort" in code
