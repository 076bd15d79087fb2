"""The kernel object of npu kernels: upstream's CachingAutotuner, launching through npu-sim
when the device is simulated.

On the simulator there is no Triton driver to compile for: each run interprets the kernel's
first config (the one the tiling model puts first: few, large programs). With npu-launcher
installed and ``use_static_triton_launcher`` on, precompile turns that config into a kernel
descriptor (npu-launcher's ``describe_triton``) held as a ``StaticTritonCompileResult``
subclass, so upstream's TritonBundler saves the kernel object into the FX graph cache entry
and a new process restores it and launches from the descriptor without the kernel's source
(L04). ``keep_static_cubin_raw`` keeps the descriptor bytes in that entry; otherwise only
the descriptor file in Triton's cache dir holds them (C04). Without npu-launcher, kernels
run through npu-sim's launch entry point (group ``npu_inductor.sim_launch``), which runs
them on the npu memory itself or records them during graph capture. Elsewhere everything
is upstream's.
"""

from __future__ import annotations

import collections
import functools
import logging
import os
import threading
import weakref
from importlib import metadata

from torch._inductor import config as inductor_config
from torch._inductor.runtime.hints import HeuristicType
from torch._inductor.runtime.triton_heuristics import CachingAutotuner, StaticTritonCompileResult

from .flavour import flavour

log = logging.getLogger(__name__)
SIM_LAUNCH_GROUP = "npu_inductor.sim_launch"
LAUNCHER_GROUP = "npu_inductor.kernel_launcher"  # npu-launcher's bind_triton, describe_triton
CACHES_GROUP = "npu_inductor.caches"  # npu-cache's kernel_binary
# (kernel name, grid, config kwargs, triton_meta) of recent simulated launches: tests check
# every generated kernel's blocks against the UB and its grid against the device
LAUNCHES: collections.deque = collections.deque(maxlen=4096)
DESCRIPTOR_SUFFIX = ".npld"  # npu-launcher kernel descriptor file in Triton's cache dir


@functools.cache
def sim_launch():
    eps = [ep for ep in metadata.entry_points(group=SIM_LAUNCH_GROUP) if ep.name == "launch"]
    if not eps:
        raise RuntimeError(f"device 'npu' is simulated but no '{SIM_LAUNCH_GROUP}: launch' entry point is installed")
    return eps[0].load()


@functools.cache
def _launcher_entry(name: str):
    eps = [ep for ep in metadata.entry_points(group=LAUNCHER_GROUP) if ep.name == name]
    return eps[0].load() if eps else None


def static_binder():
    """npu-launcher's ``bind_triton`` when installed, else None."""
    return _launcher_entry("bind_triton")


def static_describer():
    """npu-launcher's ``describe_triton`` when installed, else None."""
    return _launcher_entry("describe_triton")


def compiled_describer():
    """npu-launcher's ``describe_compiled`` (a triton-ascend CompiledKernel -> descriptor)."""
    return _launcher_entry("describe_compiled")


def native_launcher():
    """npu-launcher's ``native_launcher`` (upstream-shaped launcher of an npubin descriptor)."""
    return _launcher_entry("native_launcher")


class _NotDescribed(Exception):
    """A compiled kernel npu-launcher cannot describe (the compile itself succeeded)."""


@functools.cache
def kernel_binary_cache():
    """npu-cache's kernel-binary cache opener (R03-R05: descriptors fetched before describing,
    uploaded after) when installed, else None."""
    eps = [ep for ep in metadata.entry_points(group=CACHES_GROUP) if ep.name == "kernel_binary"]
    return eps[0].load() if eps else None


def _triton_cache_dir(device: int) -> str:
    try:  # torch 2.13
        from torch._inductor.runtime.cache_dir_utils import triton_cache_dir
    except ImportError:  # torch 2.11
        from torch._inductor.runtime.runtime_utils import triton_cache_dir
    return triton_cache_dir(device)


