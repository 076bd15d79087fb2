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


def test_a_value_over_rows_gathered_from_an_input_is_recomputed():
    """The column reduction recomputes rows gathered from a graph input (RoPE's cos/sin at the
    positions): an indirect load along its rows, which npu's configs keep at two rows a block
    or more (test_combo_kernels.py). A gather from a computed table stays stored (the copy
    would recompute the table). Torch 2.13's combo kernels cannot carry the mark that keeps
    them there, and the combo gate keeps such reductions apart: nothing is copied."""
    from npu_fusion import _compat

    args = torch.randn(6, 8), torch.randn(6, 8), torch.randn(10, 8), torch.randint(0, 10, (6,))
    gm = make_fx(_gathered)(*args)
    assert torch.ops.aten.index.Tensor in {n.target for n in gm.graph.nodes}
    assert norm_grad.apply(gm) == (1 if _compat.combo_kernels_marked() else 0)
    computed = make_fx(lambda g, x, t, p: _norm_backward(g, x, t.exp()[p]))(*args)
    assert norm_grad.apply(computed) == 0
