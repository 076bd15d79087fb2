"""Fixtures the conformance suites (OpInfo, transformers models) share."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def npu():
    """The backend enabled and device "npu" up (skips where no provider gives one)."""
    import torch

    from npu_inductor import enable

    enable()
    if torch._C._get_privateuse1_backend_name() != "npu":
        pytest.skip("no device 'npu'")
    return torch.device("npu")


@pytest.fixture
def npu_props():
    """A 910B2's properties as codegen records them (no device opened)."""
    from torch._inductor.runtime.hints import DeviceProperties

    return DeviceProperties(
        type="npu",
        index=0,
        multi_processor_count=48,
        cc="Ascend910B2",
        major=0,
        regs_per_multiprocessor=None,
        max_threads_per_multi_processor=None,
        max_threads_per_block=1024,
        warp_size=32,
    )
