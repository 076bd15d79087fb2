"""Autotuning for the npu kernel object.

``KernelTuning`` is the ``tuning`` part of the lowering's ``NpuCachingAutotuner``: this
package registers it in npu-inductor-core's ``kernel_objects`` (through its entry point
``npu_inductor.heuristics: npu``), and the kernel object routes the tuning hooks through it,
so no package imports another and the kernel object's class is always the lowering's.
Upstream's ``CachingAutotuner`` machinery does the work: ``autotune_to_one_config`` /
``benchmark_all_configs`` / ``bench`` (with its clone-and-restore of mutated arguments and
reset-to-zero), ``coordinate_descent_tuning``, the autotune cache hook. What is npu's:
- on npu-sim nothing is compiled, so each config becomes a launcher that runs it through
  npu-sim's launch entry point (``npu_inductor.sim_launch: launch``); after tuning the
  kernel object keeps the winner as its only config, which the lowering then launches;
- configs whose blocks overflow the UB are dropped before anything compiles or launches,
  and a compile error that reports a UB overflow drops that config (logged);
- coordinate descent with the Ascend limits (``coordesc.NpuCoordescTuner``);
- incremental autotune: each call runs one candidate for real and times it with
  device events; once all ran, the fastest stays;
- multibuffer variants (``num_stages=2``) compile for Ascend with ``multibuffer=True``.
"""

from __future__ import annotations

import logging
import time
import weakref

from npu_inductor_core import decorators, kernel_objects
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
from .kernel_facts import device_of, kernel_name, simulated
from .sim_launcher import LAUNCHED, SimLauncher, _SimCompileResult, sim_launch  # noqa: F401

log = logging.getLogger(__name__)
# kernel object -> {config: launcher} of its per-hint variants (off the object: launchers
# do not pickle)
_variant_launchers: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _asked_for_tuning(meta: dict) -> bool:
    return bool(
        meta.get("max_autotune")
        or meta.get("max_autotune_pointwise")
        or meta.get("coordinate_descent_tuning")
        or meta.get("incremental_autotune")
    )


def _persistent(kernel) -> bool:
    return kernel.heuristic_type == HeuristicType.PERSISTENT_REDUCTION


def fits(kernel, cfg) -> bool:
    rn = tiles.persistent_rnumel(kernel.size_hints, cfg.kwargs) if _persistent(kernel) else None
    return tiles.fits_ub(cfg, kernel.triton_meta, device_of(kernel), rn)


def launchable(kernel, configs: list) -> list:
    """Configs whose blocks fit the UB; the others are dropped (and said so) before any
    compile or launch. User-written kernels are the user's to size."""
    if kernel.custom_kernel:
        return list(configs)
    keep = [c for c in configs if fits(kernel, c)]
    dev = device_of(kernel)
    for c in configs:
        if c not in keep:
            counters["npu_autotune"]["ub_dropped"] += 1
            log.warning(
                "npu kernel %s: config %s exceeds the unified buffer (%d bytes): dropped, never launched",
                kernel_name(kernel),
                c,
                dev.ub_bytes,
            )
    if not keep:
        raise NoTritonConfigsError(
            f"npu kernel {kernel_name(kernel)}: no config fits the unified buffer "
            f"({dev.ub_bytes} bytes): {[str(c) for c in configs]}"
        )
    return keep


def _multibuffer_variants(kernel, configs: list) -> list:
    """``npu_autotune.config.multibuffer`` set in this process (the decorators may have run
    in a compile worker, which has the default): add or remove the multibuffer variants."""
    if npu_config.multibuffer is None or kernel.custom_kernel:
        return configs
    plain = [c for c in configs if not tiles.is_multibuffer(c)]
    if not npu_config.multibuffer:
        return plain or configs
    have = {tuple(sorted(c.kwargs.items())) for c in configs if tiles.is_multibuffer(c)}
    extra = [
        tiles.make(c.kwargs, multibuffer=True)
        for c in plain
        if tuple(sorted(c.kwargs.items())) not in have
    ]
    return configs + [c for c in extra if fits(kernel, c)]


def _apply_lookup_table(kernel) -> None:
    """Entries of ``lookup_table.table`` for this kernel (see ``lookup_table``) replace its
    configs; compile results of other configs are dropped."""
    from . import lookup_table

    found = lookup_table.lookup(kernel)
    if not found:
        return
    kernel.configs = found
    keep = {triton_config_to_hashable(c) for c in found}
    kernel.compile_results = [
        r for r in kernel.compile_results if triton_config_to_hashable(r.config) in keep
    ]


