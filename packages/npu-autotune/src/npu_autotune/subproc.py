"""Benchmarking npu kernel candidates in tuning subprocesses (several devices, timeouts).

With upstream's ``autotune_in_subproc`` on, the candidate configs of an npu kernel are timed
in tuning workers instead of the compiling process, so a config that hangs or crashes costs
that config, not the compile. (Upstream's ``TuningProcessPool`` serves select_algorithm's
template choices; on npu only ATen choices exist today, which upstream benchmarks in
process, so the candidates here are our kernel configs.) Upstream's classes, extended:
- ``NpuTuningProcess(TuningProcess)``: the worker is ``npu_autotune._tuning_main`` (device
  "npu" registered) and sees its device through ``ASCEND_RT_VISIBLE_DEVICES`` (torch_npu's
  CUDA_VISIBLE_DEVICES, honoured by npu-sim too); upstream's ``kill`` and ``wait`` become a
  staged stop: the shutdown sentinel, ``max_autotune_subproc_graceful_timeout_seconds``
  SIGTERM, ``max_autotune_subproc_terminate_timeout_seconds``, SIGKILL
  (upstream 2.13 keeps these two flags but ignores them);
- ``NpuTuningProcessPool(TuningProcessPool)``: one worker, or with ``autotune_multi_device``
  one per visible npu device, work handed to whichever is free; a result not back
  within ``max_autotune_subproc_result_timeout_seconds``, a failure or a crash makes
  that candidate infinitely slow (upstream's rule), so the selector takes another.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import functools
import logging
import os
import queue
import selectors
import signal
import subprocess
import sys
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

from npu_inductor_core import env_config as _env
from torch._dynamo.utils import counters
from torch._inductor import config as inductor_config
from torch._inductor.autotune_process import TuningProcess, TuningProcessPool
from torch._inductor.utils import get_ld_library_path, python_subprocess_env

from . import bench_request

log = logging.getLogger(__name__)
VISIBLE_ENV = bench_request.VISIBLE_ENV
# a new worker imports torch and registers the components before its first job: that is not
# what the result timeout bounds (upstream warms its pool early for the same reason)
STARTUP_TIMEOUT_S = 300.0
CACHE_ENVS = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")  # as upstream's pool passes per job

test_faults = None  # test only: a worker_faults.WorkerFaults every request carries
# (kernel name, candidate index, config kwargs, ms, worker pid, worker's ASCEND_RT_VISIBLE_DEVICES)
HISTORY: list = []
# (worker pid, its ASCEND_RT_VISIBLE_DEVICES, the npu device count it sees) per worker start
WORKERS: list = []
# (worker pid, "graceful" | "terminated" | "killed" | "crashed", return code)
STOPS: list = []


def enabled() -> bool:
    return bool(inductor_config.autotune_in_subproc)


def timeouts() -> tuple[float, float, float]:
    """(result, graceful, terminate) seconds; a value out of range is an error naming it."""
    out = []
    for name, low, inclusive in (
        ("max_autotune_subproc_result_timeout_seconds", 0, False),
        ("max_autotune_subproc_graceful_timeout_seconds", 0, True),
        ("max_autotune_subproc_terminate_timeout_seconds", 0, True),
    ):
        value = getattr(inductor_config, name)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number or value != value or (value < low if inclusive else value <= low):
            raise ValueError(
                f"{name} must be a number of seconds {'>=' if inclusive else '>'} {low}, got {value!r}"
            )
        out.append(float(value))
    return out[0], out[1], out[2]


def _exited_within(process: subprocess.Popen, seconds: float) -> bool:
    try:
        process.wait(timeout=seconds)
        return True
    except subprocess.TimeoutExpired:
        return False


class NpuTuningProcess(TuningProcess):
    """One npu tuning worker (``device``: the device id it sees alone, or None for all)."""

    def start(self):
        # upstream's start, with our entry and the npu visibility variable
        child_read, write_fd = os.pipe()
        read_fd, child_write = os.pipe()
        self.write_pipe = os.fdopen(write_fd, "wb")
        self.read_pipe = os.fdopen(read_fd, "rb")
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.read_pipe, selectors.EVENT_READ)
        env = {
            **python_subprocess_env(),
            "TORCH_WARM_POOL": "0",
            "LD_LIBRARY_PATH": get_ld_library_path(),
        }
        if self.device is not None:
            env[VISIBLE_ENV] = str(self.device)
            env[bench_request.WORKER_DEVICE_ENV] = str(self.device)
        cmd = [
            sys.executable,
            "-m",
            "npu_autotune._tuning_main",
            f"--parent={os.getpid()}",
            f"--read-fd={child_read}",
            f"--write-fd={child_write}",
        ]
        self.process = subprocess.Popen(cmd, env=env, pass_fds=(child_read, child_write))
        os.close(child_read)
        os.close(child_write)
        self.running = True
        self.ready = False

    def ensure_ready(self, module_path: str | None = None, extra_env: dict | None = None) -> None:
        """(Re)start the worker if needed and wait, up to STARTUP_TIMEOUT_S, until it serves;
        a new worker first loads ``module_path`` (``bench_request.ready``: one-time costs of a
        first kernel module are startup, not the next benchmark's result time)."""
        if self.alive() and self.ready:
            return
        # upstream's put restarts a dead worker
        self.put(functools.partial(bench_request.ready, module_path), extra_env=extra_env)
        WORKERS.append(self.get(STARTUP_TIMEOUT_S))
        self.ready = True

    def kill(self) -> None:
        """Upstream's kill (after a result timeout or an unreadable reply), staged
        (graceful and terminate timeouts)."""
        self._stop(send_sentinel=True)

    def wait(self) -> None:
        """Upstream's wait after the shutdown sentinel (unbounded there), staged
        (graceful and terminate timeouts)."""
        self._stop(send_sentinel=False)

    def _stop(self, send_sentinel: bool) -> None:
        try:  # the limits of the tuning it serves (read there: config patches are per thread)
            _, graceful, terminate = getattr(self, "limits", None) or timeouts()
        except ValueError as exc:  # set wrong after the last benchmark: stop at once
            log.warning("npu tuning worker stop: %s; not waiting", exc)
            graceful = terminate = 0.0
        if self.running and self.process.poll() is None:
            if send_sentinel:
                with contextlib.suppress(OSError, ValueError):
                    TuningProcess.send(None, self.write_pipe)  # read after its current job
            how = "graceful"
            if not _exited_within(self.process, graceful):
                log.info(
                    "npu tuning worker %d: no exit within %.3gs: SIGTERM",
                    self.process.pid,
                    graceful,
                )
                how = "terminated"
                self.process.terminate()
                if not _exited_within(self.process, terminate):
                    log.info(
                        "npu tuning worker %d: no exit within %.3gs of SIGTERM: SIGKILL",
                        self.process.pid,
                        terminate,
                    )
                    self.process.kill()
                    self.process.wait()
                    if (
                        self.process.returncode == -signal.SIGKILL
                    ):  # (SIGTERM may have won the race)
                        how = "killed"
            STOPS.append((self.process.pid, how, self.process.returncode))
        if self.running:
            self.close()

    def crashed(self) -> None:
        """The worker's pipe closed under a job: record how it ended (upstream closed the pipes)."""
        _exited_within(self.process, 5.0)
        STOPS.append((self.process.pid, "crashed", self.process.returncode))


class NpuTuningProcessPool(TuningProcessPool):
    """Upstream's pool over ``NpuTuningProcess`` workers (upstream's shutdown is kept)."""

    def __init__(self, devices):
        self.devices = list(devices)
        self.processes = [NpuTuningProcess(device=d) for d in self.devices]
        self.process_queue = queue.Queue()
        for p in self.processes:
            self.process_queue.put(p)
        self.executor = ThreadPoolExecutor(max_workers=len(self.devices))

    @staticmethod
    def get_device_list():
        """[None] (one worker seeing every device), or with ``autotune_multi_device`` the visible
        npu device ids (those in ``ASCEND_RT_VISIBLE_DEVICES`` when it is set), one worker each."""
        if not inductor_config.autotune_multi_device:
            return [None]
        from torch._dynamo.device_interface import get_interface_for_device

        count = get_interface_for_device("npu").device_count()
        raw = (_env.text(VISIBLE_ENV) or "").strip()
        if raw:
            devices = [int(d) for d in raw.split(",")]
            if len(devices) != count:
                raise RuntimeError(
                    f"${VISIBLE_ENV}={raw!r} names {len(devices)} devices, torch.npu sees {count}"
                )
            return devices
        return list(range(count))

    def target(self, request, limits=None) -> float:
        """Upstream's target for one request; ``limits``: ``timeouts()`` read by the tuning
        thread (this runs in the pool's threads, which do not see its config patches)."""
        limits = limits or timeouts()
        result_timeout = limits[0]
        extra_env = _env.snapshot(CACHE_ENVS)
        process = self.process_queue.get()
        process.limits = limits
        pid = visible = None
        try:
            process.ensure_ready(request.module_path, extra_env)
            process.put(request.benchmark, extra_env=extra_env)
            timing, pid, visible = process.get(result_timeout)
        except TimeoutError:
            warnings.warn(
                f"npu tuning worker: no result for {request} within {result_timeout}s "
                "(max_autotune_subproc_result_timeout_seconds): it counts as infinitely slow"
            )
            timing = float("inf")
        except Exception as exc:
            if isinstance(exc, EOFError):
                process.crashed()
            warnings.warn(
                f"npu tuning worker: benchmarking {request} failed ({type(exc).__name__}: {exc}): "
                "it counts as infinitely slow"
            )
            timing = float("inf")
        finally:
            self.process_queue.put(process)
        HISTORY.append(
            (request.kernel_name, request.index, dict(request.config.kwargs), timing, pid, visible)
        )
        return timing


_lock = threading.Lock()
_pool: NpuTuningProcessPool | None = None


def get_pool() -> NpuTuningProcessPool:
    """The pool for the current device list (a changed ``autotune_multi_device`` replaces it)."""
    global _pool
    devices = NpuTuningProcessPool.get_device_list()
    with _lock:
        if _pool is not None and _pool.devices != list(devices):
            _pool.shutdown()
            _pool = None
        if _pool is None:
            _pool = NpuTuningProcessPool(devices)
        return _pool


def shutdown() -> None:
    global _pool
    with _lock:
        if _pool is not None:
            _pool.shutdown()
            _pool = None


atexit.register(shutdown)


def benchmark_configs(kernel, launchers, args, kwargs) -> dict | None:
    """{launcher: ms} timed in tuning workers; None when the kernel has no module file a worker
    could load (then it is benchmarked in this process)."""
    path = getattr(kernel, "filename", None)
    name = kernel.inductor_meta.get("kernel_name")
    if not path or not name or not os.path.isfile(path):
        log.info("npu kernel %s has no module file: benchmarked in this process", name)
        return None
    limits = timeouts()  # a bad value stops the compile here, not as a failed candidate
    flags = {f: getattr(inductor_config, f) for f in bench_request.CARRIED_FLAGS}
    specs = [bench_request.describe(a) for a in args]
    kw = {k: bench_request.describe(v) for k, v in kwargs.items()}
    requests = [
        bench_request.KernelBenchmarkRequest(
            name, path, launcher.config, i, specs, kw, flags, test_faults
        )
        for i, launcher in enumerate(launchers)
    ]
    pool = get_pool()
    counters["npu_autotune"]["subproc.benchmarks"] += len(requests)
    return dict(
        zip(launchers, pool.executor.map(functools.partial(pool.target, limits=limits), requests))
    )


_timings: contextvars.ContextVar = contextvars.ContextVar(
    "npu_autotune_subproc_timings", default=None
)


@contextlib.contextmanager
def prefetch(kernel, launchers, args, kwargs):
    """Within: ``timing_of(launcher)`` is the time tuning workers measured (autotune_in_subproc)."""
    timings = (
        benchmark_configs(kernel, launchers, args, kwargs) if enabled() and launchers else None
    )
    token = _timings.set({id(k): v for k, v in timings.items()}) if timings is not None else None
    try:
        yield
    finally:
        if token is not None:
            _timings.reset(token)


def timing_of(launcher) -> float | None:
    timings = _timings.get()
    return None if timings is None else timings.get(id(launcher))
