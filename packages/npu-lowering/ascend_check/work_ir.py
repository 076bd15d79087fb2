"""What Ascend's IR says a kernel block does: GM bytes and vector operations, read from text.

The Ascend check compares these figures with the work record npu-lowering's codegen writes for
the cost model (``npu_inductor_core.cost_model.WORK_KEY``; ``work_report.py`` does the
comparison). Two readings, both per *block* (one step of the kernel's sub-block loop over its
program axes: one BLOCK of each program axis, with its whole reduction):

- ``ttir_work``: Triton IR after triton-ascend's ``make_ttir``. GM bytes are the tensors of its
  ``tt.load`` / ``tt.store`` / ``tt.atomic_*`` (a masked access counts its whole block);
  vector work is its ``arith`` / ``math`` operations on tensors, by class
  (``basic``, ``divide`` (float), ``int_divide``, ``transcendental``, ``reduce``).
- ``hivm_dma``: bishengir's final HIVM module (``module.hivm.opt.mlir``). Its DMAs are calls of
  library functions (``load_gm_to_ubuf_*``, ``store_ubuf_to_gm_*``, ``nd2nz_*``, ``fixpipe_*``:
  any call with one memref operand in GM and one on chip), on ``memref<?x...>`` casts; a DMA's
  size is the static shape its on-chip operand was cast or sliced from (the buffer's block).
  Scalar ``memref.load`` / ``memref.store`` of GM count too (a gather bishengir cannot DMA).

A loop with constant bounds (the reduction loops of a static shape) multiplies what it holds by
its trip count; a loop with bounds known only at run time (the sub-block loop itself, or a
reduction over a dynamic size) counts once and is counted in ``dynamic_loops``. The 910B's
bishengir keeps ``scf.for``; the 950's lowers loops to ``cf`` blocks (a header ``^bbN(%iv)``
whose ``arith.cmpi slt`` guards the body, a back edge ``cf.br ^bbN(%next)``), read here too.
"""

from __future__ import annotations

import re
from math import prod

