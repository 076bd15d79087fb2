"""The other packages' pieces the npu kernel object uses, found by entry point (each None
when its package is not installed): npu-sim's launch entry, npu-launcher's describers and
binders, npu-cache's kernel-binary cache, npu-fusion's fusion policy."""

from __future__ import annotations

from npu_inductor_core.entries import entry, sim_launch  # noqa: F401 (sim_launch re-exported)

LAUNCHER_GROUP = "npu_inductor.kernel_launcher"  # npu-launcher's bind_triton, describe_triton, ...
CACHES_GROUP = "npu_inductor.caches"  # npu-cache's kernel_binary
FUSION_GROUP = "npu_inductor.fusion"  # npu-fusion's policy


def _launcher_entry(name: str):
    return entry(LAUNCHER_GROUP, name)


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


def capi_header_dir():
    """npu-launcher's ``capi_header_dir`` (the folder of its C ABI header, for the C++
    wrapper), else None."""
    return _launcher_entry("capi_header_dir")


def capi_direct_library():
    """npu-launcher's ``capi_direct_library`` (the path of its C ABI library without Python,
    for AOTInductor models of triton-ascend kernels), else None."""
    return _launcher_entry("capi_direct_library")


def kernel_binary_cache():
    """npu-cache's kernel-binary cache opener (descriptors fetched before describing,
    uploaded after) when installed, else None."""
    return entry(CACHES_GROUP, "kernel_binary")


def fusion_policy():
    """npu-fusion's policy module (``can_fuse(kind, node1, node2)``, ``cache_key()``) when
    installed, else None (upstream's fusion decisions alone)."""
    return entry(FUSION_GROUP, "policy")
