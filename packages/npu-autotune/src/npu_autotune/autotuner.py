"""Autotuning for the npu kernel object.

``KernelObjectMixin`` goes in front of the lowering's ``NpuCachingAutotuner`` (the lowering
composes the class when it finds this package through the ``npu_inductor.heuristics`` entry
point, so the class pickles under the lowering's module and no package imports another).
Upstream's ``CachingAutotuner`` machinery does the work: ``autotune_to_one_config`` /
``benchmark_all_configs`` / ``bench`` (with its clone-and-restore of mutated arguments and
reset-to-zero), ``coordinate_descent_tuning``, the autotune cache hook. What is npu's:
- on npu-sim nothing is compiled, so each config becomes a launcher that runs it through
  npu-sim's launch entry point (``npu_inductor.sim_launch: launch``); after tuning the
  kernel object keeps the winner as its only config, which the lowering then launches;
- configs whose blocks overflow the UB are dropped before anything compiles or launches,
  and a compile error that reports a UB overflow drops that config (logged);
- coordinate descent with the Ascend limits (``coordesc.NpuCoordescTuner``);
- incremental autotune (A29): each call runs one candidate for real and times it with
  device events; once all ran, the fastest stays;
- multibuffer variants (``num_stages=2``) compile for Ascend with ``multibuffer=True``.
"""

from __future__ import annotations

import logging
import time
import weakref

from torch._dynamo.utils import counters
from torch._inductor.runtime.hints import HeuristicType
from torch._inductor.runtime.runtime_utils import triton_config_to_hashable
from torch._inductor.runtime.triton_heuristics import NoTritonConfigsError

from . import _compat, combo
from . import compile_pool, post_compile, precompile_budget
from . import config as npu_config
from npu_inductor_core import tiles

from . import hints
from .benchmarker import ensure_registered, flag_reps
from .coordesc import NpuCoordescTuner
from .sim_launcher import LAUNCHED, SimLauncher, _SimCompileResult, sim_launch  # noqa: F401

log = logging.getLogger(__name__)
# kernel object -> {config: launcher} of its per-hint variants (off the object: launchers
# do not pickle)
_variant_launchers: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _exhaustive_meta(meta: dict) -> bool:
    return bool(meta.get("max_autotune") or meta.get("max_autotune_pointwise"))


def _asked_for_tuning(meta: dict) -> bool:
    return bool(meta.get("max_autotune") or meta.get("max_autotune_pointwise")
                or meta.get("coordinate_descent_tuning") or meta.get("incremental_autotune"))