def _install_coordesc(kernel) -> None:
    if not isinstance(kernel.coordesc_tuner, NpuCoordescTuner):
        kernel.coordesc_tuner = NpuCoordescTuner(
            name=getattr(kernel.fn, "__name__", "unknown"),
            size_hints=kernel.size_hints,
            inductor_meta=kernel.inductor_meta,
            triton_meta=kernel.triton_meta,
            dev=device_of(kernel),
            persistent=_persistent(kernel),
            pointwise=kernel.heuristic_type == HeuristicType.POINTWISE,
            is_mix_order_reduction=getattr(kernel, "is_mix_order_reduction", False),
            filename=getattr(kernel, "filename", None),
        )


def _benchmark_all(kernel, base, *args, **kwargs):
    # autotune_in_subproc and its worker count: tuning workers time every candidate first; upstream's
    # loop then gets those timings from ``bench``
    from . import subproc

    with subproc.prefetch(kernel, kernel.launchers, args, kwargs):
        return base(*args, **kwargs)


def _hint_variant(kernel, args, kwargs):
    """The config of the per-hint variant for this call (``hints``), timed among its size's
    candidates on the first call that lands on it when tuning is asked for."""
    index = hints.pick(kernel, args)
    if index is None:
        return None
    chosen = kernel.__dict__.setdefault("_npu_hint_chosen", {})
    if index not in chosen:
        size_hints, cfg = hints.variants(kernel)[index]
        cands = hints.candidates(
            kernel, size_hints, exhaustive=decorators.exhaustive(kernel.inductor_meta)
        )
        if len(cands) > 1 and (
            _asked_for_tuning(kernel.inductor_meta) or npu_config.autotune_on_sim
        ):
            ensure_registered()
            timed = [
                (kernel.bench(_variant_launcher(kernel, c), *args, **kwargs), i)
                for i, c in enumerate(cands)
            ]
            cfg = cands[min(timed)[1]]
            counters["npu_autotune"]["hint_variants_tuned"] += 1
        chosen[index] = cfg
    return chosen[index]


def _variant_launcher(kernel, cfg):
    """The launcher of a per-hint variant config, made once (compiled where kernels
    compile, through the simulator on npu-sim)."""
    made = _variant_launchers.setdefault(kernel, {})
    key = triton_config_to_hashable(cfg)
    if key not in made:
        with kernel.lock:
            made[key] = kernel._precompile_config(cfg).make_launcher()
    return made[key]


# ---- tuning on npu-sim ------------------------------------------------------------


def _should_bench(kernel) -> bool:
    meta = kernel.inductor_meta
    coordesc = meta.get("coordinate_descent_tuning") and _compat.should_coordesc_tune(kernel)
    if len(kernel.configs) < 2 and not coordesc:
        return False
    return _asked_for_tuning(meta) or npu_config.autotune_on_sim


def _combo_untuned(kernel) -> bool:
    """``combo_kernels_autotune`` (upstream 2.13 no longer reads it): 0 = combo kernels
    are not tuned, 1 = all but foreach kernels, 2 = all. Read where the kernel runs."""
    from torch._inductor import config as inductor_config

    combo = kernel_objects.COMBO_META_KEY in kernel.inductor_meta
    level = getattr(inductor_config, "combo_kernels_autotune", 1)
    if level not in (0, 1, 2):
        raise ValueError(f"combo_kernels_autotune must be 0, 1 or 2, got {level!r}")
    foreach = kernel.heuristic_type == HeuristicType.TEMPLATE and combo
    return combo and (level == 0 or (level == 1 and foreach))


def _tune_on_sim(kernel, args, kwargs) -> None:
    kernel._npu_tuned = True
    if not kernel.configs:  # restored with its one compiled config
        return
    npu_config.validate_inductor_meta(kernel.inductor_meta)
    kernel.configs = launchable(kernel, _multibuffer_variants(kernel, kernel.configs))
    if _combo_untuned(kernel):
        kernel.configs = kernel.configs[:1]
        return
    if combo.has_plan(kernel) and (
        _asked_for_tuning(kernel.inductor_meta) or npu_config.autotune_on_sim
    ):
        return _combo_tune(kernel, args, kwargs)
    if not _should_bench(kernel):
        return
    ensure_registered()
    start = time.time_ns()
    # precompile time budget: the candidates compile under one budget; late ones are dropped
    kernel.configs = [r.config for r in precompile_budget.compile_all(kernel, kernel.configs)]
    if kernel.inductor_meta.get("incremental_autotune") and len(kernel.configs) > 1:
        kernel._npu_described, kernel.compile_results = kernel.compile_results, []
        kernel._npu_incremental = {"pending": list(kernel.configs), "timings": {}, "start": start}
        return
    # the lowering may hold a static-launch descriptor of the first config: set it aside
    kernel._npu_described, kernel.compile_results = kernel.compile_results, []
    kernel.launchers = [SimLauncher(kernel, c) for c in kernel.configs]
    if len(kernel.launchers) > 1:
        kernel.autotune_to_one_config(*args, **kwargs)
    if kernel.inductor_meta.get("coordinate_descent_tuning") and not getattr(
        kernel.launchers[0].config, "found_by_coordesc", False
    ):
        kernel.launchers = [kernel.coordinate_descent_tuning(kernel.launchers[0], *args, **kwargs)]
    counters["npu_autotune"]["sim_tuned"] += 1
    _settle(kernel, kernel.launchers[0].config)


