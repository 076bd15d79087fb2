"""Ascend: triton-ascend compiles each config, npu-launcher launches it (static launch on hardware).

A mixin of the npu kernel object (``NpuCachingAutotuner``, which provides
``_refuse_static``, ``_fetch_or_compile``, ``_check_user_kernel_allowed`` and
``_device_index``); it acts only for kernels of flavour "ascend" and leaves every other
kernel to the next class, upstream's ``CachingAutotuner``.
"""

from __future__ import annotations

from torch._inductor import config as inductor_config

from npu_inductor_core import kernel_objects

from .entries import compiled_describer, native_launcher
from .flavour import flavour
from .static_result import NpuStaticCompileResult, NpuStaticKernel, _bound_native
from .ub_fit import UbFitMixin  # UB overflows dropped, multi-buffer per config (ub_fit.py)


class _NotDescribed(Exception):
    """A compiled kernel npu-launcher cannot describe (the compile itself succeeded)."""


class AscendRouteMixin(UbFitMixin):
    @property
    def _ascend(self) -> bool:
        return kernel_objects.is_ascend(self.inductor_meta, flavour())

    def _precompile_config(self, cfg):
        """On Ascend, with static launch on and npu-launcher installed, a config compiled by
        triton-ascend becomes an npu-launcher descriptor (through the kernel-binary cache:
        a hit skips triton-ascend) held as an NpuStaticCompileResult, which TritonBundler
        bundles into the FX graph cache entry like upstream's cubins. A kernel the
        launcher cannot describe keeps Triton's own launcher, or raises when strict."""
        if not self._ascend:
            return super()._precompile_config(cfg)
        describe = compiled_describer()
        if (
            not inductor_config.use_static_triton_launcher
            or describe is None
            or native_launcher() is None
        ):
            return super()._precompile_config(cfg)
        try:
            self._check_user_kernel_allowed()
        except RuntimeError as exc:
            self._refuse_static(exc, "keeps Triton's launcher")
            return super()._precompile_config(cfg)
        compiled = []

        def compile_fn():
            compiled.append(
                super(AscendRouteMixin, self)._precompile_config(cfg)
            )  # compile errors propagate
            try:
                return describe(compiled[-1].kernel)
            except Exception as exc:
                raise _NotDescribed(exc) from exc

        try:  # a compile error is the compile's, raised as upstream raises it
            desc = self._fetch_or_compile(compile_fn, cfg, f"npu/ascend/{self._soc()}")
        except _NotDescribed as exc:
            self._refuse_static(exc.__cause__, "keeps Triton's launcher")
            return compiled[-1]
        fn = self.fn
        kernel = NpuStaticKernel(
            desc.name,
            desc.to_bytes(),
            self._device_index(),
            native=True,
            arg_names=fn.arg_names,
            declared_constexprs=[p.num for p in fn.params if p.is_constexpr],
        )
        return NpuStaticCompileResult(
            kernel, cfg, self._create_compile_meta(cfg), self.inductor_meta
        )

    def _make_launchers(self):
        """A native descriptor that cannot be bound here (no CANN runtime, another SoC) is
        replaced by Triton's launcher, compiled from the kernel's source (a Triton cache hit);
        strict mode raises. (``_make_launchers``: torch 2.11 has no per-result hook.)"""
        if self._ascend and len(self.launchers) != len(self.compile_results or ()):
            self.compile_results = [self._bound_or_fallback(r) for r in self.compile_results]
        return super()._make_launchers()

    def _bound_or_fallback(self, result):
        if (
            not (isinstance(result, NpuStaticCompileResult) and result.kernel.native)
            or result in _bound_native
        ):
            return result
        try:
            _bound_native[result] = result.make_launcher()  # what upstream's loop then takes
            return result
        except Exception as exc:
            if not type(exc).__module__.startswith("npu_launcher"):
                raise
            self._refuse_static(exc, "falls back to Triton's launcher")
        from .. import _compat

        _compat.ensure_kernel_source(self)  # restored from the FX cache without its source
        return super(AscendRouteMixin, self)._precompile_config(result.config)

    def _soc(self) -> str:
        # what triton-ascend compiles for (GPUTarget's arch is the device's cc: the SoC name)
        return str(self.device_props.cc or "")
