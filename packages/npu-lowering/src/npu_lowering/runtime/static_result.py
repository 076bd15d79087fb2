"""npu-launcher descriptors as upstream's static compile results: what TritonBundler puts in
the FX graph cache entry and a new process restores.

``NpuStaticKernel`` is to a descriptor what upstream's StaticallyLaunchedCudaKernel is to a
cubin; ``NpuStaticCompileResult`` subclasses upstream's ``StaticTritonCompileResult``, which is
what makes ``is_statically_launchable()`` true. A simulated kernel's result launches through
the kernel object's ``run``; a native (Ascend) one through upstream's launcher code around an
ascend launch object (``make_launcher``).
"""

from __future__ import annotations

import os
import threading
import weakref

from torch._inductor.runtime.triton_heuristics import StaticTritonCompileResult

from .entries import native_launcher

DESCRIPTOR_SUFFIX = ".npld"  # npu-launcher kernel descriptor file in Triton's cache dir


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

    def __init__(
        self,
        name: str,
        blob: bytes,
        device: int,
        native: bool = False,
        arg_names: tuple = (),
        declared_constexprs: tuple = (),
    ):
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
        return os.path.join(
            _triton_cache_dir(self.device), self.hash[:32], self.name + DESCRIPTOR_SUFFIX
        )

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
            raise RuntimeError(
                f"npu kernel descriptor {path} missing or not this kernel's, and not kept "
                "in the cache entry (keep_static_cubin_raw is off)"
            )

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
        launcher = native(
            self, kernel.descriptor_bytes(), device, kernel.arg_names, kernel.declared_constexprs
        )
        launcher._is_static = True
        return launcher


# launchers of native results bound while checking that they bind (_bound_or_fallback),
# handed to upstream's launcher loop (kept off the result: results are pickled)
_bound_native: "weakref.WeakKeyDictionary[NpuStaticCompileResult, object]" = (
    weakref.WeakKeyDictionary()
)
