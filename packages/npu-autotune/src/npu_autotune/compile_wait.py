"""Waiting for npu kernel compiles (wait timeout, watchdog, progress line, misuse).

Upstream's ``AsyncCompile._wait_futures`` waits for every kernel future of a generated
module (with ``compile_worker_wait_timeout``, naming the kernel). ``_compat`` tags the
futures ``AsyncCompile.triton`` returns for device "npu" and, for a scope that holds one,
runs upstream's wait inside ``wait`` below, which adds:
- a flag check: upstream's async-compile flags out of range are an error naming the range;
- a crashed compile worker is an error naming the kernel it was compiling (upstream's
  message names no kernel);
- a monitor thread: the watchdog (``compile_worker_watchdog_interval_seconds``)
  reports each npu compile still pending after an interval, with its stage, as a
  structured event (``trace_structured`` artifact ``npu_compile_watchdog`` and a log record
  whose ``npu_compile`` attribute is the dict); the progress line of pending npu
  kernels on stderr while waiting, when ``disable_progress`` is off and torch has no real
  tqdm for upstream's bar (``verbose_progress`` adds the pending kernels' names).
Scopes without npu futures (cpu, cuda) get upstream's wait untouched.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool

from . import config as npu_config

log = logging.getLogger(__name__)
TAG = "_npu_kernel"  # on a kernel future: (kernel name, monotonic submit time)
WATCHDOG_ARTIFACT = "npu_compile_watchdog"
START_METHODS = ("subprocess", "fork", "spawn")


def tag(future, kernel_name: str):
    try:
        setattr(future, TAG, (kernel_name, time.monotonic()))
    except AttributeError:  # a future type without a __dict__: left to upstream
        pass
    return future


def _is_future(value) -> bool:
    from torch._inductor.codecache import CodeCacheFuture

    return isinstance(value, (Future, CodeCacheFuture))


def npu_futures(scope: dict) -> dict:
    return {k: v for k, v in scope.items() if _is_future(v) and hasattr(v, TAG)}


def check_flags() -> None:
    """Upstream's async-compile flags, checked where an npu compile uses them."""
    from torch._inductor import config

    def number(name, low=None, none_ok=False):
        value = getattr(config, name, None)
        if value is None and (none_ok or not hasattr(config, name)):
            return  # decided lazily / no limit, or a flag this torch lacks (2.11: no wait timeout)
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or (low is not None and value < low)
        ):
            allowed = (
                "a number"
                + (f" >= {low}" if low is not None else "")
                + (" or None" if none_ok else "")
            )
            raise ValueError(f"torch._inductor.config.{name} must be {allowed}, got {value!r}")

    number("compile_threads", 1, none_ok=True)  # None: decided from the cores
    number("compile_worker_wait_timeout", 0)  # 0 = wait forever
    number("quiesce_async_compile_time", 0)
    number("precompilation_timeout_seconds", none_ok=True)  # None or <= 0: no timeout (upstream)
    if config.worker_start_method not in START_METHODS:
        raise ValueError(
            f"torch._inductor.config.worker_start_method must be one of {START_METHODS}, "
            f"got {config.worker_start_method!r}"
        )


def watchdog_interval() -> float:
    """Upstream's flag where torch has it, else npu-autotune's setting of the same name."""
    from torch._inductor import config

    value = getattr(config, "compile_worker_watchdog_interval_seconds", None)
    return float(npu_config.compile_worker_watchdog_interval_seconds if value is None else value)


def _stage(future) -> str:
    inner = getattr(future, "future", None)  # upstream's LambdaFuture: the pool's task
    if inner is not None and not inner.done():
        return "compiling in a worker"
    return "finishing in this process"  # the worker is done; reload, precompile, tuning setup


class _Monitor(threading.Thread):
    def __init__(self, scope: dict, futures: dict):
        super().__init__(name="npu-compile-monitor", daemon=True)
        from torch._inductor import config
        from torch.hub import _Faketqdm, tqdm

        self.scope, self.futures = scope, futures
        self.interval = watchdog_interval()
        self.progress = not config.disable_progress and tqdm is _Faketqdm
        self.names = bool(config.verbose_progress)
        self.stop_event = threading.Event()
        self._last_line = None

    def pending(self) -> list[str]:
        return [k for k, f in self.futures.items() if self.scope.get(k) is f]

    def run(self) -> None:
        tick = 0.1 if self.progress else (self.interval or 1.0)
        next_report = time.monotonic() + self.interval
        while not self.stop_event.wait(tick):
            if self.progress:
                self.show()
            if self.interval and time.monotonic() >= next_report:
                next_report += self.interval
                self.report()

    def report(self) -> None:
        now = time.monotonic()
        for key in self.pending():
            future = self.futures[key]
            name, submitted = getattr(future, TAG)
            elapsed = now - submitted
            if elapsed < self.interval:
                continue
            event = {
                "kernel": name,
                "stage": _stage(future),
                "elapsed_s": round(elapsed, 3),
                "interval_s": self.interval,
            }
            _emit(event)

    def show(self, final: bool = False) -> None:
        pending = self.pending()
        done = len(self.futures) - len(pending)
        line = f"Inductor Compilation (npu): {done}/{len(self.futures)} kernels"
        if pending and self.names:
            line += " pending: " + ", ".join(pending)
        if line != self._last_line or final:
            sys.stderr.write("\r" + line + ("\n" if final else ""))
            sys.stderr.flush()
            self._last_line = line

    def finish(self) -> None:
        self.stop_event.set()
        if self.is_alive():
            self.join()
        if self.progress:
            self.show(final=True)


def _emit(event: dict) -> None:
    import torch

    torch._logging.trace_structured(
        "artifact",
        metadata_fn=lambda: {"name": WATCHDOG_ARTIFACT, "encoding": "json"},
        payload_fn=lambda: json.dumps(event),
    )
    log.warning(
        "npu kernel %s still compiling after %.1fs (%s)",
        event["kernel"],
        event["elapsed_s"],
        event["stage"],
        extra={"npu_compile": event},
    )


def wait(upstream_wait, async_compile, scope: dict):
    futures = npu_futures(scope)
    if not futures:
        return upstream_wait(async_compile, scope)
    check_flags()
    monitor = _Monitor(scope, futures)
    if monitor.progress or monitor.interval:  # nothing to watch or show: no thread
        monitor.start()
    try:
        return upstream_wait(async_compile, scope)
    except RuntimeError as exc:
        if not isinstance(exc.__cause__, BrokenProcessPool):
            raise
        # upstream waits in scope order and replaces each finished future: the first one
        # left is the kernel whose worker died
        key = next((k for k, v in scope.items() if _is_future(v)), None)
        name = getattr(scope.get(key), TAG, (key,))[0]
        raise RuntimeError(
            f"npu kernel {name!r}: its compile worker exited unexpectedly (crashed) while "
            "compiling it; TORCHINDUCTOR_COMPILE_THREADS=1 compiles in this process"
        ) from exc
    finally:
        monitor.finish()
