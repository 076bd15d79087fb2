"""Activation checkpointing around a random op under torch.compile on npu (README "Random
numbers"): from torch 2.14 the partitioner would recompute the random draw in the backward by
replaying the forward's RNG state through device tables that name cuda/cpu/hpu/xpu only; npu's
joint-graph pass (npu-lowering ``saved_rng``) saves the draw instead. The gradient must match a
replay of the forward's mask, with Inductor's random numbers and with eager's (fallback_random);
a cpu compile keeps upstream's replay."""

import pytest
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


@pytest.mark.parametrize("fallback_random", [False, True])
def test_checkpointed_dropout_trains(fallback_random):
    def block(x, w):
        return F.dropout(torch.relu(x @ w), p=0.5, training=True)

    x = torch.randn(4, 8, device="npu", requires_grad=True)
    w = torch.randn(8, 8, device="npu", requires_grad=True)
    torch._dynamo.reset()
    with torch._inductor.config.patch(fallback_random=fallback_random):
        out = torch.compile(lambda x, w: checkpoint(block, x, w, use_reentrant=False))(x, w)
    out.sum().backward()
    mask = (out != 0).float()  # the backward's recomputed mask must be the forward's
    expected = ((x.detach() @ w.detach() > 0).float() * mask * 2) @ w.detach().T
    torch.testing.assert_close(x.grad, expected)
