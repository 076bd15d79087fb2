"""npu_launcher.config: a torch config module; $NPU_LAUNCHER_CACHE_DIR is its default and
patch() moves the sim driver's folder."""

import os
import subprocess
import sys
from pathlib import Path

import npu_launcher.config as launcher_config
from npu_launcher import sim


def test_environment_default_in_a_fresh_process(tmp_path):
    code = "import npu_launcher.config as c; from npu_launcher import sim; print(c.cache_dir, sim.cache_dir())"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env=dict(
            os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0", NPU_LAUNCHER_CACHE_DIR=str(tmp_path)
        ),
    )
    assert out.stdout.split() == [str(tmp_path), str(tmp_path / "sim")]


def test_patch_reaches_the_sim_driver(tmp_path):
    with launcher_config.patch(cache_dir=str(tmp_path)):
        assert sim.cache_dir() == tmp_path / "sim"
    with launcher_config.patch(cache_dir=None):
        assert sim.cache_dir() == Path.home() / ".cache" / "npu_launcher" / "sim"
