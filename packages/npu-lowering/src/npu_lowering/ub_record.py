"""The values a kernel emits, recorded by codegen as it emits them, for the UB model's codegen
front end (``npu_inductor_core.ub_codegen``), which turns this record into the statement list
``ub_liveness`` prices; the kernel carries the profile made from it in its inductor_meta
(``record_ub_profile``), and the source read back by ``ub_profile`` is the fallback and the
cross-check (issue 35).

What comes from codegen's own objects: each CSE variable's dtype and block shape
(``create_cse_var``), the operation and operand variables of every op CSEProxy runs
(``record_op_trace``), a reduction's operand and the variables it makes, each load's and
store's pointer argument, sympy index and masks, the range trees' index variables and the
constexpr blocks; each index also as the operations the printer writes for it
(``index_printer.operations``). What still comes from the emitted lines: their order and loop
nesting (each line's defined name, the text before `` = ``, and ``for`` headers by
indentation), because upstream splices its buffers into the body in ``codegen_body`` with no
hook per line.
"""

from __future__ import annotations

import functools
import math
import re

import sympy
import torch
from torch._inductor.codegen.common import CSEVariable, is_buffer_removed

from torch.utils._sympy.functions import FloorDiv, ModularIndexing

from npu_inductor_core import ub_codegen, ub_model

from . import _compat
from .index_printer import operations
from torch._inductor.codegen.triton import TritonKernel

# an address whose index holds these is a gather (as ``x % 8`` / ``x // 8`` in the source)
_IRREGULAR = (ModularIndexing, FloorDiv, sympy.Mod)
_BROADCAST = re.compile(r"tl\.broadcast_to\((\w+), ")
_CALL = re.compile(r"(libdevice|tl_math|triton_helpers|tl)\.(\w+)\(")


def _dtype(dtype) -> str | None:
    return str(dtype).removeprefix("torch.") if isinstance(dtype, torch.dtype) else None


def _axis(dim) -> str | None:
    """A block shape's dimension as an axis name: ``XBLOCK`` -> ``XBLOCK`` (the converter maps
    it), ``1`` -> None."""
    text = str(dim)
    return None if text == "1" else text


def _shape(shape) -> list | None:
    return None if shape is None else [_axis(d) for d in shape]


def _recording(method):
    """A recording step never fails a compile: an error marks the record incomplete (the UB
    model then reads the kernel's source, as for kernels with no record)."""

    @functools.wraps(method)
    def step(self, *args, **kwargs):
        if self.failed is None and not self.paused:
            try:
                return method(self, *args, **kwargs)
            except Exception as e:  # noqa: BLE001 - a record, never a reason to fail a compile
                self.failed = f"{method.__name__}: {type(e).__name__}: {e}"
        return None

    return step


