"""Diagnostics of npu kernel compiles: the JIT post-compile hook (D01), the progress line
(D02) and the compile watchdog (Y03). D02/Y03 wait on a subprocess pool whose workers hold a
compile while a fault file exists (compile_pool's test hook)."""

import json
import logging
import os
import re
import threading

import pytest
import torch
from torch._inductor import config
from torch._inductor.async_compile import AsyncCompile, shutdown_compile_workers

import npu_autotune.config as npu_config
from npu_autotune import compile_pool, compile_wait


def _f(a):
    return torch.cos(a) * 2 - a


def _compile(fresh, n, **flags):
    x = torch.randn(n, device="npu")
    with config.patch(force_disable_caches=True, **flags):
        out = torch.compile(_f)(x)
    torch.testing.assert_close(out.cpu(), _f(x.cpu()), atol=1e-5, rtol=1e-5)


@pytest.fixture
def jit_hook():
    from triton import knobs

    calls = []
    old = knobs.runtime.jit_post_compile_hook
    knobs.runtime.jit_post_compile_hook = lambda **kw: calls.append(kw)
    yield calls
    knobs.runtime.jit_post_compile_hook = old


@pytest.mark.feature("D01")
@pytest.mark.parametrize("on", [True, False])
def test_jit_post_compile_hook_fires_for_npu_kernels(fresh, jit_hook, on):
    with config.patch(compile_threads=1):
        _compile(fresh, 128, run_jit_post_compile_hook=on, max_autotune_pointwise=True)
    if not on:
        assert jit_hook == []
        return
    tried = {tuple(sorted(c[1].items())) for c in fresh}
    assert len(jit_hook) == len(tried) >= 2  # once per candidate config
    for call in jit_hook:
        assert call["fn"].__name__.startswith("triton_poi_") and "def triton_poi_" in call["repr"]
        assert call["already_compiled"] and not call["is_manual_warmup"] and call["key"]


@pytest.fixture(scope="module")
def held_pool(tmp_path_factory):
    """A compile_threads=2 subprocess pool whose workers read a fault dir; ``hold(seconds)``
    makes the next compiles wait that long in the worker."""
    where = tmp_path_factory.mktemp("diag-faults")
    os.environ[compile_pool.FAULTS_ENV] = str(where)
    shutdown_compile_workers()
    with config.patch(compile_threads=2, worker_start_method="subprocess"):
        AsyncCompile.warm_pool()
        AsyncCompile.wait_pool_ready(timeout=120)
        assert AsyncCompile.use_process_pool()
    os.environ.pop(compile_pool.FAULTS_ENV)
    timers = []
    stop = threading.Event()

    def hold(seconds):
        for held in where.glob("held-*"):
            held.unlink()
        (where / "hang").touch()

        def release():  # ``seconds`` after a worker began holding a compile (60 s at most)
            for _ in range(600):
                if any(where.glob("held-*")) or stop.is_set():
                    break
                stop.wait(0.1)
            stop.wait(seconds)
            (where / "hang").unlink(missing_ok=True)

        timer = threading.Thread(target=release, daemon=True)
        timer.start()
        timers.append(timer)

    with config.patch(compile_threads=2, worker_start_method="subprocess"):
        yield hold
    stop.set()
    for t in timers:
        t.join()
    (where / "hang").unlink(missing_ok=True)
    shutdown_compile_workers()


@pytest.mark.feature("D02")
@pytest.mark.parametrize("verbose", [True, False])
def test_progress_line_names_pending_npu_kernels(held_pool, fresh, capsys, monkeypatch, verbose):
    import torch.hub

    # our line stands in for upstream's bar where torch has no real tqdm (the dev environment
    # has one: transformers brings it)
    monkeypatch.setattr(torch.hub, "tqdm", torch.hub._Faketqdm)
    held_pool(0.6)
    _compile(fresh, 64 if verbose else 48, disable_progress=False, verbose_progress=verbose)
    err = capsys.readouterr().err
    assert re.search(r"Inductor Compilation \(npu\): 0/1 kernels", err), err
    assert "Inductor Compilation (npu): 1/1 kernels\n" in err
    assert bool(re.search(r"0/1 kernels pending: triton_poi_\w+", err)) is verbose


def test_no_progress_line_of_ours_beside_a_real_tqdm_bar(held_pool, fresh, capsys):
    pytest.importorskip("tqdm")
    import torch.hub

    if torch.hub.tqdm is torch.hub._Faketqdm:
        pytest.skip("torch found no tqdm")
    held_pool(0.3)
    _compile(fresh, 40, disable_progress=False, verbose_progress=True)
    err = capsys.readouterr().err
    assert "Inductor Compilation (npu)" not in err
    assert re.search(r"Inductor Compilation:.*triton_poi_\w+", err), err  # upstream's bar names it


def test_no_progress_line_with_progress_disabled(held_pool, fresh, capsys):
    held_pool(0.3)
    _compile(fresh, 40, disable_progress=True, verbose_progress=True)
    assert "Inductor Compilation (npu)" not in capsys.readouterr().err


@pytest.fixture
def watchdog_events(monkeypatch, caplog):
    artifacts = []
    real = torch._logging.trace_structured

    def record(name, *args, **kw):
        meta = kw.get("metadata_fn")
        if (
            name == "artifact"
            and callable(meta)
            and meta().get("name") == compile_wait.WATCHDOG_ARTIFACT
        ):
            artifacts.append(json.loads(kw["payload_fn"]()))
        return real(name, *args, **kw)

    monkeypatch.setattr(torch._logging, "trace_structured", record)
    caplog.set_level(logging.WARNING, logger=compile_wait.__name__)
    yield artifacts, lambda: [r.npu_compile for r in caplog.records if hasattr(r, "npu_compile")]


@pytest.mark.feature("Y03")
@pytest.mark.parametrize("interval", [0.4, 0])
def test_watchdog_reports_long_running_npu_compiles(held_pool, fresh, watchdog_events, interval):
    artifacts, events = watchdog_events
    old = npu_config.compile_worker_watchdog_interval_seconds
    # the flag a user sets: torch 2.14.1 and 2.15 have their own (Inductor's config; it wins over
    # ours there)
    from torch._inductor import config as inductor_config

    has_upstream_flag = hasattr(inductor_config, "compile_worker_watchdog_interval_seconds")
    upstream_flag = (
        {"compile_worker_watchdog_interval_seconds": interval} if has_upstream_flag else {}
    )
    npu_config.compile_worker_watchdog_interval_seconds = interval
    try:
        held_pool(1.5)
        _compile(fresh, 56 if interval else 44, **upstream_flag)
    finally:
        npu_config.compile_worker_watchdog_interval_seconds = old
    if not interval:
        assert events() == [] and artifacts == []
        return
    reported = events()
    assert len(reported) >= 2 and artifacts == reported  # periodically, both channels
    # held in the worker first; a report after the worker is done (the kernel's load here took
    # over an interval on a loaded machine) names that stage
    assert reported[0]["stage"] == "compiling in a worker"
    assert {e["stage"] for e in reported} <= {"compiling in a worker", "finishing in this process"}
    assert all(
        re.fullmatch(r"triton_poi_\w+", e["kernel"]) and e["elapsed_s"] >= interval
        for e in reported
    )
    assert reported[-1]["elapsed_s"] > reported[0]["elapsed_s"]


def test_watchdog_interval_is_checked_when_set():
    with pytest.raises(
        ValueError, match=r"compile_worker_watchdog_interval_seconds must be a number >= 0"
    ):
        npu_config.compile_worker_watchdog_interval_seconds = -1
