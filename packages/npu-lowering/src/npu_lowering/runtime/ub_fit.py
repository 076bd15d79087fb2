"""Ascend: configs compile with the multi-buffer setting they were tiled for, and a config
Ascend's compiler rejects for its unified buffer (UB) never reaches a user.

A mixin of the npu kernel object (the base of ``AscendRouteMixin``); it acts only for
kernels of flavour "ascend":

- ``_create_compile_options``: triton-ascend 3.2 compiles with ``multibuffer=True`` unless
  told otherwise (its NPUOptions default on A2/A3), which doubles the UB of every buffer
  bishengir can pipeline. A config says what it was tiled for (``tiling.is_multibuffer``:
  ``num_stages >= 2``), and that is what it compiles with; ``num_stages`` itself means
  nothing to a vector core and is passed as 1.
- ``_precompile_config``: bishengir's "ub overflow, requires N bits while M bits available"
  (in the compile error, or in the stderr of the CalledProcessError triton-ascend's
  ``linalg_to_bin`` raises) becomes ``OutOfResources``, which upstream's precompile drops
  from the candidates, as triton-ascend's own autotuner drops such configs; logged with the
  kernel, config and requirement. Other compile errors propagate unchanged.
- ``_precompile_worker``: when no config is left, the error names the kernel and the UB
  requirement of each config that was dropped.
"""

from __future__ import annotations

import logging
import re

from torch._inductor.runtime.triton_heuristics import NoTritonConfigsError

from npu_inductor_core import kernel_objects
from npu_inductor_core import tiles as tiling

from .flavour import flavour

log = logging.getLogger(__name__)

UB_OVERFLOW = re.compile(
    r"ub overflow, requires (\d+) bits while (\d+) bits available", re.IGNORECASE
)


def _texts(exc: BaseException):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield str(exc)
        for attr in ("stderr", "output", "stdout"):
            v = getattr(exc, attr, None)
            if isinstance(v, bytes):
                v = v.decode("utf-8", "replace")
            if isinstance(v, str):
                yield v
        exc = exc.__cause__ or exc.__context__


def ub_overflow(exc: BaseException) -> tuple[int, int] | None:
    """(required bits, available bits) when a compile failed for the UB, else None."""
    for text in _texts(exc):
        m = UB_OVERFLOW.search(text)
        if m:
            return int(m.group(1)), int(m.group(2))
    return None


class UbFitMixin:
    @property
    def _ub_ascend(self) -> bool:
        return kernel_objects.is_ascend(self.inductor_meta, flavour())

    def _create_compile_options(self, cfg, compile_meta):
        options = super()._create_compile_options(cfg, compile_meta)
        if self._ub_ascend:
            options.update(tiling.compile_options(cfg))
        return options

    def _precompile_config(self, cfg):
        if not self._ub_ascend:
            return super()._precompile_config(cfg)
        try:
            return super()._precompile_config(cfg)
        except Exception as exc:
            overflow = ub_overflow(exc)
            if overflow is None:
                raise
            from triton.runtime.errors import OutOfResources

            required, available = overflow
            dropped = getattr(self, "_ub_dropped", None)
            if dropped is None:
                dropped = self._ub_dropped = []
            dropped.append((cfg, required))
            log.warning(
                "npu kernel %s: config %s dropped: ub overflow, requires %d bits while %d bits "
                "available (bishengir)",
                self.inductor_meta.get("kernel_name"),
                cfg,
                required,
                available,
            )
            # the message keeps bishengir's words, so an outer handler recognizes it too
            raise OutOfResources(
                required,
                available,
                f"unified buffer bits (ub overflow, requires {required} bits while "
                f"{available} bits available)",
            ) from exc

    def _precompile_worker(self):
        try:
            return super()._precompile_worker()
        except NoTritonConfigsError as exc:
            dropped = getattr(self, "_ub_dropped", None)
            if not self._ub_ascend or not dropped:
                raise
            why = "; ".join(f"{c.kwargs} needs {bits // 8} bytes" for c, bits in dropped)
            raise NoTritonConfigsError(
                f"npu kernel {self.inductor_meta.get('kernel_name')}: no config fits the "
                f"unified buffer ({why})"
            ) from exc
