"""What an address or index expression of a generated Triton kernel costs in the UB, read from
its AST: whether it is a gather (beyond triton-ascend's pointer analysis), the memory stride of
a tile's innermost dimension in it, and how many tile buffers its evaluation holds at once.

Pure functions over ``ast`` nodes, given the body's values so far (``env``: name -> a value with
a ``shape``, a tuple of axis names, empty for a scalar); ``ub_profile``'s body walk calls them
for each load and store and turns their answers into buffers.
"""

from __future__ import annotations

import ast
import math

# a stride the address names by a size known only at run time (``ks0*r0_1``): of unknown width
WIDE = math.inf

_AFFINE_CALLS = ("arange", "full", "to", "broadcast_to", "program_id", "num_programs", "cdiv")


def terms(node) -> list:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return terms(node.left) + terms(node.right)
    return [node]


def factors(node) -> list:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return factors(node.left) + factors(node.right)
    return [node]


def is_irregular(node, irregular: set[str]) -> bool:
    """Whether an index expression is beyond triton-ascend's pointer analysis: a remainder or
    floor division, a name in ``irregular`` (assigned such a value), or a value computed by
    anything but aranges and casts (an indirect index)."""
    for n in ast.walk(node):
        if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Mod, ast.FloorDiv)):
            return True
        if isinstance(n, ast.Name) and n.id in irregular:
            return True
        if isinstance(n, ast.Call):
            f = n.func
            fname = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if fname not in _AFFINE_CALLS:
                return True
    return False


def _shape(env: dict, name: str) -> tuple:
    return getattr(env.get(name), "shape", ())


def _has_tile(node, env: dict) -> bool:
    return any(isinstance(n, ast.Name) and _shape(env, n.id) for n in ast.walk(node))


def inner_stride(node, inner: str, env: dict, pointers, irregular: set[str]) -> float | None:
    """The memory stride (elements) of the axis ``inner`` (a tile's innermost dimension) in an
    address, when it is not 1: a constant's, or ``WIDE`` where a size known only at run time
    multiplies it (a dynamic-shape column read, ``x0 + ks0*r0_1``) unless that dimension is
    gathered (``%`` / ``//`` along it: the gather's offsets are what is priced); None for a
    contiguous (or unknown) one."""
    strides: list[float] = []
    for term in terms(node):
        coeff, names = 1, []
        for f in factors(term):
            if isinstance(f, ast.Constant) and isinstance(f.value, int):
                coeff *= f.value
            elif isinstance(f, ast.Name):
                names.append(f.id)
            else:
                coeff = None
                break
        along = [n for n in names if inner in _shape(env, n)]
        if coeff is None or len(along) != 1 or any(n in pointers for n in names):
            continue
        if len(names) == 1:
            strides.append(abs(coeff))
        elif not _gathered_along(node, inner, env, irregular):
            strides.append(WIDE)
    if not strides or 1 in strides:
        return None
    return min(strides)


def _gathered_along(node, inner: str, env: dict, irregular: set[str]) -> bool:
    """Whether a term of the address that makes it a gather varies along ``inner``."""
    return any(
        is_irregular(term, irregular)
        and any(isinstance(n, ast.Name) and inner in _shape(env, n.id) for n in ast.walk(term))
        for term in terms(node)
    )


def _operands(node, env: dict) -> list:
    """The operand expressions of a tile operation."""
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.UnaryOp):
        return [node.operand]
    if isinstance(node, ast.Compare):
        return [node.left, *node.comparators]
    if isinstance(node, ast.BoolOp):
        return list(node.values)
    if isinstance(node, ast.IfExp):
        return [node.test, node.body, node.orelse]
    if isinstance(node, ast.Call):
        f = node.func
        kids = [*node.args, *(k.value for k in node.keywords)]
        if isinstance(f, ast.Attribute) and _has_tile(f.value, env):
            kids.insert(0, f.value)  # a method of a tile: ``x.to(tl.int64)``
        return kids
    return []


def held_at_once(node, env: dict) -> int:
    """Tile buffers live at once while an expression is evaluated left to right, equal
    subexpressions computed once (the compiler's CSE) and each result freed after its last
    use; an operation's result is written while its operands are still live."""
    order: list = []  # (result key, operand keys) of each tile operation, in evaluation order
    done: set = set()

    def visit(n):
        while isinstance(n, (ast.Subscript, ast.Attribute)) and _has_tile(n, env):
            n = n.value  # a view of its value
        if isinstance(n, ast.Name) or not _has_tile(n, env):
            return None
        key = ast.dump(n)
        if key not in done:
            ops = [k for k in (visit(c) for c in _operands(n, env)) if k is not None]
            order.append((key, ops))
            done.add(key)
        return key

    visit(node)
    last = {k: i for i, (_, ops) in enumerate(order) for k in ops}
    live: set = set()
    peak = 0
    for i, (key, ops) in enumerate(order):
        live.add(key)
        peak = max(peak, len(live))
        live -= {k for k in ops if last.get(k) == i}
    return peak


def is_arithmetic(node) -> bool:
    """An index expression of integer arithmetic alone: no selection, comparison or call."""
    return not any(isinstance(n, (ast.Call, ast.IfExp, ast.Compare)) for n in ast.walk(node))
