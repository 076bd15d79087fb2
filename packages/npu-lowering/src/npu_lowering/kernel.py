"""Triton kernel codegen for npu: upstream's TritonKernel, importing npu runtime helpers.

Everything upstream generates (indexing, loads/stores, reductions, masks, and the config
flags they read) is kept; what changes is where a kernel finds its helpers: libdevice and
math resolved per Triton flavour (no tl.extra.cuda), and heuristics decorators that apply
the Ascend tiling model and build npu kernel objects; and each program loops over UB-sized
sub-blocks of its axes, so the grid is capped at the vector-core count (runtime/grid.py).

Sub-block loops keep upstream's body: the only hook is the program id upstream multiplies by
the block size (``xoffset = <pid> * XBLOCK``, ``iteration_ranges_get_pid``), which becomes
the loop's sub-block index. Upstream asks for it while it writes the first program axis'
header into the kernel body; the loops are written there, and the body's indentation goes
one level in per loop, so everything upstream writes into the body afterwards (headers,
loads, reductions, stores) is inside them. Program ``p`` of ``n`` takes the
contiguous run of sub-blocks ``[p * ceil(b / n), (p + 1) * ceil(b / n))`` of the axis' ``b``
sub-blocks: Ascend moves data per core by DMA, and one contiguous chunk per core keeps those
transfers long and sequential (a grid-stride loop would hop across the whole tensor).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path

import torch
from npu_inductor_core import cost_model, kernel_objects
from torch._inductor.codegen.triton import IndexingOptions, TritonKernel, TritonKernelOverrides
from torch.utils._ordered_set import OrderedSet
from torch._inductor.virtualized import V

from . import _compat, hoist, kernel_work, narrow_cast, numerics, row_reuse, scatter_mask, ub_record
from .index_printer import npu_texpr
from .runtime import grid as npu_grid
from npu_inductor_core import tiles as tiling
from .runtime.flavour import flavour

# written after upstream's imports, so these bindings of the names generated code uses win
NPU_IMPORTS = (
    "from npu_lowering.runtime import helpers as triton_helpers\n"
    "from npu_lowering.runtime import heuristics as triton_heuristics\n"
    "from npu_lowering.runtime.math import libdevice, math as tl_math\n"
    "from npu_lowering.runtime import grid as npu_grid  # defines the npu grid types\n"
)
BROADCAST = "tl.broadcast_to("  # how upstream's indexing() densifies an index
# upstream's mix-order reduction loop (TritonKernel.codegen_body), rewritten for triton-ascend
MIX_ORDER_LOOP = "for _ in tl.range(0, split_size, XBLOCK"
MIX_ORDER_STEP = "xindex += XBLOCK"
MIX_ORDER_ROWS = "xindex = xoffset + "
MIX_ORDER_IV = "xsplit"


def npu_imports(upstream_imports: str) -> str:
    """Upstream's import block as it is, then npu's modules under the names it bound
    (``triton_helpers``, ``triton_heuristics``, ``libdevice``, ``tl_math``): the later import
    rebinds each name in the kernel module."""
    return upstream_imports.rstrip("\n") + "\n" + NPU_IMPORTS


def save_kernel(src: str, ub=None) -> None:
    """With ``npu_lowering.config.save_kernels`` (default $NPU_LOWERING_SAVE_KERNELS) a folder,
    keep every generated kernel's source there (ascend_check checks each one with
    triton-ascend's front end), and beside it codegen's record of its values (``ub_record``,
    ``<name>.ub.json``) for the UB model's cross-check."""
    from . import config

    folder = config.save_kernels
    if not folder:
        return
    digest = hashlib.sha256(src.encode()).hexdigest()[:16]
    path = Path(folder) / f"npu_kernel_{digest}.py"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        # names are placeholders until the wrapper defines the kernel; any name will do here
        named = src.replace("Placeholder.KERNEL_NAME", path.stem).replace(
            "Placeholder.DESCRIPTIVE_NAME", path.stem
        )
        tmp.write_text(named)
        os.replace(tmp, path)
        if ub is not None:
            path.with_suffix(".ub.json").write_text(json.dumps(ub()))