class Recorder:
    """One kernel's record, filled by NpuTritonKernel's hooks."""

    def __init__(self) -> None:
        self.values: dict[str, dict] = {}  # a defined name -> its facts
        self.stores: list[dict] = []  # stores in the order codegen emitted them
        self.entries: dict[str, dict] = {}  # range-tree index variables (x0 = xindex % 8)
        self.asserts: list[dict] = []  # bounds checks in the order codegen emitted them
        self._reducing: list | None = None  # variables made while a reduction is emitted
        self.failed: str | None = None  # why the record is incomplete
        self.paused = 0  # while codegen emits something else than the kernel's body
        self._indexed: tuple | None = None  # the last index prepared, and its mask vars
        self._broadcast: list | None = None  # that index's broadcast shape, where upstream's
        self._fold: dict | None = None  # the scatter fold of the store being emitted
        self._broadcasts: dict[str, str] = {}  # an operand -> its broadcast for a reduction
        self._masked: dict[tuple, str] = {}  # (max / min, operand) -> its masked operand
        self._widened: tuple | None = None  # an index printed widened, for its indexing

    # -- hooks ---------------------------------------------------------------------------
    @_recording
    def var(self, var) -> None:
        """Every CSE variable, from ``create_cse_var``: its dtype and shape."""
        self.values.setdefault(
            var.name,
            {"op": None, "args": [], "dtype": _dtype(var.dtype), "shape": _shape(var.shape)},
        )
        if self._reducing is not None:
            self._reducing.append(var.name)

    @_recording
    def op(self, kernel, name: str, args, kwargs, result) -> None:
        """An op CSEProxy ran (``record_op_trace``): its operands by name (loads and stores
        are recorded by the kernel's own ``load`` / ``store``, which indirect loads and
        reduction stores reach too)."""
        if name in ("load", "store"):
            return
        results = result if isinstance(result, (list, tuple)) else [result]
        for r in results:
            if isinstance(r, CSEVariable) and r.name in self.values:
                facts = self.values[r.name]
                if facts["op"] is None:  # else a CSE hit: the first definition stands
                    facts.update(op=name, args=_names([*args, *kwargs.values()]))
                    if call := _called(kernel, r) or _line_call(name, r, results):
                        facts["call"] = call
                    if guard := _inf_guarded(name):
                        facts["guard"] = guard
                    if name == "constant" and _cast_constant(*args[:2]):
                        facts["cast"] = True
                    if name == "index_expr":  # printed as its prepared index, cast
                        facts["index"] = self._index(kernel)
                    if name == "value_expr":  # an index_expr (made outside ops), cast again
                        self._value_expr(kernel, r, facts)
                    if name == "where" and len(facts["args"]) == 3:
                        self._masked_fill(facts["args"])

    def _masked_fill(self, args: list) -> None:
        """``ops.masked``'s other value, ``tl.full(tmp13.shape, 0.0, tmp13.dtype)`` (made outside
        ops): the fill of its body's result."""
        other = self.values.get(args[2])
        if other is not None and other["op"] is None:
            other.update(op="fill", args=[args[1]])

    def _value_expr(self, kernel, var, facts: dict) -> None:
        """Upstream's value_expr prints its index_expr (made outside ops) and casts it again
        where the dtypes differ; where they agree its variable is the index_expr's own
        (``tmp0 = (x0 // 16).to(tl.int32)``)."""
        names = list(self.values)
        name = var.name
        inner = names[names.index(name) - 1] if names.index(name) > 0 else None
        if not (_expression(kernel, var) or "").startswith(f"({inner}).to("):
            facts.update(op="index_expr", index=self._index(kernel))
        elif inner is not None and self.values[inner]["op"] is None:
            self.values[inner].update(op="index_expr", index=self._index(kernel))
            self.values[inner]["args"] = list(facts["args"])
            facts["args"] = [inner]

    @_recording
    def folded(self, kernel, masked, value, fold) -> None:
        """An atomic store's scatter fold (scatter_mask): its value selected under the moved
        masks (``tl.where(r0_mask, tmp11, -0.0)``, made outside ops), its address folded."""
        facts = self.values.get(getattr(masked, "name", None))
        if facts is not None and facts["op"] is None:
            facts.update(op="where", args=[*fold.moved.split(" & "), *_names([value])])
        self._fold = {
            "moved": fold.moved.split(" & "),
            "at_zero": fold.masked_address != "0",
        }
        if fold.masked_index is not None:  # the address at the reduction axes' 0, printed
            self._fold["zero"] = operations(kernel.rename_indexing(fold.masked_index))

    @_recording
    def check(self, kernel, lower: bool, upper: bool) -> None:
        """An indirect index's bounds check (``check_bounds``): its index and mask."""
        self.asserts.append({"lower": lower, "upper": upper, **self._index(kernel)})

    @_recording
    def load(self, kernel, buf: str, value) -> None:
        """A load: its value's facts and its address (the index indexing() prepared)."""
        facts = self.values.get(getattr(value, "name", None))
        if facts is None or facts["op"] is not None:
            return
        # a constant index's scalar load broadcast to the block (``tmp1 =
        # tl.broadcast_to(tmp0, [XBLOCK])``): the load is the variable made before
        broadcast = _BROADCAST.match(_expression(kernel, value) or "")
        loaded = self.values.get(broadcast.group(1)) if broadcast else None
        if loaded is not None and loaded["op"] is None:
            facts.update(op="broadcast", args=[broadcast.group(1)])
            facts = loaded
        facts.update(op="load", **self._address(kernel, buf, False))

    def store(self, kernel, buf: str, value, emit) -> None:
        """A store, emitted by ``emit``: its address and the buffer its line went to (upstream
        writes the body's stores before the stores after a reduction loop)."""
        count = self._post_loop_lines(kernel)
        emit()
        self._stored(kernel, buf, value, count)

    @_recording
    def _post_loop_lines(self, kernel) -> int:
        return len(_compat.lines_of(kernel.post_loop_store))

    @_recording
    def _stored(self, kernel, buf: str, value, count: int) -> None:
        section = 1 if len(_compat.lines_of(kernel.post_loop_store)) > count else 0
        address = self._address(kernel, buf, True)
        if self._fold is not None:
            address["fold"], self._fold = self._fold, None
        self.stores.append({"buf": buf, "value": _name(value), "section": section, **address})

    def reduction(self, kernel, reduction_type: str, value, emit):
        """A reduction: the variables it makes, each reading the one before (the operand
        broadcast, masked, reduced), the last the result."""
        outer, self._reducing = self._reducing, []
        try:
            result = emit()
        finally:
            made, self._reducing = self._reducing, outer
        self._reduced(kernel, reduction_type, value, made)
        return result

    @_recording
    def _reduced(self, kernel, reduction_type: str, value, made: list) -> None:
        prev = _names(value if isinstance(value, tuple) else [value])
        operand = _name(value)
        if made and operand is not None:
            first = self.values[made[0]]
            if None in (first["shape"] or [None]):  # its broadcast a CSE hit: the earlier one
                prev = [self._broadcasts.get(operand, operand)]
            elif first["op"] is None:
                self._broadcasts[operand] = made[0]
        if reduction_type == "scan" and isinstance(value, tuple) and len(value) > 1:
            if self._scan_of_several(value, made):
                return
        # a reduction selects its operand with the kernel's masks; a scan does not
        masks = self._reduction_masks(kernel) if reduction_type != "scan" else []
        for i, name in enumerate(made):
            facts = self.values[name]
            if facts["op"] is None:
                facts.update(op="reduction", kind=reduction_type, args=list(prev))
                if masks and 0 < i < len(made) - 1:  # the operand masked before it is reduced
                    facts["masks"] = masks
            prev = [name]
        self._argreduce(reduction_type, _name(value), made)
        # a looped reduction's accumulator (``_tmpN``, upstream's name for result ``tmpN``):
        # initialised before the loop, selected into (``tl.where``) in it, reduced after it
        for name in made:
            if name.startswith("_") and name[1:] in made:
                self.values[name].update(kind="accumulator", args=[], masks=masks)
                self.values[name[1:]]["args"] = [name]
                self.values[name[1:]].pop("masks", None)
                self._bool_final(name, made)

    def _scan_of_several(self, values: tuple, made: list) -> bool:
        """A scan of several values in one pass (``tmp7, tmp8, = tl.associative_scan((tmp4,
        tmp6,), ...)``): each value cast, then broadcast, and every result reads every
        broadcast. False (recorded as a chain) for any other shape of emission."""
        n = len(values)
        if len(made) != 3 * n or any(self.values[m]["op"] is not None for m in made):
            return False
        casts, results = made[: 2 * n : 2], made[2 * n :]
        broadcasts = made[1 : 2 * n : 2]
        for value, cast, broadcast in zip(values, casts, broadcasts):
            self.values[cast].update(op="to_dtype", args=_names([value]))
            self.values[broadcast].update(op="broadcast_to", args=[cast])
        for result in results:
            self.values[result].update(op="reduction", kind="scan", args=list(broadcasts))
        return True

    def _bool_final(self, acc: str, made: list) -> None:
        """A bool accumulator is cast to int8 for its final reduction (``tmp11 =
        _tmp9.to(tl.int8)``, tl.reduce has no int1), reduced with no cast back."""
        after = made[made.index(acc) + 1 :]
        cast = [n for n in after if self.values[n]["dtype"] == "int8" and n != acc[1:]]
        if self.values[acc]["dtype"] == "bool" and cast:
            self.values[cast[-1]].update(op="to_dtype", args=[acc])
            self.values[cast[-1]].pop("kind", None)
            self.values[cast[-1]].pop("masks", None)
            self.values[acc[1:]]["args"] = [cast[-1]]

    def _argreduce(self, reduction_type: str, operand: str | None, made: list) -> None:
        """An argmax / argmin reduces its masked operand and an index tile (``tmp8_val, tmp8_idx
        = max_with_index(tmp6, tmp9, 1)``): the masked operand is the one a max / min over the
        same operand made, which codegen reuses (a CSE hit makes no variable)."""
        masked = [n for n in made[1:-1] if None not in (self.values[n]["shape"] or [None])]
        root = reduction_type.removeprefix("arg")
        if masked:
            self._masked[(root, operand)] = masked[-1]
        # the result variable: the first with the reduced shape (``tmp2 = tmp2_idx[:, None]``)
        result = next((n for n in made[:-1] if None in (self.values[n]["shape"] or [])), None)
        if reduction_type in ("argmax", "argmin") and result is not None:
            facts = self.values[result]
            facts["argreduce"] = {"value": self._masked.get((root, operand)), "index": made[-1]}
            if f"_{result}" in made:  # looped: its accumulator and the index accumulator
                facts["argreduce"] = {"value": f"_{result}", "index": f"_{result}_index"}
            facts.pop("masks", None)  # printed from the index the call returns
            for n in masked:  # the masked operand reads the operand, not the result printed later
                if self.values[n]["args"] == [result]:
                    self.values[n]["args"] = list(facts["args"])

    @staticmethod
    def _reduction_masks(kernel) -> list[str]:
        """The masks upstream's reduction selects its operand with (TritonKernel.reduction)."""
        masks = {tree.mask_name() for tree in kernel.range_trees}
        kernel.filter_masks(masks)
        out = sorted(masks)
        if kernel._load_mask:
            out.append(str(kernel._load_mask))
        return out

    @_recording
    def indexed(self, opts) -> None:
        """The index indexing() prepared last, as the load, store or index_expr asking for it
        prints it (with npu's changes: a masked load's reduced mask)."""
        if hasattr(opts, "mask_vars"):
            self._indexed = (opts.index, [str(m) for m in opts.mask_vars])
            # upstream's broadcast of an index to the block (``tl.broadcast_to(tmp6, [XBLOCK,
            # R0_BLOCK])``, an indirect index narrower than the access): its shape
            broadcast = str(getattr(opts, "index_str", "")).startswith("tl.broadcast_to(")
            self._broadcast = [_axis(d) for d in opts.expand_shape or ()] if broadcast else None
            if self._fold is not None:  # the folded address broadcasts upstream's dense index
                self._fold["broadcast"] = "tl.broadcast_to(" in str(opts.index_str)

    @_recording
    def widened(self, opts, expr) -> None:
        """An index_expr npu prints over its variables widened to int64 (``(2147483644 +
        x0.to(tl.int64))``, kernel._index_expr_int64): no cast around it, each variable cast."""
        self._widened = (opts, expr)

    @_recording
    def entry(self, kernel, entry) -> None:
        """A range tree's index variable (``x0 = xindex % 8``)."""
        self.entries[entry.name] = {
            "root": entry.root.name,
            "irregular": bool(entry.expr.atoms(*_IRREGULAR)),
            # its printed operations (``((xindex // 16) % 10)``: two)
            "tree": operations(kernel.rename_indexing(entry.expr)),
        }

    # -- the address of a load or store --------------------------------------------------
    def _address(self, kernel, buf: str, store: bool) -> dict:
        """A load's or store's pointer argument and index."""
        ptr = kernel.args.output(buf) if store else kernel.args.input(buf)
        return {"ptr": ptr, **self._index(kernel)}

    def _index(self, kernel) -> dict:
        """The index indexing() prepared last (range-tree variables) and its masks: the
        variables it reads, its terms (coefficient, variables), whether it is a constant, and
        whether it is a gather (``%`` / ``//`` in it or in an index variable, or a value read
        as an index), whose offsets are computed as tiles."""
        index, masks = self._indexed or (sympy.Integer(0), [])
        index = sympy.sympify(index)
        names = sorted(str(s) for s in index.free_symbols)
        irregular = self._irregular(index)
        # each term's coefficient where it is printed as a product of variables by a literal
        # (``16*x2``; not ``(-1)*x0`` nor ``8*(y1 // 2)``), the source reader's strides, and
        # whether the term is a gather's
        terms = [
            [
                int(c) if c.is_Integer and c > 0 and all(f.is_Symbol for f in factors) else None,
                sorted(str(s) for s in t.free_symbols),
                self._irregular(t),
            ]
            for t in sympy.Add.make_args(index)
            for c, rest in [t.as_coeff_Mul()]
            for factors in [sympy.Mul.make_args(rest)]
        ]
        out = {
            "index": str(index),
            "uses": names,
            "gather": irregular,
            "constant": bool(index.is_number),
            "terms": terms,
            "masks": sorted(masks),
            # the index's printed operations, each a value of its own where it is a tile
            "tree": operations(kernel.rename_indexing(index)),
        }
        if getattr(self, "_broadcast", None):
            out["broadcast"] = self._broadcast
        opts, widened = self._widened or (None, None)
        if opts is not None and self._indexed == (opts.index, [str(m) for m in opts.mask_vars]):
            out.update(tree=operations(widened), cast=False)  # printed as the statement itself
            self._widened = None
        return out

    def _irregular(self, index) -> bool:
        """``%`` / ``//`` in an index or in an index variable it reads, or a value read as an
        index."""
        return bool(index.atoms(*_IRREGULAR)) or any(
            str(s) in self.values or self.entries.get(str(s), {}).get("irregular")
            for s in index.free_symbols
        )

    # -- the record ----------------------------------------------------------------------
    @_recording
    def reduced_mask(self, var, masks, dims: list[int]) -> None:
        """A load's mask npu reduces over the axes its index lacks (printed as one expression,
        ``tl.max((tmp6 & xmask).to(tl.int8), 0, keep_dims=True) != 0``): its masks, in the
        printed order, and the block dimensions reduced."""
        facts = self.values.get(getattr(var, "name", None))
        if facts is not None and facts["op"] is None:
            facts.update(op="reduced_mask", args=sorted(str(m) for m in masks), dims=dims)

    def fail(self, why: str) -> None:
        """Codegen emitted something the record cannot describe: the kernel's profile is read
        from its source (the first reason is kept)."""
        if self.failed is None:
            self.failed = why

    def record(self, kernel) -> dict:
        try:
            return self._record(kernel) if self.failed is None else {"failed": self.failed}
        except Exception as e:  # noqa: BLE001 - a record, never a reason to fail a compile
            return {"failed": f"record: {type(e).__name__}: {e}"}

    def _record(self, kernel) -> dict:
        """The record: values, stores, index variables, trees, constexpr blocks, and the body's
        lines as (indentation, defined name or None, a ``for`` header)."""
        trees = {
            t.prefix: {
                "dim": t.tensor_dim,
                "persistent": not t.is_loop,
                "reduction": t.is_reduction,
                # the mask printed ``tl.full(..., True)`` rather than compared, and the
                # static numel the compiler may fold a compared mask with
                "constant_mask": bool(kernel._has_constant_mask(t)),
                "numel": _static(t.numel),
            }
            for t in kernel.range_trees
        }
        blocks = {}
        if kernel.persistent_reduction and not kernel.cooperative_reduction:
            for t in kernel.range_trees:
                if t.is_reduction:
                    blocks[f"{t.prefix.upper()}BLOCK"] = kernel._get_persistent_reduction_block(
                        t.numel
                    )
        if kernel.no_x_dim:
            blocks["XBLOCK"] = 1
        return {
            "blocks": blocks,
            "values": self.values,
            # a store to a buffer removed since (a reduction's result used only here) is not
            # written: its line is deferred
            "stores": sorted(
                (s for s in self.stores if not is_buffer_removed(s["buf"])),
                key=lambda s: s["section"],
            ),
            "entries": self.entries,
            "asserts": self.asserts,
            # the modules the kernel's helper calls resolve in (libdevice, tl_math)
            "imports": kernel.gen_common_triton_imports(),
            "index_bytes": 8 if "64" in str(kernel.index_dtype) else 4,
            "trees": trees,
            "ndim": len(kernel.dense_size_list()),
            "lines": body_lines(kernel.body),
        }


