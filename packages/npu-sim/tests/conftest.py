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
        proc = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            env={**os.environ, **(env or {})},
            timeout=300,
        )
        if ok:
            assert proc.returncode == 0, proc.stderr[-3000:]
        return proc

    return run


class ChildCases:
    """Cases run in one child interpreter (so a crash fails the cases, not pytest); the script
    prints ``CASE <name> <verdict> [<error>]`` per case (a fixture: tests cannot import conftest)."""

    @staticmethod
    def run(script, env: dict | None = None):
        proc = subprocess.run(
            [sys.executable, str(script)],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, **(env or {})},
        )
        results = {}
        for line in proc.stdout.splitlines():
            if line.startswith("CASE "):
                _, name, verdict, *error = line.split(" ", 3)
                results[name] = (verdict, error[0] if error else "")
        return proc, results

    @staticmethod
    def check(case: str, outcomes) -> None:
        proc, results = outcomes
        if case not in results:
            pytest.fail(
                f"the child died (exit status {proc.returncode}) before finishing {case}: {proc.stderr[-1500:]}"
            )
        verdict, error = results[case]
        assert verdict == "ok", error


@pytest.fixture(scope="session")
def child_cases():
    return ChildCases