class NpuRuntimeMixin:
    """What every npu Triton kernel class (pointwise/reduction kernels, GEMM templates) shares:
    npu runtime imports, and the Triton flavour in inductor_meta."""

    @classmethod
    @lru_cache(None)
    def gen_common_triton_imports(cls) -> str:
        return npu_imports(super().gen_common_triton_imports())

    @classmethod
    def inductor_meta_common(cls):
        # decided here, in the process that owns the device: compile workers have no npu
        return {**super().inductor_meta_common(), kernel_objects.FLAVOUR_KEY: flavour()}


def _ordered_as_int8(a, b):
    """Operands of an ordering comparison; two bools become int8. A bool ``>`` is an unsigned
    i1 compare (``arith.cmpi ugt``), which bishengir's 910B HFusion -> HIVM lowering aborts on
    ("mapCompareModeHFusionToHiVM: unsupported hfusion::CompareFn"); upstream emits it in the
    NaN-aware argmax of max_pool2d_with_indices (``isnan(a) > isnan(b)``)."""
    if getattr(a, "dtype", None) == torch.bool and getattr(b, "dtype", None) == torch.bool:
        return f"{a}.to(tl.int8)", f"{b}.to(tl.int8)"
    return a, b


def _floating(*values) -> bool:
    return all(getattr(v, "dtype", None) is not None and v.dtype.is_floating_point for v in values)


def _beyond_int32(expr) -> bool:
    """Whether ``expr`` may leave int32 over the kernel's index ranges (unknown: True when a
    constant in it already does)."""
    import sympy
    from torch.utils._sympy.value_ranges import ValueRanges, bound_sympy

    limit = 2**31 - 1
    if any(abs(int(n)) > limit for n in expr.atoms(sympy.Integer)):
        return True
    try:
        ranges = {
            s: ValueRanges(0, int(n) - 1)
            for s, n in V.kernel.var_ranges().items()
            if s in expr.free_symbols
        }
        bound = bound_sympy(expr, ranges)
        return bool(bound.lower < -limit - 1 or bound.upper > limit)
    except Exception:  # symbolic sizes or an expression sympy cannot bound: keep upstream's
        return False


def _index_expr_int64(expr):
    """The index expression printed (the kernel's own printer) over its variables widened to
    int64: each variable ``v`` of the indexed expression is replaced by a symbol that prints
    as ``v.to(tl.int64)``. Upstream's broadcast of the index (inside a masked load's
    context) is applied to the widened value as a separate step."""
    import sympy
    from torch._inductor.codegen.triton import TritonSymbols
    from torch._inductor.utils import get_bounds_index_expr

    kernel = V.kernel
    indexing = kernel.indexing(expr, block_ptr=False, tma_compatibility_checker=None)
    shape = indexing.expand_shape or TritonSymbols.get_block_shape(indexing.index)
    bounds = get_bounds_index_expr(expr)
    if not indexing.index.free_symbols:  # a constant: upstream's text
        text = indexing.index_str
    else:
        # sizes become the kernel's arguments first (s32 -> ks0), then every symbol is widened:
        # a widened size symbol named "s32.to(tl.int64)" would itself be taken for a size
        # argument and passed by the wrapper
        renamed = kernel.rename_indexing(indexing.index)
        widened = renamed.xreplace(
            {
                s: sympy.Symbol(f"{s.name}.to(tl.int64)", **s.assumptions0)
                for s in renamed.free_symbols
            }
        )
        text = kernel.kexpr(widened)
        if indexing.index_str == kernel.index_to_str(indexing.index):
            kernel._npu_ub.widened(indexing, widened)  # the UB model's record of its print
        else:  # upstream broadcast it
            plain = kernel.cse.generate(
                kernel.compute,
                f"({text})",
                dtype=torch.int64,
                bounds=bounds,
                shape=TritonSymbols.get_block_shape(indexing.index),
            )
            text = f"tl.broadcast_to({plain}, {indexing.expand_str})"
    var = kernel.cse.generate(
        kernel.compute, f"({text})", dtype=torch.int64, bounds=bounds, shape=shape
    )
    var.mask_vars = indexing.mask_vars
    return var


