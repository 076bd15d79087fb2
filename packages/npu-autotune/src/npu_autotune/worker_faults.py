"""Test only: faults a tuning worker injects before benchmarking a candidate (to test the timeouts).

Set ``npu_autotune.subproc.test_faults = WorkerFaults(...)`` in the parent; every request
carries it (picklable) and the worker applies it by candidate index. Never set in production.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import time


@dataclasses.dataclass(frozen=True)
class WorkerFaults:
    hang_s: dict = dataclasses.field(
        default_factory=dict
    )  # index -> seconds the worker hangs first
    crash: frozenset = frozenset()  # indices whose worker exits at once (a crash)
    timings_ms: dict = dataclasses.field(
        default_factory=dict
    )  # index -> reported time (others measured)
    # a worker that hangs handles SIGTERM by exiting (code SIGTERM_EXIT) only after this delay
    sigterm_exit_after_s: float | None = None

    SIGTERM_EXIT = 143

    def before(self, index: int) -> None:
        if index in self.crash:
            os._exit(3)
        seconds = self.hang_s.get(index)
        if seconds:
            if self.sigterm_exit_after_s is not None:
                delay = self.sigterm_exit_after_s

                def slow_exit(signum, frame):
                    time.sleep(delay)
                    os._exit(self.SIGTERM_EXIT)

                signal.signal(signal.SIGTERM, slow_exit)
            time.sleep(seconds)

    def timing(self, index: int) -> float | None:
        return self.timings_ms.get(index)
