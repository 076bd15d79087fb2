import os
import subprocess
import sys
import textwrap

import pytest


@pytest.fixture(scope="session", autouse=True)
def npu():
    import npu_sim

    npu_sim.start()
    import torch

    return torch.device("npu")


@pytest.fixture
def run_python():
    """Run a snippet in a fresh interpreter (device count, SoC and refusals are per process)."""

    def run(code: str, env: dict | None = None, ok: bool = True):
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                              env={**os.environ, **(env or {})}, timeout=300)
        if ok:
            assert proc.returncode == 0, proc.stderr[-3000:]
        return proc

    return run
