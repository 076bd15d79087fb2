"""Candidate configs of npu kernels benchmarked in tuning subprocesses (A10, A11, A45-A47).

Faults are injected in the worker by ``npu_autotune.subproc.test_faults`` (test only); the
reported times are fixed by the same hook so the winner is known: candidate 1 is fastest,
then candidate 0. Timeouts stay in seconds: a new worker takes a few seconds to start (torch
and npu-sim), which the result timeout does not bound.
"""

import ast
import functools
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from torch._inductor import config
from torch._inductor.utils import fresh_cache

from npu_autotune import subproc
from npu_autotune.worker_faults import WorkerFaults

FAST, NEXT = 1, 0  # the fastest candidate and the one after it
TIMINGS = {i: 10.0 + i for i in range(64)} | {FAST: 1.0}


@pytest.fixture(scope="module", autouse=True)
def pool_per_module():
    yield
    subproc.shutdown()


@pytest.fixture
def tuning(fresh, kernels):
    """tuning(faults, **flags) -> (kernel object after tuning, HISTORY rows, STOPS rows of this call)."""

    def run(faults=None, **flags):
        torch._dynamo.reset()  # a second call in one test compiles and tunes again
        seen = {id(k) for k in kernels()}
        subproc.test_faults = faults
        history, stops = len(subproc.HISTORY), len(subproc.STOPS)
        x = torch.randn(256, device="npu")
        try:
            with (
                fresh_cache(),
                config.patch(max_autotune_pointwise=True, autotune_in_subproc=True, **flags),
            ):
                out = torch.compile(lambda t: t.cos() * 3 - 1)(x)
        finally:
            subproc.test_faults = None
        torch.testing.assert_close(out.cpu(), x.cpu().cos() * 3 - 1)  # the compile still works
        (kernel,) = [k for k in kernels() if id(k) not in seen]
        return kernel, subproc.HISTORY[history:], subproc.STOPS[stops:]

    return run


def chosen(kernel, history, index):
    return kernel.configs[0].kwargs == next(row[2] for row in history if row[1] == index)


@pytest.mark.feature("A10")
def test_candidates_are_benchmarked_in_a_tuning_worker(tuning, fresh):
    kernel, history, _ = tuning()
    assert len(history) >= 2 and all(row[4] not in (None, os.getpid()) for row in history)
    assert all(
        0 < row[3] < float("inf") for row in history
    )  # measured there, through the npu benchmarker
    assert not fresh, "no candidate ran in the compiling process"  # (its launches of candidates)
    best = min(history, key=lambda row: row[3])
    assert kernel.configs[0].kwargs == best[2]


def test_without_autotune_in_subproc_the_compiling_process_benchmarks(fresh, kernels):
    before = len(subproc.HISTORY)
    x = torch.randn(256, device="npu")
    with config.patch(max_autotune_pointwise=True, autotune_in_subproc=False):
        torch.compile(lambda t: t.cos() * 3 - 1)(x)
    assert len(subproc.HISTORY) == before and len({row[1]["XBLOCK"] for row in fresh}) >= 2


@pytest.mark.feature("A46")
def test_result_timeout_decides_whether_a_slow_candidate_counts(tuning):
    faults = WorkerFaults(hang_s={FAST: 2.5}, timings_ms=TIMINGS)
    kernel, history, stops = tuning(faults, max_autotune_subproc_result_timeout_seconds=60.0)
    assert chosen(kernel, history, FAST) and not stops  # slow but within the timeout: it wins
    with pytest.warns(UserWarning, match="no result for .* within 1.0s"):
        kernel, history, stops = tuning(faults, max_autotune_subproc_result_timeout_seconds=1.0)
    assert chosen(kernel, history, NEXT)  # timed out: infinitely slow, the next one wins
    assert [row[3] for row in history if row[1] == FAST] == [float("inf")] and len(stops) == 1


@pytest.mark.feature("A45")
def test_graceful_timeout_lets_a_late_worker_exit_before_sigterm(tuning):
    faults = WorkerFaults(hang_s={FAST: 2.0}, timings_ms=TIMINGS)
    flags = dict(
        max_autotune_subproc_result_timeout_seconds=0.5,
        max_autotune_subproc_terminate_timeout_seconds=5.0,
    )
    with pytest.warns(UserWarning, match="no result"):
        kernel, history, stops = tuning(
            faults, max_autotune_subproc_graceful_timeout_seconds=20.0, **flags
        )
    assert chosen(kernel, history, NEXT)
    assert [(how, rc) for _, how, rc in stops] == [
        ("graceful", 0)
    ]  # finished its job, then read the sentinel
    with pytest.warns(UserWarning, match="no result"):
        kernel, history, stops = tuning(
            faults, max_autotune_subproc_graceful_timeout_seconds=0.2, **flags
        )
    assert chosen(kernel, history, NEXT)
    assert [(how, rc) for _, how, rc in stops] == [("terminated", -15)]


@pytest.mark.feature("A47")
def test_terminate_timeout_bounds_the_wait_after_sigterm_before_sigkill(tuning):
    # the hung worker takes 1 s to act on SIGTERM
    faults = WorkerFaults(hang_s={FAST: 60.0}, timings_ms=TIMINGS, sigterm_exit_after_s=1.0)
    flags = dict(
        max_autotune_subproc_result_timeout_seconds=0.5,
        max_autotune_subproc_graceful_timeout_seconds=0.1,
    )
    with pytest.warns(UserWarning, match="no result"):
        kernel, history, stops = tuning(
            faults, max_autotune_subproc_terminate_timeout_seconds=6.0, **flags
        )
    assert chosen(kernel, history, NEXT)
    assert [(how, rc) for _, how, rc in stops] == [("terminated", WorkerFaults.SIGTERM_EXIT)]
    with pytest.warns(UserWarning, match="no result"):
        kernel, history, stops = tuning(
            faults, max_autotune_subproc_terminate_timeout_seconds=0.2, **flags
        )
    assert chosen(kernel, history, NEXT)
    assert [(how, rc) for _, how, rc in stops] == [("killed", -9)]