def body_lines(body) -> list:
    """The body's lines in order: (indentation, defined name or None, kind), kind ``for`` for
    a loop header, ``store`` for a store, ``line`` for any other."""
    out = []
    for line in _compat.lines_of(body):
        text = line() if callable(line) else getattr(line, "line", line)
        if not isinstance(text, str):
            continue
        for one in text.split("\n"):
            stripped = one.strip()
            if not stripped or stripped.startswith("#"):
                continue
            indent = len(one) - len(one.lstrip())
            head = stripped.split(" = ", 1)[0] if " = " in stripped else None
            kind = (
                "for"
                if stripped.startswith("for ")
                else "store"
                if stripped.startswith(("tl.store(", "tl.atomic_"))
                else "assert"
                if stripped.startswith("tl.device_assert(")
                else "line"
            )
            # a tuple target (``a, b = ...``, ``tmp3, = ...``): each name defined, the first
            # by the statement, the others as the same value
            names = [n.strip() for n in head.split(",")] if head else [None]
            names = [n for n in names if n]
            if not names or not all(n.isidentifier() for n in names):
                names = [None]
            if kind == "store":  # the pointer it stores through: which store the line is
                names = [re.split(r"[\s,+(]", stripped.split("(", 1)[1].lstrip("("), maxsplit=1)[0]]
            out.append([indent, names[0], kind])
            out.extend([indent, n, "alias"] for n in names[1:])
    return out


