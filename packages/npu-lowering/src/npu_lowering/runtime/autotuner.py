"""The kernel object of npu kernels: upstream's CachingAutotuner, launching through npu-sim
when the device is simulated.

On the simulator there is no Triton driver to compile for: each run interprets the kernel's
first config (the one the tiling model puts first: few, large programs). With npu-launcher
installed and ``use_static_triton_launcher`` on, precompile turns that config into a kernel
descriptor (npu-launcher's ``describe_triton``) held as a ``StaticTritonCompileResult``
subclass, so upstream's TritonBundler saves the kernel object into the FX graph cache entry
and a new process restores it and launches from the descriptor without the kernel's source.
``keep_static_cubin_raw`` keeps the descriptor bytes in that entry; otherwise only
the descriptor file in Triton's cache dir holds them. Without npu-launcher, kernels
run through npu-sim's launch entry point (group ``npu_inductor.sim_launch``), which runs
them on the npu memory itself or records them during graph capture. Elsewhere everything
is upstream's.
"""

from __future__ import annotations

import collections
import logging
import weakref

from npu_inductor_core import cost_model, decorators, kernel_objects
from npu_inductor_core.device import index_of
from torch._inductor import config as inductor_config
from torch._inductor.runtime.hints import HeuristicType
from torch._inductor.runtime.triton_heuristics import CachingAutotuner

from .ascend_route import AscendRouteMixin

# (module globals: tests replace static_binder / static_describer here)
from .entries import kernel_binary_cache, sim_launch, static_binder, static_describer  # noqa: F401
from .flavour import flavour
from .static_result import NpuStaticCompileResult, NpuStaticKernel  # noqa: F401
from .value_args import without_value_alignment

log = logging.getLogger(__name__)
# (kernel name, grid, config kwargs, triton_meta) of recent simulated launches: tests check
# every generated kernel's blocks against the UB and its grid against the device
LAUNCHES: collections.deque = collections.deque(maxlen=4096)


# the launch object of each kernel object's first config, the one the simulator runs (kept
# off the kernel object: it is pickled between compile workers, launch objects are not)
_static_launches: "weakref.WeakKeyDictionary[NpuCachingAutotuner, object]" = (
    weakref.WeakKeyDictionary()
)


_REDUCTIONS = (HeuristicType.REDUCTION, HeuristicType.PERSISTENT_REDUCTION)


class UpstreamStaticCheckOff:
    """Next to upstream's CachingAutotuner in the bases: its ``_precompile_config`` (the
    triton-ascend compile) runs with ``use_static_triton_launcher`` off for this thread and
    context, so upstream's static-launch check, which knows only cuda/xpu/hip launchers and
    raises under ``strict_static_triton_launcher``, answers None for npu kernels; npu-launcher's
    descriptor (AscendRouteMixin) and strict mode's error are decided by this class (torch's
    ``config.patch`` is context-local from torch 2.13 on)."""

    def _precompile_config(self, cfg):
        if not inductor_config.use_static_triton_launcher:
            return super()._precompile_config(cfg)
        with inductor_config.patch(use_static_triton_launcher=False):
            return super()._precompile_config(cfg)


