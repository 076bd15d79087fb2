"""The other packages' pieces the npu kernel object uses, found by entry point (each None
when its package is not installed): npu-sim's launch entry, npu-launcher's describers and
binders, npu-cache's kernel-binary cache."""

from __future__ import annotations

import functools
from importlib import metadata

SIM_LAUNCH_GROUP = "npu_inductor.sim_launch"
LAUNCHER_GROUP = "npu_inductor.kernel_launcher"  # npu-launcher's bind_triton, describe_triton, ...
CACHES_GROUP = "npu_inductor.caches"  # npu-cache's kernel_binary


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


@functools.cache
def kernel_binary_cache():
    """npu-cache's kernel-binary cache opener (R03-R05: descriptors fetched before describing,
    uploaded after) when installed, else None."""
    eps = [ep for ep in metadata.entry_points(group=CACHES_GROUP) if ep.name == "kernel_binary"]
    return eps[0].load() if eps else None
