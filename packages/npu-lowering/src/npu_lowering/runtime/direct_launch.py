"""Direct launch sites of a generated wrapper (see ``npu_lowering.direct_launch``).

The wrapper calls kernel ``i`` as ``_npu_dl[i](stream, *args)``, where ``_npu_dl`` is the
table ``DirectLaunchSites.table()`` returns at the top of each call. A site's first calls go
through the kernel object's ``run`` (which precompiles and autotunes as upstream's does); once
the kernel object says it has settled on one launch object and the grid it runs this site
with, the site's slot becomes ``launch.at(gx, gy, gz, ignored)``, npu-launcher's native grid
slot: later calls are one C call, with no ``run``, launcher frame, grid code or keyword
arguments. Sites are only
generated where every scalar argument is a literal, so the grid of a site is fixed.

The probe is the kernel object's ``npu_direct_launch(args, stream)`` (npu kernel objects), or
its single launcher's (the cuda benchmark mode): it returns ``(launch, (gx, gy, gz),
runtime_args)``, None when the kernel is not settled yet (ask again after the next call), or
False when it never launches directly. ``runtime_args`` are the arguments the launch object
takes: the call's, sizes Triton specialized to 1 included (the launch object drops and checks
them, npu-launcher's ``descriptor.specialized``). The slot is promoted only when they are
the site's arguments (same objects, same order), or their prefix when the rest are the grid
a template (FixedGrid) passes as trailing literals. While the autograd profiler or a
DebugMode is active, ``table()`` hands out the ``run`` path, so kernels are recorded as
upstream records them; so it does inside ``cost_model.estimating()``, where ``run`` prices a
launch instead of making it.
"""

from __future__ import annotations

from npu_inductor_core import cost_model
from torch.autograd import profiler as _profiler

try:
    from torch.utils._debug_mode import get_active_debug_mode
except ImportError:  # torch without DebugMode

    def get_active_debug_mode():
        return None


# (kernel name, grid, launch object, slot) of every slot promoted, for tests and benchmarks
PROMOTED: list = []


class _RunSite:
    """``kernel.run(*args, stream=stream)`` with the site's calling convention."""

    __slots__ = ("sites", "name")

    def __init__(self, sites: "DirectLaunchSites", name: str):
        self.sites, self.name = sites, name

    def __call__(self, stream, *args):
        return self.sites.kernel(self.name).run(*args, stream=stream)


class _PendingSite(_RunSite):
    """Runs through ``run`` until the kernel object settles, then promotes its slot."""

    __slots__ = ("index",)

    def __init__(self, sites, name, index):
        super().__init__(sites, name)
        self.index = index

    def __call__(self, stream, *args):
        kernel = self.sites.kernel(self.name)
        result = kernel.run(*args, stream=stream)
        self.sites.promote(self.index, kernel, args, stream)
        return result


class DirectLaunchSites:
    def __init__(self, module_globals: dict, kernel_names: list[str]):
        self._globals = module_globals  # the wrapper module's: kernel objects appear after wait()
        self.slow = [_RunSite(self, n) for n in kernel_names]
        self.fast = [_PendingSite(self, n, i) for i, n in enumerate(kernel_names)]

    def kernel(self, name: str):
        return self._globals[name]

    def table(self) -> list:
        if (
            _profiler._is_profiler_enabled
            or get_active_debug_mode() is not None
            or cost_model.current() is not None  # an estimate: launches are priced in run
        ):
            return self.slow
        return self.fast

    def promote(self, index: int, kernel, args: tuple, stream) -> None:
        probe = getattr(kernel, "npu_direct_launch", None)
        if probe is None:
            launchers = getattr(kernel, "launchers", None)
            if launchers is not None and len(launchers) != 1:
                return  # not precompiled / not tuned yet: ask again after the next call
            probe = getattr(launchers[0], "npu_direct_launch", None) if launchers else None
        info = probe(args, stream) if probe is not None else False
        if info is None:
            return
        if info is False:
            self.fast[index] = self.slow[index]
            return
        launch, grid, runtime_args = info
        n = len(runtime_args)
        if n > len(args) or any(a is not b for a, b in zip(runtime_args, args)):
            self.fast[index] = self.slow[index]  # the launcher rearranges arguments: keep run
            return
        gx, gy, gz = (*tuple(grid), 1, 1)[:3]
        # npu-launcher's native grid slot: one C call. Templates (FixedGrid) pass their grid as
        # trailing literal arguments, which run consumes; the slot drops them (literals: the
        # grid is fixed with them)
        self.fast[index] = launch.at(gx, gy, gz, len(args) - n)
        PROMOTED.append((self.slow[index].name, (gx, gy, gz), launch, self.fast[index]))
