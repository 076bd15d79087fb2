"""Coordinate descent for npu kernels: upstream's CoordescTuner (its search radius,
all-directions check and tuning switch all read from ``inductor_meta`` by upstream) with
the Ascend limits: a vector core runs one SIMD program, so num_warps is not a direction, and
a neighbour whose blocks overflow the unified buffer (by the tile budget, and by
npu-inductor-core's body-aware estimate of the kernel) is invalid (never compiled or
launched)."""

from __future__ import annotations

from torch._inductor.runtime.coordinate_descent_tuner import CoordescTuner

from npu_inductor_core import tiles


class NpuCoordescTuner(CoordescTuner):
    def __init__(
        self,
        *,
        name,
        size_hints,
        inductor_meta,
        triton_meta,
        dev: tiles.Device,
        persistent: bool,
        pointwise: bool,
        is_mix_order_reduction: bool = False,
        filename: str | None = None,
    ):
        super().__init__(
            is_mm=False,
            is_mix_order_reduction=is_mix_order_reduction,
            name=name,
            size_hints=size_hints,
            inductor_meta=inductor_meta,
        )
        self.npu_triton_meta = triton_meta
        self.npu_device = dev
        self.npu_persistent = persistent
        self.npu_pointwise = pointwise
        self.npu_filename = filename  # the kernel's source: its body-aware UB estimate
        self.npu_rejected = 0  # neighbours refused for the UB (tests read it)

    @property
    def tunable_fields(self) -> list[str]:
        return [f for f in super().tunable_fields if f not in ("num_warps", "num_stages")]

    def value_too_small(self, name: str, val: int) -> bool:
        # a pointwise kernel's innermost (x) block covers at least 32 bytes (Ascend alignment)
        if (
            name == "XBLOCK"
            and self.npu_pointwise
            and val < tiles.ALIGN_BYTES // tiles.element_bytes(self.npu_triton_meta)
        ):
            return True
        return super().value_too_small(name, val)

    def is_valid_config(self, config) -> bool:
        if not super().is_valid_config(config):
            return False
        rn = (
            tiles.persistent_rnumel(self.size_hints, config.kwargs) if self.npu_persistent else None
        )
        if not tiles.fits_ub(
            config, self.npu_triton_meta, self.npu_device, rn
        ) or not tiles.fits_ub_estimate(
            config.kwargs,
            tiles.is_multibuffer(config),
            self.npu_triton_meta,
            self.inductor_meta,
            self.npu_filename,
        ):
            self.npu_rejected += 1
            return False
        return True
