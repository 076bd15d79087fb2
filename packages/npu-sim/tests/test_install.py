"""npu-sim installs with pip into a fresh environment against the CI's torch, builds the
device at first start (saying so), and caches the build."""

import os
import subprocess
import venv
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]


def test_pip_install_into_a_fresh_venv_then_start(tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    torch_pin = f"torch=={__import__('torch').__version__.split('+')[0]}"  # the local wheel: no other torch
    proc = subprocess.run([py, "-m", "pip", "install", "-q", torch_pin, str(PACKAGE)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    check = ("import npu_sim, torch; npu_sim.start(); "
             "print((torch.ones(3, device='npu') + 1).cpu().tolist())")
    env = {**os.environ, "TORCH_EXTENSIONS_DIR": str(tmp_path / "ext")}
    first = subprocess.run([py, "-c", check], capture_output=True, text=True, timeout=900, env=env)
    assert first.returncode == 0, first.stderr[-3000:]
    assert first.stdout.strip() == "[2.0, 2.0, 2.0]"
    assert "building the simulated device" in first.stderr
    again = subprocess.run([py, "-c", check], capture_output=True, text=True, timeout=300, env=env)
    assert again.returncode == 0 and "building" not in again.stderr  # cached