class KernelObjectMixin:
    """Mixed in front of the npu kernel object (see the module docstring)."""

    # ---- helpers -------------------------------------------------------------------
    def _npu_sim(self) -> bool:
        return bool(getattr(self, "_simulated", False))

    def _npu_device(self) -> tiles.Device:
        dev = self.triton_meta.get("device", 0)
        return tiles.device_for(self.inductor_meta, getattr(dev, "index", dev) or 0)

    def _npu_persistent(self) -> bool:
        return self.heuristic_type == HeuristicType.PERSISTENT_REDUCTION

    def _npu_fits(self, cfg) -> bool:
        rn = tiles.persistent_rnumel(self.size_hints, cfg.kwargs) if self._npu_persistent() else None
        return tiles.fits_ub(cfg, self.triton_meta, self._npu_device(), rn)

    def _npu_name(self) -> str:
        return self.inductor_meta.get("kernel_name") or getattr(self.fn, "__name__", "npu kernel")

    def _npu_launchable(self, configs: list) -> list:
        """Configs whose blocks fit the UB; the others are dropped (and said so) before any
        compile or launch. User-written kernels are the user's to size."""
        if self.custom_kernel:
            return list(configs)
        keep = [c for c in configs if self._npu_fits(c)]
        dev = self._npu_device()
        for c in configs:
            if c not in keep:
                counters["npu_autotune"]["ub_dropped"] += 1
                log.warning("npu kernel %s: config %s exceeds the unified buffer (%d bytes): dropped, never launched",
                            self._npu_name(), c, dev.ub_bytes)
        if not keep:
            raise NoTritonConfigsError(f"npu kernel {self._npu_name()}: no config fits the unified buffer "
                                       f"({dev.ub_bytes} bytes): {[str(c) for c in configs]}")
        return keep

    def _npu_multibuffer(self, configs: list) -> list:
        """``npu_autotune.config.multibuffer`` set in this process (the decorators may have run
        in a compile worker, which has the default): add or remove the multibuffer variants."""
        if npu_config.multibuffer is None or self.custom_kernel:
            return configs
        plain = [c for c in configs if not tiles.is_multibuffer(c)]
        if not npu_config.multibuffer:
            return plain or configs
        have = {tuple(sorted(c.kwargs.items())) for c in configs if tiles.is_multibuffer(c)}
        extra = [tiles.make(c.kwargs, multibuffer=True) for c in plain if tuple(sorted(c.kwargs.items())) not in have]
        return configs + [c for c in extra if self._npu_fits(c)]

    def _npu_lookup_table(self) -> None:
        """Entries of ``lookup_table.table`` for this kernel (see ``lookup_table``) replace its
        configs; compile results of other configs are dropped."""
        from . import lookup_table

        found = lookup_table.lookup(self)
        if not found:
            return
        self.configs = found
        keep = {triton_config_to_hashable(c) for c in found}
        self.compile_results = [r for r in self.compile_results if triton_config_to_hashable(r.config) in keep]

    def _npu_install_coordesc(self) -> None:
        if not isinstance(self.coordesc_tuner, NpuCoordescTuner):
            self.coordesc_tuner = NpuCoordescTuner(
                name=getattr(self.fn, "__name__", "unknown"), size_hints=self.size_hints,
                inductor_meta=self.inductor_meta, triton_meta=self.triton_meta, dev=self._npu_device(),
                persistent=self._npu_persistent(), pointwise=self.heuristic_type == HeuristicType.POINTWISE,
                is_mix_order_reduction=getattr(self, "is_mix_order_reduction", False),
                filename=getattr(self, "filename", None))

    # ---- upstream hooks ---------------------------------------------------------------
    def precompile(self, warm_cache_only=False, reload_kernel=None, static_triton_bundle_key=None):
        if warm_cache_only:  # only compile workers precompile this way
            compile_pool.in_worker(self)
        elif reload_kernel is not None and self._npu_sim() and compile_pool.from_worker(self):
            compile_pool.adopt_parent_build(self, reload_kernel)  # decided here, not in the worker
        if not warm_cache_only:
            self._npu_lookup_table()  # U03/U04: the structured table overrides the configs
        if self.configs:
            configs = self.configs if warm_cache_only else self._npu_multibuffer(self.configs)
            self.configs = self._npu_launchable(configs)
        result = super().precompile(warm_cache_only, reload_kernel, static_triton_bundle_key)
        if not warm_cache_only and self._npu_sim():  # D01: nothing went through triton.compile
            post_compile.fire(self, self.configs or [], lambda c: _SimCompileResult(self, c))
            if not self.launchers and len(self.configs or ()) == 1:
                # A49: upstream's pipelined GEMM autotune (TritonBenchmarkRequest.precompile)
                # reads launchers[0].n_regs of a precompiled template kernel; a one-config
                # kernel's launcher is what its first run would keep (nothing to tune). Its
                # register count is nonzero because the pipelined epilogue check asserts one;
                # npu's DeviceProperties has no regs_per_multiprocessor, so no occupancy is
                # modelled from it (upstream then allows the fusion)
                launcher = SimLauncher(self, self.configs[0], after_run=True)
                launcher.n_regs = 1
                self.launchers = [launcher]
        return result

    def _precompile_worker(self):
        # Y07 where kernels compile (Ascend): one budget for all candidate configs
        if self._npu_sim() or self.compile_results or not self.configs or len(self.configs) < 2:
            return super()._precompile_worker()
        self.compile_results = precompile_budget.compile_all(self, self.configs)
        self.configs = None

    def _precompile_config(self, cfg):
        if self._npu_sim():
            post_compile.fire(self, [cfg], lambda c: _SimCompileResult(self, c))
            return _SimCompileResult(self, cfg)
        try:
            return super()._precompile_config(cfg)
        except Exception as exc:
            overflow = tiles.ub_overflow(exc)
            if overflow is None or not npu_config.drop_ub_overflow:
                raise
            from triton.runtime.errors import OutOfResources

            required, available = overflow
            counters["npu_autotune"]["ub_overflow_dropped"] += 1
            log.warning("npu kernel %s: config %s dropped: the compiler reports a UB overflow "
                        "(requires %d bits%s)", self._npu_name(), cfg, required,
                        f", {available} available" if available else "")
            # upstream's precompile drops configs that raise OutOfResources
            raise OutOfResources(required, available or 0, "unified buffer (bits)") from exc

    def _create_compile_options(self, cfg, compile_meta):
        options = super()._create_compile_options(cfg, compile_meta)
        if self.inductor_meta.get("npu_flavour") == "ascend" and tiles.is_multibuffer(cfg):
            options["multibuffer"] = True  # triton-ascend's double buffering
            options["num_stages"] = 1
        return options

    def bench(self, launcher, *args, with_profiler=False, **kwargs):
        from . import subproc

        timing = subproc.timing_of(launcher)  # autotune_in_subproc: a tuning worker timed it (A10)
        if timing is not None:
            return timing
        # upstream's bench passes rep=40; on npu the warmup/rep flags decide (A30, A31)
        ensure_registered()
        with flag_reps():
            return super().bench(launcher, *args, with_profiler=with_profiler, **kwargs)

    def coordinate_descent_tuning(self, launcher, *args, **kwargs):
        self._npu_install_coordesc()
        return super().coordinate_descent_tuning(launcher, *args, **kwargs)

    def benchmark_all_configs(self, *args, **kwargs):
        """On npu-sim (no compiled launchers) every launchable config is timed through the
        simulator; this is also what a kernel module's ``benchmark_all_configs`` runs (A18)."""
        ran = self.launchers and getattr(self.launchers[0], "after_run", False)
        if not self._npu_sim() or (self.launchers and not ran):
            return self._npu_benchmark_all(*args, **kwargs)
        configs = self.configs or [r.config for r in self.compile_results]
        kept, self.launchers = self.launchers, [SimLauncher(self, c) for c in self._npu_launchable(configs)]
        try:
            return self._npu_benchmark_all(*args, **kwargs)
        finally:
            self.launchers = kept

    def _npu_benchmark_all(self, *args, **kwargs):
        # autotune_in_subproc (A10, A11): tuning workers time every candidate first; upstream's
        # loop then gets those timings from ``bench``
        from . import subproc

        with subproc.prefetch(self, self.launchers, args, kwargs):
            return super().benchmark_all_configs(*args, **kwargs)

    def run(self, *args, stream, benchmark_run=False, **kwargs):
        if (variant := self._npu_hint_variant(args, kwargs)) is not None:  # multi_kernel_hints (A02)
            return self._npu_variant_launcher(variant)(*args, stream=stream, **kwargs)
        if not self._npu_sim():
            return super().run(*args, stream=stream, benchmark_run=benchmark_run, **kwargs)
        if not getattr(self, "_npu_tuned", False):
            self._npu_tune_on_sim(args, kwargs)
        if getattr(self, "_npu_incremental", None):
            return self._npu_incremental_step(args, kwargs, stream)
        result = super().run(*args, stream=stream, **kwargs)
        if not self.launchers:
            # upstream's state after a run: the launcher that ran. Upstream's benchmarks of
            # generated modules (benchmark_combo_kernel, benchmark_fusion, mix-order split
            # size) read ``launchers`` after one call
            self.launchers = [SimLauncher(self, self._sim_config(), after_run=True)]
        return result

    def _npu_hint_variant(self, args, kwargs):
        """The config of the per-hint variant for this call (``hints``), timed among its size's
        candidates on the first call that lands on it when tuning is asked for."""
        index = hints.pick(self, args)
        if index is None:
            return None
        chosen = self.__dict__.setdefault("_npu_hint_chosen", {})
        if index not in chosen:
            size_hints, cfg = hints.variants(self)[index]
            cands = hints.candidates(self, size_hints, exhaustive=_exhaustive_meta(self.inductor_meta))
            if len(cands) > 1 and (_asked_for_tuning(self.inductor_meta) or npu_config.autotune_on_sim):
                ensure_registered()
                timed = [(self.bench(self._npu_variant_launcher(c), *args, **kwargs), i) for i, c in enumerate(cands)]
                cfg = cands[min(timed)[1]]
                counters["npu_autotune"]["hint_variants_tuned"] += 1
            chosen[index] = cfg
        return chosen[index]

    def _npu_variant_launcher(self, cfg):
        """The launcher of a per-hint variant config, made once (compiled where kernels
        compile, through the simulator on npu-sim)."""
        made = _variant_launchers.setdefault(self, {})
        key = triton_config_to_hashable(cfg)
        if key not in made:
            with self.lock:
                made[key] = self._precompile_config(cfg).make_launcher()
        return made[key]

    # ---- tuning on npu-sim ------------------------------------------------------------
    def _npu_should_bench(self) -> bool:
        meta = self.inductor_meta
        coordesc = meta.get("coordinate_descent_tuning") and _compat.should_coordesc_tune(self)
        if len(self.configs) < 2 and not coordesc:
            return False
        return _asked_for_tuning(meta) or npu_config.autotune_on_sim

    def _npu_combo_untuned(self) -> bool:
        """``combo_kernels_autotune`` (A23; upstream 2.13 no longer reads it): 0 = combo kernels
        are not tuned, 1 = all but foreach kernels, 2 = all. Read where the kernel runs."""
        from torch._inductor import config as inductor_config

        combo = "combo_grid_meta" in self.inductor_meta
        level = getattr(inductor_config, "combo_kernels_autotune", 1)
        if level not in (0, 1, 2):
            raise ValueError(f"combo_kernels_autotune must be 0, 1 or 2, got {level!r}")
        foreach = self.heuristic_type == HeuristicType.TEMPLATE and combo
        return combo and (level == 0 or (level == 1 and foreach))

    def _npu_tune_on_sim(self, args, kwargs) -> None:
        self._npu_tuned = True
        if not self.configs:  # restored with its one compiled config
            return
        npu_config.validate_inductor_meta(self.inductor_meta)
        self.configs = self._npu_launchable(self._npu_multibuffer(self.configs))
        if self._npu_combo_untuned():
            self.configs = self.configs[:1]
            return
        if combo.has_plan(self) and (_asked_for_tuning(self.inductor_meta) or npu_config.autotune_on_sim):
            return self._npu_combo_tune(args, kwargs)
        if not self._npu_should_bench():
            return
        ensure_registered()
        start = time.time_ns()
        # Y07: the candidates compile under one precompilation budget; late ones are dropped
        self.configs = [r.config for r in precompile_budget.compile_all(self, self.configs)]
        if self.inductor_meta.get("incremental_autotune") and len(self.configs) > 1:
            self._npu_described, self.compile_results = self.compile_results, []
            self._npu_incremental = {"pending": list(self.configs), "timings": {}, "start": start}
            return
        # the lowering may hold a static-launch descriptor of the first config: set it aside
        self._npu_described, self.compile_results = self.compile_results, []
        self.launchers = [SimLauncher(self, c) for c in self.configs]
        if len(self.launchers) > 1:
            self.autotune_to_one_config(*args, **kwargs)
        if self.inductor_meta.get("coordinate_descent_tuning") and not getattr(
                self.launchers[0].config, "found_by_coordesc", False):
            self.launchers = [self.coordinate_descent_tuning(self.launchers[0], *args, **kwargs)]
        counters["npu_autotune"]["sim_tuned"] += 1
        self._npu_settle(self.launchers[0].config)

    def _npu_combo_tune(self, args, kwargs) -> None:
        """A combo kernel with per-sub-kernel blocks: upstream's sequential tuning, group by
        group of its plan (``combo.adapt`` put npu candidates in it; A21), run through the
        simulator (upstream's ``run``, which calls it, is not the simulated path)."""
        ensure_registered()
        self._npu_described, self.compile_results = self.compile_results, []
        launcher = SimLauncher(self, self.configs[0])
        if not getattr(launcher.config, "found_by_combo_autotune", False):
            launcher = self._combo_sequential_autotune(launcher, *args, **kwargs)
        counters["npu_autotune"]["sim_tuned"] += 1
        self._npu_settle(launcher.config)

    def _npu_settle(self, best) -> None:
        """The winner becomes the kernel object's only config (the one the lowering runs)."""
        self.launchers = []
        self.configs = [best]
        described = getattr(self, "_npu_described", None) or self.compile_results
        self._npu_described = None
        if described and triton_config_to_hashable(described[0].config) == triton_config_to_hashable(best):
            self.compile_results = described
        elif described:  # a static-launch descriptor of another config: describe the winner instead
            self.compile_results = []
            self.precompile()

    def _npu_incremental_step(self, args, kwargs, stream):
        state = self._npu_incremental
        cfg = state["pending"].pop(0)
        from torch._dynamo.device_interface import get_interface_for_device

        iface = get_interface_for_device(self.device_props.type)
        start, end = iface.Event(enable_timing=True), iface.Event(enable_timing=True)
        start.record()
        result = SimLauncher(self, cfg)(*args, stream=stream, **kwargs)
        end.record()
        iface.synchronize()
        state["timings"][id(cfg)] = (start.elapsed_time(end), cfg)
        counters["npu_autotune"]["incremental_runs"] += 1
        if not state["pending"]:
            _, best = min(state["timings"].values(), key=lambda t: t[0])
            self._npu_incremental = None
            if self.save_cache_hook:
                self.save_cache_hook(best, time.time_ns() - state["start"], found_by_coordesc=False)
            self._npu_settle(best)
        return result
