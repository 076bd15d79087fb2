"""An estimate of a kernel's time on an Ascend NPU, for decisions npu-sim cannot time.

npu-sim runs kernels in Triton's interpreter on a CPU: timing it says nothing about an NPU and
changes with the machine's load. This module prices what a kernel does instead, from facts
that do not depend on the machine: the bytes it moves between global memory (GM) and the
cores' unified buffers, the element operations its vector units do, the multiply-accumulates
its Cube units do, and how many programs (blocks) it launches over how many cores.

    time = launch + waves x (the slowest of DMA, vector and Cube work of one program
                             + a program's fixed cost)

where ``waves = ceil(programs / cores)`` and the DMA bandwidth of one program is its core's
share of the HBM bandwidth (all active cores share it) capped by what one core's DMA moves
per cycle; so a config that leaves cores idle is slower (fewer cores share the bytes), a
fused kernel that removes a GM round trip is cheaper (fewer bytes, one launch), and a GEMM on
the Cube beats the same GEMM on the vector units. Every constant is in ``COSTS`` with its
source (README "Cost model"); what the model ignores is listed there too.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
import re

from .device import Device
from .kernel_objects import kernel_fact
from .ub_profile import _DTYPE_BYTES


@dataclasses.dataclass(frozen=True)
class Costs:
    """Per SoC family; sources in the README's table."""

    clock_hz: float
    hbm_bytes_per_s: float
    core_gm_bytes_per_cycle: float  # one core's DMA (GM -> UB and back)
    vector_bytes_per_cycle: float  # one vector unit: 8 blocks of 32 bytes per repeat
    cube_macs_per_cycle: float  # one Cube unit, float16/bfloat16 operands
    cube_fp32_share: float  # the Cube's float32 rate, as a share of its float16 rate
    special_op_repeats: float  # exp, log, sqrt, rsqrt, division: one instruction, slower
    composite_op_repeats: float  # tanh, erf, sin, cos, pow...: Ascend C builds them of several
    kernel_launch_s: float  # host launch of a triton-ascend kernel
    aclnn_launch_s: float  # an ATen op through aclnn: workspace query, then launch
    program_s: float  # a program's fixed cost: scalar setup, pipeline fill and drain


COSTS = {
    "910B": Costs(
        clock_hz=1.8e9,
        hbm_bytes_per_s=1.6e12,
        core_gm_bytes_per_cycle=64.0,
        vector_bytes_per_cycle=256.0,
        cube_macs_per_cycle=4096.0,
        cube_fp32_share=0.25,
        special_op_repeats=2.0,
        composite_op_repeats=8.0,
        kernel_launch_s=6e-6,
        aclnn_launch_s=15e-6,
        program_s=0.5e-6,
    ),
    # the 950PR (published figures in the README; the 950DT's 4 TB/s HBM is not a row)
    "950": Costs(
        clock_hz=1.65e9,
        hbm_bytes_per_s=1.6e12,
        core_gm_bytes_per_cycle=64.0,
        vector_bytes_per_cycle=512.0,  # twice the 910B's FP16 vector rate per core and cycle
        cube_macs_per_cycle=4096.0,
        cube_fp32_share=0.25,
        special_op_repeats=2.0,
        composite_op_repeats=8.0,
        kernel_launch_s=6e-6,
        aclnn_launch_s=15e-6,
        program_s=0.5e-6,
    ),
}


# a kernel's work in its inductor_meta (npu-lowering's codegen writes it, the estimate reads it)
WORK_KEY = "npu_work"
COMPUTE_BYTES = 4  # a statement of unknown dtype (or a record without them) is float32's

# Operand bytes of one vector statement by its dtype (the record's ``dtype_ops``): the vector
# unit processes 256 bytes a repeat, so half-width operands take half the repeats. Ascend's
# vector units have no 64-bit integer ALU for most operations (an assumption from CANN's
# Ascend C API reference, whose basic arithmetic takes 16- and 32-bit integers): an int64
# statement is priced as two int32 ones, and float64 likewise.
DTYPE_BYTES = _DTYPE_BYTES  # one table of element sizes (ub_profile's), by dtype name

