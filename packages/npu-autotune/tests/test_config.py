"""npu_autotune.config: a torch config module; NPU_AUTOTUNE_* environment defaults hold (a bad
one is an error naming it), and patch() is checked and reaches the point of use."""

import json
import os
import subprocess
import sys

import pytest

import npu_autotune.config as npu_config
from npu_autotune import compile_wait

CODE = "import json, npu_autotune.config as c; print(json.dumps(c.get_config_copy()))"


def _child(**env):
    return subprocess.run(
        [sys.executable, "-c", CODE],
        env=dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0", **env),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_environment_defaults_in_a_fresh_process():
    # the GEMM and watchdog keys are config-only since issue 35: their old variables do nothing
    out = _child(
        NPU_AUTOTUNE_ON_SIM="1",
        NPU_AUTOTUNE_MULTIBUFFER="0",
        NPU_AUTOTUNE_TUNING_DEVICE="1",
        NPU_AUTOTUNE_GEMM_SWAP_AB="0",
        NPU_AUTOTUNE_GEMM_SWAP_AB_RATIO="4",
        NPU_AUTOTUNE_SIM_TIMING="interpreter",
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {
        "autotune_on_sim": True,
        "sim_timing": "interpreter",
        "multibuffer": False,
        "drop_ub_overflow": True,
        "compile_worker_watchdog_interval_seconds": 60.0,
        "gemm_max_profiling_configs": None,
        "gemm_supplement_configs": True,
        "gemm_swap_ab": True,
        "gemm_swap_ab_ratio": 8,
        "tuning_worker_device": "1",
        "test_compile_faults": None,
    }
    bad_timing = _child(NPU_AUTOTUNE_SIM_TIMING="cpu")
    assert bad_timing.returncode != 0 and "'estimate' or 'interpreter'" in bad_timing.stderr
    bad = _child(NPU_AUTOTUNE_ON_SIM="yes")
    assert (
        bad.returncode != 0
        and "$NPU_AUTOTUNE_ON_SIM) must be True or False, got 'yes'" in bad.stderr
    )
    with pytest.raises(ValueError, match="gemm_swap_ab_ratio must be an int >= 1, got 0"):
        with npu_config.patch(gemm_swap_ab_ratio=0):
            pass


def test_patch_is_checked_and_reaches_the_point_of_use():
    from torch._inductor import config as inductor_config

    if getattr(inductor_config, "compile_worker_watchdog_interval_seconds", None) is not None:
        pytest.skip("this torch has upstream's flag, which wins")
    with npu_config.patch(compile_worker_watchdog_interval_seconds=3):
        assert compile_wait.watchdog_interval() == 3.0
    assert compile_wait.watchdog_interval() == npu_config.compile_worker_watchdog_interval_seconds
    with pytest.raises(ValueError, match="multibuffer must be None, True or False, got 2"):
        with npu_config.patch(multibuffer=2):
            pass
    assert npu_config.multibuffer in (None, True, False)