def kernel_imports(path):
    """Names of what a kernel module imports (modules and from-imported names' modules)."""
    names = set()
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return names


@pytest.mark.feature("A46")
def test_a_new_worker_loads_the_kernel_module_before_its_first_result_is_timed(fresh, kernels):
    # what a process's first kernel module costs once (the modules it imports, torch's source
    # hash behind the autotune cache key) is the worker's start, not its first candidate's
    # result time: a worker replacing a stopped one would time out on its first candidate too
    with config.patch(max_autotune_pointwise=True, autotune_in_subproc=True):
        torch.compile(lambda t: t.cos() * 3 - 1)(torch.randn(256, device="npu"))
    (kernel,) = kernels()  # its module file stays while ``fresh``'s cache does
    modules = functools.partial(eval, "set(__import__('sys').modules)")
    worker = subproc.NpuTuningProcess(device=None)
    worker.limits = (60.0, 30.0, 5.0)
    try:
        worker.put(modules)
        at_start = worker.get(subproc.STARTUP_TIMEOUT_S)
        worker.ensure_ready(kernel.filename)
        worker.put(modules)
        ready = worker.get(60.0)
    finally:
        worker.kill()
    loaded_by_the_kernel = {m for m in kernel_imports(kernel.filename) if m in ready} - at_start
    assert loaded_by_the_kernel, "ready: the kernel module's imports were loaded"


@pytest.mark.feature("A10")
def test_a_crashing_worker_costs_its_candidate_only(tuning):
    with pytest.warns(UserWarning, match="failed .*EOFError"):
        kernel, history, stops = tuning(WorkerFaults(crash=frozenset({FAST}), timings_ms=TIMINGS))
    assert chosen(kernel, history, NEXT)
    assert [(how, rc) for _, how, rc in stops] == [("crashed", 3)]
    crashed_pid = stops[0][0]
    later = [row for row in history if row[1] > FAST]
    assert later and all(
        row[3] < float("inf") and row[4] != crashed_pid for row in later
    )  # a new worker


@pytest.mark.parametrize(
    "flag, value",
    [
        ("max_autotune_subproc_result_timeout_seconds", 0),
        ("max_autotune_subproc_result_timeout_seconds", "1"),
        ("max_autotune_subproc_graceful_timeout_seconds", -1.0),
        ("max_autotune_subproc_terminate_timeout_seconds", float("nan")),
    ],
)
def test_bad_timeouts_are_rejected_naming_the_range(fresh, flag, value):
    x = torch.randn(64, device="npu")
    with config.patch(max_autotune_pointwise=True, autotune_in_subproc=True, **{flag: value}):
        with pytest.raises(Exception, match=f"{flag} must be a number of seconds (>|>=) 0"):
            torch.compile(lambda t: t.cos() * 3 - 1)(x)


def test_multi_device_workers_follow_the_visible_devices(monkeypatch):
    from torch._dynamo.device_interface import get_interface_for_device

    monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", "0,1")
    with (
        config.patch(autotune_multi_device=True),
        pytest.raises(RuntimeError, match="names 2 devices"),
    ):
        subproc.NpuTuningProcessPool.get_device_list()  # this process sees one
    monkeypatch.setattr(get_interface_for_device("npu"), "device_count", staticmethod(lambda: 2))
    monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", "3,1")
    with config.patch(
        autotune_multi_device=True
    ):  # one worker per listed id, as upstream's CUDA_VISIBLE_DEVICES
        assert subproc.NpuTuningProcessPool.get_device_list() == [3, 1]
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES")
    with config.patch(autotune_multi_device=True):
        assert subproc.NpuTuningProcessPool.get_device_list() == [0, 1]
    with config.patch(autotune_multi_device=False):
        assert subproc.NpuTuningProcessPool.get_device_list() == [None]


MULTI_DEVICE = """
    import os, torch, npu_sim, npu_lowering, npu_autotune
    npu_sim.start(); npu_lowering.register(); npu_autotune.register()
    from torch._inductor import config
    from torch._inductor.utils import fresh_cache
    from npu_autotune import subproc
    x = torch.randn(256, device="npu")
    with fresh_cache(), config.patch(max_autotune_pointwise=True, autotune_in_subproc=True,
                                     autotune_multi_device=True, inductor_default_autotune_warmup=0,
                                     inductor_default_autotune_rep=1):
        out = torch.compile(lambda t: t.cos() * 3 - 1)(x)
    torch.testing.assert_close(out.cpu(), x.cpu().cos() * 3 - 1)
    print("WORKERS", sorted((v, n) for _, v, n in subproc.WORKERS))
    print("SPREAD", sorted({v for *_, v in subproc.HISTORY}), len(subproc.HISTORY))
"""


@pytest.mark.feature("A11")
def test_multi_device_runs_one_worker_per_device_and_spreads_the_work():
    env = {**os.environ, "NPU_SIM_DEVICE_COUNT": "2"}
    env.pop("ASCEND_RT_VISIBLE_DEVICES", None)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(MULTI_DEVICE)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = dict(
        line.split(" ", 1)
        for line in proc.stdout.splitlines()
        if line.startswith(("WORKERS", "SPREAD"))
    )
    # one worker per device, each seeing only its own (as npu:0)
    assert lines["WORKERS"] == "[('0', 1), ('1', 1)]"
    assert lines["SPREAD"].startswith("['0', '1']")  # both devices benchmarked candidates