def _called(kernel, var) -> list | None:
    """The helper an op's expression calls first (``libdevice.exp(tmp5)``: libdevice, exp), from
    the expression codegen just put in its CSE cache (the last entries, newest first): which
    module the op's printer chose is known only there (exp prints as ``tl_math.exp`` or
    ``libdevice.exp``), and a helper's body decides the buffers the call keeps."""
    expr = _expression(kernel, var)
    match = _CALL.match(expr.lstrip("(")) if expr else None
    return list(match.groups()) if match else None


# ops upstream writes as a line of their own with several results (``tmp1, tmp2 =
# triton_helpers.frexp(tmp0)``), cached under a key that is not the printed call
_LINE_CALLS = {"frexp": ["triton_helpers", "frexp"]}


def _line_call(name: str, var, results) -> list | None:
    """Such an op's call, for its first result (the others alias it)."""
    return _LINE_CALLS.get(name) if var is results[0] else None


def _expression(kernel, var) -> str | None:
    """The expression codegen just put in its CSE cache for ``var`` (the last entries)."""
    cache = getattr(kernel.cse, "_cache", {})
    for i, (expr, v) in enumerate(reversed(cache.items())):
        if v is var and isinstance(expr, str):
            return expr
        if i > 4:
            break
    return None


_GUARD = re.compile(r"tl\.where\((\w+)\.abs\(X\) == float\('inf'\), X - X, (\w+)\.(\w+)\(X\)\)")


