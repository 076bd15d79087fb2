"""Direct launch in the generated Python wrapper (issue 5: per-call host time).

Upstream's wrapper calls each Triton kernel as ``kernel.run(*args, stream=s)``: the kernel
object's ``run``, then a generated launcher frame computing the grid, then the runner, every
call. ``DirectLaunchWrapperMixin`` rewrites that one line, where the call's grid cannot change
(every scalar argument is a literal: static shapes), into ``_npu_dl[i](s, *args)``: a slot of
the module's ``DirectLaunchSites`` (``runtime/direct_launch.py``) that goes through ``run``
until the kernel object has settled on one config, then becomes the pre-bound launch object
with the site's grid. Everything else upstream generates is kept; a call upstream writes in
another form is left as it is.

On by default for npu when npu-launcher is installed and ``use_static_triton_launcher`` is
on; upstream's ``use_fast_triton_launcher`` (the flag of its own steady-state launch fast path,
torch 2.13; absent on 2.11: on) switches it off. The cuda benchmark mode applies the mixin to
upstream's cuda wrapper: bench/cuda_routes.py's ``cuda_wrapper_class()``, installed by its
``route_cuda_wrapper`` (benchmark only, not in this package).
"""

from __future__ import annotations

import re

import torch
from torch._inductor import config as inductor_config
from torch._inductor.utils import DeferredLineBase
from torch._inductor.virtualized import V

SITES = "_npu_sites"  # module global: the DirectLaunchSites
TABLE = "_npu_dl"  # local of the wrapper's call(): the slots for this call
_KEY = "<npu direct launch sites>"
_LITERAL = re.compile(r"-?\d+(\.\d*)?([eE][-+]?\d+)?")


def direct_launch_flag() -> bool:
    return bool(getattr(inductor_config, "use_fast_triton_launcher", True))


class DirectLaunchWrapperMixin:
    """Goes in front of a PythonWrapperCodegen subclass."""

    def direct_launch_enabled(self) -> bool:
        return direct_launch_flag()

    def _npu_site_names(self) -> list:
        names = self.__dict__.get("_npu_sites_list")
        if names is None:
            names = self.__dict__["_npu_sites_list"] = []
        return names

    def _generate_kernel_call_helper(self, kernel_name, call_args, *args, **kwargs):
        triton, arg_types = kwargs.get("triton", True), kwargs.get("arg_types")
        if args or not (
            triton
            and not V.graph.cpp_wrapper
            and self._npu_fixed_grid(call_args, arg_types)
            and self.direct_launch_enabled()
        ):
            return super()._generate_kernel_call_helper(kernel_name, call_args, *args, **kwargs)
        # The call is written in _generate, where writeline is redirected to the wrapper call:
        # wrap whatever writeline is now and rewrite the one `.run(` line of this kernel.
        args = ", ".join(self.prepare_triton_kernel_call(call_args))
        prefix = f"{kernel_name}.run({args}, stream="
        outer = self.writeline
        had_own = "writeline" in self.__dict__

        def writeline(line):
            if isinstance(line, str) and line.startswith(prefix) and line.endswith(")"):
                stream = line[len(prefix) : -1]
                if stream.isidentifier():
                    names = self._npu_site_names()
                    names.append(kernel_name)
                    line = f"{TABLE}[{len(names) - 1}]({stream}, {args})"
            return outer(line)

        self.writeline = writeline
        try:
            return super()._generate_kernel_call_helper(kernel_name, call_args, **kwargs)
        finally:
            if had_own:
                self.writeline = outer
            else:
                del self.writeline

    @staticmethod
    def _npu_fixed_grid(call_args, arg_types) -> bool:
        """Every non-tensor argument a literal: the grid of this call site is a constant."""
        if arg_types is None or len(arg_types) != len(call_args):
            return False
        for arg, arg_type in zip(call_args, arg_types):
            if isinstance(arg_type, torch.dtype):
                continue
            if isinstance(arg, bool) or not _LITERAL.fullmatch(str(arg)):
                return False
        return True

    def generate(self, is_inference):
        if self.direct_launch_enabled():
            # the sites are known once the calls are written (inside generate): deferred lines
            names = self._npu_site_names
            self.header.writeline(
                _WithSites(
                    f"from npu_lowering.runtime.direct_launch import DirectLaunchSites\n"
                    f"{SITES} = DirectLaunchSites(globals(), {_KEY})",
                    names,
                )
            )
            # once per call: the direct slots, or run() while a profiler / DebugMode watches
            self.lines.insert(0, _WithSites(f"{TABLE} = {SITES}.table()", names))
        return super().generate(is_inference)


class _WithSites(DeferredLineBase):
    """A line written only when the wrapper has direct-launch sites (their names for _KEY)."""

    def __init__(self, line: str, names):
        super().__init__(line)
        self.names = names

    def __call__(self):
        names = self.names()
        return self.line.replace(_KEY, repr(names)) if names else None

    def _new_line(self, line: str):
        return _WithSites(line, self.names)
