"""The UB model's codegen front end: the statement list (``ub_liveness``) of a kernel from
what codegen recorded as it emitted the kernel (npu-lowering's ``ub_record``), not from its
source read back (``ub_profile``, kept as the cross-check). The buffer rules are
``ub_profile``'s own (its value class, broadcast, integer emulation, strided staging) and
``ub_names``' tables; what differs is only where a value's facts come from: its dtype, block
shape, operation and operands are codegen's CSE variable's; an index's operations (``tree``)
are those the printer writes for it (``ub_index``).

A record is plain data::

    {"values": {name: {"op", "args", "dtype", "shape", ...load facts}},
     "stores": [{"value", "ptr", "uses", "gather", "terms", "masks", "tree"}, ...],
     "entries": {index variable: {"root", "irregular", "tree"}},
     "trees": {prefix: {"dim", "persistent", "reduction"}}, "ndim": int,
     "blocks": {constexpr: int},
     "lines": [[indentation, defined name or None, "for" | "store" | "line"], ...]}
"""

from __future__ import annotations

from . import ub_index, ub_liveness
from .ub_profile import _Helpers
from .ub_names import _AXES, _DTYPE_BYTES, _MATH_TEMPS
from .ub_values import _kind_of as _kind
from .ub_values import _SCALAR, _SCRATCH, _Val, _broadcast, emulation, mask_combine, strided_buffer

# the ops codegen prints as ``%`` / ``//`` / ``/`` / ``*``: ub_profile.emulation's names
_ARITH = {"mod": "mod", "truncdiv": "floordiv", "truediv": "truediv", "mul": "mul"}
# the ops upstream prints as a binary operator (``a & b``): masks combined as the source's
_OPERATORS = ("and_", "or_", "xor", "logical_and", "logical_or", "logical_xor", "bitwise_and")
_OPERATORS += ("bitwise_or", "bitwise_xor", "add", "sub", "mul")
_BOOL = {"bool": "int1"}  # torch's name of the bit type
_HEADERS = ("index", "base", "mask")
# tests upstream prints as a helper's value cast to a bit (``libdevice.isnan(x).to(tl.int1)``)
_TESTS = ("isnan", "isinf")  # a tree's tile-valued header variables ({prefix}index)
_ORDERINGS = ("lt", "gt", "le", "ge")  # npu casts two bool operands of these to int8


def _kind_of(dtype: str) -> str:
    return _kind(_BOOL.get(dtype, dtype))


def _axis(token: str | None) -> str | None:
    if token is None:
        return None
    return _AXES.get(token, token)


