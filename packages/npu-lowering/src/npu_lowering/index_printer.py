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
