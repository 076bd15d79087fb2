"""The sim driver: descriptors launch through npu-sim's entry point (a fake one here that runs
Triton's interpreter on CPU tensors), via the pre-bound vectorcall launch object."""

import subprocess
import sys

import pytest
import torch

from npu_launcher import DriverUnavailable, KernelDescriptor, _native, bind, sim_descriptor


def test_launch_object_type_uses_vectorcall():
    tp = _native.LaunchObject
    assert tp.__flags__ & (1 << 11)  # Py_TPFLAGS_HAVE_VECTORCALL: per-instance vectorcall


def test_sim_launch_runs_the_kernel_through_the_entry_point(fake_sim, sim_add_descriptor):
    launch = bind(KernelDescriptor.from_bytes(sim_add_descriptor.to_bytes()))
    assert launch.driver == "sim" and launch.arg_names == ("x", "y", "out", "n")
    x, y, out = torch.randn(100), torch.randn(100), torch.zeros(100)
    launch(2, 1, 1, None, x, y, out, 100)
    torch.testing.assert_close(out, x + y)
    ((fn, grid, args, constexprs),) = fake_sim
    assert grid == (2, 1, 1) and constexprs == {"BLOCK": 64}
    assert args[0] is x and args[2] is out  # the entry gets the caller's tensors


def test_zero_grid_launches_nothing(fake_sim, sim_add_descriptor):
    x = torch.randn(8)
    bind(sim_add_descriptor)(0, 1, 1, None, x, x, x, 8)
    assert fake_sim == []


def test_helpers_constexpr_globals_and_float_args(fake_sim, kernels):
    d = sim_descriptor(
        kernels.scale_kernel,
        {"x": "*fp32", "out": "*fp32", "n": "i32", "alpha": "fp32"},
        {"BLOCK": 32},
        device_type="cpu",
    )
    x, out = torch.randn(40), torch.zeros(40)
    bind(d)(2, 1, 1, 0, x, out, 40, 0.5)
    torch.testing.assert_close(out, x)  # _twice (x * SCALE=2) * 0.5


def test_descriptor_restores_in_a_new_process_without_the_kernel_file(tmp_path, sim_add_descriptor):
    """The sim binary carries the kernel source: no original .py file is needed."""
    blob = tmp_path / "add.nplkd"
    blob.write_bytes(sim_add_descriptor.to_bytes())
    fake = tmp_path / "fake_npu_sim.py"
    fake.write_text("def launch(fn, grid, args, constexprs):\n    fn[grid](*args, **constexprs)\n")
    code = f"""
import sys, torch
from importlib import metadata
from npu_launcher import KernelDescriptor, bind, sim
sim._entry_points = lambda: [metadata.EntryPoint('launch', 'fake_npu_sim:launch', sim.GROUP)]
launch = bind(KernelDescriptor.from_bytes(open({str(blob)!r}, 'rb').read()))
x = torch.arange(10.0); out = torch.zeros(10)
launch(1, 1, 1, None, x, x, out, 10)
print(out.tolist() == (2 * x).tolist())
"""
    env = {
        "TRITON_INTERPRET": "1",
        "NPU_LAUNCHER_CACHE_DIR": str(tmp_path / "c"),
        "PYTHONPATH": str(tmp_path),
        "PATH": "/usr/bin:/bin",
    }
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    assert out.returncode == 0 and out.stdout.strip() == "True", out.stderr[-3000:]


def test_missing_npu_sim_is_a_clear_error(monkeypatch, sim_add_descriptor):
    from npu_launcher import sim

    monkeypatch.setattr(sim, "_entry_points", lambda: [])
    with pytest.raises(
        DriverUnavailable, match="no entry point 'launch' in group 'npu_inductor.sim_launch'"
    ):
        bind(sim_add_descriptor)