def _cast_constant(value, dtype) -> bool:
    """A constant upstream prints as a full tile of another type, then cast: -0.0 (its bits,
    bitcast) and a negative value of an unsigned type (TritonOverrides._shaped_constant)."""
    if not isinstance(dtype, torch.dtype) or not isinstance(value, (int, float)):
        return False
    if dtype in (torch.float32, torch.float64) and value == 0:
        return math.copysign(1.0, value) < 0
    return value < 0 and not dtype.is_floating_point and not dtype.is_signed and dtype != torch.bool


@functools.cache
def _inf_guarded(op: str) -> list | None:
    """A special function upstream prints guarded against infinities, ``tl.where(tl.abs(x) ==
    float('inf'), x - x, libdevice.j1(x))`` (its own table of printers, asked for the op's
    form): the abs's module, the helper's module and name."""
    from torch._inductor.codegen.common import pointwise_overrides_data

    data = pointwise_overrides_data.get(op)
    try:
        match = _GUARD.fullmatch(data.triton("X")) if data and data.triton else None
    except TypeError:  # a printer of more operands
        return None
    return list(match.groups()) if match else None


def _static(expr) -> int | None:
    from torch._inductor.virtualized import V

    expr = V.graph.sizevars.simplify(expr)
    return int(expr) if isinstance(expr, (int, sympy.Integer)) else None


