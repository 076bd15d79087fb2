"""The kernel files an Ascend check run takes: the folders' ``npu_kernel_*.py`` now, and with
``--follow`` each one written later (CI's check runs beside pytest), through a pool whose
concurrency widens once pytest is done."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

KERNEL_GLOB = "npu_kernel_*.py"


def collect(paths: list[str], quiet: bool = False) -> list[Path]:
    out = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(p.glob(KERNEL_GLOB)))
        elif p.is_file():
            out.append(p)
        elif not quiet:  # (a followed folder may not exist yet)
            print(f"ascend_check: {p} does not exist", file=sys.stderr)
    return out


class GatedPool:
    """A thread pool whose concurrent runs are capped by a gate that can be widened: one
    bishengir at a time while pytest still runs beside us (``--follow``), all jobs after."""

    def __init__(self, pool, allowed: int):
        self.pool, self.allowed = pool, allowed
        self.gate = threading.Semaphore(allowed)

    def widen(self, to: int) -> None:
        for _ in range(max(0, to - self.allowed)):
            self.gate.release()
        self.allowed = max(self.allowed, to)

    def submit(self, fn, *args, **kwargs):
        def gated():
            with self.gate:
                return fn(*args, **kwargs)

        return self.pool.submit(gated)


def kernel_files(paths: list[str], follow: Path | None, pool: GatedPool, jobs: int):
    """The kernel files to check: those there now; with ``follow``, also each file written
    later, until the ``follow`` file exists (then one last look, with the pool widened)."""
    seen: set[Path] = set()
    while True:
        done = follow is None or follow.exists()
        if done:
            pool.widen(jobs)
        new = [p for p in collect(paths, quiet=not done) if p not in seen]
        seen.update(new)
        yield from new
        if done:
            return
        if not new:
            time.sleep(2)