# Element classes of a vector statement, by the functions generated code calls. Ascend C has
# exp, ln, sqrt, rsqrt and reciprocal as basic vector instructions (slower than an add); tanh,
# erf, sin, cos, pow and the like are its math library's functions, several instructions each.
_COMPOSITE = re.compile(
    r"\b(?:tanh|erf|erfc|erfinv|sin|cos|tan|asin|acos|atan|atan2|sinh|cosh|asinh|acosh|atanh"
    r"|pow|log1p|expm1|lgamma|digamma|sigmoid|gelu|softplus|cbrt|hypot|nextafter|fmod)\("
)
_SPECIAL = re.compile(
    r"\b(?:exp|exp2|log|log2|log10|sqrt|rsqrt|reciprocal|div_rn|fdiv)\(|[^/]/[^/]"
)


def element_classes(statements) -> dict:
    """How many of ``statements`` (lines of generated kernel code) are composite or special
    element operations (``special_ops`` / ``composite_ops``); the rest count as basic ones."""
    special = composite = 0
    for line in statements:
        if _COMPOSITE.search(line):
            composite += 1
        elif _SPECIAL.search(line.split("=", 1)[-1]):
            special += 1
    return {"special_ops": special, "composite_ops": composite}


@dataclasses.dataclass(frozen=True)
class KernelWork:
    """What one launch of a kernel does, in total over its programs."""

    programs: int
    gm_bytes: float = 0.0
    vector_bytes: float = 0.0  # bytes of operands the vector units process
    cube_macs: float = 0.0


def statement_bytes(rec: dict) -> float:
    """Operand bytes per element of a record's vector statements: each counted dtype's
    (``dtype_ops``, ``DTYPE_BYTES``), the rest (every statement of an older record) as
    float32's."""
    ops = float(rec.get("vector_ops", 0))
    by_dtype = rec.get("dtype_ops") or {}
    known = sum(float(n) for n in by_dtype.values())
    priced = sum(float(n) * DTYPE_BYTES.get(d, COMPUTE_BYTES) for d, n in by_dtype.items())
    return priced + max(0.0, ops - known) * COMPUTE_BYTES


def record(inductor_meta: dict | None) -> dict | None:
    """A kernel's work record (``WORK_KEY``), or None; a combo kernel's rides in its
    per-sub-kernel facts (``combo_grid_meta``: npu-lowering's combo_meta)."""
    return kernel_fact(inductor_meta, WORK_KEY) or None


def work_of(inductor_meta: dict, programs: int, dev: Device | None = None) -> KernelWork | None:
    """The work a generated kernel recorded (``WORK_KEY``: its GM bytes, the vector statements
    it runs per element (of them, the special and composite ones: ``element_classes``; by
    dtype: ``statement_bytes``) and its element count, its Cube MACs and whether they are
    float32), launched as ``programs``; None for a kernel without the record."""
    rec = record(inductor_meta)
    if not rec:
        return None
    c = costs_for(dev or Device())
    ops = float(rec.get("vector_ops", 0))
    per_element = statement_bytes(rec)
    # a special or composite statement's further repeats, at the statements' mean width
    mean = per_element / ops if ops else COMPUTE_BYTES
    special, composite = float(rec.get("special_ops", 0)), float(rec.get("composite_ops", 0))
    per_element += mean * (
        special * (c.special_op_repeats - 1) + composite * (c.composite_op_repeats - 1)
    )
    macs = float(rec.get("macs", 0))
    return KernelWork(
        programs=programs,
        gm_bytes=float(rec.get("gm_bytes", 0)),
        vector_bytes=per_element * float(rec.get("numel", 0)),
        # the Cube's float32 rate is a share of its float16 one: as many more cycles
        cube_macs=macs / c.cube_fp32_share if rec.get("fp32_macs") else macs,
    )


def costs_for(dev: Device) -> Costs:
    return COSTS[dev.family]


def kernel_seconds(work: KernelWork, dev: Device) -> float:
    """Estimated device time of one launch, launch cost included."""
    c = costs_for(dev)
    programs = max(1, int(work.programs))
    cores = max(1, dev.cube_cores if work.cube_macs else dev.vector_cores)
    active = min(programs, cores)
    waves = math.ceil(programs / cores)
    dma_bytes_per_s = min(c.core_gm_bytes_per_cycle * c.clock_hz, c.hbm_bytes_per_s / active)
    per_program = max(
        work.gm_bytes / programs / dma_bytes_per_s,
        work.vector_bytes / programs / (c.vector_bytes_per_cycle * c.clock_hz),
        work.cube_macs / programs / (c.cube_macs_per_cycle * c.clock_hz),
    )
    return c.kernel_launch_s + waves * (per_program + c.program_s)


