"""The background writer: remote puts leave the compile thread.

One daemon thread per process drains a bounded FIFO of write jobs.

Overflow policy: when the queue already holds ``write_queue`` jobs
($NPU_CACHE_WRITE_QUEUE, default 64) or ``write_queue_bytes`` of entries
($NPU_CACHE_WRITE_QUEUE_BYTES, default 256 MiB), the *new* put is dropped and counted
(``dropped``); the compile never waits. A dropped entry is only a future cache miss. A
single entry larger than the byte bound is still taken when the queue is empty.

Flushing: :func:`flush` waits (bounded) until every queued job ran; the compile path calls
it when a compile context ends. At interpreter exit the queue is flushed for at most
$NPU_CACHE_EXIT_FLUSH_TIMEOUT seconds (default 10); what is left is counted
(``lost_at_exit``) and logged. Job errors are logged and counted (``failed``), never raised.
"""

from __future__ import annotations

import atexit
import collections
import logging
import os
import threading
import time
from collections.abc import Callable

from .counters import Counters
from .settings import Settings

log = logging.getLogger(__name__)


class Writer:
    def __init__(self, max_items: int = 64, max_bytes: int = 256 << 20, exit_timeout: float = 10.0):
        self.max_items, self.max_bytes, self.exit_timeout = max_items, max_bytes, exit_timeout
        self.counters = Counters()
        self._cond = threading.Condition()
        self._jobs: collections.deque = collections.deque()
        self._bytes = 0
        self._busy = 0
        self._thread: threading.Thread | None = None

    def submit(self, job: Callable[[], bool], nbytes: int, label: str = "") -> bool:
        """Queue ``job`` (returns False on failure); False when dropped by the overflow policy."""
        with self._cond:
            if len(self._jobs) >= self.max_items or (
                self._jobs and self._bytes + nbytes > self.max_bytes
            ):
                self.counters.add("dropped")
                dropped = self.counters["dropped"]
                if dropped == 1 or dropped % 100 == 0:
                    log.warning(
                        "npu-cache: write queue full (%d jobs, %d bytes): dropped %s (%d dropped so far)",
                        len(self._jobs),
                        self._bytes,
                        label or "a put",
                        dropped,
                    )
                return False
            self._jobs.append((job, nbytes, label))
            self._bytes += nbytes
            self.counters.add("queued")
            self._start_locked()
            self._cond.notify_all()
            return True

    def start(self) -> None:
        """Start the thread now (idempotent). Starting it costs the caller a few ms on a busy
        machine (Thread.start waits for the new thread to run), so setup does it instead of
        the first put."""
        with self._cond:
            self._start_locked()

    def _start_locked(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="npu-cache-writer", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._jobs:
                    self._cond.wait()
                job, nbytes, label = self._jobs.popleft()
                self._busy += 1
            try:
                ok = job()
            except Exception:  # a job must not kill the writer; the caller is long gone
                ok = False
                log.warning(
                    "npu-cache: background write of %s failed", label or "an entry", exc_info=True
                )
            self.counters.add("written" if ok is not False else "failed")
            with self._cond:
                self._busy -= 1
                self._bytes -= nbytes
                self._cond.notify_all()

    def pending(self) -> int:
        with self._cond:
            return len(self._jobs) + self._busy

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued job ran; False if ``timeout`` seconds passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._jobs or self._busy:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True

    def close_at_exit(self) -> None:
        if self.flush(self.exit_timeout):
            return
        left = self.pending()
        self.counters.add("lost_at_exit", left)
        log.warning(
            "npu-cache: %d cache writes still pending after %gs at exit; they are lost",
            left,
            self.exit_timeout,
        )

    def stats(self) -> dict:
        with self._cond:
            pending, nbytes = len(self._jobs) + self._busy, self._bytes
        return {"pending": pending, "pending_bytes": nbytes, **self.counters.snapshot()}


_lock = threading.Lock()
_writer: Writer | None = None


def get_writer() -> Writer:
    """The process's writer, created (from npu_cache.config) on first use."""
    global _writer
    with _lock:
        if _writer is None:
            s = Settings.from_config()
            _writer = Writer(s.write_queue, s.write_queue_bytes, s.exit_flush_timeout)
        return _writer


def warm_up() -> None:
    """Create the process's writer and start its thread (``register()`` calls this when a
    Redis URL is configured), so no put pays for either."""
    get_writer().start()


def flush(timeout: float | None = None) -> bool:
    """Flush the process's writer (the hook a compile context calls when it ends)."""
    w = _writer
    return True if w is None else w.flush(timeout)


def _at_exit() -> None:
    w = _writer
    if w is not None:
        w.close_at_exit()


def _after_fork_in_child() -> None:
    # the writer thread does not survive fork; the child's copy of the queue belongs to the parent
    global _writer, _lock
    _writer, _lock = None, threading.Lock()


# atexit runs before daemon threads are stopped, so the writer can still drain
atexit.register(_at_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
