"""The UB profile of a kernel from its statement list: where the live buffers peak.

A front end turns a kernel body into a statement list (``ub_profile``'s, which reads the
generated Triton, or ``ub_codegen``'s, from codegen's record of the values it emitted);
this module prices nothing, it finds, for each statement, the buffers live there and keeps the
statements where the peak may fall. A statement list is plain data::

    {"stmts": [[defined name or None, [names used], [temporary buffer keys], value key or None],
               ...],
     "loops": [[first statement, last statement], ...],   # each loop body's index range
     "blocks": {constexpr name: int},                     # a persistent reduction's R0_BLOCK
     "padded": {dims: bytes an element}}                  # tiles kept in a strided layout

A buffer key is ``class|dims:bytes`` (``b`` after the bytes for bits; dims in Inductor's order,
``1`` for a size-1 dimension, empty for a scalar; classes in ub_model.CLASSES). A statement's
value key is set only when the value is a tile (a buffer); its temporaries are the buffers the
statement needs while it runs (gather offsets, math expansions). A defined name starting with
``%`` is an operation nested in a program statement, placed before it as a statement of its
own (the compiler's SSA form); ``ops`` counts the program's statements, not those.
"""

from __future__ import annotations

NESTED = "%"  # the prefix of a nested operation's defined name (a front end's SSA values)


def _rank(key: str) -> tuple:
    """How wide a value's buffer is, to keep a name's widest definition: its tile
    dimensions, its bytes, and whether it is a load (a load's buffer wins a tie)."""
    cls, _, rest = key.partition("|")
    dims, _, nbytes = rest.rpartition(":")
    return (sum(1 for d in dims.split(",") if d and d != "1"), int(nbytes.rstrip("b")), cls == "l")


def _widest(stmts: list, start_from_last: bool = False) -> dict[str, str]:
    """Each tile name's value key at its widest definition: the first of equals, or with
    ``start_from_last`` the last definition unless an earlier one is strictly wider (how the
    liveness walk has always chosen, kept so that calibrated figures hold)."""
    widest: dict[str, str] = {}
    if start_from_last:
        widest = {d: v for d, _, _, v in stmts if d is not None and v is not None}
    for d, _, _, v in stmts:
        if d is not None and v is not None and (d not in widest or _rank(v) > _rank(widest[d])):
            widest[d] = v
    return widest


def live_points(stmts: list, loops: list) -> list[dict[str, int]]:
    """The live tile values (and the statement's temporaries) at each statement."""
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for i, (d, uses, _, v) in enumerate(stmts):
        for u in uses:
            if u in first:
                last[u] = i
        if d is not None and v is not None:
            first.setdefault(d, i)
            last.setdefault(d, i)
    # a value used in a loop it was defined before, or carried round it (read in the loop
    # before the loop writes it: an accumulator), lives through it; one written and then read
    # within an iteration lives as in straight-line code
    for lo, hi in loops:
        first_use: dict[str, int] = {}
        first_def: dict[str, int] = {}
        for i in range(lo, hi + 1):
            for u in stmts[i][1]:
                first_use.setdefault(u, i)
            if stmts[i][0] is not None:
                first_def.setdefault(stmts[i][0], i)
        for name, used_at in first_use.items():
            if name in first and (first[name] < lo or used_at <= first_def.get(name, hi + 1)):
                last[name] = max(last[name], hi)
    values = _widest(stmts, start_from_last=True)
    starts: dict[int, list[str]] = {}
    ends: dict[int, list[str]] = {}
    for name, key in values.items():
        starts.setdefault(first[name], []).append(key)
        ends.setdefault(last[name], []).append(key)
    points = []
    live: dict[str, int] = {}
    for i in range(len(stmts)):
        for key in starts.get(i, ()):
            live[key] = live.get(key, 0) + 1
        point = {k: c for k, c in live.items() if c}
        for key in stmts[i][2]:
            point[key] = point.get(key, 0) + 1
        if point:
            points.append(point)
        for key in ends.get(i, ()):
            live[key] -= 1
    return points


def apart(stmts: list) -> dict[str, int]:
    """Every buffer of the body once, as if none shared an address: each tile value at its
    widest definition and every statement's temporaries (what bishengir plans when they all
    fit the UB; see ub_model.plan_bound)."""
    out: dict[str, int] = {}
    for key in list(_widest(stmts).values()) + [t for _, _, temps, _ in stmts for t in temps]:
        out[key] = out.get(key, 0) + 1
    return out


def _dominated(a: dict[str, int], b: dict[str, int]) -> bool:
    return a is not b and all(b.get(k, 0) >= c for k, c in a.items())


def profile_of(record: dict) -> dict:
    """The UB profile of a statement list: the live buffers at each statement where the peak
    may fall, the constexpr blocks, the number of tile operations, the buffers apart, each
    math family's temporaries summed over the body, and the strided tiles."""
    stmts = [tuple(s) for s in record["stmts"]]
    points = live_points(stmts, record.get("loops", ()))
    # a point whose buffers another point holds too cannot be the peak: taken largest first,
    # a point dominated by any other is dominated by one kept before it
    unique = {tuple(sorted(p.items())): p for p in points}
    kept: list[dict[str, int]] = []
    for p in sorted(unique.values(), key=lambda p: -sum(p.values())):
        if not any(_dominated(p, q) for q in kept):
            kept.append(p)
    out = {
        "points": kept,
        "blocks": dict(record.get("blocks", {})),
        "ops": sum(1 for s in stmts if s[3] is not None and not str(s[0]).startswith(NESTED)),
        "apart": apart(stmts),
    }
    # the body-wide temporaries of the math expansions ("f") and of Philox ("r")
    for cls, key in (("f", "math_all"), ("r", "rand_all")):
        total: dict[str, int] = {}
        for _, _, temps, _ in stmts:
            for t in temps:
                if t.startswith(cls + "|"):
                    total[t] = total.get(t, 0) + 1
        if total:
            out[key] = total
    if record.get("padded"):
        out["padded"] = dict(sorted(record["padded"].items()))
    return out