ELEMENT_BYTES = {"i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8}
ELEMENT_BYTES.update({"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "f8E4M3FN": 1, "f8E5M2": 1})

# element classes of vector work (the cost model's lead wires per-class costs from codegen;
# these TTIR counts are the cross-check)
TRANSCENDENTAL = {
    "exp",
    "exp2",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "sqrt",
    "rsqrt",
    "tanh",
    "erf",
    "sin",
    "cos",
    "tan",
    "atan",
    "atan2",
    "powf",
    "cbrt",
}
DIVIDE = {"divf", "remf"}
# integer division: index arithmetic (modulo indexing), not codegen's "division" class
INT_DIVIDE = {"divsi", "divui", "remsi", "remui", "ceildivsi", "floordivsi"}
NOT_WORK = {"constant"}  # materialised once, not per element

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_OP_NAME = re.compile(r'"[a-z_]+\.[a-z_.]+"')
_SSA_DEF = re.compile(r"^\s*(%[\w.$-]+)(?::\d+)?(?:\s*,\s*%[\w.$-]+(?::\d+)?)*\s*=")
_INT_CONST = re.compile(
    r"(%[\w.$-]+)\s*=\s*(?:arith\.constant\s+(-?\d+)\s*:\s*(?:i\d+|index)"
    r"|llvm\.mlir\.constant\((-?\d+)\s*:\s*(?:i\d+|index)\))"
)
# the 950's loop bounds are such constants seen through a cast to index
_ALIAS = re.compile(
    r"(%[\w.$-]+)\s*=\s*(?:builtin\.unrealized_conversion_cast|arith\.index_cast|llvm\.sext)\s+(%[\w.$-]+)"
)
_FOR = re.compile(r"scf\.for\s+%[\w.$-]+\s*=\s*(%[\w.$-]+)\s+to\s+(%[\w.$-]+)\s+step\s+(%[\w.$-]+)")
_TENSOR = re.compile(r"tensor<((?:\d+x)*)([^>]*?)>+")
_PTR_TENSOR = re.compile(
    r"tensor<((?:\d+x)*)!tt\.ptr<(\w+)>>|!tt\.ptr<(?:tensor<((?:\d+x)*)(\w+)>|(\w+))>"
)
_TT_MEM = re.compile(r"\btt\.(load|store|atomic_rmw|atomic_cas)\b")
_VECTOR_OP = re.compile(r"=\s*(arith|math)\.(\w+)\b")
_REDUCE = re.compile(r'=\s*"?tt\.(reduce|scan)"?[("\s]')
_REGION_END = re.compile(r"^\s*\}\)\s*:\s*\(")
_MEMREF = re.compile(r"memref<((?:[\d?]+x)*)(\w+)(?:,[^<>]*(?:<[^<>]*(?:<[^<>]*>)?[^<>]*>)*)*>")
# a scalar load/store of GM: `memref.load %m[%i] : memref<1xf32, ..., #hivm.address_space<gm>>`
_SCALAR_GM = re.compile(
    r"\bmemref\.(load|store)\b.*\s:\s*memref<(?:[\d?]+x)*(\w+),.*address_space<gm>>\s*$"
)
_CALL = re.compile(r"\bcall\s+@([\w.$-]+)\(([^)]*)\)")
_FUNC = re.compile(r"^\s*(?:func\.func|tt\.func)\b")
_BLOCK = re.compile(r"^\s*\^(bb\d+)\(\s*(%[\w.$-]+)")
_BRANCH = re.compile(r"cf\.br\s+\^(bb\d+)\(\s*(%[\w.$-]+)")
_CMP = re.compile(r"arith\.cmpi\s+slt,\s*(%[\w.$-]+),\s*(%[\w.$-]+)")
_ADD = re.compile(r"(%[\w.$-]+)\s*=\s*(?:arith\.addi|llvm\.add)\s+(%[\w.$-]+),\s*(%[\w.$-]+)")


def element_bytes(ty: str) -> int:
    if ty in ELEMENT_BYTES:
        return ELEMENT_BYTES[ty]
    m = re.match(r"[a-z]+(\d+)$", ty)
    return max(1, int(m.group(1)) // 8) if m else 4


def _numel(dims: str) -> int:
    """``4x256x`` -> 1024 (a 0-d type -> 1)."""
    return prod(int(d) for d in dims.split("x") if d)


def _lines(text: str) -> list[str]:
    """The module's operations without string literals (locations' file names), whose braces
    and commas would be read as structure."""
    return [_STRING.sub(_keep_op_name, line) for line in text.splitlines()]


def _keep_op_name(m: re.Match) -> str:
    """A quoted operation name (``"tt.reduce"``, generic form) stays; other strings go."""
    return m.group(0) if _OP_NAME.fullmatch(m.group(0)) else '""'


def _constants(lines: list[str]) -> dict[str, int]:
    out = {}
    for line in lines:
        for m in _INT_CONST.finditer(line):
            out[m.group(1)] = int(m.group(2) if m.group(2) is not None else m.group(3))
        a = _ALIAS.search(line)
        if a and a.group(2) in out:
            out[a.group(1)] = out[a.group(2)]
    return out


def _trips(lb: str, ub: str, step: str, consts: dict[str, int]) -> int | None:
    if lb in consts and ub in consts and step in consts and consts[step] > 0:
        return max(0, -(-(consts[ub] - consts[lb]) // consts[step]))
    return None


class _Loops:
    """The trip multiplier of each line: the product of the constant trip counts of the loops
    around it (``scf.for`` regions by their braces; ``cf`` loops from header to back edge)."""

    def __init__(self, lines: list[str]):
        self.dynamic = 0
        self.factor = [1] * len(lines)
        # lines inside no loop of run-time bounds: before the sub-block loop, once per program
        self.outside = [True] * len(lines)
        # value names and block labels are per function: constants and loops are read in each
        starts = [j for j, line in enumerate(lines) if _FUNC.search(line)] or [0]
        bounds = list(zip(starts, starts[1:] + [len(lines)]))
        if bounds[0][0]:
            bounds.insert(0, (0, bounds[0][0]))
        func_of = [0] * len(lines)
        consts = []
        for n, (a, b) in enumerate(bounds):
            func_of[a:b] = [n] * (b - a)
            consts.append(_constants(lines[a:b]))
        cf_spans = []  # (header line, back-edge line, trips)
        for i, line in enumerate(lines):
            m = _BLOCK.match(line)
            if not m:
                continue
            label, iv = m.groups()
            a, end = bounds[func_of[i]]
            edge = re.compile(rf"cf\.br\s+\^{label}\(")
            back = [j for j in range(i + 1, end) if edge.search(lines[j])]
            if not back:
                continue
            trips = self._cf_trips(lines[a:end], i - a, back[-1] - a, label, iv, consts[func_of[i]])
            cf_spans.append((i, back[-1], trips))
        stack: list[int] = []  # multipliers of the open brace regions
        dynamic: list[bool] = []  # per open brace region: the body of a run-time-bound loop
        for i, line in enumerate(lines):
            f = _FOR.search(line)
            for_trips = None
            if f:
                for_trips = _trips(*f.groups(), consts[func_of[i]])
                if for_trips is None:
                    self.dynamic += 1
            here = prod(stack) if stack else 1
            self.outside[i] = not any(dynamic)
            opens_for = bool(f) and line.rstrip().endswith("{")
            last_open = line.rfind("{")
            for k, ch in enumerate(line):
                if ch == "{":
                    body = opens_for and k == last_open
                    stack.append((for_trips or 1) if body else 1)
                    dynamic.append(body and for_trips is None)
                elif ch == "}" and stack:
                    stack.pop()
                    dynamic.pop()
            self.factor[i] = here
        for start, end, trips in cf_spans:
            if trips is None:
                self.dynamic += 1
                self.outside[start : end + 1] = [False] * (end + 1 - start)
                continue
            for j in range(start, end + 1):
                self.factor[j] *= trips

    @staticmethod
    def _cf_trips(lines, head, back, label, iv, consts) -> int | None:
        """Trip count of a ``cf`` loop: init from the entry branch, bound from the header's
        ``cmpi slt``, step from the back edge's ``addi``; None when one is not a constant."""
        init = next(
            (
                m.group(2)
                for line in reversed(lines[:head])
                for m in [_BRANCH.search(line)]
                if m and m.group(1) == label
            ),
            None,
        )
        cmp = next((m for line in lines[head : head + 4] for m in [_CMP.search(line)] if m), None)
        nxt = _BRANCH.search(lines[back])
        if not (init and cmp and nxt and cmp.group(1) == iv):
            return None
        step = None
        for line in lines[head:back]:
            a = _ADD.search(line)
            if a and a.group(1) == nxt.group(2) and iv in a.group(2, 3):
                step = a.group(3) if a.group(2) == iv else a.group(2)
        return _trips(init, cmp.group(2), step, consts) if step else None


def ttir_work(ttir: str) -> dict:
    """GM bytes and vector work of one block, from Triton IR text. ``gm_bytes_outside_loops``:
    the part of ``gm_bytes`` moved outside every loop of run-time bounds (0 without one): in a
    kernel with sub-block loops, once per program, not per block (npu_lowering/hoist.py)."""
    lines = _lines(ttir)
    loops = _Loops(lines)
    gm = 0
    gm_outside = 0
    vector: dict[str, dict] = {}
    reduce_at = None  # a tt.reduce / tt.scan whose operand type is on its region's closing line
    for line, k, outside in zip(lines, loops.factor, loops.outside):
        if reduce_at is not None and _REGION_END.match(line):
            t = _TENSOR.search(line)
            if t:
                _add(vector, "reduce", reduce_at, t)
            reduce_at = None
            continue
        if _TT_MEM.search(line):
            m = _PTR_TENSOR.search(line.split(" : ", 1)[-1])
            if m:
                dims = m.group(1) or m.group(3) or ""
                ty = m.group(2) or m.group(4) or m.group(5)
                gm += k * _numel(dims) * element_bytes(ty)
                if loops.dynamic and outside:
                    gm_outside += k * _numel(dims) * element_bytes(ty)
            continue
        if _REDUCE.search(line):
            reduce_at = k
            continue
        op = _VECTOR_OP.search(line)
        if not op or op.group(2) in NOT_WORK:
            continue
        t = _TENSOR.search(line.split(" : ", 1)[-1] if " : " in line else line)
        if not t:  # a scalar (an index, a loop bound): the scalar unit's, not vector work
            continue
        if op.group(1) == "math" and op.group(2) in TRANSCENDENTAL:
            cls = "transcendental"
        elif op.group(2) in DIVIDE:
            cls = "divide"
        elif op.group(2) in INT_DIVIDE:
            cls = "int_divide"
        else:
            cls = "basic"
        _add(vector, cls, k, t)
    return {
        "gm_bytes": gm,
        "gm_bytes_outside_loops": gm_outside,
        "vector": vector,
        "dynamic_loops": loops.dynamic,
    }


def _add(vector: dict, cls: str, times: int, tensor: re.Match) -> None:
    """Count an operation ``times`` over the elements of its tensor type, by element type."""
    row = vector.setdefault(cls, {"ops": 0, "elements": {}})
    row["ops"] += times
    ty = tensor.group(2)
    row["elements"][ty] = row["elements"].get(ty, 0) + times * _numel(tensor.group(1))


def _defs(lines: list[str]) -> dict[str, list[int]]:
    """Each value's defining lines: MLIR's printer reuses names in sibling regions, so a use
    reads the nearest definition above it."""
    out: dict[str, list[int]] = {}
    for i, line in enumerate(lines):
        if _SSA_DEF.match(line):
            for name in re.findall(r"%[\w.$-]+", line.split("=", 1)[0]):
                out.setdefault(name, []).append(i)
    return out


def _static_bytes(name: str, at: int, lines: list[str], defs: dict, depth: int = 0) -> int | None:
    """Bytes of the static memref a value used on line ``at`` was cast, collapsed or sliced
    from."""
    where = [i for i in defs.get(name, ()) if i < at]
    if not where or depth > 16:
        return None
    i = where[-1]
    rhs = lines[i].split("=", 1)[1]
    types = list(_MEMREF.finditer(rhs))
    if types:
        last = types[-1]  # the result type of a cast / collapse / subview / pointer_cast
        dims = last.group(1)
        if "?" not in dims and dims and "extract_strided_metadata" not in rhs:
            return _numel(dims) * element_bytes(last.group(2))
    src = re.search(r"[\w.]+\s+(%[\w.$-]+)", rhs)
    return _static_bytes(src.group(1), i, lines, defs, depth + 1) if src else None


def hivm_dma(hivm: str) -> dict:
    """GM <-> on-chip DMA bytes of one block, from bishengir's final HIVM text."""
    lines = _lines(hivm)
    loops = _Loops(lines)
    defs = _defs(lines)
    load = store = scalar = 0
    unsized = 0
    for at, (line, k) in enumerate(zip(lines, loops.factor)):
        s = _SCALAR_GM.search(line)
        if s:
            scalar += k * element_bytes(s.group(2))
            continue
        call = _CALL.search(line)
        if not call or " : (" not in line:
            continue
        kinds = [
            "gm" if "address_space<gm>" in t.group(0) else "chip"
            for t in _MEMREF.finditer(line.split(" : (", 1)[1])
        ]
        args = [a.strip() for a in call.group(2).split(",")]
        if "gm" not in kinds or "chip" not in kinds:
            continue
        chip = args[kinds.index("chip")] if len(args) >= len(kinds) else None
        size = _static_bytes(chip, at, lines, defs) if chip else None
        if size is None:
            unsized += 1
            continue
        if kinds.index("gm") < kinds.index("chip"):
            load += k * size
        else:
            store += k * size
    return {
        "bytes": load + store + scalar,
        "load_bytes": load,
        "store_bytes": store,
        "scalar_bytes": scalar,
        "unsized": unsized,
        "dynamic_loops": loops.dynamic,
    }
