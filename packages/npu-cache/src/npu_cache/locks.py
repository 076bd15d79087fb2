"""Exclusive file locks that give up after ``file_lock_timeout`` with a clear error.

flock(2) on a side file: released by the kernel when the holder dies, so a crashed compile
never leaves a cache locked. POSIX only, like torch_npu.
"""

from __future__ import annotations

import fcntl
import os
import time
from contextlib import contextmanager
from pathlib import Path

from . import policy

_POLL = 0.02


class LockTimeout(TimeoutError):
    """Raised when a cache lock stays held longer than ``file_lock_timeout``."""

    def __init__(self, path: Path, timeout: float):
        self.path, self.timeout = path, timeout
        super().__init__(
            f"npu-cache: waited {timeout:g}s for the cache lock {path}, held by another process "
            f"(torch._inductor.config.file_lock_timeout / $TORCHINDUCTOR_FILE_LOCK_TIMEOUT); "
            f"raise the timeout, or remove a stale lock only if no compile is running"
        )


@contextmanager
def file_lock(path: Path, timeout: float | None = None):
    """Hold an exclusive lock on ``path`` (created if missing) for the ``with`` body."""
    timeout = policy.lock_timeout() if timeout is None else timeout
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockTimeout(path, timeout) from None
                time.sleep(_POLL)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
