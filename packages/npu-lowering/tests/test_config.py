"""npu_lowering.config: a torch config module whose NPU_LOWERING_* environment defaults hold,
whose patch() reaches the point of use, and whose keys are in the FX graph cache key (npu's
device_custom_config)."""

import json
import os
import subprocess
import sys

import pytest
import torch
from torch._dynamo.utils import counters
from torch._inductor import config as inductor_config
from torch._inductor.utils import fresh_cache

import npu_lowering.config as npu_config
from npu_lowering import dtype_policy, small_gemm


def test_environment_defaults_in_a_fresh_process():
    env = dict(
        os.environ,
        TORCH_DEVICE_BACKEND_AUTOLOAD="0",
        NPU_LOWERING_DTYPE_POLICY="error",
        NPU_LOWERING_SMALL_GEMM_TEMPLATES="false",
        NPU_LOWERING_SMALL_GEMM_MAX_MACS="123",
        NPU_LOWERING_SAVE_KERNELS="/tmp/kernels",
    )
    code = "import json, npu_lowering.config as c; print(json.dumps(c.get_config_copy()))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["dtype_policy"] == "error" and got["small_gemm_templates"] is False
    # small_gemm_max_macs is config-only since issue 35: its old variable does nothing
    assert got["small_gemm_max_macs"] is None and got["save_kernels"] == "/tmp/kernels"


def test_patch_reaches_the_point_of_use():
    assert (small_gemm.enabled(), small_gemm.max_macs(), dtype_policy.policy()) == (
        True,
        None,
        "fallback",
    )
    with npu_config.patch(small_gemm_templates=False, small_gemm_max_macs=7, dtype_policy="error"):
        assert (small_gemm.enabled(), small_gemm.max_macs(), dtype_policy.policy()) == (
            False,
            7,
            "error",
        )
    with (
        npu_config.patch(small_gemm_max_macs="lots"),
        pytest.raises(ValueError, match="small_gemm_max_macs must be None or an int"),
    ):
        small_gemm.max_macs()


@pytest.mark.feature("P03")
def test_codegen_keys_are_in_the_fx_graph_cache_key():
    def fn(x, w):
        return torch.relu(x @ w) + 1

    x, w = torch.randn(4, 16, device="npu"), torch.randn(16, 16, device="npu")

    def compile_once():
        torch._dynamo.reset()
        counters.clear()
        torch.compile(fn)(x, w)
        return counters["inductor"]["fxgraph_cache_hit"], counters["inductor"]["fxgraph_cache_miss"]

    with (
        fresh_cache(),
        inductor_config.patch(fx_graph_cache=True),
        torch._functorch.config.patch(enable_autograd_cache=False),
    ):
        assert compile_once() == (0, 1)
        assert compile_once() == (1, 0)  # unchanged settings: a hit
        with npu_config.patch(small_gemm_max_macs=1):  # changes what is generated: a miss
            assert compile_once() == (0, 1)
        with npu_config.patch(dtype_policy="error"):
            assert compile_once() == (0, 1)
        assert compile_once() == (1, 0)
    torch._dynamo.reset()


def test_save_kernels_is_left_out_of_the_key():
    key = npu_config.save_config_portable(ignore_private_configs=False)
    with npu_config.patch(save_kernels="/elsewhere"):
        assert npu_config.save_config_portable(ignore_private_configs=False) == key
    with npu_config.patch(small_gemm_templates=not npu_config.small_gemm_templates):
        assert npu_config.save_config_portable(ignore_private_configs=False) != key
