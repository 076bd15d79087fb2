"""The repository passes ruff: CI runs only the test suite, so this test is how `ruff check`
and `ruff format --check` (tools/lint.py, by the root ruff.toml) run in CI. A clone without ruff fails
here: ruff is a dependency of hatch's default environment."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.skipif(not (ROOT / "ruff.toml").is_file(), reason="not a checkout of the repository")
def test_ruff_check_and_format_pass():
    assert importlib.util.find_spec("ruff") is not None, (
        "ruff is not installed (hatch.toml's default environment has it)"
    )
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "lint.py")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