class LaunchingAutotuner(AscendRouteMixin, UpstreamStaticCheckOff, CachingAutotuner):
    """How an npu kernel object compiles and launches (``NpuCachingAutotuner`` without its
    tuning part). On Ascend the mixin (ascend_route.py) routes triton-ascend's binaries to
    npu-launcher; on npu-sim it runs the first config through the simulator."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.triton_meta = without_value_alignment(self.triton_meta)
        if len(self.configs or ()) > 1 and self._deterministic_reduction():
            # determinism (deterministic mode, batch-invariance, run-to-run): no timing may decide a reduction's block (and so its
            # summation order). Upstream's pick (filter_reduction_configs_for_determinism,
            # which upstream applies to its own configs only; ours come first) goes first.
            # npu-sim runs just that one; on Ascend the rest stay behind it, in order, for
            # when bishengir refuses it for the UB (ub_fit.py), and the first that compiles
            # is kept (_precompile_worker): the same choice on every run of a device.
            from torch._inductor.runtime.triton_heuristics import (
                filter_reduction_configs_for_determinism,
            )

            pick = filter_reduction_configs_for_determinism(self.inductor_meta, self.configs)[0]
            rest = [c for c in self.configs if c is not pick]
            self.configs = [pick] if self.simulated else [pick, *rest]

    def _deterministic_reduction(self) -> bool:
        return self.heuristic_type in _REDUCTIONS and bool(
            self.deterministic_mode
            or self.inductor_meta.get("are_deterministic_algorithms_enabled")
        )

    @property
    def simulated(self) -> bool:
        # the kernel's flavour was decided where it was generated (compile workers have no npu)
        return kernel_objects.is_simulated(self.inductor_meta, flavour())

    def _refuse_static(self, exc, fallback: str) -> None:
        name = self.inductor_meta.get("kernel_name")
        if inductor_config.strict_static_triton_launcher:
            raise RuntimeError(f"npu kernel {name} cannot be launched statically: {exc}") from exc
        log.info("npu kernel %s %s: %s", name, fallback, exc)

    def precompile(self, warm_cache_only=False, reload_kernel=None, static_triton_bundle_key=None):
        if not self.simulated:
            return super().precompile(warm_cache_only, reload_kernel, static_triton_bundle_key)
        if warm_cache_only:  # compile worker: the interpreter has nothing to build
            return
        with self.lock:
            if reload_kernel is not None:
                self._reload_kernel = reload_kernel
            if not self.compile_results:
                # A kernel that came back from a compile worker lost its Python function to
                # pickling; get it back from the source. A restored one has compile_results.
                if getattr(self.fn, "fn", None) is None and reload_kernel is not None:
                    self.fn = reload_kernel().fn
                self.compile_results = self._describe()
            # (a kernel object outlives a flag change: PyCodeCache hands the same one back)
            if (
                static_triton_bundle_key is not None
                and inductor_config.use_static_triton_launcher
                and self.is_statically_launchable()
            ):
                from torch._inductor.triton_bundler import TritonBundler

                TritonBundler.put_static_autotuner(static_triton_bundle_key, self)

    def sim_config(self):
        """The config the simulator runs: the compiled one, else the first."""
        if self.compile_results:
            return self.compile_results[0].config
        return (self.configs or [self.launchers[0].config])[0]

    def _describe(self) -> list:
        """The simulated config as a descriptor, when static launch is on and npu-launcher is
        installed; [] otherwise (or, not strict, when it cannot be described)."""
        describe = static_describer()
        if not inductor_config.use_static_triton_launcher or describe is None:
            return []
        config = self.sim_config()
        try:
            self._check_user_kernel_allowed()
            desc = self._fetch_or_describe(describe, config)
        except Exception as exc:
            if inductor_config.strict_static_triton_launcher:
                raise RuntimeError(
                    f"npu kernel {self.inductor_meta.get('kernel_name')} cannot be "
                    f"launched statically: {exc}"
                ) from exc
            log.info(
                "npu kernel %s is not described for static launch: %s",
                self.inductor_meta.get("kernel_name"),
                exc,
            )
            return []
        kernel = NpuStaticKernel(desc.name, desc.to_bytes(), self._device_index())
        return [NpuStaticCompileResult(kernel, config, self.triton_meta, self.inductor_meta)]

    def _fetch_or_describe(self, describe, config):
        # describing is this flavour's kernel compile: a kernel-binary cache hit skips it
        def compile_fn():
            return describe(self.fn, self.triton_meta, self._sim_kwargs(config), simulated=True)

        # a descriptor carries the debug option: one with and one without are different binaries
        target = f"npu/{kernel_objects.flavour_of(self.inductor_meta, flavour())}" + (
            "/debug" if self._device_asserts() else ""
        )
        return self._fetch_or_compile(compile_fn, config, target)

    def _device_asserts(self) -> bool:
        """Upstream's compile option ``debug`` (CachingAutotuner._precompile_config): device
        asserts on when ``assert_indirect_indexing`` is, as on cuda. npu-sim's interpreter
        checks them only with it (npu-sim's launch ``debug``)."""
        return bool(self.inductor_meta.get("assert_indirect_indexing", True))

    def _sim_kwargs(self, config) -> dict:
        # upstream's compile options for these two (CachingAutotuner._create_compile_options):
        # no integer-overflow asserts, Inductor's kernels wrap on purpose (uint8 arithmetic)
        kwargs = {**config.kwargs, "debug": self._device_asserts(), "sanitize_overflow": False}
        # Python-float arguments the signature types fp64 (_use_fp64_for_unbacked_floats):
        # npu-sim makes them interpreter scalars of that type (npu-sim's launch, fp64_args)
        fp64 = [name for name, ty in self.triton_meta.get("signature", {}).items() if ty == "fp64"]
        return {**kwargs, "fp64_args": ",".join(fp64)} if fp64 else kwargs

    def _fetch_or_compile(self, compile_fn, config, target: str):
        opener = kernel_binary_cache()
        if opener is None:
            return compile_fn()
        return opener().descriptor_for_triton(self.fn, self.triton_meta, config, target, compile_fn)

    def _check_user_kernel_allowed(self) -> None:
        # upstream's rule (StaticTritonCompileResult.can_statically_launch): user @triton.jit
        # kernels launch statically only with static_launch_user_defined_triton_kernels
        if (
            self.heuristic_type == HeuristicType.USER_AUTOTUNE
            and not inductor_config.static_launch_user_defined_triton_kernels
        ):
            raise RuntimeError(
                "user defined Triton kernel and static_launch_user_defined_triton_kernels is off"
            )

    def _device_index(self) -> int:
        return index_of(self.triton_meta)

    def _precompile_worker(self):
        if self.simulated:
            return
        result = super()._precompile_worker()
        if len(self.compile_results) > 1 and self._deterministic_reduction():
            self.compile_results = self.compile_results[
                :1
            ]  # the first config that compiled (__init__)
        return result

    def run(self, *args, stream, **kwargs):
        if not self.simulated:
            return super().run(*args, stream=stream, **kwargs)
        config = self.sim_config()
        launch = self._static_launch(config)
        args, grid = self._interpret_args_grid(args, config)
        if cost_model.priced_launch(self.inductor_meta, grid):  # an estimate, not a timing
            return None
        LAUNCHES.append(
            (
                self.inductor_meta.get("kernel_name"),
                tuple(grid),
                dict(config.kwargs),
                self.triton_meta,
                self.size_hints,
                self.heuristic_type,
                launch is not None,
            )
        )
        if self.inductor_meta.get("store_cubin") and not self.cuda_kernel_saved:
            from .aot_params import save_npu_kernel

            # upstream's save_gpu_kernel, for C++ wrappers: they launch descriptors only
            save_npu_kernel(self, config, stream, self._descriptor_result(config))
        if launch is not None:
            grid = (*grid, 1, 1)[:3]
            return launch(grid[0], grid[1], grid[2], stream, *args)
        if getattr(self.fn, "fn", None) is None:  # restored from the FX cache, now falling back
            from .. import _compat

            _compat.ensure_kernel_source(self)
        return sim_launch()(
            self.fn, grid, args, {**self.declared_constants(), **kwargs, **self._sim_kwargs(config)}
        )

    def _descriptor_result(self, config):
        """The simulated config's descriptor as a compile result: the precompiled one, or,
        where the Python launch does not use one (a user kernel without
        ``static_launch_user_defined_triton_kernels``, static launch off), described now,
        as upstream's C++ wrappers take a cubin whatever Python launched with."""
        if self.is_statically_launchable():
            return self.compile_results[0]
        describe = static_describer()
        if describe is None:
            raise RuntimeError(
                f"npu kernel {self.inductor_meta.get('kernel_name')}: the C++ wrapper and "
                "AOTInductor launch npu kernels through npu-launcher, which is not installed"
            )
        desc = self._fetch_or_describe(describe, config)
        return NpuStaticCompileResult(
            NpuStaticKernel(desc.name, desc.to_bytes(), self._device_index()),
            config,
            self.triton_meta,
            self.inductor_meta,
        )

    def save_gpu_kernel(self, stream, launcher):
        """Upstream's, called from its ``run`` under ``triton.store_cubin`` (C++ wrappers,
        AOTInductor): on Ascend the chosen config's npu-launcher descriptor (the npubin) is the
        binary, not a cubin (runtime/aot_params.py). A config Triton launches itself (refused
        by npu-launcher) keeps upstream's."""
        from .aot_params import descriptor_result, save_npu_kernel

        result = descriptor_result(self, launcher.config)
        if result is None:
            return super().save_gpu_kernel(stream, launcher)
        save_npu_kernel(self, launcher.config, stream, result)

    def npu_direct_launch(self, args, stream):
        """The wrapper's direct-launch probe (runtime/direct_launch.py), asked after a run:
        (launch object, grid, runtime args) of the config ``run`` launches; None while
        npu-autotune's incremental tuning still tries configs; False when this kernel does
        not launch through a launch object (static launch off or refused). Elsewhere (Ascend)
        the probe of the single launcher answers (npu-launcher's upstream-shaped launcher)."""
        if not self.simulated:
            if len(self.launchers) != 1:
                return None  # not precompiled or not tuned yet: asked again after the next call
            probe = getattr(self.launchers[0], "npu_direct_launch", None)
            return probe(args, stream) if probe is not None else False
        tuning = self.__dict__.get("tuning")
        if tuning is not None and tuning.in_progress(self):  # e.g. one candidate per call
            return None
        config = self.sim_config()
        launch = self._static_launch(config)
        if launch is None:
            return False
        runtime_args, grid = self._interpret_args_grid(args, config)
        return launch, grid, runtime_args

    def declared_constants(self) -> dict:
        # a user kernel's tl.constexpr arguments (ALPHA=2.0) are in triton_meta, not in the call
        constants = self.triton_meta.get("constants") or {}
        params = getattr(self.fn, "params", None) or ()
        return {p.name: constants[p.name] for p in params if p.is_constexpr and p.name in constants}

    def _static_launch(self, config):
        """The pre-bound launch object for the config the simulator runs: npu-launcher's, when installed
        and ``use_static_triton_launcher`` is on; ``strict_static_triton_launcher`` makes a
        kernel that cannot launch statically an error instead of a fallback. A kernel
        restored from the FX cache binds from its descriptor."""
        if not inductor_config.use_static_triton_launcher:  # read per launch: the flag may change
            return None
        try:
            return _static_launches[self]
        except KeyError:
            pass
        launch = None
        binder = static_binder()
        try:
            if binder is None:
                raise RuntimeError("npu-launcher is not installed")
            self._check_user_kernel_allowed()
            blob = None
            if self.is_statically_launchable():
                blob = self.compile_results[0].kernel.descriptor_bytes()
            elif (describe := static_describer()) is not None:
                # not precompiled into a descriptor (e.g. a GEMM candidate being benchmarked):
                # describe it here, through the kernel-binary cache like any kernel compile
                blob = self._fetch_or_describe(describe, config).to_bytes()
            launch = binder(
                self.fn,
                self.triton_meta,
                self._sim_kwargs(config),
                self._device_index(),
                simulated=True,
                descriptor=blob,
            )
        except Exception as exc:
            name = self.inductor_meta.get("kernel_name")
            if inductor_config.strict_static_triton_launcher:
                raise RuntimeError(
                    f"npu kernel {name} cannot be launched statically: {exc}"
                ) from exc
            log.info("npu kernel %s launches through npu-sim's entry point: %s", name, exc)
        _static_launches[self] = launch
        return launch


class NpuCachingAutotuner(LaunchingAutotuner):
    """The npu kernel object: the launch above plus one named part, ``tuning``, the device's
    registered tuning part (``npu_inductor_core.kernel_objects.tuning``; npu-autotune's) or
    None. Each hook in ``kernel_objects.TUNING_HOOKS`` goes through the part, which gets the
    kernel object and the launch's own method (``base``) to call or not."""

    def __init__(self, *args, **kwargs) -> None:
        self.tuning = kernel_objects.tuning("npu")
        super().__init__(*args, **kwargs)

    @classmethod
    def adopt(cls, kernel: CachingAutotuner) -> "NpuCachingAutotuner":
        """An npu kernel object built with the arguments upstream's decorator gave ``kernel``
        (the decorators without a configs-only mode: templates, user kernels, foreach...)."""
        return cls(**decorators.adopted_arguments(kernel))

    def _through_tuning(self, name: str, base, *args, **kwargs):
        part = self.__dict__.get("tuning")
        if part is None:
            return base(*args, **kwargs)
        return getattr(part, name)(self, base, *args, **kwargs)

    def precompile(self, *args, **kwargs):
        return self._through_tuning("precompile", super().precompile, *args, **kwargs)

    def _precompile_worker(self):
        return self._through_tuning("precompile_worker", super()._precompile_worker)

    def _precompile_config(self, cfg):
        return self._through_tuning("precompile_config", super()._precompile_config, cfg)

    def _create_compile_options(self, cfg, compile_meta):
        return self._through_tuning(
            "create_compile_options", super()._create_compile_options, cfg, compile_meta
        )

    def bench(self, launcher, *args, **kwargs):
        return self._through_tuning("bench", super().bench, launcher, *args, **kwargs)

    def coordinate_descent_tuning(self, launcher, *args, **kwargs):
        return self._through_tuning(
            "coordinate_descent_tuning",
            super().coordinate_descent_tuning,
            launcher,
            *args,
            **kwargs,
        )

    def benchmark_all_configs(self, *args, **kwargs):
        return self._through_tuning(
            "benchmark_all_configs", super().benchmark_all_configs, *args, **kwargs
        )

    def run(self, *args, **kwargs):
        return self._through_tuning("run", super().run, *args, **kwargs)
