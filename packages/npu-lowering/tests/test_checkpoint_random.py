"""Activation checkpointing around a random op under torch.compile on npu (README "Random
numbers"): it trains on torch 2.13; from 2.14 on upstream's partitioner replays the forward's
RNG state in the backward through device tables that name cuda/cpu/hpu/xpu only, so npu fails
there. Strict xfail on 2.14+: the day a torch routes npu, this passes and shows here. The
gradient must match a replay of the forward's mask.

Checked on 2.15 (2026-12-05) for an upstream hook: the partitioner's non-graph-safe path wraps
the op in ``run_and_save_rng_state``, whose fake-tensor implementation calls its BackendSelect
table (cuda/cpu/hpu/xpu) directly, so no PrivateUse1 registration reaches it; 2.14 and 2.15's
public ``register_graphsafe_rng_device_type("npu")`` (npu-sim's generator has the graph-safe
state methods) moves npu to the graph-safe path, but Inductor's fallback kernel for a
generator-state argument then asserts the device is cuda or xpu (``ir.py``). Both need an
upstream change, not a registration."""

import pytest
import torch
import torch.nn.functional as F
from npu_inductor_core.torch_versions import at_least
from torch.utils.checkpoint import checkpoint


@pytest.mark.xfail(
    at_least("2.14"),
    strict=True,
    raises=Exception,
    reason="torch 2.14-2.15: run_and_save_rng_state / graph-safe RNG lowering accept "
    "cuda, cpu, hpu, xpu only ('Backend not supported for npu')",
)
def test_checkpointed_dropout_trains():
    def block(x, w):
        return F.dropout(torch.relu(x @ w), p=0.5, training=True)

    x = torch.randn(4, 8, device="npu", requires_grad=True)
    w = torch.randn(8, 8, device="npu", requires_grad=True)
    out = torch.compile(lambda x, w: checkpoint(block, x, w, use_reentrant=False))(x, w)
    out.sum().backward()
    mask = (out != 0).float()  # the backward's recomputed mask must be the forward's
    expected = ((x.detach() @ w.detach() > 0).float() * mask * 2) @ w.detach().T
    torch.testing.assert_close(x.grad, expected)