def _combo_tune(kernel, args, kwargs) -> None:
    """A combo kernel with per-sub-kernel blocks: upstream's sequential tuning, group by
    group of its plan (``combo.adapt`` put npu candidates in it; the groups follow
    ``combo_kernel_autotune_grouping``), run through the simulator (upstream's ``run``,
    which calls it, is not the simulated path)."""
    ensure_registered()
    kernel._npu_described, kernel.compile_results = kernel.compile_results, []
    launcher = SimLauncher(kernel, kernel.configs[0])
    if not getattr(launcher.config, "found_by_combo_autotune", False):
        launcher = kernel._combo_sequential_autotune(launcher, *args, **kwargs)
    counters["npu_autotune"]["sim_tuned"] += 1
    _settle(kernel, launcher.config)


def _settle(kernel, best) -> None:
    """The winner becomes the kernel object's only config (the one the lowering runs)."""
    kernel.launchers = []
    kernel.configs = [best]
    described = getattr(kernel, "_npu_described", None) or kernel.compile_results
    kernel._npu_described = None
    if described and triton_config_to_hashable(described[0].config) == triton_config_to_hashable(
        best
    ):
        kernel.compile_results = described
    elif described:  # a static-launch descriptor of another config: describe the winner instead
        kernel.compile_results = []
        kernel.precompile()


def _incremental_step(kernel, args, kwargs, stream):
    state = kernel._npu_incremental
    cfg = state["pending"].pop(0)
    from torch._dynamo.device_interface import get_interface_for_device

    iface = get_interface_for_device(kernel.device_props.type)
    start, end = iface.Event(enable_timing=True), iface.Event(enable_timing=True)
    start.record()
    result = SimLauncher(kernel, cfg)(*args, stream=stream, **kwargs)
    end.record()
    iface.synchronize()
    state["timings"][id(cfg)] = (start.elapsed_time(end), cfg)
    counters["npu_autotune"]["incremental_runs"] += 1
    if not state["pending"]:
        _, best = min(state["timings"].values(), key=lambda t: t[0])
        kernel._npu_incremental = None
        if kernel.save_cache_hook:
            kernel.save_cache_hook(best, time.time_ns() - state["start"], found_by_coordesc=False)
        _settle(kernel, best)
    return result


