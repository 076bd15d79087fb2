"""Lint the repository with ruff: `ruff check` and `ruff format --check`, both by the root
ruff.toml. CI runs it through the test suite (packages/npu-inductor-core/tests/test_lint.py);
by hand: `.venv/bin/python tools/lint.py` (`ruff format .` fixes what the second reports).
Exit status: ruff's (0 = clean)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def commands() -> list[list[str]]:
    ruff = [sys.executable, "-m", "ruff"]
    return [
        [*ruff, "check", "--no-cache", str(ROOT)],
        [*ruff, "format", "--check", "--no-cache", str(ROOT)],
    ]


def main() -> int:
    status = 0
    for cmd in commands():
        status = subprocess.run(cmd, cwd=ROOT).returncode or status
    return status


if __name__ == "__main__":
    sys.exit(main())
