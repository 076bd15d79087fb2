"""Tensor pointers are read in C++ without Python method calls (calibrated fast path), and
agree with what Python reports; without calibration the slow path is used."""

import subprocess
import sys

import pytest
import torch

from npu_launcher import KernelArgumentError, _native, _tensor_abi, bind


class NoPythonDataPtr(torch.Tensor):
    """A tensor whose Python-level data_ptr/device/dtype would fail if called."""

    def data_ptr(self):
        raise AssertionError("data_ptr() called from Python")


def test_fast_path_is_calibrated_on_this_torch():
    ok, why = _tensor_abi.calibrate()
    assert ok, why
    for t in (
        torch.randn(8),
        torch.randn(4, 4).t(),
        torch.arange(10.0)[3:],
        torch.nn.Parameter(torch.ones(2)),
    ):
        dev, idx, dt = _native.tensor_codes(t)
        assert dev == 0 and dt == _tensor_abi.dtype_for("fp32")[1]
    assert _native.tensor_codes(object()) is None


def test_fast_path_makes_no_python_call(fake_sim, sim_add_descriptor):
    _tensor_abi.calibrate()
    launch = bind(sim_add_descriptor)
    x = torch.randn(64).as_subclass(NoPythonDataPtr)
    # validating the subclass instance never calls its data_ptr() from Python: the error is
    # about alignment, computed from the pointer read in C++ (the slow path would raise
    # AssertionError from data_ptr instead)
    with pytest.raises(KernelArgumentError, match="not 16-byte aligned"):
        launch(1, 1, 1, None, x[1:], x, x, 63)


def test_slow_path_without_calibration(tmp_path):
    """With NPU_LAUNCHER_TENSOR_FAST_PATH=0 data_ptr() is called from Python instead."""
    code = """
import torch
from npu_launcher import _native, _tensor_abi
print(_tensor_abi.calibrate(), _native.tensor_codes(torch.zeros(1)))
"""
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={"NPU_LAUNCHER_TENSOR_FAST_PATH": "0", "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(False, 'NPU_LAUNCHER_TENSOR_FAST_PATH=0') None"
