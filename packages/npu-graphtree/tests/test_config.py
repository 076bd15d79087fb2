"""npu_graphtree.config: a torch config module; NPU_GRAPHTREE_* environment defaults hold and
patch() reaches the tree where it reads the setting."""

import json
import os
import subprocess
import sys

import pytest

import npu_graphtree as G
from npu_graphtree import config


def test_environment_defaults_in_a_fresh_process():
    env = dict(
        os.environ,
        TORCH_DEVICE_BACKEND_AUTOLOAD="0",
        NPU_GRAPHTREE_GENERATION_CLONING="user_visible",
        NPU_GRAPHTREE_TIME_REPLAYS="1",
        NPU_GRAPHTREE_SLOW_ASSERTS="1",
        NPU_GRAPHTREE_MAX_LIVE_GRAPHS="7",
    )
    code = "import json, npu_graphtree.config as c; print(json.dumps(c.get_config_copy()))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    # time_replays / slow_asserts are config-only since issue 35: their old variables do nothing
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {
        "cudagraph_trees_generation_cloning": "user_visible",
        "time_replays": False,
        "slow_asserts": False,
        "max_live_graphs": 7,
    }
    assert G.settings is config  # the old name still works


def test_patch_reaches_the_replay(h):
    f = G.graphify(lambda a: [a[0] + 1], [h.rand(4)], name="plus")

    def replays():
        G.clear_timings()
        for _ in range(3):  # warmup, record, replay
            h.step()
            f([h.rand(4)])
        return sum(t.phase == "replay" for t in G.timings())

    assert replays() == 0
    with config.patch(time_replays=True):
        assert replays() >= 1


def test_a_bad_generation_cloning_names_the_variable():
    with config.patch(cudagraph_trees_generation_cloning="all"):
        with pytest.raises(
            ValueError, match=r"NPU_GRAPHTREE_GENERATION_CLONING.*one of \('none', 'user_visible'\)"
        ):
            config.generation_cloning()