def _name(v) -> str | None:
    return v.name if isinstance(v, CSEVariable) else None


def _names(args) -> list[str]:
    out = []
    for a in args:
        if isinstance(a, CSEVariable):
            out.append(a.name)
        elif isinstance(a, sympy.Expr):
            out.extend(sorted(str(s) for s in a.free_symbols))
        elif isinstance(a, (list, tuple)):
            out.extend(_names(a))
    return out


class RecordingKernel(TritonKernel):
    """The codegen hooks that fill a kernel's ``Recorder`` (``self._npu_ub``); npu's kernel
    class derives from it, so its own overrides (load, store) run around these."""

    def __init__(self, *args, **kwargs) -> None:
        self._npu_ub = Recorder()
        self._npu_ub_record: dict | None = None  # as record_ub_profile made it
        super().__init__(*args, **kwargs)

    def record_ub_profile(self) -> None:
        """Once the body is complete: the kernel's UB profile, made from the record, into its
        inductor_meta (``ub_model.PROFILE_KEY``), where the heuristics size its blocks with it.
        A record that could not be completed adds nothing: its kernel is read from its source."""
        record = self._npu_ub_record = self._npu_ub.record(self)
        meta = getattr(self, "inductor_meta", None)
        signature = (getattr(self, "triton_meta", None) or {}).get("signature")
        if "failed" in record or not isinstance(meta, dict) or signature is None:
            return
        try:
            meta[ub_model.PROFILE_KEY] = ub_codegen.profile(
                record, ub_model.pointer_dtypes(signature)
            )
        except Exception as e:  # noqa: BLE001 - a profile, never a reason to fail a compile
            record["failed"] = f"profile: {type(e).__name__}: {e}"

    def saved_ub_record(self) -> dict:
        """The record as ``record_ub_profile`` made it (saved beside the kernel)."""
        return self._npu_ub_record or self._npu_ub.record(self)

    def _lift_helper(self, fn, values, dtypes) -> str:
        # a scan's combine function becomes a helper with a CSE of its own, whose names repeat
        # the kernel's (tmp3 there is not the kernel's tmp3): nothing of it is recorded
        self._npu_ub.paused += 1
        try:
            return super()._lift_helper(fn, values, dtypes)
        finally:
            self._npu_ub.paused -= 1

    def create_cse_var(self, *args, **kwargs):
        var = super().create_cse_var(*args, **kwargs)
        self._npu_ub.var(var)
        return var

    def record_op_trace(self, name, args, kwargs, result=None) -> None:
        self._npu_ub.op(self, name, args, kwargs, result)
        super().record_op_trace(name, args, kwargs, result)

    def load(self, name, index):
        value = super().load(name, index)
        self._npu_ub.load(self, name, value)
        return value

    def store(self, name, index, value, mode=None):
        store = super().store
        self._npu_ub.store(self, name, value, lambda: store(name, index, value, mode))

    def store_reduction(self, name, index, value):
        store = super().store_reduction
        self._npu_ub.store(self, name, value, lambda: store(name, index, value))

    def reduction(self, dtype, src_dtype, reduction_type, value):
        emit = super().reduction
        return self._npu_ub.reduction(
            self, reduction_type, value, lambda: emit(dtype, src_dtype, reduction_type, value)
        )

    def scan(self, dtypes, combine_fn, values):
        emit = super().scan
        return self._npu_ub.reduction(
            self, "scan", values, lambda: emit(dtypes, combine_fn, values)
        )

    def codegen_iteration_ranges_entry(self, entry) -> None:
        self._npu_ub.entry(self, entry)
        super().codegen_iteration_ranges_entry(entry)

    def check_bounds(self, expr, size, lower, upper):
        super().check_bounds(expr, size, lower, upper)
        if lower or upper:
            self._npu_ub.check(self, lower, upper)
