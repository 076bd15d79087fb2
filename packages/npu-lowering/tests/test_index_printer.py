"""Min/max of an index over a tile print as one vector operation (index_printer.py): upstream's
macro costs seven operations each, and an average-pool backward's 27 taps ran over a second a
block in npu-sim's interpreter. Over sizes and constants upstream's macro stays."""

import ast

import pytest
import sympy
import torch
from torch._inductor.utils import run_and_get_code
from torch.utils._sympy.functions import FloorDiv, ModularIndexing, PythonMod

from npu_lowering.index_printer import npu_texpr, operations, over_tile

aten = torch.ops.aten


@pytest.fixture(scope="module", autouse=True)
def _npu():
    import npu_inductor

    npu_inductor.enable()


def test_min_max_over_a_tile_is_one_operation_over_sizes_the_macro():
    x0, ks0 = sympy.Symbol("x0", integer=True), sympy.Symbol("ks0", integer=True)
    assert over_tile(x0 + 1) and not over_tile(ks0 + 1)
    assert npu_texpr(sympy.Max(0, x0 - 1)) == "tl.maximum(0, (-1) + x0)"
    assert npu_texpr(sympy.Min(x0 + 2, ks0)).startswith("tl.minimum(")
    # three arguments: halves, as upstream's macro splits them
    three = npu_texpr(sympy.Min(x0, x0 * 2 + 1, ks0))
    assert three.count("tl.minimum(") == 2
    # sizes alone (a block that must stay a constexpr): upstream's macro
    sizes = npu_texpr(sympy.Min(ks0, 8))
    assert "tl.minimum" not in sizes and "<=" in sizes


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_pooling_backwards_clamped_windows_match_eager(dtype):
    def fn(a, b):
        return aten.avg_pool3d_backward(a, b, [3, 3, 3], [1, 1, 1], [1, 1, 1], True, False, None)

    a = torch.randn(1, 1, 4, 3, 5, dtype=dtype)
    b = torch.randn(1, 1, 4, 3, 5, dtype=dtype)
    torch._dynamo.reset()
    out, codes = run_and_get_code(torch.compile(fn), a.to("npu"), b.to("npu"))
    code = "\n".join(codes)
    if dtype == torch.float32:  # float64 is computed by ATen on npu (fp64 is opt-in)
        assert "tl.maximum(" in code and "tl.minimum(" in code
        assert ">= ((-1) + x" not in code  # upstream's macro over the window's start
    torch.testing.assert_close(out.cpu(), fn(a, b))


def _text(tree) -> str:
    """``operations``' plain data written back as Python, every operation parenthesised."""
    if not isinstance(tree, list):
        return str(tree) if isinstance(tree, str) else f"({tree})"
    op, *args = tree
    if op == ".to":
        return f"({_text(args[0])}).to(tl.{args[1]})"
    if op[0].isalpha():
        return f"{op}({', '.join(map(_text, args))})"
    return f"({_text(args[0])} {op} {_text(args[1])})"


def test_operations_are_the_printed_ones():
    """The UB model's record counts an index's printed operations (issue 35): the walk gives
    the operations the printer writes, in its order (the same Python tree)."""
    x0, x1, ks0 = sympy.symbols("x0 x1 ks0", integer=True, nonnegative=True)
    xindex, tmp5 = sympy.Symbol("xindex", integer=True, nonnegative=True), sympy.Symbol("tmp5")
    for expr in [
        ModularIndexing(xindex, 16, 10),
        ModularIndexing(xindex, 1, 16),
        FloorDiv(xindex, 160),
        4 + 8 * FloorDiv(x1, 2) + 16 * x0 + ModularIndexing(x1, 1, 4),
        -1 + x0 + 30 * x1,
        x0 + 2 * ks0 * x1,
        x0**2,
        sympy.Min(x0 + 3, 7),
        sympy.Max(ks0, 4),
        sympy.Min(x0, x1, ks0),
        FloorDiv(tmp5, 4),
        PythonMod(tmp5, 3),
    ]:
        printed = ast.dump(ast.parse(npu_texpr(expr).replace("(-1)", "m1"), mode="eval"))
        walked = ast.dump(ast.parse(_text(operations(expr)).replace("(-1)", "m1"), mode="eval"))
        assert walked == printed, (expr, npu_texpr(expr))
    assert operations(ModularIndexing(xindex, 16, 10)) == ["%", ["//", "xindex", 16], 10]
