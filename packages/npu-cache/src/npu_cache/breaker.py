"""A circuit breaker: after a failure, stop calling a dead or slow server for a cool-down.

Without it every get of a compile would wait a full timeout on an unreachable Redis. While
open, calls are skipped at once; after ``cooldown`` seconds one call is let through as a
trial ("half-open"): success closes the circuit, failure opens it for another cool-down.
"""

from __future__ import annotations

import threading
import time

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half-open"


class Breaker:
    def __init__(self, cooldown: float, clock=time.monotonic):
        self.cooldown = cooldown
        self._clock = clock
        self._lock = threading.Lock()
        self._state = CLOSED
        self._opened_at = 0.0
        self.opened = 0  # times the circuit opened
        self.recovered = 0  # times a trial call closed it again

    @property
    def state(self) -> str:
        with self._lock:
            return self._state

    def allow(self) -> bool:
        """Whether a call may go to the server now."""
        with self._lock:
            if self._state == CLOSED:
                return True
            if self._state == OPEN and self._clock() - self._opened_at >= self.cooldown:
                self._state = HALF_OPEN  # exactly one caller gets the trial
                return True
            return False

    def success(self) -> None:
        with self._lock:
            if self._state != CLOSED:
                self.recovered += 1
            self._state = CLOSED

    def failure(self) -> None:
        with self._lock:
            if self._state == CLOSED:  # a failed trial re-opens: same outage, not a new one
                self.opened += 1
            self._state = OPEN
            self._opened_at = self._clock()
