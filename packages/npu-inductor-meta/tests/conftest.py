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
