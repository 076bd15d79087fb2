"""Thread-safe named counters; every cache, store and the writer keep one."""

from __future__ import annotations

import threading
from collections import Counter


class Counters:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._c: Counter[str] = Counter()

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._c[name] += n

    def __getitem__(self, name: str) -> int:
        with self._lock:
            return self._c[name]

    def clear(self) -> None:
        with self._lock:
            self._c.clear()

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(sorted(self._c.items()))