class _Convert:
    def __init__(self, record: dict, pointer_dtypes: dict[str, str]):
        self.rec = record
        self.ptr = pointer_dtypes
        self.values: dict[str, dict] = record["values"]
        self.env: dict[str, _Val] = {}
        self.stmts: list = []  # (def, uses, temps, _Val | None)
        self.padded: dict[str, int] = {}
        self.selects: set[str] = set()
        self.cse: dict[tuple, str] = {}
        self.helpers: _Helpers | None = None
        self.cse_names: dict[str, set] = {}  # a name -> the CSE keys of operations over it
        self.skewed: set[str] = set()  # values priced with a flat view's skewed shape
        self._welfords()
        looped = [
            r for r, f in self.values.items() if f.get("argreduce") and f"_{r}" in self.values
        ]
        self.arg_acc = {f"_{r}_index": r for r in looped}  # a looped argmax's index accumulator
        self.arg_next = {f"_{r}_next": r for r in looped}  # its combination
        # a tuple assignment's first target -> its widest element (``tmp7, tmp8, =
        # tl.associative_scan(...)``): the source reader gives every target the call's value
        self.tuple_bytes: dict[str, int] = {}
        first = None
        for _, name, kind in record["lines"]:
            if kind == "alias" and first is not None and name in self.values:
                nbytes = self._val(self.values[name]).nbytes
                self.tuple_bytes[first] = max(self.tuple_bytes.get(first, 0), nbytes)
            elif kind != "alias":
                first = name if name in self.values else None
        names = list(self.values)  # in the order codegen made them
        self.before = dict(zip(names[1:], names))
        # an argmax's / argmin's index tile -> its masked operand
        self.arg_index = {
            f["argreduce"]["index"]: f["argreduce"]["value"]
            for f in self.values.values()
            if f.get("argreduce")
        }
        self.defined = {name for _, name, _ in record["lines"] if name}
        self._trees()

    # -- the range trees' header variables ---------------------------------------------
    def _trees(self) -> None:
        """The tile values a tree's header defines: ``{p}index``, ``{p}base`` (int32) and
        ``{p}mask`` (bool), each of the tree's block along its dimension."""
        self.headers: dict[str, tuple[_Val, list[str]]] = {}
        self.cast_aranges: set[str] = set()  # grid axes' index headers an int64 cast widens
        self.flat: dict[str, tuple[str, str]] = {}  # two reduction trees' rindex / rbase
        ndim = self.rec["ndim"]
        for prefix, tree in self.rec["trees"].items():
            shape = [None] * ndim
            if tree["dim"] is not None:
                shape[tree["dim"]] = _axis(f"{prefix.upper()}BLOCK")
            index = _Val(tuple(shape), self.rec.get("index_bytes", 4), "i")
            alias = "r" if prefix.startswith("r") else None
            # ``r0_index < r0_numel`` where the block covers the constant numel exactly: the
            # compiler folds the mask away (upstream's ``tl.full(..., True)`` form stays a tile)
            folded = (
                tree["persistent"]
                and not tree.get("constant_mask")
                and tree.get("numel") is not None
                and self.rec.get("blocks", {}).get(f"{prefix.upper()}BLOCK") == tree["numel"]
            )
            if (
                self.rec.get("index_bytes") == 8
                and tree["dim"] is not None
                and not tree["reduction"]
            ):
                self.cast_aranges.add(f"{prefix}index")
            for h in _HEADERS:
                v = _Val(tuple(shape), 1, "b") if h == "mask" else index
                if h == "mask" and folded:
                    v = _Val((), 1, "b")
                # ``xindex < xnumel``; a constant mask (``tl.full([XBLOCK], True, tl.int1)``) reads
                # no index
                uses = [f"{prefix}index"] if h == "mask" and not tree.get("constant_mask") else []
                if h == "index" and not tree["persistent"]:
                    uses = [f"{prefix}base"]
                self.headers[f"{prefix}{h}"] = (v, uses)
                if alias and h != "mask":
                    self.headers[f"{alias}{h}"] = (v, [f"{prefix}{h}"])
        reductions = [p for p, t in self.rec["trees"].items() if t["reduction"]]
        if len(reductions) == 2:  # ``rindex = r1_index + r0_index*r1_numel``
            for h in ("index", "base"):
                self.flat[f"r{h}"] = (f"{reductions[0]}{h}", f"{reductions[1]}{h}")

    # -- values -------------------------------------------------------------------------
    def _val(self, facts: dict, cls: str = "v") -> _Val:
        shape = tuple(_axis(d) for d in facts.get("shape") or ())
        dtype = facts.get("dtype") or "float32"
        return _Val(shape, _DTYPE_BYTES.get(dtype, 4), _kind_of(dtype), cls)

    def _resolve(self, names: list[str]) -> list[str]:
        """Operands by the names the body defines: a variable codegen made but never wrote (a
        reduction's unused intermediate) stands for its own operands."""
        out: list[str] = []
        todo = list(names)
        seen: set[str] = set()
        while todo:
            n = todo.pop(0)
            if n in seen:
                continue
            seen.add(n)
            if n in self.defined or n not in self.values:
                out.append(n)
            else:
                todo[:0] = self.values[n].get("args", [])
        return out

    def _nested(self, key: tuple, uses: list[str], v: _Val, temps: list) -> str:
        """A nested operation as a statement of its own, computed once (CSE)."""
        name = self.cse.get(key)
        if name is None:
            name = f"{ub_liveness.NESTED}{len(self.stmts)}"
            self.stmts.append((name, uses, temps, v))
            self.env[name] = v
            self.cse[key] = name
            for u in uses:
                self.cse_names.setdefault(u, set()).add(key)
        return name

    def _assigned(self, name: str) -> None:
        """A name defined again (a second r-loop's ``r0_mask``): operations over it are new."""
        for key in self.cse_names.pop(name, ()):
            self.cse.pop(key, None)

    def _masks(self, masks: list[str], uses: list[str]) -> list[str]:
        """A transfer's masks: more than one are combined (``a & b``), a nested operation."""
        if len(masks) < 2:
            uses.extend(masks)
            return list(masks)
        both = masks[0]
        combined = []
        for m in masks[1:]:  # ``a & b & c``: (a & b) & c, as printed
            both = self._combine("and", [both, m])
            combined.append(both)
        uses.append(both)
        return [*masks, *combined]

    def _get(self, name: str) -> _Val:
        return self.env.get(name, _SCALAR)

    def _address(self, a: dict, shape: tuple, nbytes: int, temps: list, uses: list) -> bool:
        """A load's or store's address: its index variables, and for a gather the offsets
        computed as tiles (``g``); a strided innermost dimension staged (``p``). True when the
        access selects its elements with its mask (strided or gathered)."""
        if a["gather"]:
            # the offsets: tiles of the gather-offset class, as wide as the widest index (an
            # int64 indirect index: 8 bytes, an emulated multiply)
            off, names, own = self._index_value(a, "g")
            if a.get("broadcast"):  # the offsets broadcast to the access's block, a tile
                shape = tuple(_axis(d) for d in a["broadcast"])
                wide = off.like(shape=shape, cls="g")
                names = [self._nested(("broadcast", *names, shape), list(names), wide, [])]
            if a.get("fold"):
                names = self._fold(a, a["fold"], names, off)
            uses.extend(names)
            temps.extend(t if isinstance(t, str) or t.cls != "v" else t.like(cls="g") for t in own)
            temps.append(off.like(kind="i", cls="g"))
            self._staged(a, shape, nbytes, temps)  # a gather is staged too where strided
            return True
        uses.extend(a["uses"])
        return self._staged(a, shape, nbytes, temps)

    def _staged(self, a: dict, shape: tuple, nbytes: int, temps: list) -> bool:
        """A strided innermost dimension staged (``p``): True when the access is strided."""
        inner = next((d for d in reversed(shape) if d), None)
        if inner is None:
            return False
        strides: list = []
        # a run-time size's stride (``ks0*x1``) is of no account where a gather's term varies
        # along the dimension: the gather's offsets are what is priced
        gathered = any(
            len(t) > 2 and t[2] and any(inner in self._get(n).shape for n in t[1])
            for t in a["terms"]
        )
        for coeff, names, *_ in a["terms"]:
            along = [n for n in names if inner in self._get(n).shape]
            if coeff is None or len(along) != 1:
                continue
            if len(names) == 1:
                strides.append(abs(coeff))
            elif not gathered:
                strides.append(float("inf"))
        if not strides or 1 in strides:
            return False
        strided_buffer(shape, min(strides), nbytes, self.padded, temps)
        return True

    def _fold(self, a: dict, fold: dict, names: list[str], off: _Val) -> list[str]:
        """npu's scatter fold of an atomic address, ``tl.where(r0_mask, tl.broadcast_to(idx,
        [XBLOCK, R0_BLOCK]), idx at r0 = 0)``: the broadcast, the address at the reduction
        axes' 0 (its terms without them) and the select, each a gather offset of its own."""
        shape: list = [None] * self.rec["ndim"]
        for prefix, tree in self.rec["trees"].items():
            if tree["dim"] is not None:
                shape[tree["dim"]] = _axis(f"{prefix.upper()}BLOCK")
        full = off.like(shape=tuple(shape), kind="i", cls="g")
        if fold.get("broadcast"):
            names = [self._nested(("broadcast", *names), list(names), full, [])]
        zero: list[str] = []
        if fold.get("zero") is not None:  # the address at the reduction axes' 0
            zero = self._index_value(a, "g", fold["zero"])[1]
        masks: list[str] = []
        self.selects.update(self._masks(fold["moved"], masks))
        both = [*masks, *names, *zero]
        return [self._nested(("fold", *both), both, full, [])]

    def _index_value(self, a: dict, cls: str, tree=None) -> tuple[_Val, list[str], list]:
        """An index computed as tiles, each printed operation a nested value of class ``cls``
        (``ub_index``): its value, the names standing for it and the temporaries of its
        operations that are no tiles."""
        v, names, temps, _ = ub_index.value(self, a["tree"] if tree is None else tree, cls, False)
        return v, names, temps

    def _index_expr(self, f: dict, temps: list) -> list[str]:
        """``ops.index_expr``: its index printed and cast (``(x0 + 8*x1).to(...)``), or printed
        widened to int64 with no cast around it (its last operation the statement's own); a
        constant printed as a full tile of the value's shape, then cast."""
        a = f["index"]
        if a.get("cast") is False:
            _, names, own, _ = ub_index.value(self, a["tree"], "v", True)
            temps.extend(own)
            return names
        if a.get("constant"):
            full = _Val(self._val(f).shape, self.rec.get("index_bytes", 4), "i")
            return [self._nested(("full", a["index"], full.key()), [], full, [])]
        return self._index_value(a, "v")[1]

    def _assert(self, a: dict) -> None:
        """A bounds check, ``((0 <= i) & (i < n)) | ~(mask)``: each comparison and combination
        a nested mask of its own."""
        v, names, _ = self._index_value(a, "v")
        conds = [
            self._nested((bound, *names), list(names), _Val(v.shape, 1, "b"), [])
            for bound in ("lower", "upper")
            if a[bound]
        ]
        if len(conds) == 2:
            conds = [self._combine("and", conds)]
        if a["masks"]:
            uses: list[str] = []
            self._masks(a["masks"], uses)
            m = self._get(uses[0])
            conds.append(self._nested(("not", *uses), uses, _Val(m.shape, 1, "b"), []))
            conds = [self._combine("or", conds)]
        self.stmts.append((None, conds, [], None))

    def _combine(self, op: str, pair: list[str]) -> str:
        """Two masks combined (``&`` / ``|``), a nested mask of its own."""
        vals = [self._get(n) for n in pair]
        both = _Val(_broadcast(*(x.shape for x in vals)), 1, "b")
        temps: list = []
        mask_combine(both, vals, temps)
        return self._nested((op, *pair), list(pair), both, temps)

    def _load(self, name: str, f: dict) -> None:
        temps: list = []
        uses: list[str] = []
        dtype = self.ptr.get(f["ptr"], f.get("dtype") or "float32")
        v = _Val(
            tuple(_axis(d) for d in f["shape"] or ()), _DTYPE_BYTES[dtype], _kind_of(dtype), "l"
        )
        selects = self._address(f, v.shape, v.nbytes, temps, uses)
        masks = self._masks(f["masks"], uses)
        if selects:
            self.selects.update(masks)
        cast = self._val(f)
        if cast.nbytes != v.nbytes or cast.kind != v.kind or v.kind == "b":
            # upstream's upcast on load (``tl.load(...).to(tl.float32)``, a bool's always
            # ``.to(tl.int1)``): the loaded tile, a nested value, then its cast
            loaded = self._nested(("load", name), uses, v.like(), temps)
            return self._define(name, [loaded], [], cast)
        self._define(name, uses, temps, v)

    def _store(self, s: dict) -> None:
        temps: list = []
        uses: list[str] = [s["value"]] if s["value"] else []
        v = self._get(s["value"])
        dtype = self.ptr.get(s["ptr"], "float32")
        selects = self._address(s, v.shape, _DTYPE_BYTES[dtype], temps, uses)
        masks = self._masks(s["masks"], uses)
        if selects:
            self.selects.update(masks)
        self.stmts.append((None, uses, temps, None))

    def _op(self, name: str, f: dict) -> None:
        temps: list = []
        op = f["op"]
        if op == "index_expr" and f.get("index"):
            uses = self._index_expr(f, temps)
        else:
            uses = self._resolve(f.get("args", []))
        v = self._skew(name, f, uses, self._val(f))
        if self.tuple_bytes.get(name, 0) > v.nbytes:
            v = v.like(nbytes=self.tuple_bytes[name])
        if op == "reduction" and [self.values.get(u, {}).get("op") for u in uses] == ["to_dtype"]:
            # a bool accumulator's final reduction over its int8 cast, printed with no cast
            # back: the source reader reads the cast's dtype (a call: no integer emulation)
            cast = self._get(uses[0])
            return self._define(name, uses, [], v.like(nbytes=cast.nbytes, kind=cast.kind))
        if op == "fill" and uses:
            # ``tl.full(tmp13.shape, 0.0, tmp13.dtype)``: the source reader reads a shape that is
            # no list as a scalar (what its weights were calibrated on)
            return self._define(name, [uses[0], uses[0]], [], _SCALAR)
        if f.get("cast"):  # a constant printed as a full tile of another type, then cast
            return self._define(name, [self._nested(("full", name), [], v.like(), [])], [], v)
        if f.get("guard") and uses:
            return self._define(name, *self._guarded(f["guard"], uses[0]))
        if op == "signbit" and uses:
            return self._define(name, *self._signbit(uses[0]))
        if op == "reduced_mask" and uses:
            return self._reduced_mask(name, f, uses)
        if op in _ORDERINGS and len(uses) == 2 and all(self._get(u).kind == "b" for u in uses):
            # two bools compared for order: npu prints each cast to int8 first (a narrow cast,
            # each a nested value), since 910B's compiler rejects an unsigned i1 compare
            uses = [self._int8(u) for u in uses]
        if op == "sign" and self.before.get(name) in self.env:
            # printed ``sub.to(x.dtype)`` (its sub the op made just before): the source reader
            # keeps the operand's value for a cast to a dtype it cannot read
            sub = self.before[name]
            return self._define(name, [sub], [], self._get(sub).like())
        elif name in self.welford_flat and self.welford_flat[name] in self.env:
            # ``tl.reshape(tmp2_mean, [XBLOCK, RBLOCK])``: read as its operand's shape
            uses = [self.welford_flat[name]]
            v = self._get(uses[0]).like()
        elif name in self.welford_raw and self.welford_raw[name][0] in self.env:
            # ``tmp3, tmp4, tmp5 = welford(tmp2_mean, tmp2_m2, tmp2_weight, 1)``: the source
            # reader reads it unreduced (an over-count the UB model's weights were calibrated
            # on, standing in for npu's vector welford's temporaries)
            uses = list(self.welford_raw[name])
            v = self._get(uses[0]).like()
        elif name in self.welford_out and self.welford_out[name] in self.env:
            # ``tmp2 = tmp3[:, None]``: indexed back from the unreduced value, a skewed shape
            raw = self.welford_out[name]
            rest = iter(self._get(raw).shape)
            shape = [None if d is None else next(rest, None) for d in f.get("shape") or ()]
            uses, v = [raw], self._get(raw).like(shape=(*shape, *rest))
            self.skewed.add(name)
        elif name in self.arg_index:  # ``tl.broadcast_to(rindex, tmp6.shape)``: rindex's shape
            uses, v = ["rindex", self.arg_index[name]], self._get("rindex").like(cls="v")
            uses = [u for u in uses if u]
        elif f.get("argreduce") and f"{name}_idx" in self.env:  # ``tmp8_idx[:, None]``
            uses, v = [f"{name}_idx"], self._get(f"{name}_idx").like(shape=v.shape)
        if op == "where" and uses:
            self.selects.add(uses[0])
        if (
            f.get("masks")
            and "RBLOCK" not in (f.get("shape") or ())
            and name not in self.welford_raw
            and name not in self.welford_flat
            and name not in self.welford_out
        ):
            # a reduction's operand selected with the kernel's masks (not its flat view)
            self.selects.update(self._masks(f["masks"], uses))
        if op in ("to_dtype", "convert_element_type") and v.kind == "i" and v.nbytes < 4:
            return self._narrow(name, f, uses, v)
        emulation(v, _ARITH.get(op), temps)
        if op in _OPERATORS and len(uses) == 2:  # ``a & b`` of masks over two dimensions
            mask_combine(v, [self._get(u) for u in uses], temps)
        extra = self._extra_tiles(f) if v.is_tile else 0
        if op in _TESTS and extra is not None and uses and v.is_tile:
            uses, extra = [self._test(op, f, uses, extra)], 0
        rand = (f.get("call") or [None, op or ""])[1].startswith("rand")
        temps.extend(v.like(cls="r" if rand else "f") for _ in range(extra))
        self._define(name, uses, temps, v)

    def _reduced_mask(self, name: str, f: dict, uses: list[str]) -> None:
        """npu's mask of a load over the axes its index lacks, ``tl.max((tmp6 &
        xmask).to(tl.int8), 0, keep_dims=True) != 0``: the masks combined, cast to int8, reduced
        over those axes (as the source reader shapes it, each reduced axis dropped), compared;
        each step a nested value."""
        mask = uses[0]
        for other in uses[1:]:
            mask = self._combine("and", [mask, other])
        reduced = self._int8(mask)
        for dim in sorted(f.get("dims", ()), reverse=True):
            v = self._get(reduced)
            shape = tuple(d for i, d in enumerate(v.shape) if i != dim)
            reduced = self._nested(("max", reduced, dim), [reduced], v.like(shape=shape), [])
        self._define(name, [reduced], [], self._get(reduced).like(nbytes=1, kind="b"))

    def _int8(self, use: str) -> str:
        """``tmp.to(tl.int8)`` of a bool, nested: the narrow cast's value and temporaries."""
        src = self._get(use)
        temps = [src.like(nbytes=4, kind="i", cls="e"), *_SCRATCH] if src.is_tile else []
        return self._nested(("int8", use), [use], src.like(nbytes=1, kind="i"), temps)

    def _narrow(self, name: str, f: dict, uses: list[str], v: _Val) -> None:
        """A cast down to a narrow integer, through int32 and a fixed scratch; from a float to
        uint8 through int16 first (upstream's ``.to(tl.int16).to(tl.uint8)``); a tile of
        several dimensions cast on a flat view (npu's narrow_cast: ``x.reshape(XBLOCK *
        R0_BLOCK).to(tl.int8).reshape(XBLOCK, R0_BLOCK)``), each step a nested value."""
        src = self._get(uses[0]) if uses else v
        flat = src.is_tile and src.kind != "b" and len(v.shape) >= 2 and any(v.shape)
        if flat:
            uses = [self._nested(("flat", *uses), list(uses), src.like(), [])]
        steps = [v.like(nbytes=2)] if f.get("dtype") == "uint8" and src.kind == "f" else []
        steps.append(v)
        for i, step in enumerate(steps):
            temps = [src.like(nbytes=4, kind="i", cls="e"), *_SCRATCH] if src.is_tile else []
            if i == len(steps) - 1 and not flat:
                return self._define(name, uses, temps, step)
            uses = [self._nested(("narrow", *uses, step.key()), list(uses), step.like(), temps)]
            src = step
        self._define(name, uses, [], v)

    def _accumulator(self, name: str, f: dict) -> None:
        """A looped reduction's accumulator: its first line initialises it (a full tile), each
        later one selects the combined value into it under the kernel's masks."""
        if name not in self.env:
            return self._define(name, [], [], self._val(f))
        uses: list[str] = []
        self.selects.update(self._masks(f["masks"], uses))
        uses += [n for n, g in self.values.items() if name in g.get("args", ()) and n in self.env]
        if f"{name}_next" in self.env:  # an argmax's ``maximum_with_index`` combination
            uses.append(f"{name}_next")
        self._define(name, uses + [name], [], self._val(f))

    def _arg_index(self, name: str, r: str) -> None:
        """A looped argmax's index accumulator, ``_tmpN_index``: a full tile of the index
        type before the loop, selected into in it."""
        acc = self.values[f"_{r}"]
        v = self._val(acc).like(nbytes=self.rec.get("index_bytes", 4), kind="i")
        if name not in self.env:
            return self._define(name, [], [], v)
        uses: list[str] = []
        self.selects.update(self._masks(acc.get("masks") or [], uses))
        self._define(name, [*uses, f"{name}_next", name], [], v)

    def _arg_next(self, name: str, r: str) -> None:
        """``_tmpN_next, _tmpN_index_next = maximum_with_index(_tmpN, _tmpN_index, tmp1,
        rindex)``: the helper's buffers on the accumulator's tile (as the source reader finds
        the helper's body)."""
        v = self._val(self.values[f"_{r}"])
        root = self.values[r].get("kind", "argmax").removeprefix("arg")
        extra = self._extra_tiles({"call": ["triton_helpers", f"{root}imum_with_index"]})
        uses = [f"_{r}", f"_{r}_index", self.before.get(r), "rindex"]
        temps = [v.like(cls="f") for _ in range(extra)]
        self._define(name, [u for u in uses if u], temps, v)

    def _welfords(self) -> None:
        """A looped welford's names upstream writes as text: its running ``tmpN_mean`` /
        ``_m2`` / ``_weight`` (the accumulator ``_tmpN`` codegen made), their combination
        ``tmpN_mean_next`` (three targets), and the final ``welford(...)``'s three values (the
        first of the 1-D values codegen made after the accumulator), each indexed back into
        one of the reduction's results (``tmpN`` and the values made after them)."""
        self.welford_acc: dict[str, str] = {}  # tmpN_mean / _m2 / _weight -> tmpN
        self.welford_next: dict[str, str] = {}  # tmpN_mean_next -> tmpN
        self.welford_raw: dict[str, list] = {}  # the final welford's first value -> operands
        self.welford_flat: dict[str, str] = {}  # a running value's flat view -> the value
        self.welford_out: dict[str, str] = {}  # a result -> the value it indexes
        names = list(self.values)
        ndim = self.rec["ndim"]
        for i, r in enumerate(names):
            f = self.values[r]
            if f.get("kind") != "welford_reduce" or f"_{r}" not in self.values:
                continue
            for part in ("mean", "m2", "weight"):
                self.welford_acc[f"{r}_{part}"] = r
            self.welford_next[f"{r}_mean_next"] = r
            accs = [f"{r}_{part}" for part in ("mean", "m2", "weight")]
            flats, raws, outs = [], [], [r]
            for n in names[i + 1 :]:
                g = self.values[n]
                if n == f"_{r}":
                    continue
                if g.get("kind") != "welford_reduce":
                    break
                shape = g.get("shape") or ()
                # two reduction axes: each running value's flat view (``tl.reshape``) first
                group = flats if "RBLOCK" in shape else raws if len(shape) < ndim else outs
                group.append(n)
            if raws:
                self.welford_raw[raws[0]] = flats[:3] if flats else accs
            self.welford_flat.update(zip(flats, accs))
            self.welford_out.update(zip(outs, raws))

    def _welford_acc(self, name: str, r: str) -> None:
        """``tmpN_mean = tl.zeros(...)`` before the loop; in it, ``tl.where(masks,
        tmpN_mean_next, tmpN_mean)``."""
        f = self.values[f"_{r}"]
        if name not in self.env:
            return self._define(name, [], [], self._val(f))
        uses: list[str] = []
        self.selects.update(self._masks(f.get("masks") or [], uses))
        self._define(name, [*uses, f"{name}_next", name], [], self._val(f))

    def _welford_next(self, name: str, r: str) -> None:
        """``welford_reduce(tmp1, tmpN_mean, tmpN_m2, tmpN_weight, roffset == 0)``: its operand
        the value codegen made just before the result (its broadcast)."""
        uses = [self.before.get(r), *(f"{r}_{p}" for p in ("mean", "m2", "weight")), "roffset"]
        self._define(name, [u for u in uses if u], [], self._val(self.values[f"_{r}"]))

    def _guarded(self, guard: list, x: str) -> tuple[list, list, _Val]:
        """``tl.where(tl.abs(x) == float('inf'), x - x, libdevice.j1(x))``: the abs, its
        comparison, the difference and the helper's call (with its buffers), each a nested
        value, selected between. The uses, temporaries and value."""
        abs_module, module, fn = guard
        xv = self._get(x)
        v = _Val(xv.shape, max(4, xv.nbytes), xv.kind)
        absv = self._nested(
            ("abs", abs_module, x),
            [x],
            v,
            [v.like(cls="f")] * self._extra_tiles({"call": [abs_module, "abs"]}),
        )
        inf = self._nested(("eq", absv, "inf"), [absv], _Val(xv.shape, 1, "b"), [])
        self.selects.add(inf)
        diff = self._nested(("sub", x, x), [x], v, [])
        extra = self._extra_tiles({"call": [module, fn]})
        call = self._nested(("call", fn, x), [x], v, [v.like(cls="f") for _ in range(extra)])
        return [inf, diff, call], [], v

    def _signbit(self, x: str) -> tuple[list, list, _Val]:
        """Upstream prints a sign test ``(libdevice.signbit(x) != 0) if (x).dtype is tl.float32
        or (x).dtype is tl.float64 else x < 0``, its branch chosen by the dtype when Triton
        compiles it; the source reader prices every part (both dtype tests, their ``or``, the
        call, its comparison and the other branch), an over-count the UB model was calibrated
        on, so each is a nested value here too. The uses, temporaries and value."""
        xv = self._get(x)
        bit = _Val(xv.shape, 1, "b")
        tests = [self._nested(("is", dt, x), [x], bit, []) for dt in ("float32", "float64")]
        test = self._nested(("or", *tests), tests, bit, [])
        call = self._nested(("signbit", x), [x], _Val(xv.shape, max(4, xv.nbytes), xv.kind), [])
        body = self._nested(("ne", call, "0"), [call], bit, [])
        other = self._nested(("lt", x, "0"), [x], bit, [])
        return [test, body, other], [], bit

    def _test(self, op: str, f: dict, uses: list[str], extra: int) -> str:
        """``libdevice.isnan(x).to(tl.int1)``: the helper's value (its operand's tile, at least
        four bytes, with the helper's buffers) a nested value of its own, then the cast."""
        src = [self._get(u) for u in uses]
        tiles = [x for x in src if x.is_tile] or src
        call = _Val(_broadcast(*(x.shape for x in tiles)), max(4, *(x.nbytes for x in tiles)))
        call = call.like(kind=tiles[0].kind)
        temps = [call.like(cls="f") for _ in range(extra)]
        return self._nested(("call", op, *uses), list(uses), call, temps)

    def _argreduce(self, name: str, f: dict) -> None:
        """``tmp8_val, tmp8_idx = max_with_index(tmp6, tmp9, 1)``: the masked operand reduced
        along the reduction's axis (the source reader's value class: the operand's bytes)."""
        a = f["argreduce"]
        masked = self._get(a["value"]) if a["value"] else self._val(f)
        kept = f.get("shape") or ()
        flat = (self.values.get(a["value"]) or {}).get("shape") or ()
        axis = next((i for i, d in enumerate(kept) if d is None and i < len(flat) and flat[i]), -1)
        shape = tuple(d for i, d in enumerate(masked.shape) if i != axis)
        uses = [u for u in (a["value"], a["index"]) if u]
        self._define(name, uses, [], masked.like(shape=shape, cls="v"))

    def _flat(self, name: str, outer: str, inner: str) -> None:
        """Two reduction trees' flat index, ``r1_index + r0_index*r1_numel``: the product a
        nested value, then the sum."""
        a, b = self._get(outer), self._get(inner)
        temps: list = []
        emulation(a.like(), "mul", temps)
        prod = self._nested(("mul", outer, "numel"), [outer], a.like(), temps)
        self._define(name, [inner, prod], [], a.like(shape=_broadcast(a.shape, b.shape)))

    def _skew(self, name: str, f: dict, uses: list[str], v: _Val) -> _Val:
        """Two reduction axes: upstream reduces a flat view (``tl.reshape(t, [XBLOCK,
        RBLOCK])``), which the source reader prices with its operand's shape (a call it does not
        know); the reduced value is then indexed back (``[:, None, None]``) from that shape,
        and the values computed from it broadcast it, a skewed over-count. The UB model's
        weights were calibrated on the source reader's figures, so they are reproduced here."""
        args = f.get("args") or []
        if self.flat and f["op"] == "reduction" and "RBLOCK" in (f.get("shape") or ()) and args:
            return v.like(shape=self._get(args[0]).shape)
        flat = self.values.get(args[0], {}).get("shape") or () if args else ()
        if self.flat and f["op"] == "reduction" and "RBLOCK" in flat:
            axis = flat.index("RBLOCK")
            rest = iter(d for i, d in enumerate(self._get(args[0]).shape) if i != axis)
            shape = [None if d is None else next(rest, None) for d in f.get("shape") or ()]
            self.skewed.add(name)
            return v.like(shape=(*shape, *rest))
        if f["op"] != "reduction" and any(u in self.skewed for u in uses):
            self.skewed.add(name)
            return v.like(shape=_broadcast(*(self._get(u).shape for u in uses)))
        return v

    def _extra_tiles(self, f: dict) -> int:
        """The buffers an op's function keeps beside its result: a helper of the kernel's
        math modules (``libdevice.erf``, as codegen printed it) what its inlined body keeps
        live (ub_profile's ``_Helpers``), a native one its expansion's (``_MATH_TEMPS``)."""
        alias, fn = f.get("call") or (None, f.get("op") or "")
        if alias is not None:
            if self.helpers is None:
                self.helpers = _Helpers(self.rec.get("imports", ""))
            extra = self.helpers.extra_tiles(None, alias, fn)
            if extra is not None:
                return extra
        return _MATH_TEMPS.get(fn, 0)

    def _define(self, name: str, uses: list, temps: list, v: _Val) -> None:
        self._assigned(name)
        self.env[name] = v
        self.stmts.append((name, uses, temps, v))

    # -- the body -----------------------------------------------------------------------
    def run(self) -> dict:
        loops: list[list[int]] = []
        open_loops: list[tuple[int, int]] = []  # (indentation, first statement)
        stores = list(self.rec["stores"])
        checks = iter(self.rec.get("asserts", ()))
        for indent, name, kind in self.rec["lines"]:
            while open_loops and indent <= open_loops[-1][0]:
                loops.append([open_loops.pop()[1], len(self.stmts) - 1])
            if kind == "for":
                open_loops.append((indent, len(self.stmts)))
                self.stmts.append((None, [], [], _SCALAR))
            elif kind == "alias":  # another target of a tuple assignment: the same value
                prev = self.stmts[-1][3] if self.stmts else None
                self.stmts.append((name, [], [], prev))
                self.env[name] = prev or _SCALAR
            elif kind == "assert":
                a = next(checks, None)
                if a is not None:
                    self._assert(a)
            elif kind == "store":
                # the store through the line's pointer (a record without it: the next one)
                s = next((t for t in stores if t["ptr"] == name), stores[0] if stores else None)
                if s is not None:
                    stores.remove(s)
                    self._store(s)
            elif name in self.arg_acc:
                self._arg_index(name, self.arg_acc[name])
            elif name in self.arg_next:
                self._arg_next(name, self.arg_next[name])
            elif name in self.welford_acc:
                self._welford_acc(name, self.welford_acc[name])
            elif name in self.welford_next:
                self._welford_next(name, self.welford_next[name])
            elif name and name.endswith("_val") and self.values.get(name[:-4], {}).get("argreduce"):
                self._argreduce(name, self.values[name[:-4]])
            elif name in self.values and self.values[name]["op"] == "load":
                self._load(name, self.values[name])
            elif name in self.values and self.values[name].get("kind") == "accumulator":
                self._accumulator(name, self.values[name])
            elif name in self.values:
                self._op(name, self.values[name])
            elif name in self.rec["entries"]:
                # a range tree's index variable, ``x1 = ((xindex // 16) % 10)``: its printed
                # operations below the last each a value of their own
                e = self.rec["entries"][name]
                v, uses, temps, _ = ub_index.value(self, e.get("tree", e["root"]), "v", True)
                self._define(name, uses, temps, v)
            elif name in self.flat:
                self._flat(name, *self.flat[name])
            elif name in self.headers:
                v, uses = self.headers[name]
                if name in self.cast_aranges:  # ``xoffset + tl.arange(...).to(tl.int64)``
                    uses = [self._nested(("arange", name, len(self.stmts)), [], v.like(), [])]
                self._define(name, uses, [], v)
            else:
                self._assigned(name)
                self.env[name] = _SCALAR
                self.stmts.append((name, [], [], _SCALAR))
        while open_loops:
            loops.append([open_loops.pop()[1], len(self.stmts) - 1])
        return self._finish(sorted(loops))

    def _finish(self, loops: list) -> dict:
        """Masks no ``tl.where`` or strided/gathered transfer selects with only bound: their
        bits (``k``); then each statement's keys."""
        stmts = []
        for d, uses, temps, v in self.stmts:
            if v is not None and v.kind == "b" and d not in self.selects and v.is_tile:
                v = v.like(cls="k")  # its broadcast operands too: a bound's bits
                temps = [
                    t.like(cls="k") if not isinstance(t, str) and t.kind == "b" else t
                    for t in temps
                ]
            stmts.append(
                [
                    d,
                    list(uses),
                    [t if isinstance(t, str) else t.key() for t in temps],
                    v.key() if v is not None and v.is_tile else None,
                ]
            )
        out = {"stmts": stmts, "loops": loops, "blocks": dict(self.rec.get("blocks", {}))}
        if self.padded:
            out["padded"] = dict(self.padded)
        return out


def statements(record: dict, pointer_dtypes: dict[str, str] | None = None) -> dict:
    """The statement list (ub_liveness) of a kernel from codegen's record of it."""
    if "failed" in record:  # codegen could not record the kernel: read its source instead
        raise ValueError(f"no codegen record: {record['failed']}")
    return _Convert(record, dict(pointer_dtypes or {})).run()


def profile(record: dict, pointer_dtypes: dict[str, str] | None = None) -> dict:
    """The UB profile of a kernel from codegen's record (``statements``, priced by
    ub_liveness.profile_of), as ``ub_profile.profile`` gives it from the source."""
    return ub_liveness.profile_of(statements(record, pointer_dtypes))
