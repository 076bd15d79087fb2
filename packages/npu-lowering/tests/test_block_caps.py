"""Masks stay where a block can overshoot (issue 16: grid_sampler_2d read past its input).

Upstream drops a dimension's mask when its numel is a multiple of the largest block a config
can give it (TritonKernel.max_block: TRITON_MAX_BLOCK, 4096 for x). Our tiling sizes blocks
to the UB, beyond that, so npu kernels answer their own maximum: 3 * 4096 elements with a
16384-element block read and wrote past the end (npu-sim's memory check raises; on an NPU it
is a wild access).
"""

from __future__ import annotations

import pytest
import torch
from torch._inductor.runtime.hints import TRITON_MAX_BLOCK
from torch._inductor.utils import run_and_get_code

from npu_inductor_core import tiles as tiling


@pytest.fixture(scope="module", autouse=True)
def _npu():
    import npu_inductor

    npu_inductor.enable()


def test_tiling_emits_blocks_above_upstreams_maximum():
    # the premise: without our max_block the mask below would be dropped
    meta = {"signature": {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32"}}
    dev = tiling.device()
    blocks = [c.kwargs["XBLOCK"] for c in tiling.pointwise({"x": 3 * 4096}, meta, dev)]
    assert max(blocks) > TRITON_MAX_BLOCK["X"]
    assert max(blocks) <= tiling.max_block_elements(dev)


@pytest.mark.parametrize("numel", [3 * 4096, 5 * 4096])
def test_pointwise_over_a_multiple_of_4096_keeps_its_mask(numel):
    x = torch.randn(numel, device="npu")
    torch._dynamo.reset()
    out, (code,) = run_and_get_code(torch.compile(lambda t: t.sin() * 2), x)
    assert "xmask" in code
    torch.testing.assert_close(out.cpu(), x.cpu().sin() * 2)


def test_grid_sample_matches_eager():
    x = torch.randn(1, 2, 48, 64, device="npu")
    g = torch.rand(1, 48, 64, 2, device="npu") * 2 - 1
    torch._dynamo.reset()
    fn = lambda a, b: torch.nn.functional.grid_sample(a, b, align_corners=False)  # noqa: E731
    torch.testing.assert_close(
        torch.compile(fn)(x, g).cpu(), fn(x.cpu(), g.cpu()), atol=1e-4, rtol=1e-4
    )


@pytest.mark.parametrize("op", ["index_add", "scatter_reduce"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32])
def test_atomic_into_a_zero_dim_tensor_adds_once(op, dtype):
    # Inductor drops the mask of a one-element axis, so a block wider than 1 repeated the
    # atomic add in every lane (OpInfo index_add / scatter_reduce.sum on 0-d inputs: 2 + 4 * 3)
    x = torch.tensor(2, dtype=dtype, device="npu")
    src = torch.tensor(3, dtype=dtype, device="npu")
    idx = torch.tensor([0], device="npu")
    fns = {
        "index_add": lambda a, i, s: a.index_add(0, i, s),
        "scatter_reduce": lambda a, i, s: a.scatter_reduce(0, i.reshape(()), s, "sum"),
    }
    torch._dynamo.reset()
    out = torch.compile(fns[op])(x, idx, src)
    assert out.item() == 5
