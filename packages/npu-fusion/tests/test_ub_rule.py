"""The UB rule (README, "The rule"): on npu, a fusion whose fused kernel cannot hold its
buffers at the smallest DMA-efficient tile in the unified buffer is refused; one that fits is
upstream's decision. Numbers come from the device the test runs on (npu-sim's SoC)."""

import pytest
import torch

from npu_fusion import config as fusion_config
from npu_fusion import ub_rule

FP32 = 4


def _two_wide_sums(n_inputs: int):
    """Two pointwise nodes over ``n_inputs`` distinct inputs, sharing one: fusing them (a
    horizontal fusion) makes one kernel that loads every input."""
    half = n_inputs // 2

    def fn(*xs):
        return sum(xs[: half + 1]), sum(xs[half:]) * 2

    return fn


def _inputs_over_ub(elems: int) -> int:
    """The fewest float32 inputs for which the fused kernel (every input loaded, two outputs)
    overflows the UB by the UB model at the minimal tile (``elems`` if smaller)."""
    tile = min(elems, fusion_config.min_tile_elems)
    n = 2
    while (
        ub_rule.estimate({FP32: n}, {FP32: 2}, tile, True, ub_rule.soc_family())
        <= ub_rule.ub_bytes()
    ):
        n += 1
    return n


def test_refused_when_the_fused_kernel_cannot_fit_the_ub(compiled):
    n = _inputs_over_ub(1024)
    xs = [torch.randn(1024, device="npu") for _ in range(n)]
    fn = _two_wide_sums(n)
    on = compiled(fn, *xs, realize_acc_reads_threshold=1000)
    with fusion_config.patch(ub_rule=False):
        off = compiled(fn, *xs, realize_acc_reads_threshold=1000)
    assert (on.kernels, off.kernels) == (2, 1)


def test_accepted_when_it_fits(compiled):
    # the same program on smaller tensors: a tile is the whole tensor, fewer bytes
    n = _inputs_over_ub(1024)
    small = 1024
    while (
        ub_rule.estimate({FP32: n}, {FP32: 2}, small, True, ub_rule.soc_family())
        > ub_rule.ub_bytes()
    ):
        small //= 2
    xs = [torch.randn(small, device="npu") for _ in range(n)]
    assert compiled(_two_wide_sums(n), *xs, realize_acc_reads_threshold=1000).kernels == 1


@pytest.mark.parametrize("norm", ["softmax", "layer_norm", "rms_norm", "cross_entropy"])
def test_reductions_keep_their_pointwise_consumers(compiled, norm):
    """Reductions fused with their pointwise consumers fit easily: the rule leaves them as
    upstream fuses them."""
    x = torch.randn(8, 1024, device="npu")
    w = torch.randn(1024, device="npu")
    t = torch.randint(0, 1024, (8,), device="npu")
    fns = {
        "softmax": lambda a, b, c: torch.softmax(a, -1),
        "layer_norm": lambda a, b, c: torch.nn.functional.layer_norm(a, (1024,), b),
        "rms_norm": lambda a, b, c: a * torch.rsqrt(a.pow(2).mean(-1, keepdim=True) + 1e-6) * b,
        "cross_entropy": lambda a, b, c: torch.nn.functional.cross_entropy(a, c),
    }
    on = compiled(fns[norm], x, w, t)
    with fusion_config.patch(ub_rule=False):
        off = compiled(fns[norm], x, w, t)
    assert on.kernels == off.kernels


def test_footprint_numbers(compiled, monkeypatch):
    """The priced footprint of a vertical pair: the UB model's estimate of one load buffer and
    two value buffers at the tile (the whole 64-element tensor), multi-buffered."""
    from npu_inductor_core import ub_model

    import npu_fusion.policy

    seen = []

    def record(kind, node1, node2):
        seen.append(ub_rule.footprint(node1, node2))
        return True

    monkeypatch.setattr(npu_fusion.policy, "can_fuse", record)
    compiled(lambda a: (lambda b: (b, b.cos() * 2))(a.sin() + 1), torch.randn(8, 8, device="npu"))
    fp = seen[0]
    assert (fp.loaded, fp.kept, fp.tile, fp.copies) == (1, 2, 64, 2)
    assert fp.nbytes == ub_model.estimate_buffers(
        {"l": {FP32: 1}, "v": {FP32: 2}}, 64, True, fp.soc_family
    )
    # and that estimate follows the calibration: more than the bare bytes (1 x2 + 2) x 64 x 4
    assert fp.nbytes > (1 * 2 + 2) * 64 * FP32