class NpuTritonKernelOverrides(TritonKernelOverrides):
    # strict_signed_zero (torch 2.14's flag, npu_lowering.config on 2.13): the sign of zero
    # survives negation and maximum/minimum, as in eager (runtime/helpers.py)
    @staticmethod
    def neg(x):
        if numerics.strict_signed_zero() and _floating(x):
            return f"triton_helpers.neg_signed_zero({x})"
        return TritonKernelOverrides.neg(x)

    @staticmethod
    def maximum(a, b):
        if numerics.strict_signed_zero() and _floating(a, b):
            return f"triton_helpers.maximum_signed_zero({a}, {b})"
        return TritonKernelOverrides.maximum(a, b)

    @staticmethod
    def minimum(a, b):
        if numerics.strict_signed_zero() and _floating(a, b):
            return f"triton_helpers.minimum_signed_zero({a}, {b})"
        return TritonKernelOverrides.minimum(a, b)

    @staticmethod
    def to_dtype(x, dtype, src_dtype=None, use_compute_types=True):
        # narrow integer casts of a multi-dimensional tile on a flat view (narrow_cast.py)
        return narrow_cast.cast(
            TritonKernelOverrides.to_dtype, x, dtype, src_dtype, use_compute_types
        )

    @staticmethod
    def mod(a, b):
        # floats: the portable libdevice's exact fmod, not Triton's `%` (arith.remf: the
        # interpreter's numpy fmod, bishengir's own lowering on Ascend), so remainder (upstream
        # builds it on mod) computes what fmod does on both
        if _floating(a) or _floating(b):
            return f"libdevice.fmod({a}, {b})"
        return TritonKernelOverrides.mod(a, b)

    @classmethod
    def index_expr(cls, expr, dtype):
        # An int64 index expression whose values pass int32 (an iota from 2^31 - 4, an int64
        # offset) is evaluated in int64 even where the kernel's indices are int32: upstream
        # prints it over the int32 index variables, and Triton refuses the constant ("out of
        # range for type int32") or the sum wraps. Here its variables are widened first.
        if (
            dtype == torch.int64
            and V.kernel.get_index_dtype_as_torch_dtype() == torch.int32
            and _beyond_int32(expr)
        ):
            return _index_expr_int64(expr)
        return super().index_expr(expr, dtype)

    @classmethod
    def value_expr(cls, expr, dtype):
        # the same for upstream's value-producing form (iota): it sets the kernel's index
        # dtype to int64 for printing, the variables stay int32
        if (
            dtype == torch.int64
            and V.kernel.get_index_dtype_as_torch_dtype() == torch.int32
            and _beyond_int32(expr)
        ):
            return _index_expr_int64(expr)
        return super().value_expr(expr, dtype)

    @staticmethod
    def lt(a, b):
        return TritonKernelOverrides.lt(*_ordered_as_int8(a, b))

    @staticmethod
    def gt(a, b):
        return TritonKernelOverrides.gt(*_ordered_as_int8(a, b))

    @staticmethod
    def le(a, b):
        return TritonKernelOverrides.le(*_ordered_as_int8(a, b))

    @staticmethod
    def ge(a, b):
        return TritonKernelOverrides.ge(*_ordered_as_int8(a, b))


# Triton's combine functions for a scan whose combine is a single operation of its two operands
_STANDARD_COMBINES = {"add": "tl.standard._sum_combine", "mul": "tl.standard._prod_combine"}


def _standard_combine(fn) -> str | None:
    """Triton's own combine function (``_STANDARD_COMBINES``) when the scan's combine ``fn``
    of one value is exactly one add or multiply of its two operands, else None."""
    from torch._inductor.ops_handler import DefaultHandler

    calls: list = []

    class Probe(DefaultHandler):
        def _default(self, name, args, kwargs):
            calls.append((name, args, kwargs))
            return f"out{len(calls)}"

    a, b = "lhs", "rhs"
    try:
        with V.set_ops_handler(Probe()):
            out = fn((a,), (b,))
    except Exception:  # a combine the probe cannot trace: upstream's helper
        return None
    # values come back as ops wrappers (whose == is an op): compare what they hold
    outs = [getattr(o, "value", o) for o in out]
    if len(calls) != 1 or outs != ["out1"]:
        return None
    name, args, kwargs = calls[0]
    args = [getattr(x, "value", x) for x in args]
    if kwargs or sorted(args) != sorted([a, b]):
        return None
    return _STANDARD_COMBINES.get(name)


