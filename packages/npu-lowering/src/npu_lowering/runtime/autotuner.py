"""The kernel object of npu kernels: upstream's CachingAutotuner, launching through npu-sim
when the device is simulated.

On the simulator there is no Triton driver to compile for: nothing is precompiled, and each
run interprets the kernel's first config (the one the tiling model puts first: few, large
programs) through npu-sim's launch entry point (group ``npu_inductor.sim_launch``), which
runs it on the npu memory itself or records it during graph capture. Elsewhere everything
is upstream's.
"""

from __future__ import annotations

import collections
import functools
import logging
import weakref
from importlib import metadata

from torch._inductor import config as inductor_config

from torch._inductor.runtime.triton_heuristics import CachingAutotuner

from .flavour import flavour

log = logging.getLogger(__name__)
SIM_LAUNCH_GROUP = "npu_inductor.sim_launch"
LAUNCHER_GROUP = "npu_inductor.kernel_launcher"  # npu-launcher's bind_triton
# (kernel name, grid, config kwargs, triton_meta) of recent simulated launches: tests check
# every generated kernel's blocks against the UB and its grid against the device
LAUNCHES: collections.deque = collections.deque(maxlen=4096)


@functools.cache
def sim_launch():
    eps = [ep for ep in metadata.entry_points(group=SIM_LAUNCH_GROUP) if ep.name == "launch"]
    if not eps:
        raise RuntimeError(f"device 'npu' is simulated but no '{SIM_LAUNCH_GROUP}: launch' entry point is installed")
    return eps[0].load()


@functools.cache
def static_binder():
    """npu-launcher's ``bind_triton`` when installed, else None."""
    eps = [ep for ep in metadata.entry_points(group=LAUNCHER_GROUP) if ep.name == "bind_triton"]
    return eps[0].load() if eps else None


# the launch object of each kernel object's first config, the one the simulator runs (kept
# off the kernel object: it is pickled between compile workers, launch objects are not)
_static_launches: "weakref.WeakKeyDictionary[NpuCachingAutotuner, object]" = weakref.WeakKeyDictionary()


class NpuCachingAutotuner(CachingAutotuner):
    """No state beyond upstream's, so an upstream-built autotuner can take this class."""

    @property
    def _simulated(self) -> bool:
        # the kernel's flavour was decided where it was generated (compile workers have no npu)
        return self.inductor_meta.get("npu_flavour", flavour()) == "interpreter"

    def precompile(self, warm_cache_only=False, reload_kernel=None, static_triton_bundle_key=None):
        if not self._simulated:
            return super().precompile(warm_cache_only, reload_kernel, static_triton_bundle_key)
        # The interpreter runs the source: nothing to build. A kernel that came back from a
        # compile worker lost its Python function to pickling; get it back from the source.
        if getattr(self.fn, "fn", None) is None and reload_kernel is not None:
            self.fn = reload_kernel().fn

    def _precompile_worker(self):
        if self._simulated:
            return
        return super()._precompile_worker()

    def run(self, *args, stream, **kwargs):
        if not self._simulated:
            return super().run(*args, stream=stream, **kwargs)
        config = (self.configs or [self.launchers[0].config])[0]
        launch = self._static_launch(config)
        args, grid = self._interpret_args_grid(args, config)
        LAUNCHES.append((self.inductor_meta.get("kernel_name"), tuple(grid), dict(config.kwargs), self.triton_meta,
                         self.size_hints, self.heuristic_type, launch is not None))
        if launch is not None:
            grid = (*grid, 1, 1)[:3]
            return launch(grid[0], grid[1], grid[2], stream, *args)
        return sim_launch()(self.fn, grid, args, {**kwargs, **config.kwargs})

    def _static_launch(self, config):
        """The pre-bound launch object for the config the simulator runs: npu-launcher's, when installed
        and ``use_static_triton_launcher`` is on; ``strict_static_triton_launcher`` makes a
        kernel that cannot launch statically an error instead of a fallback (L01)."""
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
            device = getattr(self.triton_meta.get("device"), "index", 0) or 0
            launch = binder(self.fn, self.triton_meta, config.kwargs, device, simulated=True)
        except Exception as exc:
            name = self.inductor_meta.get("kernel_name")
            if inductor_config.strict_static_triton_launcher:
                raise RuntimeError(f"npu kernel {name} cannot be launched statically: {exc}") from exc
            log.info("npu kernel %s launches through npu-sim's entry point: %s", name, exc)
        _static_launches[self] = launch
        return launch
