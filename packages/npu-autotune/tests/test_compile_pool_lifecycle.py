"""Compile pools that serve npu kernels: quiesce after a compile (Y04), after an idle delay
(Y05), and the three worker start methods (Y06). Each test starts the pool its flags need."""

import glob
import os
import time

import pytest
import torch
from torch._inductor import config
from torch._inductor.async_compile import AsyncCompile, shutdown_compile_workers
from torch._inductor.compile_worker.subproc_pool import SubprocPool


def _f(a):
    return torch.tanh(a) + a * 3


@pytest.fixture(autouse=True)
def _own_pools():
    shutdown_compile_workers()
    yield
    shutdown_compile_workers()


def _start(**flags):
    """A compile_threads=2 pool with ``flags``, ready (compiles really go to it)."""
    with config.patch(compile_threads=2, **flags):
        AsyncCompile.warm_pool()
        AsyncCompile.wait_pool_ready(timeout=180)
        assert AsyncCompile.use_process_pool()
        return AsyncCompile.process_pool()


def _compile_in_pool(fresh, kernels, n, **flags):
    x = torch.randn(n, device="npu")
    with config.patch(
        compile_threads=2, force_disable_caches=True, max_autotune_pointwise=True, **flags
    ):
        out = torch.compile(_f)(x)
    torch.testing.assert_close(out.cpu(), _f(x.cpu()), atol=1e-5, rtol=1e-5)
    (k,) = [k for k in kernels() if not getattr(k, "_seen_by_test", False)]
    k._seen_by_test = True
    assert k._npu_compiled_in not in (None, os.getpid())  # built in a worker of the pool
    assert len({tuple(c[1].items()) for c in fresh}) >= 2  # and tuned here
    return k


def _workers(pool: SubprocPool) -> set[int]:
    """Live compile workers: the children of the pool's sidecar process."""
    pids = set()
    for path in glob.glob(f"/proc/{pool.process.pid}/task/*/children"):
        try:
            with open(path) as f:
                pids.update(int(p) for p in f.read().split())
        except OSError:
            pass
    return pids


def _wait_for(check, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return check()


@pytest.mark.feature("Y04", "Y05")
def test_pool_quiesces_after_the_idle_delay_not_at_once(fresh, kernels):
    flags = dict(
        worker_start_method="subprocess",
        quiesce_async_compile_pool=True,
        quiesce_async_compile_time=5,
    )
    pool = _start(**flags)
    assert isinstance(pool, SubprocPool)
    _compile_in_pool(fresh, kernels, 64, **flags)  # the worker's job ended before the tuning here
    time.sleep(0.2)
    assert _workers(pool) and pool.quiesce_waitcounter is None  # Y05: not at once
    assert _wait_for(lambda: not _workers(pool), 12)  # Y04: workers gone after ~5 idle seconds
    assert pool.quiesce_waitcounter is not None  # quiesced, not shut down: a compile wakes it
    fresh.clear()
    _compile_in_pool(fresh, kernels, 40, **flags)


@pytest.mark.feature("Y04")
def test_without_quiesce_the_workers_stay(fresh, kernels):
    flags = dict(
        worker_start_method="subprocess",
        quiesce_async_compile_pool=False,
        quiesce_async_compile_time=1,
    )
    pool = _start(**flags)
    _compile_in_pool(fresh, kernels, 48, **flags)
    time.sleep(2.5)
    assert _workers(pool) and pool.quiesce_waitcounter is None


@pytest.mark.feature("Y06")
@pytest.mark.parametrize("method", ["subprocess", "fork", "spawn"])
def test_every_worker_start_method_compiles_npu_kernels(fresh, kernels, method):
    from concurrent.futures import ProcessPoolExecutor

    pool = _start(worker_start_method=method)
    assert isinstance(pool, SubprocPool if method == "subprocess" else ProcessPoolExecutor)
    if method != "subprocess":
        assert pool._mp_context.get_start_method() == method
    k = _compile_in_pool(fresh, kernels, 24 + 8 * len(method), worker_start_method=method)
    assert k._npu_compiled_in not in _sidecar_pids(pool)  # a worker of this method, not a sidecar


def _sidecar_pids(pool) -> set[int]:
    return {pool.process.pid} if isinstance(pool, SubprocPool) else set()