class NpuStaticKernel:
    """What a StaticallyLaunchedCudaKernel is to upstream, for an npu-launcher descriptor:
    picklable; ``cubin_raw`` holds the descriptor bytes (upstream's prepare_for_caching drops
    them unless ``keep_static_cubin_raw``), ``cubin_path`` the descriptor file."""

    def __init__(self, name: str, blob: bytes, device: int, native: bool = False,
                 arg_names: tuple = (), declared_constexprs: tuple = ()):
        import hashlib

        self.name = name
        # a triton-ascend npubin (launched through upstream's launcher code, so it keeps the
        # Triton function's parameter names and constexpr indices) or an npu-sim descriptor
        self.native = native
        self.arg_names = tuple(arg_names)
        self.declared_constexprs = tuple(declared_constexprs)
        self.hash = hashlib.sha256(blob).hexdigest()
        self.device = device
        self.cubin_raw: bytes | None = blob
        self.cubin_path: str | None = None
        self.write(self.location())

    def location(self) -> str:
        return os.path.join(_triton_cache_dir(self.device), self.hash[:32], self.name + DESCRIPTOR_SUFFIX)

    def write(self, path: str) -> None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # unique per writer: threads of one process (parallel precompile, FX-cache loads) may
        # write the same descriptor at once
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "wb") as f:
            f.write(self.cubin_raw)
        os.replace(tmp, path)
        self.cubin_path = path

    def file_matches(self, path: str) -> bool:
        """A descriptor file another process left is used only if it is this descriptor."""
        import hashlib

        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest() == self.hash

    def reload_cubin_from_raw(self, path: str) -> None:  # upstream's name
        self.write(path)

    def descriptor_bytes(self) -> bytes:
        if self.cubin_raw is not None:
            return self.cubin_raw
        with open(self.cubin_path or self.location(), "rb") as f:
            return f.read()

    def __getstate__(self):
        return {**self.__dict__, "cubin_path": None}  # a path means nothing in another process


class NpuStaticCompileResult(StaticTritonCompileResult):
    """A config of an npu kernel as an npu-launcher descriptor. Subclassing upstream's static
    result is what makes ``is_statically_launchable()`` true, so TritonBundler bundles the
    kernel object and ``StaticAutotunerFuture`` restores it."""

    def reload_cubin_path(self):
        """On FX-cache load: the descriptor file (when its SHA-256 matches), else the kept bytes,
        else RuntimeError (upstream then builds the kernel from its source)."""
        kernel = self.kernel
        path = kernel.location()
        if os.path.exists(path) and kernel.file_matches(path):
            kernel.cubin_path = path
        elif kernel.cubin_raw is not None:
            kernel.reload_cubin_from_raw(path)
        else:
            raise RuntimeError(f"npu kernel descriptor {path} missing or not this kernel's, and not kept "
                               "in the cache entry (keep_static_cubin_raw is off)")

    def make_launcher(self):
        """Native (Ascend) kernels: upstream's launcher code around an npu-launcher launch
        object. Simulated kernels launch through NpuCachingAutotuner.run instead."""
        made = _bound_native.pop(self, None)
        if made is not None:
            return made
        kernel = self.kernel
        native = native_launcher()
        if not kernel.native or native is None:
            raise NotImplementedError("npu-sim kernels launch through NpuCachingAutotuner.run")
        if not kernel.cubin_path:
            self.reload_cubin_path()
        device = self.compile_meta.get("device", 0) or 0
        launcher = native(self, kernel.descriptor_bytes(), device, kernel.arg_names, kernel.declared_constexprs)
        launcher._is_static = True
        return launcher


# launchers of native results bound while checking that they bind (_bound_or_fallback),
# handed to upstream's launcher loop (kept off the result: results are pickled)
_bound_native: "weakref.WeakKeyDictionary[NpuStaticCompileResult, object]" = weakref.WeakKeyDictionary()

# the launch object of each kernel object's first config, the one the simulator runs (kept
# off the kernel object: it is pickled between compile workers, launch objects are not)
_static_launches: "weakref.WeakKeyDictionary[NpuCachingAutotuner, object]" = weakref.WeakKeyDictionary()


