"""Seeding and RNG-state calls inside a compiled function (issue 16: 57 OpInfo pairs of random
ops failed): Dynamo traced into npu-sim's generator code and failed on fake tensors ("you
set no_dispatch() before calling into this function"). They are hidden from Dynamo, as its
trace rules skip torch.cuda's: the graph breaks there and the call runs eagerly."""

from __future__ import annotations

import pytest
import torch


def _seeded_normal(x):
    torch.manual_seed(42)
    return torch.normal(x, 1.0)


def _frozen_seeded_normal(x):
    # what OpInfo's random ops run (wrapper_set_seed): seed inside freeze_rng_state, which
    # saves and restores every device's RNG state, npu's through torch.npu
    from torch.testing._internal.common_utils import freeze_rng_state

    with freeze_rng_state():
        torch.manual_seed(42)
        return torch.normal(x, 1.0)


def _state_roundtrip(x):
    state = torch.npu.get_rng_state()
    a = torch.rand_like(x)
    torch.npu.set_rng_state(state)
    return a, torch.rand_like(x)


@pytest.mark.parametrize("fn", [_seeded_normal, _frozen_seeded_normal])
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_seeding_inside_a_compiled_function(npu, backend, fn):
    pytest.importorskip("expecttest")  # torch.testing._internal.common_utils imports it
    x = torch.zeros(16, device="npu")
    torch._dynamo.reset()
    out = torch.compile(fn, backend=backend)(x)
    torch.testing.assert_close(out.cpu(), fn(x).cpu())


def test_rng_state_roundtrip_inside_a_compiled_function(npu):
    x = torch.zeros(16, device="npu")
    torch._dynamo.reset()
    a, b = torch.compile(_state_roundtrip, backend="eager")(x)
    torch.testing.assert_close(a.cpu(), b.cpu())
