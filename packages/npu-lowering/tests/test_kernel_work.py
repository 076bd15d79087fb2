"""The work record a kernel carries for the cost model (``npu_work``, kernel_work.py)."""

import ast
import re

import pytest
import torch

WORK = re.compile(r"'npu_work': (\{[^{}]*\})")


def _works(fn, *args, **patch) -> list:
    from torch._inductor.utils import fresh_cache, run_and_get_code

    torch._dynamo.reset()
    try:
        with fresh_cache(), torch._inductor.config.patch(patch):
            _, codes = run_and_get_code(torch.compile(fn), *args)
    finally:
        torch._dynamo.reset()
    return [ast.literal_eval(w) for w in WORK.findall("\n".join(codes))]


@pytest.mark.parametrize("persistent", [False, True])
def test_a_looped_reduction_reads_its_rows_once_per_pass(npu, persistent):
    """Rows of 16 fit one block, so Inductor would make this a persistent reduction; with
    persistent reductions off it loops over each row twice (its sum, then the division),
    reading x in both passes. Persistent, x is read once."""
    x = torch.randn(4, 16, device=npu)
    (work,) = _works(
        lambda x: x / x.sum(-1, keepdim=True), x, **{"triton.persistent_reductions": persistent}
    )
    nbytes = x.numel() * x.element_size()
    reads = 1 if persistent else 2
    assert work["gm_bytes"] == reads * nbytes + nbytes  # the reads, one store
