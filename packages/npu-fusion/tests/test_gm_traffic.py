"""bench/gm_traffic.py, which the LLM fusions' measured GM bytes (npu-fusion README) rest on:
a load counts its distinct addresses under the mask, a store its unmasked lanes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

BENCH = Path(__file__).resolve().parents[3] / "bench"


@pytest.fixture(scope="module")
def gm_traffic():
    import npu_inductor

    npu_inductor.enable()
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    import gm_traffic

    return gm_traffic


def test_pointwise_kernel_moves_its_inputs_and_output_once(gm_traffic):
    fn = torch.compile(lambda a, b: (a + b).relu())
    a, b = (torch.randn(1000, device="npu") for _ in range(2))
    with torch.no_grad():
        fn(a, b)
        with gm_traffic.counting() as moved:
            fn(a, b)
    assert (moved.loaded, moved.stored, moved.atomic) == (8000, 4000, 0)


def test_a_weight_counts_once_per_block_and_masked_lanes_not_at_all(gm_traffic):
    """Rows of 100 (a block of 128 lanes, 28 masked) scaled by a weight of 100."""
    fn = torch.compile(lambda x, w: torch.nn.functional.rms_norm(x, (100,), w))
    x, w = torch.randn(8, 100, device="npu"), torch.randn(100, device="npu")
    with torch.no_grad():
        fn(x, w)
        with gm_traffic.counting() as moved:
            fn(x, w)
    assert moved.stored == 8 * 100 * 4
    blocks = (moved.loaded - 8 * 100 * 4) // (100 * 4)
    assert 1 <= blocks <= 8 and moved.loaded == (8 + blocks) * 100 * 4
    with gm_traffic.counting() as after:
        pass
    assert after.total == 0
