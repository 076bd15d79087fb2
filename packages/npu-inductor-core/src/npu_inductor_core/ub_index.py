"""An index expression of a kernel's codegen record as the UB model's values (issue 35): the
operations the printer writes for it (npu-lowering's ``index_printer.operations``: a name, a
number, or ``[operator, *operands]``), each a value of its own where its result is a tile, as
the source reader (``ub_profile._operation``) finds them in the kernel's text: an address
that nests ``%`` and ``//`` costs each printed step, and one written again over the same
names is computed once (the compiler's CSE) until a name it reads is assigned again.

The rules are the source reader's for the Python forms the printer writes: a binary
operator's tile (``_Body._expr`` of a BinOp, with integer emulation and mask combination), a
comparison's bits, ``.to`` a cast, ``tl.where`` a select, any other call a math function with
the buffers its helper's body keeps (``_extra_tiles``).
"""

from __future__ import annotations

from .ub_liveness import NESTED
from .ub_names import _DTYPE_BYTES
from .ub_values import _SCRATCH, _Val, _broadcast, _kind_of, emulation, mask_combine

# printed operators as the source reader's emulation names them
_ARITH = {"%": "mod", "//": "floordiv", "/": "truediv", "*": "mul"}
_BINARY = ("+", "-", "*", "/", "//", "%", "&", "|", "^")
_COMPARE = ("<", "<=", ">", ">=", "==", "!=")


def value(conv, tree, cls: str, top: bool) -> tuple[_Val, list[str], list, object]:
    """The value of a printed index expression, the names it uses, its temporaries and its
    CSE key. Below ``top`` (the operation the statement itself computes) each operation with
    a tile result is a nested value of buffer class ``cls`` (``g``: a gather's offsets),
    made once per key through the converter's ``_nested``; a scalar one hands its uses and
    temporaries to the operation it is part of."""
    if isinstance(tree, str):
        return conv._get(tree), [tree], [], tree
    if not isinstance(tree, list):  # a number
        return _Val((), 4, "f" if isinstance(tree, float) else "i"), [], [], repr(tree)
    op, *operands = tree
    if op == ".to":  # ``(x).to(tl.int64)``: the dtype is no operand
        operands = operands[:1]
    vals, uses, temps, keys = [], [], [], []
    for a in operands:
        v, u, t, k = value(conv, a, cls, top=False)
        vals.append(v)
        if op == "tl.where" and not keys:  # the condition's names select: materialized masks
            conv.selects.update(_reached(conv, u))
        uses.extend(u)
        temps.extend(t)
        keys.append(k)
    v = _apply(conv, op, tree, vals, temps)
    key = ("printed", op, *keys, *(tree[2:] if op == ".to" else ()))
    if top or not v.is_tile:
        return v, uses, temps, key
    name = conv._nested(key, uses, v.like(cls=cls), temps)
    return conv.env[name], [name], [], name


def _apply(conv, op: str, tree: list, vals: list, temps: list) -> _Val:
    """One printed operation's value (and its temporaries, added to ``temps``)."""
    if op in _BINARY and len(vals) == 2:
        tiles = [x for x in vals if x.is_tile] or vals
        kind = "f" if any(x.kind == "f" for x in tiles) or op == "/" else tiles[0].kind
        nbytes = max(x.nbytes for x in tiles)
        if op == "/":
            nbytes = max(nbytes, 4)
        v = _Val(_broadcast(*(x.shape for x in vals)), nbytes, kind)
        emulation(v, _ARITH.get(op), temps)
        mask_combine(v, vals, temps)
        return v
    if op in _COMPARE:
        return _Val(_broadcast(*(x.shape for x in vals)), 1, "b")
    if op == ".to":
        dtype = tree[2]
        if dtype not in _DTYPE_BYTES:
            return vals[0].like()
        out = vals[0].like(nbytes=_DTYPE_BYTES[dtype], kind=_kind_of(dtype))
        if out.is_tile and out.kind == "i" and out.nbytes < 4:  # a narrow cast's scratch
            temps.append(vals[0].like(nbytes=4, kind="i", cls="e"))
            temps.extend(_SCRATCH)
        return out
    if op == "tl.where":
        picked = [x for x in vals[1:] if x.is_tile] or vals[1:] or vals
        return _Val(
            _broadcast(*(x.shape for x in vals)), max(x.nbytes for x in picked), picked[0].kind
        )
    # a call (``tl.minimum``, ``triton_helpers.div_floor_integer``): a math function's rule
    tiles = [x for x in vals if x.is_tile]
    if not tiles:
        return _Val((), max((x.nbytes for x in vals), default=4))
    v = _Val(_broadcast(*(x.shape for x in tiles)), max(4, *(x.nbytes for x in tiles)))
    v = v.like(kind=tiles[0].kind)
    alias, _, fn = op.rpartition(".")
    extra = conv._extra_tiles({"call": [alias or None, fn], "op": fn})
    temps.extend(v.like(cls="f") for _ in range(extra))
    return v


def _reached(conv, names: list[str]) -> set[str]:
    """The names and the nested values (``%n``, statement n) they reach through uses."""
    out: set[str] = set()
    todo = list(names)
    while todo:
        n = todo.pop()
        if n not in out:
            out.add(n)
            if n.startswith(NESTED) and n[len(NESTED) :].isdigit():
                todo.extend(conv.stmts[int(n[len(NESTED) :])][1])
    return out
