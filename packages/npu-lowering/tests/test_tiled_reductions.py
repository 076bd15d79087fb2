"""Tiled reductions (rows over x and y) get a YBLOCK from our configs.

Found by the GPT-2 dynamic-shape training test (embedding_dense_backward + sum): Inductor
tiles a reduction's rows in two dimensions (always under triton.tile_reductions), and our
reduction configs, which come first, had no YBLOCK ("missing 1 required positional argument:
'YBLOCK'").
"""

from __future__ import annotations

import pytest
import torch
from torch._inductor import config
from torch._inductor.utils import run_and_get_code


@pytest.fixture(scope="module", autouse=True)
def _npu():
    import npu_inductor

    npu_inductor.enable()


@pytest.mark.parametrize("autotune", [False, True], ids=["default", "max_autotune"])
@pytest.mark.parametrize("shape", [(8, 16, 32), (4, 3, 600)], ids=["persistent", "looped"])
def test_tiled_reduction_matches_eager(shape, autotune):
    x = torch.randn(*shape, device="npu")
    fn = lambda t: (t.permute(2, 0, 1) + 1).sum(1)  # noqa: E731
    torch._dynamo.reset()
    with config.patch({"triton.tile_reductions": True, "max_autotune": autotune}):
        out, (code,) = run_and_get_code(torch.compile(fn), x)
    assert "YBLOCK" in code  # the premise: a tiled reduction
    torch.testing.assert_close(out.cpu(), fn(x.cpu()), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("autotune", [False, True], ids=["default", "max_autotune"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_reduction_over_two_axes_gets_a_block_per_axis(dynamic, autotune):
    # var_mean over two non-adjacent axes under nd tiling reduces over r0_ and r1_: our configs,
    # which come first, gave only R0_BLOCK ("missing ... 'R1_BLOCK'"), and a persistent one
    # priced its row as r0_ alone
    x = torch.randn(1, 2, 4, 8, device="npu")
    fn = lambda t: torch.var_mean(t, [1, 3])  # noqa: E731
    torch._dynamo.reset()
    patch = {
        "triton.prefer_nd_tiling": True,
        "triton.tile_reductions": True,
        "max_autotune": autotune,
    }
    with config.patch(patch):
        out, (code,) = run_and_get_code(torch.compile(fn, dynamic=dynamic), x)
    assert "R1_BLOCK" in code  # the premise: a reduction tiled over two axes
    for got, want in zip(out, fn(x.cpu())):
        torch.testing.assert_close(got.cpu(), want, atol=1e-5, rtol=1e-5)
