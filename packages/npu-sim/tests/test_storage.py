"""Storages on npu: torch.UntypedStorage(n, device="npu"), storage clones, copy.deepcopy of
npu tensors and modules, storage resize_. torch builds such storages with the PrivateUse1
allocator registered in c10 (a null pointer, and a segfault, until npu-sim registers its
own). The cases run in one child interpreter (storage_cases.py), so a crash fails them."""

import subprocess
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
def outcomes():
    import os

    proc = subprocess.run([sys.executable, str(HERE / "storage_cases.py")], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "NPU_SIM_DEVICE_COUNT": "2"})
    results = {}
    for line in proc.stdout.splitlines():
        if line.startswith("CASE "):
            _, name, verdict, *error = line.split(" ", 3)
            results[name] = (verdict, error[0] if error else "")
    return proc, results


@pytest.mark.parametrize("case", CASES)
def test_storage(case, outcomes):
    proc, results = outcomes
    if case not in results:
        pytest.fail(f"the child died (exit status {proc.returncode}) before finishing {case}: "
                    f"{proc.stderr[-1500:]}")
    verdict, error = results[case]
    assert verdict == "ok", error
