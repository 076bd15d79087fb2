"""npu-sim launch objects: a config of a simulated kernel runs through npu-sim's launch entry
point (group ``npu_inductor.sim_launch``, name ``launch``), as a callable shaped like upstream's
launchers. Its own module so that what launches (autotuner, benchmark requests, sample-input
runs) imports it without importing each other.
"""

from __future__ import annotations

from npu_inductor_core import cost_model
from npu_inductor_core.entries import sim_launch

# (kernel name, config kwargs, num_stages) of every config this package launched on npu-sim
# or priced (a benchmark's estimate: npu_inductor_core.cost_model)
LAUNCHED: list = []


class SimLauncher:
    """One config of a simulated kernel, callable as an upstream launcher."""

    n_spills = 0  # interpreted: no registers to spill (upstream's fusion benchmarks compare it)
    n_regs = 0
    shared = 0
    cache_hash = None
    store_cubin = False

    def __init__(self, kernel, config, after_run=False):
        self.kernel = kernel
        self.config = config
        self.after_run = after_run  # kept after a run (upstream's state), not a tuning candidate

    def __call__(self, *args, stream=None, **kwargs):
        k = self.kernel
        if getattr(k.fn, "fn", None) is None:  # restored from the FX graph cache: no source yet
            k._ensure_kernel_loaded()
        call_args, grid = k._interpret_args_grid(args, self.config)
        LAUNCHED.append(
            (k.inductor_meta.get("kernel_name"), dict(self.config.kwargs), self.config.num_stages)
        )
        if cost_model.priced_launch(k.inductor_meta, grid):  # an estimate, not a timing
            return None
        # a user kernel's tl.constexpr arguments live in triton_meta (the lowering's helper)
        declared = k.declared_constants() if hasattr(k, "declared_constants") else {}
        return sim_launch()(k.fn, grid, call_args, {**declared, **kwargs, **self.config.kwargs})


class _SimCompileResult:
    """What ``_precompile_config`` returns on npu-sim: nothing compiled, a launcher on demand."""

    def __init__(self, kernel, config):
        self.kernel_object = kernel
        self.config = config

    def make_launcher(self):
        return SimLauncher(self.kernel_object, self.config)
