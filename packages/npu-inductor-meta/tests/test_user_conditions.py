"""Every reference model and every tiny transformers model, compiled for inference as users
run it: upstream's defaults as shipped, under torch.no_grad() and torch.inference_mode(), with
compile_threads=1, again in a new process on the warm Inductor cache the first process left,
and on an empty cache in a new process whose worker pool is still starting. Each phase is a
child process (user_conditions_child.py) with its own cache folder; training steps are in
test_transformers_models.py and npu-lowering's test_models.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CHILD = Path(__file__).with_name("user_conditions_child.py")
sys.path.insert(0, str(CHILD.parent))
from user_conditions_child import POOL_MODELS, reference_models, transformers_models  # noqa: E402

sys.path.pop(0)
MODELS = [name for name, _ in reference_models()] + [name for name, _ in transformers_models()]


def _phase(phase: str, cache: Path, tmp: Path) -> dict[str, dict]:
    out = tmp / f"{phase}.jsonl"
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache))
    env.pop("TORCHINDUCTOR_COMPILE_THREADS", None)  # upstream's default, unless the phase sets it
    proc = subprocess.run(
        [sys.executable, str(CHILD), phase, str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return {row["model"]: row for row in map(json.loads, out.read_text().splitlines())}


@pytest.fixture(scope="module")
def phases(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("user-conditions")
    cold = _phase("cold", tmp / "cache", tmp)
    warm = _phase("warm", tmp / "cache", tmp)  # the cache the cold phase left
    pool = _phase("pool", tmp / "cache-pool", tmp)  # empty: every graph compiles
    return {"cold": cold, "warm": warm, "pool": pool}


def _row(phases, phase, model):
    row = phases[phase].get(model)
    assert row is not None, f"{model}: no result in the {phase} phase"
    assert row["ok"], f"{model} ({phase}): {row.get('error')}"
    return row


@pytest.mark.parametrize("model", MODELS)
def test_no_grad_and_inference_mode_with_one_compile_thread(phases, model):
    row = _row(phases, "cold", model)
    assert row["compile_threads"] == 1
    assert set(row["max_abs_error"]) == {"no_grad", "inference_mode"}
    # through Inductor (a hit: llama and mistral share their graph)
    assert row["fxgraph_cache_miss"] + row["fxgraph_cache_hit"] >= 1, row


@pytest.mark.parametrize("model", MODELS)
def test_a_new_process_on_the_warm_cache(phases, model):
    row = _row(phases, "warm", model)
    assert row["fxgraph_cache_hit"] >= 1 and row["fxgraph_cache_miss"] == 0, row


@pytest.mark.parametrize("model", sorted(POOL_MODELS))
def test_a_new_process_with_a_starting_worker_pool(phases, model):
    row = _row(phases, "pool", model)
    assert row["compile_threads"] > 1 or os.cpu_count() == 1, row  # upstream's pool, not one thread
    assert row["fxgraph_cache_miss"] >= 1, row
