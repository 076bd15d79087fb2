"""How npu kernels print index expressions: upstream's Triton printer, but min/max over a tile.

Upstream prints ``Min(a, b)`` / ``Max(a, b)`` as a macro, ``(a) * ((a) <= (b)) + (b) * ((b) <
(a))``, so that a min of constexprs stays a constexpr. Over a tile (an expression of the
kernel's iteration variables: a pooling window's clamped start and end) that is two compares,
two casts, two multiplies and an add per min/max, where the vector unit has one instruction;
an average-pool backward's 27 taps print several such clamps each, and in npu-sim's
interpreter, where every operation costs alike, the kernel ran over a second per block. Over a
tile the printer writes ``tl.minimum`` / ``tl.maximum``; over sizes and constants (which may
need to stay constexprs) it keeps upstream's macro.
"""

from __future__ import annotations

import re

import sympy
from torch._inductor.codegen.triton import TritonPrinter

# the kernel's iteration variables (x0, r0_1, xindex, ...; an indirect index's tmpN), also as
# the int64 widening prints them ("x0.to(tl.int64)")
_TILE_VARIABLE = re.compile(r"^((x|y|z|r\d+_)(\d+|index)|tmp\d+)(\.|$)")


def over_tile(expr: sympy.Expr) -> bool:
    """Whether an index expression varies over the kernel's tile."""
    return any(_TILE_VARIABLE.match(s.name) for s in expr.free_symbols)


class NpuTritonPrinter(TritonPrinter):
    def _print_min_max_helper(self, expr: sympy.Expr, cmp: str) -> str:
        if len(expr.args) < 2 or not over_tile(expr):
            return super()._print_min_max_helper(expr, cmp)
        mid = len(expr.args) // 2
        cls = type(expr)
        a = self._print(cls(*expr.args[:mid]))
        b = self._print(cls(*expr.args[mid:]))
        return f"tl.{'minimum' if cmp == '<' else 'maximum'}({a}, {b})"


npu_texpr = NpuTritonPrinter().doprint


# a variable the int64 widening renamed (``_index_expr_int64``): printed as a cast of it
_WIDENED = re.compile(r"^(\w+)\.to\(tl\.(\w+)\)$")
_ROUNDING = {"floor": "floor", "FloorToInt": "floor", "ceiling": "ceil", "CeilToInt": "ceil"}


def operations(expr) -> object:
    """The operations ``npu_texpr`` prints for an index expression, as plain data for the UB
    model's record (issue 35): a name, a number, or ``[operator, *operands]`` with the
    operator as printed (``"+"``, ``"//"``, ``"tl.minimum"``, ``".to"`` for a cast). Each
    printed operation is one node, in the printer's order, so the codegen front end counts
    the values the source reader finds in the kernel's text."""
    from torch._inductor.virtualized import V

    if isinstance(expr, sympy.Expr) and hasattr(V.graph, "sizevars"):
        expr = V.graph.sizevars.simplify(expr)  # as PythonPrinter.doprint does
    return _walk(sympy.sympify(expr))


def _chain(op: str, args) -> object:
    """``a op b op c``: Python's left-nested binary operations."""
    out = _walk(args[0])
    for a in args[1:]:
        out = [op, out, _walk(a)]
    return out


def _walk(e) -> object:
    from torch.utils._sympy.functions import (
        FloorDiv,
        Identity,
        IntTrueDiv,
        ModularIndexing,
        PythonMod,
    )

    name = type(e).__name__
    if isinstance(e, sympy.Symbol):
        widened = _WIDENED.match(e.name)
        return [".to", widened.group(1), widened.group(2)] if widened else e.name
    if e.is_Integer:
        return int(e)
    if e.is_Number:
        return float(e)
    if isinstance(e, (sympy.Add, sympy.Mul)):  # ExprPrinter: the args joined in order
        return _chain("+" if isinstance(e, sympy.Add) else "*", e.args)
    if isinstance(e, sympy.Pow) and e.exp.is_Integer and e.exp > 0:  # x*x*...
        return _chain("*", [e.base] * int(e.exp))
    if isinstance(e, ModularIndexing):  # ((x // div) % mod)
        x, div, mod = e.args
        x = _walk(x) if div == 1 else ["//", _walk(x), _walk(div)]
        return ["%", x, _walk(mod)]
    if isinstance(e, (FloorDiv, PythonMod)):
        # ``x // d`` / ``x % d`` over non-negative operands, else triton_helpers' helper
        if all(a.is_nonnegative for a in e.args):
            return ["//" if isinstance(e, FloorDiv) else "%", *map(_walk, e.args)]
        helper = "div_floor_integer" if isinstance(e, FloorDiv) else "remainder_integer"
        return [f"triton_helpers.{helper}", *map(_walk, e.args)]
    if isinstance(e, sympy.Mod):
        return ["%", *map(_walk, e.args)]
    if isinstance(e, IntTrueDiv) or name == "FloatTrueDiv":
        return ["/", *map(_walk, e.args)]
    if isinstance(e, (sympy.Min, sympy.Max)):
        return _min_max(e)
    if isinstance(e, Identity):
        return _walk(e.args[0])
    if name == "Where":  # each operand printed (and simplified) on its own
        return ["tl.where", *map(operations, e.args)]
    if isinstance(e, sympy.core.relational.Relational):
        return [e.rel_op, *map(_walk, e.args)]
    if isinstance(e, sympy.Abs):
        return ["tl_math.abs", _walk(e.args[0])]
    if name in _ROUNDING or name == "TruncToInt":
        from torch._inductor.virtualized import V

        dtype = str(getattr(V.kernel, "index_dtype", "tl.int32")).removeprefix("tl.")
        fn = _ROUNDING.get(name, "trunc")
        return [".to", [f"libdevice.{fn}", _walk(e.args[0])], dtype]
    return [f"?{name}", *map(_walk, e.args)]  # a form the walk does not know: one operation


def _min_max(e) -> object:
    """NpuTritonPrinter's min/max: over a tile ``tl.minimum(a, b)`` of the args' halves, over
    sizes upstream's macro ``((a) * ((a) <= (b)) + (b) * ((b) < (a)))``."""
    if len(e.args) == 1:
        return _walk(e.args[0])
    mid = len(e.args) // 2
    cls = type(e)
    a, b = _walk(cls(*e.args[:mid])), _walk(cls(*e.args[mid:]))
    small = isinstance(e, sympy.Min)
    if over_tile(e):
        return ["tl.minimum" if small else "tl.maximum", a, b]
    cmp = "<" if small else ">"
    return ["+", ["*", a, [cmp + "=", a, b]], ["*", b, [cmp, b, a]]]
