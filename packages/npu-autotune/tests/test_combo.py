"""Combo kernels on npu: tuned like other kernels, under combo_kernels_autotune (A23)."""

import pytest
import torch
from torch._dynamo.utils import counters
from torch._inductor import config


def _two(a, b):
    return torch.sin(a) + 1, torch.cos(b) * 2


@pytest.mark.feature("A23")
@pytest.mark.parametrize("level", [0, 1])
def test_combo_kernels_autotune(fresh, kernels, level):
    a, b = torch.randn(1024, device="npu"), torch.randn(512, device="npu")
    with config.patch(
        combo_kernels=True, combo_kernels_autotune=level, max_autotune_pointwise=True
    ):
        out = torch.compile(_two)(a, b)
    for o, r in zip(out, _two(a.cpu(), b.cpu())):
        torch.testing.assert_close(o.cpu(), r)
    (k,) = kernels()
    assert "combo_grid_meta" in k.inductor_meta and len(k.configs) == 1
    assert (counters["npu_autotune"]["bench.calls"] >= 2) is (level == 1)


def test_bad_combo_kernels_autotune_is_an_error(fresh):
    a, b = torch.randn(64, device="npu"), torch.randn(32, device="npu")
    with config.patch(combo_kernels=True, combo_kernels_autotune=5, max_autotune_pointwise=True):
        with pytest.raises(Exception, match="combo_kernels_autotune must be 0, 1 or 2"):
            torch.compile(_two)(a, b)
