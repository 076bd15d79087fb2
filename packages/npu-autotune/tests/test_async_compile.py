"""npu kernels in upstream's async compile pool (Y01, Y02, Y04-Y06).

One subprocess pool serves most tests of this module (a pool start costs seconds); tests that
need their own pool settings start one and the module's is rebuilt lazily afterwards.
"""

import os
import re
import time

import pytest
import torch
import torch._inductor.config
from torch._dynamo.utils import counters
from torch._inductor import config
from torch._inductor.async_compile import AsyncCompile, shutdown_compile_workers

from npu_autotune import compile_pool
from npu_inductor_core import tiles


def _f(a):
    return torch.sin(a) * a + 1


def _start_pool(**flags):
    """A fresh upstream pool with ``flags``, ready for jobs (so compiles really go to it)."""
    shutdown_compile_workers()
    with config.patch(**flags):
        AsyncCompile.warm_pool()
        AsyncCompile.wait_pool_ready(timeout=120)
        assert AsyncCompile.use_process_pool()
        return AsyncCompile.process_pool()


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    """The fault directory the module's compile workers read (compile_pool's test hook)."""
    where = tmp_path_factory.mktemp("compile-faults")
    old = os.environ.get(compile_pool.FAULTS_ENV)
    os.environ[compile_pool.FAULTS_ENV] = str(where)  # inherited by pools started from now on
    shutdown_compile_workers()  # a pool started before (without the hook) is not this module's
    yield where
    shutdown_compile_workers()
    if old is None:
        os.environ.pop(compile_pool.FAULTS_ENV, None)
    else:
        os.environ[compile_pool.FAULTS_ENV] = old


@pytest.fixture
def pool(faults):
    """compile_threads=2 with the subprocess pool running (started once for the module)."""
    with config.patch(compile_threads=2, worker_start_method="subprocess"):
        if not AsyncCompile.use_process_pool():
            _start_pool(compile_threads=2, worker_start_method="subprocess")
        yield faults


def _compile(fresh, n=256, **flags):
    x = torch.randn(n, device="npu")
    with config.patch(**flags):
        out = torch.compile(_f)(x)
    torch.testing.assert_close(out.cpu(), _f(x.cpu()), atol=1e-5, rtol=1e-5)
    return {tuple(sorted(c[1].items())) for c in fresh}


@pytest.fixture
def eight_cores(monkeypatch):
    """This process's device facts say 8 vector cores (a worker would see 910B's 48)."""
    real = tiles.device

    def device(index=0):
        return tiles.Device(real(index).ub_bytes, 8)

    monkeypatch.setattr(tiles, "device", device)


@pytest.mark.feature("Y01")
def test_kernels_built_in_a_worker_are_tuned_with_this_process_facts(
    pool, fresh, kernels, eight_cores
):
    # the bug of issue 8: a kernel loaded in a compile worker carried the worker's decisions
    # (device facts, caches); on npu-sim it is now decided here and tuned over its candidates
    with config.patch(compile_threads=1):
        in_process = _compile(fresh, max_autotune_pointwise=True)
    (k1,) = kernels()
    assert getattr(k1, "_npu_compiled_in", None) is None  # compile_threads=1: synchronous
    torch._dynamo.reset()
    fresh.clear()
    counters.clear()
    with config.patch(force_disable_caches=True):
        pooled = _compile(fresh, max_autotune_pointwise=True)
    (k2,) = [k for k in kernels() if k is not k1]
    assert k2._npu_compiled_in not in (None, os.getpid())  # loaded in a compile worker
    assert len(pooled) >= 3 and counters["npu_autotune"]["sim_tuned"] == 1
    assert pooled == in_process  # this process's 8-core candidates, not the worker's 48-core ones


@pytest.mark.feature("Y01")
def test_compile_threads_decides_where_npu_kernels_load(pool, fresh, kernels):
    _compile(fresh)
    (pooled,) = kernels()
    assert pooled._npu_compiled_in not in (None, os.getpid())  # N=2: loaded in a worker
    torch._dynamo.reset()
    with config.patch(compile_threads=1, force_disable_caches=True):
        _compile(fresh, n=512)
    (synchronous,) = [k for k in kernels() if k is not pooled]
    assert getattr(synchronous, "_npu_compiled_in", None) is None  # N=1: in this process


def _compile_error(fresh, n, **flags):
    start = time.monotonic()
    with pytest.raises(Exception) as err:
        _compile(fresh, n=n, force_disable_caches=True, **flags)
    return str(err.value), time.monotonic() - start


@pytest.mark.skipif(
    not hasattr(torch._inductor.config, "compile_worker_wait_timeout"),
    reason=f"torch {torch.__version__} has no Inductor flag compile_worker_wait_timeout",
)
@pytest.mark.feature("Y02")
def test_a_hung_npu_compile_raises_naming_the_kernel(pool, fresh):
    hang = pool / "hang"
    hang.touch()  # workers now wait (compile_pool.HANG_LIMIT_S at most)
    try:
        message, took = _compile_error(fresh, 96, compile_worker_wait_timeout=2)
    finally:
        hang.unlink()
    assert re.search(r"'triton_poi_\w+' did not complete within 2s", message), message
    assert took < compile_pool.HANG_LIMIT_S / 4  # the timeout ended the wait, not the hang


def test_a_crashed_compile_worker_is_an_error_naming_the_kernel(pool, fresh):
    crash = pool / "crash"
    crash.touch()
    try:
        wait = (
            {"compile_worker_wait_timeout": 60}
            if hasattr(torch._inductor.config, "compile_worker_wait_timeout")
            else {}
        )
        message, took = _compile_error(fresh, 80, **wait)  # torch 2.11 has no such flag
    finally:
        crash.unlink()
    assert re.search(
        r"npu kernel 'triton_poi_\w+': its compile worker exited unexpectedly", message
    ), message
    assert took < 60
    torch._dynamo.reset()
    fresh.clear()
    assert (
        len(_compile(fresh, n=72, force_disable_caches=True, max_autotune_pointwise=True)) >= 2
    )  # pool recovers


@pytest.mark.parametrize(
    "flag, value, allowed",
    [
        pytest.param(
            "compile_worker_wait_timeout",
            -1,
            "a number >= 0",
            marks=pytest.mark.skipif(
                not hasattr(torch._inductor.config, "compile_worker_wait_timeout"),
                reason=f"torch {torch.__version__} has no Inductor flag compile_worker_wait_timeout",
            ),
        ),
        ("quiesce_async_compile_time", -5, "a number >= 0"),
        ("precompilation_timeout_seconds", "soon", "a number or None"),
    ],
)
def test_async_compile_flags_out_of_range_are_rejected(pool, fresh, flag, value, allowed):
    message, _ = _compile_error(fresh, 40, **{flag: value})
    assert f"{flag} must be {allowed}, got {value!r}" in message
