"""The body of a generated Triton kernel as the unified-buffer (UB) model sees it.

``profile(source, pointer_dtypes, name)`` walks the kernel's statements once and records,
for each statement where the set of live values may peak, the live buffers as keys
``class|dims:bytes`` with a count (dims in Inductor's dimension order, ``1`` for a size-1
dimension; classes in ub_model.CLASSES), plus the body's constexpr blocks (a persistent
reduction's R0_BLOCK), the tile shapes kept in a strided layout and the number of tile
operations. ub_model prices a profile for a config. What the walker knows of bishengir's
lowering is in the npu-inductor-core README ("The UB model").
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import textwrap
from pathlib import Path

from . import ub_address as address
from . import ub_liveness
from .ub_values import (  # noqa: F401 (ALIGN re-exported)
    _SCALAR,
    _SCRATCH,
    ALIGN,
    Shape,
    _broadcast,
    _kind_of,
    _Val,
    emulation,
    mask_combine,
    strided_buffer,
)
from .ub_names import (
    _AXES,
    _DTYPE_BYTES,
    _MATH_TEMPS,
    _REDUCTIONS,
    _SCANS,
    _VALUE_AND_INDEX,
)


def _dtype_name(node) -> str | None:
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
    return name if name in _DTYPE_BYTES else None


def _axis(node) -> str | None:
    """The axis a block-size expression names: Inductor's blocks by their short name, any
    other constexpr (a template's BLOCK_M) by its own, a literal size above 1 as ``#n``."""
    if isinstance(node, ast.Name):
        return _AXES.get(node.id, node.id)
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and node.value > 1:
        return f"#{node.value}"
    return None


def _shape_of_list(node) -> Shape | None:
    if not isinstance(node, (ast.List, ast.Tuple)):
        return None
    return tuple(_axis(e) for e in node.elts)


def _arange_block(node) -> str | None:
    """BLOCK when ``node`` is ``tl.arange(0, BLOCK)`` (possibly indexed with None)."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if (
        isinstance(node, ast.Call)
        and getattr(node.func, "attr", None) == "arange"
        and len(node.args) == 2
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value == 0
        and isinstance(node.args[1], ast.Name)
    ):
        return node.args[1].id
    return None


# the operations that make a value (a call may be a math function, a cast or a load)
_OPERATIONS = (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.Call)


_ARITH = {ast.Mod: "mod", ast.FloorDiv: "floordiv", ast.Div: "truediv", ast.Mult: "mul"}


class _Body:
    """One pass over the body: each statement's value shapes, then liveness."""

    def __init__(
        self, pointer_dtypes: dict[str, str], helpers: "_Helpers", scope: dict | None = None
    ):
        self.ptr = pointer_dtypes
        self.helpers = helpers
        self.scope = scope  # a helper's module globals (None: the kernel body itself)
        self.env: dict[str, _Val] = {}
        self.irregular: set[str] = set()  # names whose values make an index non-affine
        self.padded: dict[str, int] = {}  # tile shapes kept in a strided layout: bytes an element
        self.consts: dict[str, int] = {}  # names assigned an integer constant (static numels)
        self.selects: set[str] = (
            set()
        )  # names a tl.where selects with (masks that are materialized)
        self.aranges: dict[str, str] = {}  # names holding tl.arange(0, BLOCK) itself: the BLOCK
        self.constexprs: dict[str, int] = {}
        self.stmts: list[
            tuple[str | None, list[str], list, _Val | None]
        ] = []  # (def, uses, temps, value)
        self.loops: list[tuple[int, int]] = []  # statement index ranges of loop bodies
        self.cse: dict[str, str] = {}  # a nested operation's expression -> its value's name
        self.cse_names: dict[str, set[str]] = {}  # a name -> the expressions written over it
        self.named: dict[int, str] = {}  # id of a nested operation's node -> its value's name
        self.flatten = True  # nested operations are values of their own (False: an address)
        self.op_cls = "v"  # the class of a nested operation's buffer ("g": gather offsets)
        self.owned: dict[str, tuple[int, int]] = {}  # a name -> its nested operations' range
        self.bounds_ops: set[str] = set()  # nested operations of masks that only bound

    # -- expressions -------------------------------------------------------------------
    def expr(self, node, temps: list, uses: list[str], nested: bool = True) -> _Val:
        """The value of an expression. A nested operation with a tile result is a value of its
        own (``_operation``), as in the compiler's SSA form."""
        if nested and self.flatten and isinstance(node, _OPERATIONS):
            return self._operation(node, temps, uses)
        return self._expr(node, temps, uses)

    def _operation(self, node, temps: list, uses: list[str]) -> _Val:
        """A nested operation as a statement of its own, placed before the statement it is part
        of: its buffer lives from there to its last use, so evaluating a long expression holds
        only the results still to be combined, and an operation written again later (the same
        expression over the same names) is computed once and kept (the compiler's CSE), which
        is how bishengir plans upstream's min/max index macros repeated over 27 gather taps."""
        own_temps: list = []
        own_uses: list[str] = []
        v = self._expr(node, own_temps, own_uses)
        if not v.is_tile:
            temps.extend(own_temps)
            uses.extend(own_uses)
            return v
        key, names = self._key(node)
        name = self.cse.get(key)
        if name is None:
            name = f"{ub_liveness.NESTED}{len(self.stmts)}"
            self.stmts.append((name, own_uses, own_temps, v.like(cls=self.op_cls)))
            self.env[name] = self.stmts[-1][3]
            self.cse[key] = name
            for n in names:
                self.cse_names.setdefault(n, set()).add(key)
        self.named[id(node)] = name
        uses.append(name)
        return self.env[name]

    def _key(self, node) -> tuple[str, list[str]]:
        """An operation's expression with its nested operations named by their values (so
        equal keys are equal values, in constant time per operation), and the names it reads
        directly."""
        parts, names = [type(node).__name__], []
        for _, field in ast.iter_fields(node):
            for child in field if isinstance(field, list) else [field]:
                if not isinstance(child, ast.AST):
                    parts.append(repr(child))
                elif id(child) in self.named:
                    parts.append(self.named[id(child)])
                else:
                    parts.append(ast.dump(child))
                    names.extend(n.id for n in ast.walk(child) if isinstance(n, ast.Name))
        return "|".join(parts), names

    def _assigned(self, name: str) -> None:
        """A name assigned again: the operations written over it are new values."""
        for key in self.cse_names.pop(name, ()):
            self.cse.pop(key, None)

    def _operations_in(self, names) -> set[str]:
        """The nested operations (``_operation``) whose values the names reach."""
        out: set[str] = set()
        nested = ub_liveness.NESTED
        todo = [n for n in names if n.startswith(nested)]
        while todo:
            n = todo.pop()
            if n not in out:
                out.add(n)
                todo.extend(u for u in self.stmts[int(n[len(nested) :])][1] if u.startswith(nested))
        return out

    def _expr(self, node, temps: list, uses: list[str]) -> _Val:
        if isinstance(node, ast.Name):
            uses.append(node.id)
            return self.env.get(node.id, _SCALAR)
        if isinstance(node, ast.Constant):
            return _Val(
                (),
                4,
                "b"
                if isinstance(node.value, bool)
                else "i"
                if isinstance(node.value, int)
                else "f",
            )
        if isinstance(node, ast.BinOp):
            a, b = self.expr(node.left, temps, uses), self.expr(node.right, temps, uses)
            tiles = [x for x in (a, b) if x.is_tile] or [a, b]
            kind = (
                "f"
                if any(x.kind == "f" for x in tiles) or isinstance(node.op, ast.Div)
                else tiles[0].kind
            )
            nbytes = max(x.nbytes for x in tiles)
            if isinstance(node.op, ast.Div):
                nbytes = max(nbytes, 4)
            v = _Val(_broadcast(a.shape, b.shape), nbytes, kind)
            self._emulation(v, node.op, temps)
            mask_combine(v, (a, b), temps)
            return v
        if isinstance(node, ast.UnaryOp):
            return self.expr(node.operand, temps, uses).like()
        if isinstance(node, ast.Compare):
            vals = [self.expr(node.left, temps, uses)] + [
                self.expr(c, temps, uses) for c in node.comparators
            ]
            if self._always_true(node):
                return _Val((), 1, "b")
            return _Val(_broadcast(*(v.shape for v in vals)), 1, "b")
        if isinstance(node, ast.BoolOp):
            vals = [self.expr(v, temps, uses) for v in node.values]
            return _Val(_broadcast(*(v.shape for v in vals)), 1, "b")
        if isinstance(node, ast.IfExp):
            vals = [self.expr(v, temps, uses) for v in (node.test, node.body, node.orelse)]
            return _Val(
                _broadcast(*(v.shape for v in vals)), max(v.nbytes for v in vals[1:]), vals[1].kind
            )
        if isinstance(node, ast.Subscript):
            v = self._expr(node.value, temps, uses)
            return _Val(self._index(v.shape, node.slice), v.nbytes, v.kind, v.cls)
        if isinstance(node, ast.Call):
            return self.call(node, temps, uses)
        if isinstance(node, (ast.Tuple, ast.List)):
            vals = [self.expr(e, temps, uses) for e in node.elts]
            return max(vals, key=lambda v: (len(v.shape), v.nbytes), default=_SCALAR)
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id in (
                "tl",
                "triton_helpers",
                "libdevice",
                "tl_math",
            ):
                return _SCALAR
            return self._expr(node.value, temps, uses)
        for child in ast.iter_child_nodes(node):
            self.expr(child, temps, uses)
        return _SCALAR

    def _always_true(self, node: ast.Compare) -> bool:
        """``r0_index < r0_numel`` in a persistent reduction whose block covers the constant
        numel exactly: the compiler folds the mask away."""
        if not (
            len(node.ops) == 1
            and isinstance(node.ops[0], ast.Lt)
            and isinstance(node.left, ast.Name)
            and isinstance(node.comparators[0], ast.Name)
        ):
            return False
        block = self.aranges.get(node.left.id)
        numel = self.consts.get(node.comparators[0].id)
        return block is not None and numel is not None and self.constexprs.get(block) == numel

    @staticmethod
    def _emulation(v: _Val, op, temps: list) -> None:
        emulation(v, _ARITH.get(type(op)), temps)

    @staticmethod
    def _index(shape: Shape, sl) -> Shape:
        elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        if not any(isinstance(e, ast.Constant) and e.value is None for e in elts):
            return shape
        out, it = [], iter(shape)
        for e in elts:
            if isinstance(e, ast.Constant) and e.value is None:
                out.append(None)
            else:
                out.append(next(it, None))
        out.extend(it)
        return tuple(out)

    def _pointer(self, node, temps: list, uses: list[str]) -> tuple[str | None, _Val]:
        """A load's or store's address: ``ptr + offsets``. Affine offsets become a strided
        DMA (no buffer); others (``%``, ``//``, an indirect index) a gather whose offsets are
        computed as tiles: each step a value of its own (``_operation``) of the gather-offset
        class, the last one the offsets the gather reads."""
        dtype = next(
            (
                self.ptr[n.id]
                for n in ast.walk(node)
                if isinstance(n, ast.Name) and n.id in self.ptr
            ),
            None,
        )
        gather = address.is_irregular(node, self.irregular)
        own: list = []
        saved = self.flatten, self.op_cls
        self.flatten, self.op_cls = gather, "g"
        try:
            v = self.expr(node, own, uses, nested=False)
        finally:
            self.flatten, self.op_cls = saved
        if gather:
            temps.extend(t if isinstance(t, str) or t.cls != "v" else t.like(cls="g") for t in own)
            temps.append(v.like(kind="i", cls="g"))
        return dtype, v

    def _strided(self, ptr, shape: Shape, nbytes: int, temps: list) -> bool:
        """A tile whose innermost dimension is strided in memory: the DMA brings each element
        with its neighbours (a stride of 2 elements is de-interleaved from the span it
        covers; a wider one takes a 32-byte block per element) into a staging buffer.
        True when the access is strided. Reduced
        along that dimension, every value of the tile keeps the layout; otherwise the tile is
        transposed into the normal one."""
        inner = next((d for d in reversed(shape) if d), None)
        if inner is None:
            return False
        stride = address.inner_stride(ptr, inner, self.env, self.ptr, self.irregular)
        if stride is None:
            return False
        strided_buffer(shape, stride, nbytes, self.padded, temps)
        return True

    def call(self, node: ast.Call, temps: list, uses: list[str]) -> _Val:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        kw = {k.arg: k.value for k in node.keywords}
        method = isinstance(func, ast.Attribute) and not (
            isinstance(func.value, ast.Name) and func.value.id == "tl"
        )
        if method and name in ("to", "broadcast_to", "reshape"):
            v = self.expr(func.value, temps, uses)
            if name == "to":
                dt = _dtype_name(node.args[0]) if node.args else None
                if dt is None:
                    return v.like()
                out = v.like(nbytes=_DTYPE_BYTES[dt], kind=_kind_of(dt))
                if out.is_tile and out.kind == "i" and out.nbytes < 4 and not kw.get("bitcast"):
                    temps.append(v.like(nbytes=4, kind="i", cls="e"))
                    temps.extend(_SCRATCH)
                return out
            if len(node.args) == 1 and isinstance(node.args[0], ast.BinOp):
                # a flat view (``x.reshape(XBLOCK * R0_BLOCK)``) priced as the tile it
                # flattens: its rows padded each, never less than the flat buffer
                return v.like()
            shape = tuple(_axis(a) for a in node.args) if node.args else v.shape
            return v.like(shape=shape)
        if name in (
            "load",
            "store",
            "atomic_add",
            "atomic_max",
            "atomic_min",
            "atomic_cas",
            "atomic_xchg",
        ):
            ptr = node.args[0] if node.args else kw.get("pointer")
            dtype, idx = self._pointer(ptr, temps, uses)
            positional = list(node.args[1:])
            value_node = (
                positional.pop(0)
                if name != "load" and positional
                else kw.get("value", kw.get("val"))
            )
            value = self.expr(value_node, temps, uses) if value_node is not None else _SCALAR
            # a mask only bounds the transfer: its bits, never a broadcast buffer ("k")
            bounds: list = []
            first = len(self.stmts)
            mask_uses: list[str] = []
            rest = [self.expr(a, bounds, mask_uses) for a in positional]
            rest += [
                self.expr(v, bounds, mask_uses) for k, v in kw.items() if k in ("mask", "other")
            ]
            uses.extend(mask_uses)
            nbytes = _DTYPE_BYTES.get(dtype or "", 4)
            shape = (
                _broadcast(idx.shape, *(v.shape for v in rest)) if name == "load" else value.shape
            )
            # a contiguous transfer is bounded by its mask; a strided or gathered one selects
            # its elements with it, so the mask is materialized
            selects = self._strided(ptr, shape, nbytes, temps) or address.is_irregular(
                ptr, self.irregular
            )
            if selects:
                self.selects.update(
                    n.id
                    for a in (*positional, *kw.values())
                    for n in ast.walk(a)
                    if isinstance(n, ast.Name)
                )
                self.selects.update(self._operations_in(mask_uses))
            else:
                self.bounds_ops.update(op for op, _, _, _ in self.stmts[first:])
            temps.extend(
                t if isinstance(t, str) or t.kind != "b" or selects else t.like(cls="k")
                for t in bounds
            )
            if name != "load":
                return _SCALAR
            return _Val(shape, nbytes, _kind_of(dtype), cls="l")
        args, arg_uses = [], []
        for a in node.args:
            arg_uses.append([])
            args.append(self.expr(a, temps, arg_uses[-1]))
            uses.extend(arg_uses[-1])
        if name == "arange":
            axis = _axis(node.args[1]) if len(node.args) >= 2 else None
            return _Val((axis,) if axis else (), 4, "i")
        if name in ("full", "zeros", "ones"):
            shape = _shape_of_list(node.args[0]) if node.args else ()
            dt = (
                (_dtype_name(node.args[-1]) if len(node.args) >= 2 else None)
                or _dtype_name(kw.get("dtype"))
                or "float32"
            )
            return _Val(shape or (), _DTYPE_BYTES[dt], _kind_of(dt))
        if name == "broadcast_to" and len(node.args) >= 2:
            shape = _shape_of_list(node.args[1])
            return args[0].like(shape=shape if shape is not None else args[0].shape)
        if name in ("device_assert", "static_assert", "program_id", "num_programs", "cdiv") or (
            name in ("minimum", "maximum", "min", "max") and not any(a.is_tile for a in args)
        ):
            return _SCALAR
        if name == "dot" and len(args) >= 2:  # a Cube matmul: the accumulator comes back to the UB
            a, b = args[0].shape or (None, None), args[1].shape or (None, None)
            return _Val((a[0], b[-1]), 4, "f")
        if name == "where":
            if node.args:
                self.selects.update(n.id for n in ast.walk(node.args[0]) if isinstance(n, ast.Name))
                self.selects.update(self._operations_in(arg_uses[0]))
                for t in temps:  # the condition's own operations: a select mask
                    if not isinstance(t, str) and t.kind == "b":
                        t.cls = "v"
            vals = [v for v in args[1:] if v.is_tile] or args[1:] or args
            return _Val(
                _broadcast(*(v.shape for v in args)), max(v.nbytes for v in vals), vals[0].kind
            )
        if name in _REDUCTIONS:
            src = args[0] if args else _SCALAR
            axis = node.args[1] if len(node.args) >= 2 else kw.get("axis")
            if name in _VALUE_AND_INDEX and len(node.args) >= 3:
                # max_with_index(value, index, 1) reduces along its third argument: read as the
                # second, the index it returns looked unreduced and ``[:, None]`` made an XBLOCK
                # x XBLOCK x R0_BLOCK tile (a 13 x 13 max-pool was estimated 20x bishengir's plan
                # and ran at XBLOCK 2). welford(mean, m2, weight, 1) is still read as unreduced:
                # that over-count stands in for the temporaries of npu's vector welford, which
                # the profile does not see (read by its axis, a layer norm's row of 2048 went
                # below bishengir's plan on the 910B2: 151,176 B against 164,608)
                axis = node.args[2]
            if (
                name in _SCANS
                or not isinstance(axis, ast.Constant)
                or not isinstance(axis.value, int)
            ):
                return src.like()
            return src.like(shape=tuple(d for i, d in enumerate(src.shape) if i != axis.value))
        # pointwise math (tl_math, libdevice, triton_helpers helpers): the widest tile operand
        tiles = [a for a in args if a.is_tile]
        if not tiles:
            return _Val((), max((a.nbytes for a in args), default=4))
        v = _Val(
            _broadcast(*(a.shape for a in tiles)), max(4, *(a.nbytes for a in tiles)), tiles[0].kind
        )
        alias = (
            func.value.id
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
            else None
        )
        extra = self.helpers.extra_tiles(self.scope, alias, name)
        if (
            extra is None
        ):  # a native operation: what HFusion's expansion of it keeps beside the result
            extra = _MATH_TEMPS.get(name, 0)
        # Philox (tl.rand*) apart from the other math: the compilers keep its temporaries
        # differently (910B's keeps every call's to the end of the body)
        temps.extend(v.like(cls="r" if name.startswith("rand") else "f") for _ in range(extra))
        return v

    # -- statements --------------------------------------------------------------------
    def block(self, stmts) -> None:
        for s in stmts:
            if isinstance(s, ast.For):
                start = len(self.stmts)
                uses: list[str] = []
                self.expr(s.iter, [], uses)
                self.stmts.append((getattr(s.target, "id", None), uses, [], _SCALAR))
                self.env[getattr(s.target, "id", "_")] = _SCALAR
                self._assigned(getattr(s.target, "id", "_"))
                self.block(s.body)
                self.loops.append((start, len(self.stmts) - 1))
            elif isinstance(s, ast.AnnAssign):
                if (
                    isinstance(s.target, ast.Name)
                    and isinstance(s.value, ast.Constant)
                    and isinstance(s.value.value, int)
                ):
                    self.constexprs[s.target.id] = s.value.value
                    self.env[s.target.id] = _SCALAR
            elif isinstance(s, ast.Assign):
                temps, uses = [], []
                start = len(self.stmts)
                v = self.expr(s.value, temps, uses, nested=False)
                irregular = address.is_irregular(s.value, self.irregular)
                const = (
                    s.value.value
                    if isinstance(s.value, ast.Constant) and isinstance(s.value.value, int)
                    else None
                )
                block = _arange_block(s.value)
                targets = s.targets[0].elts if isinstance(s.targets[0], ast.Tuple) else s.targets
                for i, t in enumerate(targets):
                    name = getattr(t, "id", None)
                    if name is None:
                        continue
                    self.env[name] = v
                    self._assigned(name)
                    self.owned[name] = (start, len(self.stmts))
                    (self.irregular.add if irregular else self.irregular.discard)(name)
                    if const is not None:
                        self.consts[name] = const
                    if block is not None:
                        self.aranges[name] = block
                    elif isinstance(s.value, ast.Name) and s.value.id in self.aranges:
                        self.aranges[name] = self.aranges[s.value.id]
                    self.stmts.append((name, uses if i == 0 else [], temps if i == 0 else [], v))
            elif (
                isinstance(s, (ast.Expr, ast.If, ast.While, ast.Return))
                and getattr(s, "value", s) is not None
            ):
                temps, uses = [], []
                node = s.test if isinstance(s, (ast.If, ast.While)) else s.value
                self.expr(node, temps, uses, nested=False)
                self.stmts.append((None, uses, temps, None))
                if isinstance(s, (ast.If, ast.While)):
                    self.block(s.body)
                    self.block(s.orelse)

    def _bounds_only(self) -> None:
        """A mask no tl.where selects with only bounds loads and stores: its bits, never a
        broadcast buffer."""
        for d, _, temps, v in self.stmts:
            if d is not None and v is not None and v.kind == "b" and d not in self.selects:
                v.cls = "k"
                for t in temps:
                    if not isinstance(t, str) and t.kind == "b":
                        t.cls = "k"
                lo, hi = self.owned.get(d, (0, 0))
                self.bounds_ops.update(op for op, _, _, _ in self.stmts[lo:hi])
        for op, _, _, made in self.stmts:
            if op in self.bounds_ops and op not in self.selects and made.kind == "b":
                made.cls = "k"

    def record(self) -> dict:
        """The body as a statement list (ub_liveness): each statement's defined name, the
        names it uses, its temporaries' keys and its value's key when the value is a tile."""
        self._bounds_only()
        stmts = [
            [
                d,
                list(uses),
                [t if isinstance(t, str) else t.key() for t in temps],
                v.key() if v is not None and v.is_tile else None,
            ]
            for d, uses, temps, v in self.stmts
        ]
        out = {"stmts": stmts, "loops": [list(r) for r in self.loops], "blocks": self.constexprs}
        if self.padded:
            out["padded"] = dict(self.padded)
        return out


class _Helpers:
    """The @triton.jit helpers a kernel calls (our portable libdevice, triton_helpers, the
    kernel file's own combine functions): a call of one costs the buffers its inlined body
    keeps live beside the result. Found through the kernel file's own imports (the modules
    are those the kernel runs with), then through each helper's module globals."""

    def __init__(self, kernel_source: str | ast.Module):
        # the kernel's parsed module may be handed over (parsing a large kernel twice costs)
        tree = (
            kernel_source
            if isinstance(kernel_source, ast.Module)
            else ast.parse(textwrap.dedent(kernel_source))
        )
        self.local = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        self.namespace = _imported_names(tree)
        self._memo: dict[object, int] = {}

    def extra_tiles(self, scope, alias: str | None, name: str) -> int | None:
        """Extra buffers of a call ``alias.name(...)`` (``alias`` None: an unqualified name)
        made from ``scope`` (None: the kernel body; else a helper's module globals)."""
        fn_def, fn_scope, key = None, None, None
        if scope is None and alias is None and name in self.local:
            fn_def, fn_scope, key = self.local[name], None, ("local", name)
        else:
            names = self.namespace if scope is None else scope
            target = names.get(alias) if alias is not None else names.get(name)
            target = getattr(target, name, None) if alias is not None else target
            py = getattr(target, "fn", None)  # a JITFunction wraps the Python function
            if py is None or not hasattr(py, "__globals__"):
                return None
            key = target
            if key not in self._memo:
                try:
                    fn_def = next(
                        n
                        for n in ast.parse(textwrap.dedent(inspect.getsource(py))).body
                        if isinstance(n, ast.FunctionDef)
                    )
                except (OSError, TypeError, StopIteration, SyntaxError):
                    return None
                fn_scope = py.__globals__
        if key not in self._memo:
            self._memo[key] = 0  # recursion guard
            body = _Body({}, self, fn_scope)
            for a in fn_def.args.args:
                body.env[a.arg] = _Val(("A",), 4, "f")
            body.block(fn_def.body)
            rec = body.record()
            peak = max(
                (
                    sum(c for k, c in p.items() if k.split("|")[-1].startswith("A:"))
                    for p in ub_liveness.live_points(rec["stmts"], rec["loops"])
                ),
                default=1,
            )
            self._memo[key] = max(0, peak - 1)
        return self._memo[key]


def _imported_names(tree) -> dict:
    """What the kernel file's top-level imports bind (modules and objects), importing only
    modules that are importable; a kernel whose helpers cannot be found costs its calls as
    native operations."""
    out: dict = {}
    for n in tree.body:
        try:
            if isinstance(n, ast.Import):
                for a in n.names:
                    if a.asname:
                        out[a.asname] = importlib.import_module(a.name)
            elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
                mod = importlib.import_module(n.module)
                for a in n.names:
                    obj = getattr(mod, a.name, None)
                    if obj is None:
                        obj = importlib.import_module(f"{n.module}.{a.name}")
                    out[a.asname or a.name] = obj
        except Exception:  # noqa: BLE001 - an import the estimate cannot follow
            continue
    return out


def _size_rank(v: _Val) -> tuple:
    return (sum(1 for d in v.shape if d), v.nbytes, v.cls == "l")


def statements(
    body: str,
    pointer_dtypes: dict[str, str] | None = None,
    name: str | None = None,
    helpers_source: str | None = None,
) -> dict:
    """The statement list (ub_liveness) of a kernel body: its statements, or source holding
    the ``def`` of the kernel ``name``, or of the only function. The helpers a call may inline
    are found through ``helpers_source`` (the kernel module's imports and helper functions;
    default: ``body`` itself)."""
    tree = ast.parse(textwrap.dedent(body))
    stmts = tree.body
    defs = [s for s in stmts if isinstance(s, ast.FunctionDef) and (name is None or s.name == name)]
    if name is not None and not defs:
        raise LookupError(f"no kernel {name!r} in the source")
    if defs and (name is not None or len(defs) == 1):
        stmts = defs[0].body
    b = _Body(
        dict(pointer_dtypes or {}), _Helpers(tree if helpers_source is None else helpers_source)
    )
    b.block(stmts)
    return b.record()


def profile(
    body: str, pointer_dtypes: dict[str, str] | None = None, name: str | None = None
) -> dict:
    """The UB profile of a kernel body read from its source (``statements``, priced by
    ub_liveness.profile_of): the live buffers at each statement where the peak may fall, and
    the body's constexpr blocks (a persistent reduction's R0_BLOCK)."""
    return ub_liveness.profile_of(statements(body, pointer_dtypes, name))


@functools.lru_cache(maxsize=1024)
def _cached_profile(filename: str, mtime: float, name: str, pointers: tuple) -> dict | None:
    try:
        source = Path(filename).read_text()
    except OSError:
        return None
    try:
        return profile(source, dict(pointers), name=name)
    except (SyntaxError, LookupError):
        return None


def kernel_profile(filename: str | None, name: str | None, signature: dict) -> dict | None:
    """The profile of kernel ``name`` in its generated file (None when the file is gone or
    not a kernel's): what the heuristics tile with, read once per file version."""
    if not filename or not name:
        return None
    try:
        mtime = Path(filename).stat().st_mtime
    except OSError:
        return None
    return _cached_profile(filename, mtime, name, tuple(sorted(pointer_dtypes(signature).items())))


def pointer_dtypes(signature: dict) -> dict[str, str]:
    """The element type of each pointer argument of a Triton signature ({'in_ptr0': '*fp16'})."""
    return {k: str(t)[1:] for k, t in signature.items() if str(t).startswith("*")}
