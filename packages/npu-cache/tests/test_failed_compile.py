"""A compile that fails after benchmarking cannot poison the next one: a new process on the
same Inductor cache measures again instead of reading the failed compile's timings back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CHILD = Path(__file__).parent / "jobs" / "failed_compile_child.py"


def _child(phase: str, cache: Path, tmp: Path) -> dict:
    out = tmp / f"{phase}.json"
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache))
    proc = subprocess.run(
        [sys.executable, str(CHILD), phase, str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(out.read_text())


def _best_configs(cache: Path) -> list[Path]:
    return list(cache.rglob("*.best_config"))


@pytest.fixture
def npu_autotune():
    pytest.importorskip("npu_autotune.gemm_swap_ab")  # the GEMM's second choice


def test_a_failed_compile_leaves_no_timings_and_the_next_process_compiles(npu_autotune, tmp_path):
    cache = tmp_path / "inductor"
    failed = _child("fail", cache, tmp_path)
    assert not failed["ok"] and "injected" in failed["error"], failed
    assert len(failed["benchmarked"]) >= 2, failed  # it failed after measuring its choices
    timings = [p for p in (cache / "cache").glob("*") if p.is_file()]
    for path in timings:  # upstream's timing file: nothing of the failed compile left in it
        data = json.loads(path.read_text())
        assert data["cache"] == {}, data
    assert _best_configs(cache) == []

    clean = _child("clean", cache, tmp_path)
    assert clean["ok"], clean
    assert sorted(clean["benchmarked"]) == sorted(failed["benchmarked"])  # measured again


def test_shared_writes_wait_for_the_compile_and_die_with_it():
    from npu_cache import failed_compile

    written = []
    with failed_compile.transaction():
        assert failed_compile.defer(lambda: written.append("ok"))
        assert written == []  # not before the graph compiled
    assert written == ["ok"]
    with pytest.raises(RuntimeError), failed_compile.transaction():
        failed_compile.defer(lambda: written.append("lost"))
        raise RuntimeError("the compile failed")
    assert written == ["ok"]
    assert not failed_compile.defer(lambda: written.append("now"))  # no compile running: at once
    assert written == ["ok", "now"]
