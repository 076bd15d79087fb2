"""npu-fusion's combo kernels (``config.combo_kernels``, combo.py / combo_gate.py): on npu
graphs only, only where the user left Inductor's flag alone, only for reductions over rows of
one length that read a common buffer (the QK-norm case: tests/test_llm_fusions.py, X12/X13) or
over columns of one count (its backward's weight gradients)."""

import pytest
import torch

from npu_fusion import combo, combo_gate
from npu_fusion import config as fusion_config


def _shared_weight(a, b, w):  # rows of 16 over 4 and 2 rows, both reading w
    return (a * w).sum(-1), (b * w).sum(-1)


def _args(npu):
    return (
        torch.randn(4, 16, device=npu),
        torch.randn(2, 16, device=npu),
        torch.randn(16, device=npu),
    )


def test_reductions_sharing_a_read_share_one_kernel(compiled, npu):
    assert compiled(_shared_weight, *_args(npu)).kernels == 1
    with fusion_config.patch(combo_kernels=False):
        assert compiled(_shared_weight, *_args(npu)).kernels == 2


def _column_sums(a, b):  # columns of a and b, no common read
    return (a * 2).sum(0), (b + 1).sum(0)


# Inductor's hint for these: OUTER, and DEFAULT (few rows of many columns); fewer than 9 rows
# would be unrolled into pointwise code (``unroll_reductions_threshold``)
@pytest.mark.parametrize("rows, columns", [((40, 24), 16), ((32, 12), 128)])
def test_reductions_over_columns_of_one_count_share_one_kernel(compiled, npu, rows, columns):
    args = [torch.randn(r, columns, device=npu) for r in rows]
    assert compiled(_column_sums, *args).kernels == 1
    with fusion_config.patch(combo_kernels=False):
        assert compiled(_column_sums, *args).kernels == 2
    other = torch.randn(rows[1], columns // 2, device=npu)  # column counts differ
    assert compiled(_column_sums, args[0], other).kernels == 2


def test_the_user_flag_wins(compiled, npu):
    """On torch 2.13 / 2.14 an explicit ``combo_kernels=False`` equals the default and is not
    told apart (``_compat.left_default``): there the flag set to True is what wins."""
    from npu_inductor_core.torch_versions import at_least

    if not at_least("2.15"):
        upstream = {"combo_kernels": True, "combo_kernel_max_num_nodes": 1}  # groups of one
        assert compiled(_shared_weight, *_args(npu), **upstream).kernels == 2
        return
    assert compiled(_shared_weight, *_args(npu), combo_kernels=False).kernels == 2


def test_a_graph_with_one_reduction_gets_no_combo_pass():
    """Upstream's combo pass re-sorts the schedule even where it combines nothing (and fails on
    a user kernel's fused epilogue): a graph with fewer than two reductions is left alone."""
    from torch.fx.experimental.proxy_tensor import make_fx

    one = make_fx(lambda a, b: (a.sum(-1), b * 2))(torch.randn(4, 16), torch.randn(2, 16))
    assert not combo._may_combine(one)
    two = make_fx(_shared_weight)(torch.randn(4, 16), torch.randn(2, 16), torch.randn(16))
    assert combo._may_combine(two)


@pytest.mark.parametrize(
    "fn, args",
    [
        (lambda a, b: (a.sum(-1), b.sum(-1)), ((4, 16), (2, 16))),  # no common read
        (lambda a, b: (a * 2, b + 1), ((4, 16), (2, 16))),  # pointwise
        (
            lambda a, b, s: ((a * s).sum(-1), (b * s).sum(-1)),
            ((4, 16), (2, 8), (1,)),
        ),  # rows of 16 and of 8
    ],
)
def test_other_independent_kernels_keep_their_own(compiled, npu, fn, args):
    """Upstream's grouping would put each pair in one launch (the user's flag shows it)."""
    make = [torch.randn(*s, device=npu) for s in args]
    assert compiled(fn, *make).kernels == 2
    upstream = {"combo_kernels": True, "combo_kernel_peak_memory_pct_threshold": None}
    assert compiled(fn, *make, **upstream).kernels == 1


def test_cpu_graphs_and_upstream_grouping_untouched(compiled, npu):
    from torch._inductor.scheduler import ForeachKernelSchedulerNode as Foreach

    from torch.fx.experimental.proxy_tensor import make_fx

    gm = make_fx(_shared_weight)(*(t.cpu() for t in _args(npu)))  # an ATen graph, as Inductor's
    assert (
        combo.graph_context(gm, [torch.randn(4, 16), torch.randn(2, 16), torch.randn(16)]) is None
    )
    assert combo.graph_context(gm, list(_args(npu))) is not None  # entered only by the hook
    assert not torch._inductor.config.combo_kernels and combo_gate._depth == 0
    compiled(_shared_weight, *_args(npu))
    assert (
        Foreach.group_algorithm_for_combo_kernels is Foreach._default_group_nodes_for_combo_kernels
    )
    assert combo_gate._depth == 0


def test_combo_kernel_is_saved_for_the_ascend_check(compiled, npu, tmp_path):
    """npu-lowering's ``save_kernels`` keeps the combo kernel (upstream's ComboKernel class),
    so the Ascend check sees it."""
    import npu_lowering.config as lowering_config

    with lowering_config.patch(save_kernels=str(tmp_path)):
        compiled(_shared_weight, *_args(npu))
    (saved,) = tmp_path.glob("npu_kernel_*.py")
    assert "SequentialComboKernelGrid" in saved.read_text()


def _unsaved():
    """Kernels compiled under it are not saved for CI's Ascend check (npu-lowering's
    ``save_kernels``): a control that shows what a rule prevents generates the kernel Ascend's
    toolchain rejects."""
    import npu_lowering.config as lowering_config

    return lowering_config.patch(save_kernels=None)


def _arg_extremes(a):  # row and column argmax / argmin of one square input: rows of one length
    return a.argmax(1), a.argmin(1), a.argmax(0), a.argmin(0)


def test_value_and_index_reductions_keep_their_own_kernels(compiled, npu, monkeypatch):
    """A row and a column argmax of one buffer are not joined (combo_gate's ``_PAIRED``): one
    XBLOCK for both overflowed a 910B2's UB (231,456 B) where the UB model said they fit. The
    control, the guard off: one combo kernel."""
    a = torch.randn(6, 6, device=npu)
    assert compiled(_arg_extremes, a, dynamic=True).kernels == 2  # the row and the column pair
    monkeypatch.setattr(combo_gate, "_PAIRED", ())
    with _unsaved():  # the control's kernel is the one the rule keeps from Ascend's toolchain
        assert compiled(_arg_extremes, a, dynamic=True).kernels == 1


def _gathered_norm(ids, table, w, s):  # an RMSNorm over rows gathered from a table
    x = table[ids] * s
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def _training_combos(npu) -> tuple[int, set]:
    """Combo kernels of a training step of ``_gathered_norm`` (forward and backward), and the
    XBLOCKs of their configs: the backward's row reduction (``s``'s gradient) and column
    reduction (``w``'s) both read the incoming gradient element for element and the gathered
    rows."""
    from torch._inductor.utils import fresh_cache, run_and_get_code

    torch.manual_seed(0)
    ids = torch.randint(0, 10, (16,), device=npu)
    table = torch.randn(10, 32, device=npu)
    w = torch.randn(32, device=npu, requires_grad=True)
    s = torch.randn(16, 32, device=npu, requires_grad=True)
    torch._dynamo.reset()
    step = torch.compile(_gathered_norm)
    with fresh_cache():
        _, code = run_and_get_code(
            lambda: step(ids, table, w, s).backward(torch.randn(16, 32, device=npu))
        )
        xblocks = _combo_xblocks()
    return "\n".join(code).count("SequentialComboKernelGrid"), xblocks


def test_a_gathering_norm_backward_shares_one_kernel_above_one_row(npu, monkeypatch):
    """The backward's row and column reductions share one combo kernel (torch 2.14+), which
    carries its gathering sub-kernel's mark, so no config runs one row a block (Ascend's front
    end rejects the row gather ``table[ids]`` there). Torch 2.13 builds combo kernels without
    the mark: there the two stay apart. The control, the mark dropped: XBLOCK=1 comes back."""
    from npu_fusion import _compat

    from npu_inductor_core import ascend_rules

    if not _compat.combo_kernels_marked():
        assert _training_combos(npu)[0] == 0
        return
    combos, xblocks = _training_combos(npu)
    assert combos == 1 and xblocks and 1 not in xblocks, xblocks
    monkeypatch.setattr(ascend_rules, "indirect", lambda meta: False)
    with _unsaved():  # the control's configs are the ones Ascend's toolchain rejects
        assert 1 in _training_combos(npu)[1]


def _combo_xblocks() -> set:
    """XBLOCKs of the configs of the combo kernels loaded since the cache was fresh."""
    from torch._inductor.codecache import PyCodeCache

    from npu_lowering.runtime.autotuner import NpuCachingAutotuner

    return {
        c.kwargs.get("XBLOCK")
        for mod in PyCodeCache.modules
        for k in vars(mod).values()
        if isinstance(k, NpuCachingAutotuner) and "combo_grid_meta" in k.inductor_meta
        for c in k.configs
    }


def _norm_backward_combos(npu, width: int) -> int:
    """Combo kernels of an RMSNorm training step over 16 rows of ``width``: the backward's row
    reduction (the input's gradient) and column reduction (the weight's) read the incoming
    gradient element for element."""
    from torch._inductor.utils import fresh_cache, run_and_get_code

    x = torch.randn(16, width, device=npu, requires_grad=True)
    w = torch.randn(width, device=npu, requires_grad=True)

    def norm(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w

    torch._dynamo.reset()
    with fresh_cache():
        _, code = run_and_get_code(
            lambda: torch.compile(norm)(x, w).backward(torch.randn(16, width, device=npu))
        )
    return "\n".join(code).count("SequentialComboKernelGrid")


def test_a_row_and_column_join_needs_rows_that_share_a_block(npu, monkeypatch):
    """Joined, the two reductions share one XBLOCK that the row sizes: rows of 64 share a
    kernel; rows of 4096 fill a block one at a time on the 910B2 (the UB), where the column
    sub-kernel would read one column a program, so they keep two kernels. The control: with
    one shared row enough, the wide rows join too."""
    assert _norm_backward_combos(npu, 64) == 1
    assert _norm_backward_combos(npu, 4096) == 0
    monkeypatch.setattr(combo_gate, "MIN_SHARED_ROWS", 1)
    with _unsaved():  # the control's kernel is the one this rule avoids
        assert _norm_backward_combos(npu, 4096) == 1