class KernelTuning:
    """The tuning part of the npu kernel object (its field ``tuning``; see the module
    docstring). Stateless: what it decides is kept on the kernel object. Each method is a
    hook of ``npu_inductor_core.kernel_objects.TUNING_HOOKS``: it gets the kernel object and
    ``base``, the kernel object's own method, to call or not."""

    def in_progress(self, kernel) -> bool:
        """Candidates still run one per call (incremental autotune): the config a call
        launches is not settled yet."""
        return bool(getattr(kernel, "_npu_incremental", None))

    def precompile(
        self, kernel, base, warm_cache_only=False, reload_kernel=None, static_triton_bundle_key=None
    ):
        if warm_cache_only:  # only compile workers precompile this way
            compile_pool.in_worker(kernel)
        elif reload_kernel is not None and simulated(kernel) and compile_pool.from_worker(kernel):
            compile_pool.adopt_parent_build(
                kernel, reload_kernel
            )  # decided here, not in the worker
        if not warm_cache_only:
            _apply_lookup_table(
                kernel
            )  # a structured lookup table (upstream's flags) overrides the configs
        if kernel.configs:
            configs = (
                kernel.configs if warm_cache_only else _multibuffer_variants(kernel, kernel.configs)
            )
            kernel.configs = launchable(kernel, configs)
        result = base(warm_cache_only, reload_kernel, static_triton_bundle_key)
        if not warm_cache_only and simulated(
            kernel
        ):  # npu-sim: nothing went through triton.compile, so compile hooks fire here
            post_compile.fire(kernel, kernel.configs or [], lambda c: _SimCompileResult(kernel, c))
            if not kernel.launchers and len(kernel.configs or ()) == 1:
                # upstream's pipelined GEMM autotune (TritonBenchmarkRequest.precompile)
                # reads launchers[0].n_regs of a precompiled template kernel; a one-config
                # kernel's launcher is what its first run would keep (nothing to tune). Its
                # register count is nonzero because the pipelined epilogue check asserts one;
                # npu's DeviceProperties has no regs_per_multiprocessor, so no occupancy is
                # modelled from it (upstream then allows the fusion)
                launcher = SimLauncher(kernel, kernel.configs[0], after_run=True)
                launcher.n_regs = 1
                kernel.launchers = [launcher]
        return result

    def precompile_worker(self, kernel, base):
        # where kernels compile (Ascend): one precompile time budget for all candidate configs
        if (
            simulated(kernel)
            or kernel.compile_results
            or not kernel.configs
            or len(kernel.configs) < 2
        ):
            return base()
        kernel.compile_results = precompile_budget.compile_all(kernel, kernel.configs)
        kernel.configs = None

    def precompile_config(self, kernel, base, cfg):
        if simulated(kernel):
            post_compile.fire(kernel, [cfg], lambda c: _SimCompileResult(kernel, c))
            return _SimCompileResult(kernel, cfg)
        try:
            return base(cfg)
        except Exception as exc:
            overflow = tiles.ub_overflow(exc)
            if overflow is None or not npu_config.drop_ub_overflow:
                raise
            from triton.runtime.errors import OutOfResources

            required, available = overflow
            counters["npu_autotune"]["ub_overflow_dropped"] += 1
            log.warning(
                "npu kernel %s: config %s dropped: the compiler reports a UB overflow "
                "(requires %d bits%s)",
                kernel_name(kernel),
                cfg,
                required,
                f", {available} available" if available else "",
            )
            # upstream's precompile drops configs that raise OutOfResources
            raise OutOfResources(required, available or 0, "unified buffer (bits)") from exc

    def create_compile_options(self, kernel, base, cfg, compile_meta):
        options = base(cfg, compile_meta)
        if kernel_objects.is_ascend(kernel.inductor_meta) and tiles.is_multibuffer(cfg):
            options["multibuffer"] = True  # triton-ascend's double buffering
            options["num_stages"] = 1
        return options

    def bench(self, kernel, base, launcher, *args, with_profiler=False, **kwargs):
        from . import subproc

        timing = subproc.timing_of(launcher)  # autotune_in_subproc: a tuning worker timed it
        if timing is not None:
            return timing
        # upstream's bench passes rep=40; on npu the benchmark warmup/rep flags decide
        ensure_registered()
        with flag_reps():
            return base(launcher, *args, with_profiler=with_profiler, **kwargs)

    def coordinate_descent_tuning(self, kernel, base, launcher, *args, **kwargs):
        _install_coordesc(kernel)
        return base(launcher, *args, **kwargs)

    def benchmark_all_configs(self, kernel, base, *args, **kwargs):
        """On npu-sim (no compiled launchers) every launchable config is timed through the
        simulator; this is also what a kernel module's ``benchmark_all_configs`` runs
        (``benchmark_kernel``)."""
        ran = kernel.launchers and getattr(kernel.launchers[0], "after_run", False)
        if not simulated(kernel) or (kernel.launchers and not ran):
            return _benchmark_all(kernel, base, *args, **kwargs)
        configs = kernel.configs or [r.config for r in kernel.compile_results]
        kept, kernel.launchers = (
            kernel.launchers,
            [SimLauncher(kernel, c) for c in launchable(kernel, configs)],
        )
        try:
            return _benchmark_all(kernel, base, *args, **kwargs)
        finally:
            kernel.launchers = kept

    def run(self, kernel, base, *args, stream, benchmark_run=False, **kwargs):
        if (
            variant := _hint_variant(kernel, args, kwargs)
        ) is not None:  # multi_kernel_hints: a variant compiled per size hint
            return _variant_launcher(kernel, variant)(*args, stream=stream, **kwargs)
        if not simulated(kernel):
            return base(*args, stream=stream, benchmark_run=benchmark_run, **kwargs)
        if not getattr(kernel, "_npu_tuned", False):
            _tune_on_sim(kernel, args, kwargs)
        if getattr(kernel, "_npu_incremental", None):
            return _incremental_step(kernel, args, kwargs, stream)
        result = base(*args, stream=stream, **kwargs)
        if not kernel.launchers:
            # upstream's state after a run: the launcher that ran. Upstream's benchmarks of
            # generated modules (benchmark_combo_kernel, benchmark_fusion, mix-order split
            # size) read ``launchers`` after one call
            kernel.launchers = [SimLauncher(kernel, kernel.sim_config(), after_run=True)]
        return result
