"""The Ascend check runs a compiler step once more when its process died by a signal (a crash
of the tool under load, not a verdict on the kernel), and only once; an exit status is final."""

from __future__ import annotations

import subprocess

import pytest

pytestmark = pytest.mark.feature("X07")


def _step(outcomes):
    calls = []

    def run():
        calls.append(1)
        outcome = outcomes[len(calls) - 1]
        if isinstance(outcome, int):
            raise subprocess.CalledProcessError(outcome, ["triton-adapter-opt"])
        return outcome

    return run, calls


def test_a_step_killed_by_a_signal_runs_once_more(ascend_hivm):
    run, calls = _step([-11, "linalg"])
    assert ascend_hivm.once_more_on_a_signal(run) == "linalg"
    assert len(calls) == 2


def test_a_second_crash_is_the_verdict(ascend_hivm):
    run, calls = _step([-11, -11, "linalg"])
    with pytest.raises(subprocess.CalledProcessError):
        ascend_hivm.once_more_on_a_signal(run)
    assert len(calls) == 2


def test_an_exit_status_is_not_retried(ascend_hivm):
    run, calls = _step([1, "linalg"])
    with pytest.raises(subprocess.CalledProcessError):
        ascend_hivm.once_more_on_a_signal(run)
    assert len(calls) == 1
