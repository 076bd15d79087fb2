"""Storages on npu: torch.UntypedStorage(n, device="npu"), storage clones, copy.deepcopy of
npu tensors and modules, storage resize_. torch builds such storages with the PrivateUse1
allocator registered in c10 (a null pointer, and a segfault, until npu-sim registers its
own). The cases run in one child interpreter (storage_cases.py), so a crash fails them."""

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
try:
    from storage_cases import CASES
finally:
    sys.path.pop(0)


@pytest.fixture(scope="module")
def outcomes(child_cases):
    return child_cases.run(HERE / "storage_cases.py", env={"NPU_SIM_DEVICE_COUNT": "2"})


@pytest.mark.parametrize("case", CASES)
def test_storage(case, outcomes, child_cases):
    child_cases.check(case, outcomes)
