"""Preference (README): among candidate npu fusions that conflict, the one removing a GM round
trip goes first when it saves more GM bytes, counting the round trip's store and load, than
upstream's choice (which counts that buffer once, as it counts a read both nodes share)."""

import torch

from npu_fusion import config as fusion_config
from npu_fusion import ub_rule

FP16, FP32 = 2, 4
N = 1024


def _program(x1, x2, x3):
    p = (
        x1.float() + x2.float() + x3.float()
    )  # read by two FX users: realized (realize_reads_threshold=0)
    q = p + p.sin()  # one kernel reading p: fused with p, p never reaches GM
    h = (
        x1.float() * x2 * x3
    ).half()  # shares p's three inputs: upstream's memory score prefers p + h
    return q, h


def _budget() -> int:
    """A UB that holds any two of the three nodes fused (three fp16 loads, two kept buffers,
    the larger pair keeps two fp32) but not all three."""
    two = ub_rule.estimate({FP16: 3}, {FP32: 2}, N, True, ub_rule.soc_family())
    three = ub_rule.estimate({FP16: 3}, {FP32: 2, FP16: 1}, N, True, ub_rule.soc_family())
    assert two < three
    return two


def test_the_fusion_removing_a_round_trip_goes_first(compiled, device_ub):
    xs = [torch.randn(N, device="npu", dtype=torch.float16) for _ in range(3)]
    with device_ub(_budget()):
        on = compiled(_program, *xs, realize_reads_threshold=0)
        with fusion_config.patch(prefer_round_trips=False):
            off = compiled(_program, *xs, realize_reads_threshold=0)
    assert (on.kernels, off.kernels) == (2, 2)
    # upstream's order: p + h stores p, q loads it back; preferred: p + q keeps p on chip
    assert (on.stores, off.stores) == (2, 3)
    # GM bytes: upstream 6N (x) + 4N (p) loaded, 4N (p) + 2N (h) + 4N (q) stored = 20N;
    # preferred 12N (x, twice) loaded, 2N + 4N stored = 18N
    assert (on.loads, off.loads) == (6, 4)


def test_cpu_pairs_keep_upstreams_order():
    from npu_fusion import policy, score

    class Node:
        def __init__(self, device):
            self.device = torch.device(device)

        def get_device(self):
            return self.device

    s = policy.score_fusion(None, Node("cpu"), Node("cpu"), (1, 2))
    assert isinstance(s, score.NpuFusionScore) and s.saved is None
    assert s < score.NpuFusionScore((1, 3), None) and s == score.NpuFusionScore((1, 2), None)