class NpuCachingAutotuner(CachingAutotuner):
    """No state beyond upstream's, so an upstream-built autotuner can take this class."""

    @property
    def _simulated(self) -> bool:
        # the kernel's flavour was decided where it was generated (compile workers have no npu)
        return self.inductor_meta.get("npu_flavour", flavour()) == "interpreter"

    @property
    def _ascend(self) -> bool:
        return self.inductor_meta.get("npu_flavour", flavour()) == "ascend"

    # ---- Ascend: triton-ascend compiles, npu-launcher launches (L04 on hardware) ----------
    def _precompile_config(self, cfg):
        """On Ascend, with static launch on and npu-launcher installed, a config compiled by
        triton-ascend becomes an npu-launcher descriptor (through the kernel-binary cache:
        a hit skips triton-ascend, R05) held as an NpuStaticCompileResult, which TritonBundler
        bundles into the FX graph cache entry like upstream's cubins (C04). A kernel the
        launcher cannot describe keeps Triton's own launcher, or raises when strict (L01)."""
        if not self._ascend:
            return super()._precompile_config(cfg)
        from .. import _compat

        _compat.static_check_defers_npu()
        describe = compiled_describer()
        if not inductor_config.use_static_triton_launcher or describe is None or native_launcher() is None:
            return super()._precompile_config(cfg)
        compiled = []

        def compile_fn():
            compiled.append(super(NpuCachingAutotuner, self)._precompile_config(cfg))  # compile errors propagate
            try:
                return describe(compiled[-1].kernel)
            except Exception as exc:
                raise _NotDescribed(exc) from exc

        try:
            self._check_user_kernel_allowed()
        except RuntimeError as exc:
            self._refuse_static(exc, "keeps Triton's launcher")
            return super()._precompile_config(cfg)
        try:  # a compile error is the compile's, raised as upstream raises it
            desc = self._fetch_or_compile(compile_fn, cfg, f"npu/ascend/{self._soc()}")
        except _NotDescribed as exc:
            self._refuse_static(exc.__cause__, "keeps Triton's launcher")
            return compiled[-1]
        fn = self.fn
        kernel = NpuStaticKernel(desc.name, desc.to_bytes(), self._device_index(), native=True,
                                 arg_names=fn.arg_names,
                                 declared_constexprs=[p.num for p in fn.params if p.is_constexpr])
        return NpuStaticCompileResult(kernel, cfg, self._create_compile_meta(cfg), self.inductor_meta)

    def _make_launchers(self):
        """A native descriptor that cannot be bound here (no CANN runtime, another SoC) is
        replaced by Triton's launcher, compiled from the kernel's source (a Triton cache hit);
        strict mode raises. (``_make_launchers``: torch 2.11 has no per-result hook.)"""
        if self._ascend and len(self.launchers) != len(self.compile_results or ()):
            self.compile_results = [self._bound_or_fallback(r) for r in self.compile_results]
        return super()._make_launchers()

    def _bound_or_fallback(self, result):
        if not (isinstance(result, NpuStaticCompileResult) and result.kernel.native) or result in _bound_native:
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
        return super(NpuCachingAutotuner, self)._precompile_config(result.config)

    def _refuse_static(self, exc, fallback: str) -> None:
        name = self.inductor_meta.get("kernel_name")
        if inductor_config.strict_static_triton_launcher:
            raise RuntimeError(f"npu kernel {name} cannot be launched statically: {exc}") from exc
        log.info("npu kernel %s %s: %s", name, fallback, exc)

    def _soc(self) -> str:
        # what triton-ascend compiles for (GPUTarget's arch is the device's cc: the SoC name)
        return str(self.device_props.cc or "")

    def precompile(self, warm_cache_only=False, reload_kernel=None, static_triton_bundle_key=None):
        if not self._simulated:
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
            if (static_triton_bundle_key is not None and inductor_config.use_static_triton_launcher
                    and self.is_statically_launchable()):
                from torch._inductor.triton_bundler import TritonBundler

                TritonBundler.put_static_autotuner(static_triton_bundle_key, self)

    def _sim_config(self):
        if self.compile_results:
            return self.compile_results[0].config
        return (self.configs or [self.launchers[0].config])[0]

    def _describe(self) -> list:
        """The simulated config as a descriptor, when static launch is on and npu-launcher is
        installed; [] otherwise (or, not strict, when it cannot be described)."""
        describe = static_describer()
        if not inductor_config.use_static_triton_launcher or describe is None:
            return []
        config = self._sim_config()
        try:
            self._check_user_kernel_allowed()
            desc = self._fetch_or_describe(describe, config)
        except Exception as exc:
            if inductor_config.strict_static_triton_launcher:
                raise RuntimeError(f"npu kernel {self.inductor_meta.get('kernel_name')} cannot be "
                                   f"launched statically: {exc}") from exc
            log.info("npu kernel %s is not described for static launch: %s",
                     self.inductor_meta.get("kernel_name"), exc)
            return []
        kernel = NpuStaticKernel(desc.name, desc.to_bytes(), self._device_index())
        return [NpuStaticCompileResult(kernel, config, self.triton_meta, self.inductor_meta)]

    def _fetch_or_describe(self, describe, config):
        # describing is this flavour's kernel compile: a kernel-binary cache hit skips it
        def compile_fn():
            return describe(self.fn, self.triton_meta, config.kwargs, simulated=True)

        return self._fetch_or_compile(compile_fn, config, f"npu/{self.inductor_meta.get('npu_flavour', flavour())}")

    def _fetch_or_compile(self, compile_fn, config, target: str):
        opener = kernel_binary_cache()
        if opener is None:
            return compile_fn()
        return opener().descriptor_for_triton(self.fn, self.triton_meta, config, target, compile_fn)

    def _check_user_kernel_allowed(self) -> None:
        # upstream's rule (StaticTritonCompileResult.can_statically_launch): user @triton.jit
        # kernels launch statically only with static_launch_user_defined_triton_kernels (L08)
        if (self.heuristic_type == HeuristicType.USER_AUTOTUNE
                and not inductor_config.static_launch_user_defined_triton_kernels):
            raise RuntimeError("user defined Triton kernel and static_launch_user_defined_triton_kernels is off")

    def _device_index(self) -> int:
        return getattr(self.triton_meta.get("device"), "index", 0) or 0

    def _precompile_worker(self):
        if self._simulated:
            return
        return super()._precompile_worker()

    def run(self, *args, stream, **kwargs):
        if not self._simulated:
            return super().run(*args, stream=stream, **kwargs)
        config = self._sim_config()
        launch = self._static_launch(config)
        args, grid = self._interpret_args_grid(args, config)
        LAUNCHES.append((self.inductor_meta.get("kernel_name"), tuple(grid), dict(config.kwargs), self.triton_meta,
                         self.size_hints, self.heuristic_type, launch is not None))
        if launch is not None:
            grid = (*grid, 1, 1)[:3]
            return launch(grid[0], grid[1], grid[2], stream, *args)
        if getattr(self.fn, "fn", None) is None:  # restored from the FX cache, now falling back
            from .. import _compat

            _compat.ensure_kernel_source(self)
        return sim_launch()(self.fn, grid, args, {**self._declared_constants(), **kwargs, **config.kwargs})

    def npu_direct_launch(self, args, stream):
        """The wrapper's direct-launch probe (runtime/direct_launch.py), asked after a run:
        (launch object, grid, runtime args) of the config ``run`` launches; None while
        npu-autotune's incremental tuning still tries configs; False when this kernel does
        not launch through a launch object (static launch off or refused). Elsewhere (Ascend)
        the probe of the single launcher answers (npu-launcher's upstream-shaped launcher)."""
        if not self._simulated:
            if len(self.launchers) != 1:
                return None  # not precompiled or not tuned yet: asked again after the next call
            probe = getattr(self.launchers[0], "npu_direct_launch", None)
            return probe(args, stream) if probe is not None else False
        if getattr(self, "_npu_incremental", None):  # npu-autotune: one candidate per call
            return None
        config = self._sim_config()
        launch = self._static_launch(config)
        if launch is None:
            return False
        runtime_args, grid = self._interpret_args_grid(args, config)
        return launch, grid, runtime_args

    def _declared_constants(self) -> dict:
        # a user kernel's tl.constexpr arguments (ALPHA=2.0) are in triton_meta, not in the call
        constants = self.triton_meta.get("constants") or {}
        params = getattr(self.fn, "params", None) or ()
        return {p.name: constants[p.name] for p in params if p.is_constexpr and p.name in constants}

    def _static_launch(self, config):
        """The pre-bound launch object for the config the simulator runs: npu-launcher's, when installed
        and ``use_static_triton_launcher`` is on; ``strict_static_triton_launcher`` makes a
        kernel that cannot launch statically an error instead of a fallback (L01). A kernel
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
            launch = binder(self.fn, self.triton_meta, config.kwargs, self._device_index(), simulated=True,
                            descriptor=blob)
        except Exception as exc:
            name = self.inductor_meta.get("kernel_name")
            if inductor_config.strict_static_triton_launcher:
                raise RuntimeError(f"npu kernel {name} cannot be launched statically: {exc}") from exc
            log.info("npu kernel %s launches through npu-sim's entry point: %s", name, exc)
        _static_launches[self] = launch
        return launch
