"""Packaging and the plugin contract: the package builds with pip on a fresh venv (build
isolation fetches only scikit-build-core and nanobind: no torch, CUDA or CANN), and
register() is the idempotent component hook."""

import subprocess
import venv
from importlib import metadata
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]


def test_register_is_the_idempotent_component_entry_point():
    import npu_launcher
    from npu_launcher import _native

    (ep,) = [
        e
        for e in metadata.entry_points(group="npu_inductor.components")
        if e.name == "npu-launcher"
    ]
    assert ep.value == "npu_launcher:register" and ep.load() is npu_launcher.register
    npu_launcher.register()
    npu_launcher.register()
    assert _native.tensor_fast_path_enabled()


def test_pip_install_in_a_fresh_venv_builds_without_torch(tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    # --no-deps: torch is not installed, so the build and the import below cannot use it
    proc = subprocess.run(
        [py, "-m", "pip", "install", "-q", "--no-deps", str(PACKAGE)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    check = (
        "import importlib.util; assert importlib.util.find_spec('torch') is None\n"
        "from npu_launcher import _native\n"
        "from npu_launcher.descriptor import ArgSpec, KernelDescriptor, Target\n"
        "d = KernelDescriptor('k', Target('cuda', '90', 32), 'cubin', b'x', (ArgSpec('p', '*fp32', 16),))\n"
        "assert KernelDescriptor.from_bytes(d.to_bytes()) == d\n"
        "print(_native.driver_status('ascend')[0], len(_native.cuda_symbols()))"
    )
    proc = subprocess.run(
        [py, "-c", check], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["False", str(len(_native_symbols()))]


def _native_symbols():
    from npu_launcher import _native

    return _native.cuda_symbols()
