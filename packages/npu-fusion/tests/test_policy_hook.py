"""The policy plugs in through npu's scheduling (entry point ``npu_inductor.fusion:
policy``), decides for npu nodes only, and is part of the FX graph cache key."""

import re

import torch

import npu_fusion.policy
from npu_fusion import config as fusion_config
from npu_inductor_core.entries import entry


def _pair(a):
    b = a.sin() + 1  # two scheduler nodes (b is an output), one vertical fusion
    return b, b.cos() * 2


def test_entry_point_names_the_policy():
    assert entry("npu_inductor.fusion", "policy") is npu_fusion.policy


def test_npu_scheduling_consults_the_policy(compiled, device_ub):
    x = torch.randn(8, 8, device="npu")
    with device_ub(64):  # no pair of 8x8 buffers fits 64 bytes
        refused = compiled(_pair, x).kernels
        with fusion_config.patch(ub_rule=False):
            fused = compiled(_pair, x).kernels
    assert (refused, fused) == (2, 1)


def test_cpu_fusion_is_not_the_policys(compiled, device_ub):
    x = torch.randn(8, 8)
    with device_ub(64):
        with_rule = compiled(_pair, x).code
    with fusion_config.patch(ub_rule=False):
        without = compiled(_pair, x).code
    kernels = [set(re.findall(r"cpp_fused_\w+", code)) for code in (with_rule, without)]
    assert kernels[0] == kernels[1] and len(kernels[0]) == 1  # one fused cpu kernel either way


def test_settings_reach_the_fx_graph_cache_key():
    from npu_lowering.passes import NpuPostGradPass

    default = NpuPostGradPass().uuid()
    with fusion_config.patch(ub_rule=False):
        assert NpuPostGradPass().uuid() != default
    with fusion_config.patch(min_tile_elems=512):
        assert NpuPostGradPass().uuid() != default
    assert NpuPostGradPass().uuid() == default