class NpuTritonKernel(NpuRuntimeMixin, ub_record.RecordingKernel, TritonKernel):
    overrides = NpuTritonKernelOverrides  # type: ignore[assignment]
    kexpr = npu_texpr  # min/max over a tile as one vector operation
    # Per-program sub-block loops with a grid capped at the vector cores. Off, kernels are
    # upstream's (one block per program, grid = block count); tests switch it off to show
    # that a capped grid without the loop computes a wrong result.
    subblock_loops = True

    def __init__(self, *args, **kwargs) -> None:
        self._npu_loop_axes: list = []  # program axes turned into sub-block loops
        self._npu_loops: bool | None = None
        self._npu_indirect = False  # an indirect (tensor-valued) index: tiling.INDIRECT_KEY
        self._npu_loading = False  # inside load(): indexing() may keep the index's shape
        self._npu_load_masks = None  # upstream's mask vars of a load indexing() reshaped
        self._npu_passes = kernel_work.Passes()  # flushed bodies, r-loop passes' loads
        self._npu_preloop: hoist.PreLoop | None = None  # lines before the loops (hoist.py)
        self._npu_load_name: str | None = None  # the buffer load() is reading
        self._npu_written: OrderedSet | None = None  # buffers this kernel writes
        self._npu_scatter_fold: scatter_mask.Fold | None = None  # the atomic store's mask fold
        self._npu_rows: dict = {}  # whole rows loaded, by (buffer, base) (row_reuse.py)
        super().__init__(*args, **kwargs)  # writes the range-tree headers (get_pid below)

    def _lift_helper(self, fn, values, dtypes) -> str:
        # A scan whose combine is one add (cumsum) or one multiply (cumprod) of a single value
        # names Triton's own combine function instead of a generated copy of it: Triton's
        # interpreter recognizes only its own and runs any other element by element in Python
        # (a float32 cumsum of 200,000 elements took 21 s on npu-sim); on Ascend both are the
        # same jit function of one add or multiply.
        standard = _standard_combine(fn) if len(values) == 1 else None
        return standard or super()._lift_helper(fn, values, dtypes)

    def _loops_over_subblocks(self) -> bool:
        """Plain pointwise and reduction kernels; kernels whose program ids mean something
        else (cooperative and mix-order reductions split the reduction over programs, combo
        kernels dispatch on the pid, native matmul remaps axes) and fixed-config kernels
        keep upstream's one block per program."""
        if self._npu_loops is None:
            self._npu_loops = bool(
                self.subblock_loops
                and not (
                    self.cooperative_reduction
                    or self.mix_order_reduction
                    or self.is_combo_kernel
                    or self.is_native_matmul
                    or self.fixed_config
                )
            )
        return self._npu_loops

    def iteration_ranges_get_pid(self, entry) -> str:
        if not self._loops_over_subblocks():
            return super().iteration_ranges_get_pid(entry)
        if not self._npu_loop_axes:
            self._npu_loop_axes = self._program_axes()
            self._open_subblock_loops(self._npu_loop_axes)
        if entry not in self._npu_loop_axes:
            raise RuntimeError(
                f"npu-lowering: program id of axis {entry.prefix} asked outside "
                f"{[e.prefix for e in self._npu_loop_axes]}; upstream codegen changed"
            )
        # the loop variable: an index-dtype scalar compiled, a Python int interpreted
        return f"{entry.prefix}sub"

    def _program_axes(self) -> list:
        """The axes whose header asks for a program id (upstream's
        ``iteration_ranges_codegen_header``), outer axes first."""
        axes = [
            t
            for t in self.range_trees
            if not t.is_loop
            and t.grid_dim is not None
            and not getattr(t, "has_custom_codegen_header", lambda: False)()
        ]
        return sorted(axes, key=lambda e: -e.grid_dim)

    def _open_subblock_loops(self, axes: list) -> None:
        """One loop per program axis over the sub-blocks this program takes, written where
        upstream writes the first axis' header; the body stays indented inside them."""
        cast = "" if self.index_dtype == "tl.int32" else f".to({self.index_dtype})"
        for entry in axes:
            p, dim = entry.prefix, entry.grid_dim
            self.body.writelines(
                [
                    f"{p}subs = tl.cdiv({p}numel, {p.upper()}BLOCK)",
                    f"{p}subs_per_program = tl.cdiv({p}subs, tl.num_programs({dim}){cast})",
                    f"{p}sub_start = tl.program_id({dim}){cast} * {p}subs_per_program",
                ]
            )
        if self._hoists_out_of_loops():
            self._npu_preloop = hoist.PreLoop()
            self.body.writeline(self._npu_preloop)
        for entry in axes:
            p = entry.prefix
            self.body.writeline(
                f"for {p}sub in tl.range({p}sub_start, "
                f"tl.minimum({p}sub_start + {p}subs_per_program, {p}subs)):"
            )
            self.body.do_indent()

    def _hoists_out_of_loops(self) -> bool:
        """Whether loads that name no loop axis go before the loops (hoist.py): pointwise
        kernels and persistent reductions, whose reduction axes are whole tiles the header
        computes once (not a looped reduction's r loop, nor a derived axis' header)."""
        reductions = [t for t in self.range_trees if t.is_reduction]
        return not any(
            t.is_loop or getattr(t, "has_custom_codegen_header", lambda: False)()
            for t in reductions
        )

    def _before_loops(self, entry) -> bool:
        """A persistent reduction axis, whose header and index variables go before the
        loops with the loads that use them: they name no loop axis."""
        return self._npu_preloop is not None and entry.is_reduction and not entry.is_loop

    def iteration_ranges_codegen_header(self, entry, code) -> None:
        if code is self.body and self._before_loops(entry):
            code = self._npu_preloop.code
        super().iteration_ranges_codegen_header(entry, code)

    def codegen_reduction_indices(self, buffer) -> None:
        # roffset / rindex of a persistent reduction: its r axes' offsets and indices
        if buffer is self.body and self._npu_preloop is not None:
            buffer = self._npu_preloop.code
        super().codegen_reduction_indices(buffer)

    def codegen_iteration_ranges_entry(self, entry) -> None:
        # upstream writes a non-loop axis' index variable (``r0_1 = r0_index``) into the body
        # where it is first used; a persistent reduction axis' goes before the loops, where a
        # hoisted load may use it
        if not self._before_loops(entry.root):
            return super().codegen_iteration_ranges_entry(entry)
        body, self.body = self.body, self._npu_preloop.code
        try:
            super().codegen_iteration_ranges_entry(entry)
        finally:
            self.body = body

    def get_load_buffer(self, indexing):
        buffer = super().get_load_buffer(indexing)
        if (
            buffer is self.loads
            and self._npu_preloop is not None
            and self._npu_load_name is not None
            and hoist.row_invariant(
                indexing, self._npu_loop_axes, self._npu_load_name in self._written()
            )
        ):
            return self._npu_preloop.loads
        return buffer

    def _written(self) -> OrderedSet:
        """The buffers this kernel stores to or mutates (in place included)."""
        if self._npu_written is None:
            written: OrderedSet = OrderedSet(self.args.inplace_buffers)
            features = getattr(self, "features", None)
            if features is not None:
                for node in features.scheduler_nodes():
                    written.update(node.get_buffer_names())
                written.update(features.get_mutations())
            self._npu_written = written
        return self._npu_written

    def _get_grid_type(self):
        if not self._npu_loop_axes:
            return super()._get_grid_type()
        programs = sum(1 for tree in self.range_trees if not tree.is_reduction)
        if programs != len(self._npu_loop_axes) or programs not in (1, 2, 3):
            raise RuntimeError(
                f"npu-lowering: {programs} program axes but sub-block loops over "
                f"{[e.prefix for e in self._npu_loop_axes]}; upstream codegen changed"
            )
        return npu_grid.NpuGrid  # its axis count: inductor_meta_per_kernel

    def max_block(self, prefix: str) -> int:
        """The largest block any config can give this axis. Upstream answers TRITON_MAX_BLOCK
        (4096 for x), and drops a mask when the numel is a multiple of it; our tiling sizes
        blocks to the UB, up to one byte per element of it, so an x block of 16384 over
        3 * 4096 elements read past the end (issue 16: grid_sampler_2d)."""
        upstream = super().max_block(prefix)
        if self.fixed_config:
            return upstream
        facts = tiling.device(V.graph.get_current_device_or_throw().index or 0)
        return max(upstream, tiling.max_block_elements(facts))

    def indexing(self, index, **kwargs):
        opts = self._npu_indexing(index, **kwargs)
        self._npu_ub.indexed(opts)  # the address a load, store or index_expr prints
        return opts

    def _npu_indexing(self, index, **kwargs):
        """A load inside ``ops.masked`` whose mask spans axes its index does not: upstream
        broadcasts the index to the mask's full block (``tl.broadcast_to(r0_2, [XBLOCK,
        R0_BLOCK])``), a pointer with stride 0 along those axes, which triton-ascend 3.2.0's
        triton-adapter-opt refuses ("strides must not be zero"). Here the load keeps the
        index's own shape and its mask is the full mask reduced (any) over those axes: an
        address is read when some element of the block needs it, as upstream reads it.
        ``ops.masked`` applies the full mask to the loaded value afterwards (its tl.where), so
        the values are upstream's. Looped reductions whose index lacks the reduction axis keep
        upstream's load (the value would be treated as invariant across the loop)."""
        opts = super().indexing(index, **kwargs)
        if isinstance(opts, IndexingOptions) and opts.has_indirect():
            self._npu_indirect = True
        if self._npu_scatter_fold is not None and kwargs.get("mask_constant_index"):
            return scatter_mask.folded_indexing(opts, self._npu_scatter_fold)
        if self._npu_loading and self.is_combo_kernel and isinstance(opts, IndexingOptions):
            opts = self._unmasked_constant_load(index, opts)
        # (an indirect index has the shape of the values it was computed from, whatever axes its
        # expression names: such loads keep upstream's form)
        if (
            not self._npu_loading
            or self._load_mask is None
            or self.is_native_matmul
            or not isinstance(opts, IndexingOptions)
            or opts.has_indirect()
            or opts.expand_str is None
            or not opts.index_str.startswith(BROADCAST)
        ):
            return opts
        index_str = self.index_to_str(opts.index)  # upstream's index before it broadcast it
        if opts.index_str != f"{BROADCAST}{index_str}, {opts.expand_str})":
            raise RuntimeError(
                f"npu-lowering: unexpected broadcast index {opts.index_str!r}; upstream codegen changed"
            )
        used = opts.index.free_symbols
        missing = [
            tree
            for tree in self.active_range_trees()
            if tree.tensor_dim is not None and not used.intersection(tree.var_list)
        ]
        if not missing or any(
            tree.is_reduction and not self.persistent_reduction for tree in missing
        ):
            return opts
        shape = list(self.dense_size_list())
        mask = f"({opts.mask_str}).to(tl.int8)"
        for tree in missing:
            mask = f"tl.max({mask}, {tree.tensor_dim}, keep_dims=True)"
            shape[tree.tensor_dim] = "1"
        reduced = dataclasses.replace(
            opts,
            mask_vars=OrderedSet(),
            expand_shape=tuple(shape),
            index_str=index_str,
            expand_str="[" + ", ".join(shape) + "]",
        )
        var = self.cse.generate(
            self.get_load_buffer(opts), f"{mask} != 0", dtype=torch.bool, shape=tuple(shape)
        )
        reduced.mask_vars.add(var)
        self._npu_load_masks = opts.mask_vars
        self._npu_ub.reduced_mask(var, opts.mask_vars, [t.tensor_dim for t in missing])
        return reduced

    def _unmasked_constant_load(self, index, opts):
        """A load at a constant address in a combo sub-kernel: upstream masks it with the
        sub-kernel's x mask (the combo's blocks run lanes past a shorter sub-kernel's rows), as
        ``tl.where(xmask, tl.broadcast_to(tmp, [1, 1]), 0)``; as a gather's index (a token's
        position at one token) triton-ascend 3.2's front end for the 950 aborts on it ("Invalid
        accessor called"). The address is valid in every lane and every consumer masks its own
        lanes (stores, reductions, loads), as in a kernel that is not a combo, where upstream
        leaves such a load unmasked: here it is broadcast over the x lanes, unmasked."""
        import sympy

        if not isinstance(index, (int, sympy.Integer)) or self._load_mask or not opts.mask_vars:
            return opts
        shape = ["1"] * len(self.dense_size_list())
        for tree in self.active_range_trees():
            if tree.tensor_dim is not None and not tree.is_reduction:
                shape[tree.tensor_dim] = tree.block_size_str()
        if all(size == "1" for size in shape):
            return opts
        return dataclasses.replace(
            opts,
            mask_vars=OrderedSet(),
            expand_str="[" + ", ".join(shape) + "]",
            expand_shape=tuple(shape),
        )

    def load(self, name, index):
        # The loaded value carries upstream's mask vars, not the reduced mask: values computed
        # from it (an indirect index) are masked downstream as upstream masks them (T5's
        # shifted decoder ids: the reduced mask on the embedding load zeroed position 0).
        row = row_reuse.plan(self, name, index)
        held = row_reuse.gather(self, row)  # a row this kernel holds, read elsewhere
        if held is not None:
            return held
        self._npu_loading, self._npu_load_masks, self._npu_load_name = True, None, name
        before = self._npu_passes.before_load(self)
        try:
            value = super().load(name, index)
        finally:
            self._npu_loading, self._npu_load_name = False, None
        self._npu_passes.after_load(self, name, before)
        row_reuse.record(self, row, value)
        if self._npu_load_masks is not None and hasattr(value, "mask_vars"):
            value.mask_vars = self._npu_load_masks
        self._npu_load_masks = None
        return value

    def store(self, name, index, value, mode=None):
        # a scatter-add to a gathered address under a mask of two axes (scatter_mask.py)
        fold = scatter_mask.plan(self, index) if mode == "atomic_add" else None
        if fold is None:
            return super().store(name, index, value, mode)
        masked = scatter_mask.masked_value(self, fold, name, value)
        self._npu_ub.folded(self, masked, value, fold)
        value, self._npu_scatter_fold = masked, fold
        try:
            return super().store(name, index, value, mode)
        finally:
            self._npu_scatter_fold = None

    def inductor_meta_per_kernel(self):
        return {**super().inductor_meta_per_kernel(), **self._npu_inductor_meta()}

    def codegen_prologue(self, code) -> None:
        # torch 2.11 has no inductor_meta_per_kernel hook: its codegen_kernel builds the dict
        # inline, stores it on self.inductor_meta, calls this, then writes that same dict
        # into the heuristics decorator, so our keys go in here
        if not hasattr(TritonKernel, "inductor_meta_per_kernel") and isinstance(
            getattr(self, "inductor_meta", None), dict
        ):
            self.inductor_meta.update(self._npu_inductor_meta())
        super().codegen_prologue(code)

    def _npu_inductor_meta(self) -> dict:
        """What npu kernels add to inductor_meta: device facts, grid axes, hints."""
        meta = {}
        facts = tiling.device(V.graph.get_current_device_or_throw().index or 0)
        # read where the kernel is tuned, which may be a compile worker with no device open
        # (also the grid's core count: runtime/grid.py)
        meta[tiling.FACTS_KEY] = facts.record()
        if self._npu_loop_axes:
            meta[npu_grid.AXES_KEY] = len(self._npu_loop_axes)
        if self._npu_indirect:
            meta[tiling.INDIRECT_KEY] = True
        if hinted := self._hint_size_hints():
            meta[kernel_objects.HINT_SIZE_HINTS_KEY] = hinted
        if work := self._npu_work():
            meta[cost_model.WORK_KEY] = work
        return meta

    def _npu_work(self) -> dict:
        """What this kernel does, for the cost model (npu_inductor_core.cost_model): the GM
        bytes upstream's estimate gives its arguments, the vector statements it runs on each
        block of elements (its loads, computations and stores as codegen wrote them; how many
        of its computations are special or composite element operations; how many compute in
        each dtype, ``kernel_work.statement_dtypes``) and how many elements there are.
        Statements count over every body flushed so far and those pending
        (``kernel_work.Passes``): the answer is the same before and after ``codegen_body``
        (upstream asks before it). A looped reduction's bytes add each pass after a buffer's
        first that loads it again. Empty where upstream's byte estimate cannot be taken (a
        size without a hint): no figure then."""
        from torch._inductor.utils import sympy_product

        passes = self._npu_passes
        try:
            numel = int(V.graph.sizevars.optimization_hint(sympy_product(self.numels.values())))
            gm_bytes = int(self.estimate_kernel_num_bytes()) + passes.reread_bytes(self, numel)
        except Exception:  # an estimate, never a reason to fail a compile
            return {}
        pending = (self.loads, self.compute, self.stores)
        if self._npu_preloop is not None:
            # loads hoisted before the sub-block loops (hoist.py) run once per program, but
            # count as the body's, as before they were hoisted: the record prices a kernel's
            # statements per block whatever the grid, and a combo kernel (no loops) sums them
            pending += (self._npu_preloop.loads,)
        ops = passes.ops + sum(len(_compat.lines_of(buf)) for buf in pending)
        compute = passes.compute + [s for s in _compat.lines_of(self.compute) if isinstance(s, str)]
        dtypes = passes.dtypes + kernel_work.statement_dtypes(self, pending)
        return {
            "gm_bytes": gm_bytes,
            "vector_ops": ops,
            "numel": numel,
            **cost_model.element_classes(compute),
            "dtype_ops": dict(sorted(dtypes.items())),
        }

    def _hint_size_hints(self) -> dict:
        """``multi_kernel_hints`` (upstream applies them to Triton templates only): this
        kernel's size hints with each hint in place of its dynamic sizes, as upstream's
        ``hint_override`` computes them; the heuristics provider builds one variant per hint
        and picks one per call. Empty for static sizes or without hints."""
        from torch._inductor import config
        from torch._inductor.runtime.runtime_utils import next_power_of_2
        from torch._inductor.utils import prefix_is_reduction

        hints = config.multi_kernel_hints
        if not isinstance(hints, (list, tuple)) or any(
            isinstance(h, bool) or not isinstance(h, int) or h < 1 for h in hints
        ):
            raise ValueError(f"multi_kernel_hints must be a list of ints >= 1, got {hints!r}")
        sizevars = V.graph.sizevars
        numels = {
            p: n
            for p, n in self.numels.items()
            if not prefix_is_reduction(p) or self.inside_reduction
        }
        if not hints or not any(sizevars.simplify(n).free_symbols for n in numels.values()):
            return {}
        return {
            hint: {
                p: next_power_of_2(int(sizevars.optimization_hint_with_override(n, hint)))
                for p, n in numels.items()
            }
            for hint in hints
        }

    def codegen_body(self) -> None:
        self._npu_passes.flush(self)  # upstream moves the pending statements into the body
        super().codegen_body()
        if self.mix_order_reduction:
            # upstream writes the split loop and its partial sums as text (no op traced): the
            # UB record would miss what they keep live
            self._npu_ub.fail("mix-order reduction")
            self._mix_order_rows_from_loop_index()
        self.record_ub_profile()

    def _mix_order_rows_from_loop_index(self) -> None:
        """Mix-order reductions: upstream steps a program's rows through its split with
        ``for _ in tl.range(0, split_size, XBLOCK): ... xindex += XBLOCK``, a loop-carried
        index tensor. triton-ascend 3.2.0's pointer analysis cannot follow an offset that is a
        loop-carried tensor (``scf.for`` block argument): triton-adapter-opt aborts ("Unsupported
        scenario where neither lhs nor rhs is a scalar ... encountered AddPtrOp produced by
        unsupported operation", BlockPtrAnalysis.cpp). The same rows, computed from the loop's
        induction variable at the top of each step (upstream's own header expression plus the
        step's start), lower; the increment goes."""
        lines = _compat.lines_of(self.body)
        loops = [
            i
            for i, line in enumerate(lines)
            if isinstance(line, str) and line.strip().startswith(MIX_ORDER_LOOP)
        ]
        if not loops:
            return
        header = [
            line.strip()
            for line in lines[: loops[0]]
            if isinstance(line, str) and line.strip().startswith(MIX_ORDER_ROWS)
        ]
        if len(header) != 1:
            raise RuntimeError(
                f"npu-lowering: mix-order kernel without one '{MIX_ORDER_ROWS}' header; "
                "upstream codegen changed"
            )
        for i in reversed(loops):
            loop = lines[i]
            indent = loop[: len(loop) - len(loop.lstrip())]
            step = next(
                (
                    j
                    for j in range(i + 1, len(lines))
                    if isinstance(lines[j], str) and lines[j].strip() == MIX_ORDER_STEP
                ),
                None,
            )
            if step is None:
                raise RuntimeError(
                    f"npu-lowering: mix-order loop without '{MIX_ORDER_STEP}'; upstream codegen changed"
                )
            del lines[step]
            lines[i] = loop.replace(
                MIX_ORDER_LOOP, MIX_ORDER_LOOP.replace("for _ in", f"for {MIX_ORDER_IV} in"), 1
            )
            lines.insert(i + 1, f"{indent}{' ' * self.body.tabwidth}{header[0]} + {MIX_ORDER_IV}")

    def codegen_kernel(self, name=None) -> str:
        # (upstream's ``triton_helpers.set_driver_to_gpu()`` line calls npu's helpers, where
        # it does nothing: runtime/helpers.py)
        src = super().codegen_kernel(name)
        save_kernel(src, self.saved_ub_record)
        return src
