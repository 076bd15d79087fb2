"""Lint the repository with ruff (issue 35): `ruff check` by the root ruff.toml, and with
NPU_INDUCTOR_LINT_FORMAT=1 (or --format) also `ruff format --check`, which stays off until
the tree has been formatted once. CI runs it through the test suite
(packages/npu-inductor-core/tests/test_lint.py); by hand: `.venv/bin/python tools/lint.py`.
Exit status: ruff's (0 = clean)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def commands(check_format: bool) -> list[list[str]]:
    ruff = [sys.executable, "-m", "ruff"]
    out = [[*ruff, "check", "--no-cache", str(ROOT)]]
    if check_format:
        out.append([*ruff, "format", "--check", "--no-cache", str(ROOT)])
    return out


def main(argv: list[str]) -> int:
    check_format = "--format" in argv or os.environ.get("NPU_INDUCTOR_LINT_FORMAT") == "1"
    status = 0
    for cmd in commands(check_format):
        status = subprocess.run(cmd, cwd=ROOT).returncode or status
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
