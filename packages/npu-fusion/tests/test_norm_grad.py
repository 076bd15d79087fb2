"""norm_grad's recompute (``config.recompute_norm_inputs``): which values the weight's column
reduction recomputes (kernel counts of the LLM backward: test_llm_fusions.py)."""

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from npu_fusion import norm_grad


def _norm_backward(g, x, c):
    v = g * c  # the shared pointwise value (RoPE's backward: the gradient times cos)
    return (v * x).sum(-1), (v * x).sum(0)  # the input's (rows) and weight's (columns) gradient


def _gathered(g, x, table, pos):
    return _norm_backward(g, x, table[pos])  # cos rows gathered at the positions


def test_a_pointwise_value_is_recomputed_for_the_column_reduction():
    gm = make_fx(_norm_backward)(torch.randn(6, 8), torch.randn(6, 8), torch.randn(6, 8))
    assert norm_grad.apply(gm) == 1


def test_a_value_over_a_gather_stays_stored():
    """Recomputed in the column reduction a gather is an indirect load along the reduced rows,
    which the 950's bishengir aborts on: such a value is not copied."""
    args = torch.randn(6, 8), torch.randn(6, 8), torch.randn(10, 8), torch.randint(0, 10, (6,))
    gm = make_fx(_gathered)(*args)
    assert torch.ops.aten.index.Tensor in {n.target for n in gm.graph.nodes}
    assert norm_grad.apply(gm) == 0
