"""What an address or index expression of a generated Triton kernel costs in the UB, read from
its AST: whether it is a gather (beyond triton-ascend's pointer analysis) and the memory stride
of a tile's innermost dimension in it.

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