def aten_op_seconds(gm_bytes: float, macs: float, dev: Device, fp32: bool = False) -> float:
    """Estimated time of one ATen op run by CANN's aclnn kernels (an eager op, or an extern
    kernel of a compiled graph): its launch, and its bytes and MACs at the whole device's
    rates (CANN's kernels are taken to use every core); ``fp32``: float32 MACs."""
    c = costs_for(dev)
    rate = max(1, dev.cube_cores) * c.cube_macs_per_cycle * c.clock_hz
    return c.aclnn_launch_s + max(
        gm_bytes / c.hbm_bytes_per_s, macs / (rate * (c.cube_fp32_share if fp32 else 1.0))
    )


def _tiles(size: int, block: int) -> int:
    return -(-size // block)


def gemm_template_work(
    batch: int, m: int, n: int, k: int, itemsize: int, tile, dev: Device
) -> KernelWork:
    """A GEMM template's launch over ``tile`` = (BLOCK_M, BLOCK_N, BLOCK_K): one program per
    output tile, each reading its rows of A and columns of B whole (A is read once per column
    of tiles, B once per row) and the Cube working on whole (padded) tiles; float32 operands
    priced at the Cube's float32 rate."""
    bm, bn, bk = tile
    tm, tn, tk = _tiles(m, bm), _tiles(n, bn), _tiles(k, bk)
    moved = batch * itemsize * (tm * bm * k * tn + tn * bn * k * tm + m * n)
    macs = batch * tm * bm * tn * bn * tk * bk
    share = costs_for(dev).cube_fp32_share if itemsize >= 4 else 1.0
    return KernelWork(programs=batch * tm * tn, gm_bytes=moved, cube_macs=macs / share)


def gemm_seconds(batch: int, m: int, n: int, k: int, itemsize: int, tile, dev: Device):
    """(template, ATen): the estimated time of one GEMM (``batch`` products of m x k by k x n)
    as a Triton template over ``tile``, and as one aclnn op. ATen's pays aclnn's two-phase
    launch and runs at the whole device's rates; the template pays a kernel launch and its
    programs' waves over the Cube cores."""
    template = kernel_seconds(gemm_template_work(batch, m, n, k, itemsize, tile, dev), dev)
    moved = batch * itemsize * (m * k + k * n + m * n)
    aten = aten_op_seconds(moved, batch * m * n * k, dev, fp32=itemsize >= 4)
    return template, aten


class Estimate:
    """The estimated device seconds of what ran inside ``estimating()``: each npu kernel
    launch and each ATen op adds its figure instead of being timed."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.kernels = 0
        self.aten_ops = 0
        self.unpriced: list[str] = []  # kernels without a work record (priced at a launch)


_current: contextvars.ContextVar[Estimate | None] = contextvars.ContextVar(
    "npu_cost_estimate", default=None
)


@contextlib.contextmanager
def estimating():
    """Within: npu kernel launches and ATen ops on npu are priced, not run (kernels) or run
    and priced (ATen ops, whose outputs later code may read); yields the ``Estimate``."""
    est = Estimate()
    token = _current.set(est)
    try:
        yield est
    finally:
        _current.reset(token)


def current() -> Estimate | None:
    """The estimate being collected in this context, else None (kernels then run)."""
    return _current.get()


def add_kernel(inductor_meta: dict, programs: int, dev: Device) -> None:
    """Price one kernel launch into the current estimate."""
    est = _current.get()
    if est is None:
        return
    work = work_of(inductor_meta, programs, dev)
    if work is None:
        est.unpriced.append(str((inductor_meta or {}).get("kernel_name", "?")))
        work = KernelWork(programs=programs)
    est.seconds += kernel_seconds(work, dev)
    est.kernels += 1


def add_aten_op(gm_bytes: float, macs: float, dev: Device, fp32: bool = False) -> None:
    est = _current.get()
    if est is None:
        return
    est.seconds += aten_op_seconds(gm_bytes, macs, dev, fp32)
    est.aten_ops += 1


def priced_launch(inductor_meta: dict, grid) -> bool:
    """Inside ``estimating()``: price a launch of this kernel over ``grid`` (the caller then
    does not run it) and return True; outside, False."""
    if _current.get() is None:
        return False
    from .device import device_for

    programs = math.prod(max(0, int(g)) for g in grid)
    add_kernel(inductor_meta, programs, device_for(inductor_meta))
    return True
