"""Grids of npu kernels: at most one program per vector core, for any size.

An npu kernel loops over the sub-blocks of its program axes (``kernel.py``): program ``p`` of
``n`` handles the contiguous run of sub-blocks ``[p * ceil(b / n), (p + 1) * ceil(b / n))``
of the axis' ``b = ceil(numel / BLOCK)`` sub-blocks, so any grid of at least one program
covers the tensor. The grid is then chosen for the device alone: per axis, the sub-block
count capped at the vector cores still free, balanced so that no program is left without
work (``ceil(b / ceil(b / cores))`` programs). Outer axes (z, then y) take cores first, so a
program owns one contiguous stretch of the outer axis, and of memory.

Upstream resolves ``inductor_meta["grid_type"]`` by name in ``triton_heuristics``' globals
(``GridExpr.from_meta``, used by the launcher, the simulated run path and the C++ wrapper);
importing this module registers our names there (``_compat.register_npu_grid_types``).
The vector-core count is the one in the kernel's device facts (``inductor_meta`` key
``npu_device_facts``, tiling.py), recorded where the kernel is generated, like the Triton
flavour (compile workers have no npu).
"""

from __future__ import annotations

from torch._inductor.runtime.triton_heuristics import GridExpr

from .tiling import FACTS_KEY


class NpuGrid(GridExpr):
    """Base of the npu grid types; ``axes`` lists the program axes, x first."""

    axes: tuple[str, ...] = ()

    def generate(self, meta: dict, is_lazy: bool = False) -> None:
        cores = (self.inductor_meta.get(FACTS_KEY) or {}).get("vector_cores")
        if not isinstance(cores, int) or cores < 1:
            raise ValueError(f"npu kernel {self.inductor_meta.get('kernel_name')}: inductor_meta has no "
                             f"'{FACTS_KEY}' vector-core count (got {cores!r}); it was not generated "
                             "by npu-lowering")
        free: int | str = cores
        grids: dict[str, int | str] = {}
        for axis in reversed(self.axes):  # outer axes first: contiguous chunks of memory
            grids[axis] = self._axis_grid(axis, meta.get(f"{axis.upper()}BLOCK"), free)
            if axis != self.axes[0]:
                free = self._cores_left(axis, free, grids[axis])
        self.x_grid, self.y_grid, self.z_grid = (grids.get(a, 1) for a in ("x", "y", "z"))

    def _axis_grid(self, axis: str, block, cores: int | str) -> int | str:
        blocks = self._tmp(f"{axis}_subblocks_", self.ceildiv(f"{axis}numel", block))
        per_program = self._tmp(f"{axis}_per_program_", self.ceildiv(blocks, cores))
        # an empty axis gives 0 sub-blocks, 0 per program and so a grid of 0 (nothing to run)
        return self.ceildiv(blocks, self._at_least_1(per_program))

    def _cores_left(self, axis: str, cores: int | str, used: int | str) -> int | str:
        used = self._at_least_1(used)
        if isinstance(cores, int) and isinstance(used, int):
            return max(cores // used, 1)
        div = "//" if self.mode == "python" else "/"
        return self._tmp(f"{axis}_cores_left_", self._at_least_1(f"({cores}) {div} ({used})"))

    def _at_least_1(self, expr: int | str) -> int | str:
        if isinstance(expr, int):
            return max(expr, 1)
        # one type on both sides: std::max does not deduce across uint32_t and long
        return f"max({expr}, 1)" if self.mode == "python" else f"std::max((long)({expr}), (long)1)"

    def _tmp(self, name: str, expr: int | str) -> int | str:
        if isinstance(expr, int):
            return expr
        self.prefix.append(self.assign_tmp(name, expr))
        return name


class NpuGrid1D(NpuGrid):
    axes = ("x",)


class NpuGrid2D(NpuGrid):
    axes = ("x", "y")


class NpuGrid3D(NpuGrid):
    axes = ("x", "y", "z")


GRID_TYPES = {1: NpuGrid1D, 2: NpuGrid2D, 3: NpuGrid3D}


def _register() -> None:
    from .._compat import register_npu_grid_types

    register_npu_grid_types(*GRID_TYPES.values())


_register()
